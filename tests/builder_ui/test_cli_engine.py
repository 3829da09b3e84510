"""The experiment commands of `keras-seq`: train, sweep, runs, export, resume, schema, validate.

Real subprocesses where the process matters (the entry point, a kill), `main(argv)` otherwise;
every refusal must exit 2 with one message on stderr and leave the store without runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from builder_ui import cli
from builder_ui.cli import export as export_command
from builder_ui.engine.store import DB_NAME, RunStore

TINY = {
    "version": 1,
    "name": "tiny",
    "task": {"type": "long_lag", "lag": 5, "n": 80, "num_distractors": 4},
    "model": {"type": "sequence_classifier", "encoder": {"type": "rnn", "cell": "gru", "units": 4}},
    "train": {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 2},
}
SWEEP = {**TINY, "name": "cells", "sweep": {"parameters": {"model.encoder.cell": ["gru", "lstm"]}}}


def write_spec(directory: Path, spec: dict | str, name: str = "spec.yaml") -> Path:
    path = directory / name
    path.write_text(spec if isinstance(spec, str) else yaml.safe_dump(spec, sort_keys=False))
    return path


def keras_seq(*argv: str, timeout: float = 240) -> subprocess.CompletedProcess:
    """Run `keras-seq ARGV...` as its own process (the installed entry point's module)."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    return subprocess.run(
        [sys.executable, "-m", "builder_ui.cli", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def run_count(directory: Path) -> int:
    """Runs in the store at `directory` (0 when there is no store at all)."""
    if not (directory / DB_NAME).is_file():
        return 0
    with RunStore(directory, recover=False) as store:
        return len(store.list_runs())


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """`keras-seq train` in a subprocess, then a two-trial `keras-seq sweep`, into one store."""
    directory = tmp_path_factory.mktemp("cli")
    runs = directory / "runs"
    train = keras_seq("train", str(write_spec(directory, TINY)), "--runs", str(runs))
    sweep_spec = write_spec(directory, SWEEP, "sweep.yaml")
    sweep_code = cli.main(["sweep", str(sweep_spec), "--runs", str(runs)])
    with RunStore(runs) as store:
        records = store.list_runs(history=True)
    return {"dir": directory, "runs": runs, "train": train, "sweep": sweep_code, "records": records}


@pytest.mark.large
def test_train_shows_progress_and_prints_the_run_and_its_metrics(trained):
    result = trained["train"]
    assert result.returncode == 0, result.stderr[-2000:]
    record = trained["records"][0]
    assert record.name == "tiny" and record.status == "done"
    lines = result.stdout.splitlines()
    assert lines[0] == f"run {record.id} (tiny): done"
    accuracy = next(line for line in lines if line.strip().startswith("accuracy"))
    assert float(accuracy.split()[-1]) == pytest.approx(record.metrics["accuracy"], rel=1e-5)
    assert "Epoch 1/1" in result.stderr  # the progress bar goes to stderr
    assert f"Run {record.id} (tiny) on CPU" in result.stderr


@pytest.mark.large
def test_sweep_runs_every_trial_with_one_sweep_id(trained, capsys):
    assert trained["sweep"] == 0
    trials = trained["records"][1:]
    assert [r.name for r in trials] == ["cells-0", "cells-1"]
    assert [r.status for r in trials] == ["done", "done"]
    assert trials[0].sweep_id == trials[1].sweep_id is not None
    assert trained["records"][0].sweep_id is None


@pytest.mark.large
def test_runs_lists_every_run_and_writes_the_table_as_csv(trained, capsys):
    csv = trained["dir"] / "tables" / "runs.csv"
    assert cli.main(["runs", "--runs", str(trained["runs"]), "--csv", str(csv)]) == 0
    out = capsys.readouterr().out
    for record in trained["records"]:
        assert record.id in out
    table = pd.read_csv(csv)
    assert list(table["id"]) == [record.id for record in trained["records"]]
    assert list(table["status"]) == ["done"] * 3
    for record, accuracy in zip(trained["records"], table["val_accuracy"], strict=True):
        assert accuracy == pytest.approx(record.metrics["accuracy"])


@pytest.mark.large
def test_runs_compare_shows_the_field_the_trials_differ_in(trained, capsys):
    ids = [record.id for record in trained["records"][1:]]
    csv = trained["dir"] / "compare.csv"
    argv = ["runs", "--runs", str(trained["runs"]), "--compare", *ids, "--csv", str(csv)]
    assert cli.main(argv) == 0
    assert "model.encoder.cell" in capsys.readouterr().out
    table = pd.read_csv(csv)
    assert list(table["model.encoder.cell"]) == ["gru", "lstm"]
    assert "train.epochs" not in table.columns  # the same in both runs


@pytest.mark.large
def test_runs_filters_by_status_and_sweep(trained, capsys):
    runs = str(trained["runs"])
    sweep_id = trained["records"][1].sweep_id
    assert cli.main(["runs", "--runs", runs, "--sweep", sweep_id]) == 0
    out = capsys.readouterr().out
    assert trained["records"][0].id not in out and trained["records"][1].id in out
    assert cli.main(["runs", "--runs", runs, "--status", "failed"]) == 0
    assert capsys.readouterr().out == "No runs match.\n"


@pytest.mark.large
def test_export_writes_the_requested_format(trained, capsys):
    record = trained["records"][0]
    out = trained["dir"] / "exported" / "tiny.py"
    argv = ["export", record.id, "--format", "python", "--out", str(out), "--runs"]
    assert cli.main([*argv, str(trained["runs"])]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    assert "def build_model():" in out.read_text()
    assert cli.main(["export", record.id, "--format", "keras", "--runs", str(trained["runs"])]) == 0
    assert capsys.readouterr().out.strip().endswith(f"{record.id}/model.keras")


@pytest.mark.large
def test_export_refuses_a_run_that_is_not_done(trained, capsys):
    with RunStore(trained["runs"]) as store:
        run_id = store.create_run(TINY, name="never-finished")
        store.set_status(run_id, "running")
        store.finish(run_id, "diverged", error="The loss became NaN.")
    argv = ["export", run_id, "--format", "keras", "--runs", str(trained["runs"])]
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"keras-seq export: error: Run {run_id!r} is 'diverged'")
    assert cli.main(["export", "no-such-run", "--format", "keras", "--runs", "x"]) == 2
    assert "no run store in 'x'" in capsys.readouterr().err


@pytest.mark.large
@pytest.mark.parametrize(
    ("options", "message"),
    [
        # A classifier has no decode loop: a decoding given for it is refused, not ignored.
        (["--format", "savedmodel", "--decoding", "greedy"], "has no decode loop"),
        (["--format", "savedmodel", "--beam-width", "2"], "Beam(width=2, length_penalty=0.6"),
        # Nor does a format without a decode loop take one.
        (["--format", "python", "--decoding", "beam"], "decoding: only for the 'savedmodel'"),
        # Greedy decoding has no width or length penalty; beam search checks its own.
        (["--format", "onnx", "--decoding", "greedy", "--beam-width", "3"], "--beam-width: only"),
        (["--format", "onnx", "--decoding", "greedy", "--length-penalty", "1"], "--length-pen"),
        (["--format", "onnx", "--length-penalty", "-1"], "--length-penalty: Received an invalid"),
        (["--format", "onnx", "--length-penalty", "nan"], "`length_penalty`, expected a finite"),
        (["--format", "onnx", "--beam-width", "5000"], "no larger than 4096, got 5000"),
    ],
)
def test_export_refuses_a_decoding_it_cannot_apply_in_one_line(trained, capsys, options, message):
    record = trained["records"][0]  # the classifier
    exported = trained["runs"] / record.id / "export"
    before = sorted(p.name for p in exported.iterdir()) if exported.is_dir() else []
    assert cli.main(["export", record.id, *options, "--runs", str(trained["runs"])]) == 2
    captured = capsys.readouterr()
    (line,) = captured.err.strip().splitlines()
    assert line.startswith("keras-seq export: error: ") and message in line, line
    assert captured.out == ""
    after = sorted(p.name for p in exported.iterdir()) if exported.is_dir() else []
    assert after == before  # nothing written


def test_export_decoding_defaults_are_the_beam_searchs():
    from keras_seq.models import Beam

    # `--help` shows them without importing Keras; they must be Beam()'s.
    assert (export_command.DEFAULT_BEAM_WIDTH, export_command.DEFAULT_LENGTH_PENALTY) == (
        Beam().width,
        Beam().length_penalty,
    )
    with pytest.raises(SystemExit) as caught:
        cli.main(["export", "r", "--format", "onnx", "--beam-width", "0"])
    assert caught.value.code == 2  # argparse: "expected a positive integer, got 0"


@pytest.mark.large
def test_resume_continues_a_killed_run_to_the_end(tmp_path, capsys):
    spec = {**TINY, "name": "killed", "task": {**TINY["task"], "n": 400}}
    spec["train"] = {**TINY["train"], "epochs": 6}
    runs = tmp_path / "runs"
    argv = ["train", str(write_spec(tmp_path, spec)), "--runs", str(runs)]
    process = subprocess.Popen(
        [sys.executable, "-m", "builder_ui.cli", *argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and process.poll() is None:
            if run_count(runs):
                with RunStore(runs, recover=False) as store:
                    # Two epochs recorded: the first epoch's checkpoint is complete (the
                    # engine records an epoch before BackupAndRestore writes its checkpoint).
                    if store.list_runs(history=True)[0].epochs_done >= 2:
                        break
            time.sleep(0.1)
        assert process.poll() is None, "the run ended before it could be killed"
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    with RunStore(runs) as store:  # opening it notices the dead process
        (record,) = store.list_runs(history=True)
    assert record.status == "interrupted"
    done_before = record.epochs_done
    assert 2 <= done_before < 6

    assert cli.main(["resume", record.id, "--runs", str(runs)]) == 0
    assert capsys.readouterr().out.startswith(f"run {record.id} (killed): done")
    with RunStore(runs) as store:
        resumed = store.get(record.id)
    assert resumed.status == "done"
    assert [row.epoch for row in resumed.history] == [1, 2, 3, 4, 5, 6]
    assert cli.main(["resume", record.id, "--runs", str(runs)]) == 2
    assert "is 'done', expected 'interrupted'" in capsys.readouterr().err


# --- Refusals: exit 2, one message on stderr, no runs in the store -----------------------------

BAD_SPECS = {
    "malformed YAML": (
        "version: 1\nname: x\ntask: {type: long_lag\n",
        "malformed YAML at line 4",
    ),
    "unknown field": (
        {**TINY, "train": {**TINY["train"], "epoch": 3}},
        "train.epoch: unknown field",
    ),
    "out-of-range value": (
        {**TINY, "model": {"type": "sequence_classifier", "encoder": {"type": "rnn", "units": -3}}},
        "model.encoder.units: expected an integer ≥ 1, got -3",
    ),
    "incompatible choice": (
        {**TINY, "model": {"type": "vision_transformer"}},
        "model.type: 'vision_transformer' reads image inputs, but task 'long_lag' gives numeric",
    ),
    "incompatible with the data": (
        {
            **TINY,
            "task": {"type": "digits"},
            "model": {"type": "vision_transformer", "patch_size": 3},
        },
        "model.patch_size: expected a divisor of the image height 8 and width 8",
    ),
}


@pytest.mark.parametrize("command", ["train", "sweep", "validate"])
@pytest.mark.parametrize("case", sorted(BAD_SPECS))
def test_bad_specs_exit_2_with_one_message_and_write_no_runs(tmp_path, capsys, command, case):
    spec, expected = BAD_SPECS[case]
    path = write_spec(tmp_path, spec)
    runs = tmp_path / "runs"
    argv = [command, str(path)] + (["--runs", str(runs)] if command != "validate" else [])
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"keras-seq {command}: error: ")
    assert expected in captured.err
    assert "Traceback" not in captured.err
    assert not runs.exists()  # not even an empty store: nothing is written


def test_a_missing_spec_file_exits_2_without_creating_a_store(tmp_path, capsys):
    # In this process: the entry point's own process is checked by `keras-seq train` above.
    argv = ["train", str(tmp_path / "nothere.yaml"), "--runs", str(tmp_path / "runs")]
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"keras-seq train: error: {tmp_path / 'nothere.yaml'}: no such spec file\n"
    )
    assert not (tmp_path / "runs").exists()


def test_a_sweep_with_one_invalid_trial_writes_nothing(tmp_path, capsys):
    spec = {**SWEEP, "sweep": {"parameters": {"model.encoder.units": [4, 0]}}}
    runs = tmp_path / "runs"
    assert cli.main(["sweep", str(write_spec(tmp_path, spec)), "--runs", str(runs)]) == 2
    err = capsys.readouterr().err
    assert "model.encoder.units: expected an integer ≥ 1, got 0" in err
    assert "(trial 1: model.encoder.units=0)" in err
    assert not runs.exists()


def test_train_refuses_a_sweep_spec_and_names_the_command_to_use(tmp_path, capsys):
    path = write_spec(tmp_path, SWEEP)
    assert cli.main(["train", str(path), "--runs", str(tmp_path / "runs")]) == 2
    assert f"run it with `keras-seq sweep {path}`" in capsys.readouterr().err
    assert run_count(tmp_path / "runs") == 0


def test_set_overrides_fields_before_validation(tmp_path, capsys):
    path = write_spec(tmp_path, TINY)
    assert cli.main(["validate", str(path), "--set", "train.epochs=0"]) == 2
    assert "train.epochs: expected an integer ≥ 1, got 0" in capsys.readouterr().err
    assert cli.main(["validate", str(path), "--set", "train.epochs"]) == 2
    assert "--set expects FIELD=VALUE" in capsys.readouterr().err
    argv = ["validate", str(path), "--set", "model.encoder.cell=lstm", "--set", "train.seed=5"]
    assert cli.main(argv) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        f"{path}: valid (model 'sequence_classifier' on task 'long_lag')"
    )


@pytest.mark.parametrize("version", [1, 2])
def test_set_switches_a_seq2seq_spec_to_the_transformer(tmp_path, capsys, version):
    # A version 1 file is upgraded first, so `--set` names the current fields either way.
    model = (
        {"type": "seq2seq", "architecture": "rnn", "cell": "gru", "units": 8}
        if version == 1
        else {"type": "seq2seq", "architecture": {"type": "rnn", "cell": "gru", "units": 8}}
    )
    document = {
        "version": version,
        "name": "switch",
        "task": {"type": "reverse", "length": 5, "n": 50},
        "model": model,
    }
    path = tmp_path / "seq2seq.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    argv = ["validate", str(path), "--set", "model.architecture=transformer"]
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.startswith(
        f"{path}: valid (model 'seq2seq' on task 'reverse')\n"
    )
    argv = ["validate", str(path), "--set", "model.architecture.num_heads=3"]
    assert cli.main(argv) == 2
    assert "model.architecture.num_heads: unknown field" in capsys.readouterr().err


def test_ray_options_need_the_ray_executor(tmp_path, capsys):
    path = write_spec(tmp_path, SWEEP)
    argv = ["sweep", str(path), "--address", "auto", "--runs", str(tmp_path / "runs")]
    assert cli.main(argv) == 2
    assert "--address, --num-cpus and --storage are for --executor ray" in capsys.readouterr().err
    assert run_count(tmp_path / "runs") == 0


def test_a_storage_uri_that_cannot_be_used_is_refused_naming_it(tmp_path, capsys):
    pytest.importorskip("ray")
    path = write_spec(tmp_path, SWEEP)
    argv = ["sweep", str(path), "--executor", "ray", "--storage", "nope://bucket/runs"]
    assert cli.main([*argv, "--runs", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert "--storage nope://bucket/runs" in err and "pyarrow cannot open" in err
    assert not (tmp_path / "runs").exists()


def test_runs_without_a_store_says_so_and_creates_nothing(tmp_path, capsys):
    assert cli.main(["runs", "--runs", str(tmp_path / "none")]) == 0
    assert capsys.readouterr().out == f"No runs in {tmp_path / 'none'}.\n"
    assert not (tmp_path / "none").exists()
    assert cli.main(["runs", "--runs", str(tmp_path / "none"), "--compare", "a"]) == 2


def test_schema_prints_the_json_schema_of_specs(capsys):
    assert cli.main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert {"version", "name", "task", "model", "train", "sweep"} <= set(schema["properties"])


@pytest.mark.large
def test_every_command_help_imports_no_heavy_module():
    code = (
        "import sys\n"
        "from builder_ui import cli\n"
        "for command in cli.COMMANDS:\n"
        "    try:\n"
        "        cli.main([command.name, '--help'])\n"
        "    except SystemExit:\n"
        "        pass\n"
        "heavy = {'gradio', 'keras', 'keras_seq', 'tensorflow', 'jax', 'pandas', 'pydantic'}\n"
        "heavy |= {'ray', 'yaml'}\n"
        "print(sorted(heavy & set(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    for command in ("train", "sweep", "runs", "export", "resume", "schema", "validate"):
        assert f"usage: keras-seq {command}" in result.stdout
    assert result.stdout.strip().endswith("[]")


@pytest.mark.large
def test_the_engine_and_cli_need_no_tensorflow_under_jax(tmp_path):
    # A GPU host may have JAX and no TensorFlow: hide TensorFlow and check a spec end to end.
    code = textwrap.dedent(
        """
        import importlib.abc, sys

        class HideTensorFlow(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name.split(".")[0] == "tensorflow":
                    raise ModuleNotFoundError(f"No module named {name!r}")

        sys.meta_path.insert(0, HideTensorFlow())
        import builder_ui.engine.executors, builder_ui.results.export
        import builder_ui.results.model_source
        from builder_ui import cli
        code = cli.main(["validate", sys.argv[1]])
        print(code, "tensorflow" in sys.modules)
        """
    )
    spec = write_spec(tmp_path, TINY)
    env = {**os.environ, "KERAS_BACKEND": "jax"}
    result = subprocess.run(
        [sys.executable, "-c", code, str(spec)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines()[-1] == "0 False"


@pytest.mark.large
def test_gpu_check_script_parses_and_documents_its_options():
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_check.sh"
    subprocess.run(["bash", "-n", str(script)], check=True, timeout=30)
    result = subprocess.run(
        ["bash", str(script), "--help"], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0
    for option in ("--cpu-smoke", "--python", "--venv", "--epochs", "--output-dir", "--specs"):
        assert option in result.stdout
    bad = subprocess.run(["bash", str(script), "--epochs", "0"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--epochs must be a positive integer" in bad.stderr
