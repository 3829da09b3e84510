"""Every code block of the documentation runs or is checked, so the docs cannot rot.

- Each page's python blocks run in order, in one namespace, with a temporary folder of the
  page's own as working directory (with `examples/` linked in, so a page reads
  `examples/specs/gru.yaml` as a user at the repository root does). The pages run one after
  another in one fresh Python process, Keras's global state reset between them. The settings
  in the pages are small: each page takes seconds to a minute on two CPU cores.
- A python block may opt out only with a first line `# not run: <reason>`.
- yaml blocks that are specs (a mapping with `task` and `model`) are validated as
  `keras-seq validate` does before it reads any data: every field, and the model's kinds
  against the task's (their data files, such as `walks.csv`, need not exist here).
- Each `keras-seq ...` line of a bash block is parsed by the command's own argument parser,
  so a renamed subcommand or option fails here.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
import yaml

from builder_ui import builders, cli
from builder_ui.builders import load_spec
from tests.docs.snippets import (
    ROOT,
    RUN_ELSEWHERE,
    blocks,
    pages,
    python_pages,
    runnable_python_blocks,
)

PAGES_TIMEOUT_S = 1800  # a hang guard: the pages take 2-3 minutes on 2 quiet cores
MAX_NOT_RUN = 3
SHELL_OPERATORS = {
    "|",
    "||",
    "&&",
    ";",
    "&",
}  # opting out is the exception: each one is a block nobody checks

# The pages run one after another in one fresh interpreter (a Python start and a Keras import
# are most of a small page's cost), each in a folder of its own, its blocks in order in one
# namespace: a `__main__` module of its own, so that code that looks its module up (pydantic
# resolving annotations, pickling) finds it. Between pages Keras's global state (its session,
# its dtype policy) and Matplotlib's figures are reset, as a new process would have them. A
# page's failure is recorded and the next page runs.
RUNNER = textwrap.dedent(
    """
    import json, os, sys, traceback, types

    def reset():
        if "keras" in sys.modules:
            import keras
            keras.backend.clear_session()
            keras.config.set_dtype_policy("float32")
        if "matplotlib.pyplot" in sys.modules:
            sys.modules["matplotlib.pyplot"].close("all")

    results = {}
    for page in json.load(open(sys.argv[1], encoding="utf-8")):
        os.chdir(page["folder"])
        main = types.ModuleType("__main__")
        sys.modules["__main__"] = main
        print("PAGE " + page["page"], flush=True)
        print("PAGE " + page["page"], file=sys.stderr, flush=True)
        try:
            for block in page["blocks"]:
                where = block["where"]
                exec(compile(block["code"], where, "exec"), main.__dict__)
            results[page["page"]] = None
        except BaseException:
            results[page["page"]] = where + ":\\n" + traceback.format_exc()
        reset()
    with open(sys.argv[2], "w", encoding="utf-8") as out:
        json.dump(results, out)
    """
)


@pytest.fixture(scope="module")
def page_results(tmp_path_factory) -> tuple[dict[str, str | None], str]:
    """Every page's python blocks run in one fresh interpreter: (page -> None or the error, log).

    Each page's folder has `examples/` linked in, so a page reads `examples/specs/gru.yaml` as
    a user at the repository root does.
    """
    root = tmp_path_factory.mktemp("pages")
    ray_root = Path(tempfile.mkdtemp(prefix="ray", dir=tempfile.gettempdir()))  # see ray_temp_root
    plan = []
    for index, page in enumerate(python_pages()):
        folder = root / f"page{index}"
        folder.mkdir()
        (folder / "examples").symlink_to(ROOT / "examples")
        blocks_to_run = [
            {"where": block.where, "code": block.code} for block in runnable_python_blocks(page)
        ]
        plan.append({"page": _page_id(page), "folder": str(folder), "blocks": blocks_to_run})
    (root / "pages.json").write_text(json.dumps(plan), encoding="utf-8")
    (root / "runner.py").write_text(RUNNER, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        "MPLBACKEND": "Agg",
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "KERAS_BACKEND": os.environ.get("KERAS_BACKEND", "tensorflow"),
        # A Ray of the pages' own (the Ray how-to starts one), never the machine's /tmp/ray;
        # short, as Ray's Unix sockets live under it.
        "RAY_TMPDIR": str(ray_root),
    }
    env.pop("RAY_ADDRESS", None)
    try:
        result = subprocess.run(
            [sys.executable, "runner.py", str(root / "pages.json"), str(root / "results.json")],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=PAGES_TIMEOUT_S,
            check=False,
        )
    finally:
        shutil.rmtree(ray_root, ignore_errors=True)
    log = result.stdout[-3000:] + result.stderr[-6000:]
    assert result.returncode == 0, log
    return json.loads((root / "results.json").read_text(encoding="utf-8")), log


def _page_id(page) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.large
@pytest.mark.parametrize("page", python_pages(), ids=_page_id)
def test_python_blocks_of_the_page_run_in_order(page, page_results):
    results, log = page_results
    error = results[_page_id(page)]
    assert error is None, f"{error}\n--- the end of the pages' output ---\n{log}"


def test_sections_run_elsewhere_have_their_test():
    for (page, section), test in RUN_ELSEWHERE.items():
        assert (ROOT / test).is_file(), test
        assert f"\n## {section}\n" in (ROOT / page).read_text(encoding="utf-8"), (page, section)


def test_every_page_with_code_has_a_python_block_that_runs():
    """A page cannot opt all its python blocks out."""
    for page in python_pages():
        assert any(b.not_run_reason() is None for b in blocks(page, "python")), page


def test_blocks_that_do_not_run_say_why_and_are_few():
    skipped = []
    for page in pages():
        for block in blocks(page, "python"):
            if block.code.lstrip().startswith("# not run"):
                assert block.not_run_reason(), f"{block.where}: `# not run:` needs a reason"
                skipped.append(block.where)
    assert len(skipped) <= MAX_NOT_RUN, skipped


def _spec_blocks():
    found = []
    for page in pages():
        for block in blocks(page, "yaml"):
            data = yaml.safe_load(block.code)
            if isinstance(data, dict) and {"task", "model"} <= set(data):
                found.append(block)
    return found


def test_the_docs_show_specs():
    assert len(_spec_blocks()) >= 5


@pytest.fixture(scope="module")
def example_plugin_types():
    """The example plugin's types registered here, so the pages' plugin specs validate too."""
    sys.path.insert(0, str(ROOT / "examples" / "plugin"))
    try:
        from kseq_example_plugin import ConvClassifier, SineFrequency

        builders.register_task("sine_frequency")(SineFrequency)
        builders.register_model("conv_classifier")(ConvClassifier)
        yield
    finally:
        builders.unregister("task", "sine_frequency")
        builders.unregister("model", "conv_classifier")
        sys.path.remove(str(ROOT / "examples" / "plugin"))
        for name in [name for name in sys.modules if name.startswith("kseq_example_plugin")]:
            del sys.modules[name]


@pytest.mark.parametrize("block", _spec_blocks(), ids=lambda block: block.where)
def test_spec_blocks_are_valid_specs(block, example_plugin_types):
    spec = load_spec(block.code)  # every field, with its path
    builders.check_kinds(spec)  # the model reads the task's inputs and predicts its targets
    assert spec.name == yaml.safe_load(block.code)["name"]


def _command_lines():
    found = []
    for page in pages():
        for block in blocks(page, "bash"):
            text = block.code.replace("\\\n", " ")
            for offset, line in enumerate(text.splitlines()):
                command = line.split(" #", 1)[0].strip()
                if command.startswith("keras-seq "):
                    found.append((f"{block.where}+{offset + 1}", command))
    return found


def test_the_docs_show_commands():
    assert len(_command_lines()) >= 10


@pytest.mark.parametrize(
    ("where", "command"), _command_lines(), ids=[w for w, _ in _command_lines()]
)
def test_keras_seq_command_lines_parse(where, command):
    words = shlex.split(command)[1:]
    for index, word in enumerate(words):
        if word in SHELL_OPERATORS or word.startswith((">", "2>")):
            words = words[:index]  # the shell's part of the line, not keras-seq's
            break
    parser, _ = cli.build_parser()
    try:
        parser.parse_args(words)
    except SystemExit as error:
        if error.code != 0:  # 0: --help
            pytest.fail(f"{where}: `{command}` is refused by keras-seq's parser")
