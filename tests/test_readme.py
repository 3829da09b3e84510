"""The README shows Python examples. They run, in order, in tests/docs/test_snippets.py."""

from pathlib import Path

from tests.docs.snippets import runnable_python_blocks

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    """The README's python blocks, but for a section that a test of its own runs."""
    return [block.code for block in runnable_python_blocks(README)]


def test_readme_has_python_examples():
    assert len(python_blocks()) >= 2
