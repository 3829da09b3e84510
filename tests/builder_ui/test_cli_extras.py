"""`keras-seq` from the base install: a command says in one line which extra it needs.

Each case runs the command line in a fresh interpreter with some packages made missing the
way Python sees an absent one (`sys.modules[name] = None`: `import name` raises
`ModuleNotFoundError` with `name` set), as in an install without the `app` extra.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import keras_seq

pytestmark = pytest.mark.large  # each test starts a fresh interpreter

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "examples" / "specs" / "gru.yaml"
HINT = 'pip install "keras-seq[app]"'

RUN = """
import json, sys
missing, argv = json.loads(sys.argv[1])
for name in missing:
    sys.modules[name] = None  # not installed
from builder_ui.cli import main
try:
    code = main(argv)
except SystemExit as exit:  # --version, --help
    code = exit.code
loaded = sorted({"keras", "keras_seq", "tensorflow"} & set(sys.modules))
print(json.dumps({"code": code, "loaded": loaded}))
"""


def run_cli(argv: list[str], missing: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", RUN, json.dumps([list(missing), [str(arg) for arg in argv]])],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )


@pytest.mark.parametrize(
    ("argv", "missing"),
    [
        (["train", SPEC], ("pydantic",)),
        (["--verbose", "validate", SPEC, "--memory-budget", "4GB"], ("pydantic",)),
        (["graph", SPEC], ("yaml",)),
        (["schema"], ("pydantic",)),
        (["ui", "--port", "1"], ("gradio",)),
        (["lab", "--quick", "--only", "1"], ("pydantic",)),
    ],
    ids=["train", "validate", "graph", "schema", "ui", "lab"],
)
def test_a_command_without_the_app_extra_names_it_in_one_line_and_exits_2(argv, missing):
    result = run_cli(argv, missing)
    command = next(arg for arg in argv if not str(arg).startswith("-"))
    assert result.stderr == f"keras-seq {command} needs the builder's packages: {HINT}\n"
    assert result.returncode == 0, result.stderr  # the script itself ran to its end
    assert json.loads(result.stdout.splitlines()[-1])["code"] == 2


def test_a_missing_package_of_no_extra_is_not_called_the_apps():
    # NumPy is a base dependency: an install without it is broken, and Python says so (once
    # a command needs it: validating a spec builds its model).
    result = run_cli(["validate", SPEC], ("numpy",))
    assert result.returncode == 1
    assert "Traceback" in result.stderr
    assert result.stderr.rstrip().splitlines()[-1].startswith("ModuleNotFoundError: ")
    assert "keras-seq[app]" not in result.stderr


def test_version_prints_keras_seqs_version_without_importing_keras():
    result = run_cli(["--version"])
    *printed, last = result.stdout.splitlines()
    assert printed == [f"keras-seq {keras_seq.__version__}"], result.stderr
    assert json.loads(last) == {"code": 0, "loaded": []}
