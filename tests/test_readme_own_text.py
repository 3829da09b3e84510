"""The README's "Your own text" section runs as written, on real sentence pairs.

The section is what a user types: a spec saved as `my_translator.yaml`, the `keras-seq`
commands of its bash block (train, then export the run it printed, where the README says
`<RUN>`), and two Python programs that translate with the exports, one with TensorFlow
alone and one with onnxruntime and SentencePiece. Here `my_pairs.tsv` is every fourth
line of the Tatoeba sample in `../shared/data/` (2,268 real English–French pairs; the
test skips without it), and each command and program runs in its own process in a fresh
directory, as in a user's shell.

The spec is the README's but for its budget: one epoch instead of fifty-one, and a warm-up
of 8 updates instead of 1,000 (a warm-up must end before training does). This test shows
that the section runs, not how well the model learns (benchmarks/results/translation.md
measures that, and the figures the README states come from there).

What must hold: every command succeeds; the TensorFlow program never imports keras_seq,
and the onnxruntime one neither keras_seq nor TensorFlow nor Keras; both print a non-empty
translation without `<unk>` (subword pieces spell any word from characters the training
text holds), and the same one, since both run the same decoding (beam search, width 4,
length penalty 0.6, the exports' default) of the same weights.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.docs.snippets import ROOT, section_blocks

SECTION = "Your own text"
DATA = ROOT.parent / "shared" / "data" / "tatoeba-eng-fra-sample.tsv"
COMMAND_TIMEOUT_S = 900  # a hang guard: each command takes seconds to a minute on two CPU cores
EPOCHS = 1  # the README trains 51
WARMUP_STEPS = 8  # the README warms up over 1,000 updates
# Modules each program must run without: what "alone" means in the README (TensorFlow
# itself imports the `keras` package it depends on; neither needs keras_seq's code).
FORBIDDEN = {
    "TensorFlow alone": ("keras_seq", "builder_ui"),
    "onnxruntime": ("tensorflow", "keras", "keras_seq"),
}

pytestmark = [
    pytest.mark.large,
    pytest.mark.skipif(not DATA.is_file(), reason=f"needs the Tatoeba sample at {DATA}"),
]


def _blocks():
    blocks = section_blocks(ROOT / "README.md", SECTION)
    by_language = {}
    for block in blocks:
        by_language.setdefault(block.language, []).append(block)
    return by_language


def _environment():
    return {
        **os.environ,
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "KERAS_BACKEND": "tensorflow",
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }


def _run(words, cwd):
    result = subprocess.run(
        words,
        cwd=cwd,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, f"{words}:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result.stdout


def _program(code, forbidden):
    """The block, then a check that none of the forbidden modules was imported."""
    return (
        f"{code}\nimport sys\n"
        f"_loaded = sorted(m for m in {forbidden!r} if m in sys.modules)\n"
        "assert not _loaded, f'imported {_loaded}'\n"
    )


def test_the_section_shows_a_spec_commands_and_two_programs():
    blocks = _blocks()
    assert len(blocks["yaml"]) == 1 and len(blocks["bash"]) == 1 and len(blocks["python"]) == 2


def test_your_own_text_runs_as_written(tmp_path):
    blocks = _blocks()
    lines = DATA.read_text(encoding="utf-8").splitlines()[::4]
    (tmp_path / "my_pairs.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    section = (ROOT / "README.md").read_text(encoding="utf-8").split(f"## {SECTION}\n")[1]
    assert "Save this spec as `my_translator.yaml`" in section
    spec = yaml.safe_load(blocks["yaml"][0].code)
    assert spec["train"]["epochs"] > EPOCHS
    spec["train"]["epochs"] = EPOCHS
    if "warmup_steps" in spec["train"].get("schedule", {}):
        # A warm-up must end before training does (the spec is refused otherwise): one that
        # fits in the one epoch's 32 updates.
        spec["train"]["schedule"]["warmup_steps"] = WARMUP_STEPS
    (tmp_path / "my_translator.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")

    run_id = None
    for line in blocks["bash"][0].code.splitlines():
        command = line.split(" #", 1)[0].strip()
        if not command:
            continue
        assert command.startswith("keras-seq ")
        if "<RUN>" in command:
            assert run_id is not None, "a command needs the run before train printed one"
            command = command.replace("<RUN>", run_id)
        output = _run(shlex.split(command), tmp_path)
        printed = re.search(r"^run (\S+) \(my-translator\): (\w+)$", output, flags=re.M)
        if printed:
            assert printed.group(2) == "done", output
            run_id = printed.group(1)
    assert (tmp_path / "my_translator" / "saved_model.pb").is_file()
    assert (tmp_path / "my_translator.onnx").is_file()

    translations = []
    for block, (label, forbidden) in zip(blocks["python"], FORBIDDEN.items(), strict=True):
        assert label in section, label
        program = tmp_path / f"program_{len(translations)}.py"
        program.write_text(_program(block.code, forbidden), encoding="utf-8")
        printed = _run([sys.executable, str(program)], tmp_path).strip().splitlines()
        assert printed, f"{label}: printed nothing"
        translations.append(printed[-1])
    tf_text, onnx_text = translations
    assert tf_text.strip() and "<unk>" not in tf_text and "⁇" not in onnx_text
    assert tf_text == onnx_text
