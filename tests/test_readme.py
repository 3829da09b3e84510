"""The README's Python examples run as written."""

from pathlib import Path

import pytest

from tests.docs.snippets import runnable_python_blocks

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    """The README's python blocks, but for a section that a test of its own runs."""
    return [block.code for block in runnable_python_blocks(README)]


def test_readme_has_python_examples():
    assert len(python_blocks()) >= 2


@pytest.mark.large
@pytest.mark.parametrize("index", range(len(python_blocks())))
def test_readme_python_example_runs(index, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(python_blocks()[index], f"README.md block {index}", "exec"), {})
