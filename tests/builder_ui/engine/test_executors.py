"""Sweep executors: every trial checked before anything is written; Ray trials in worker
processes, streamed into the driver's store (the no-shared-disk cluster test is
`test_ray_no_shared_disk.py`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from builder_ui.engine import executors, search
from builder_ui.engine.store import RunStore
from builder_ui.specs import SpecError
from tests.docs import snippets

HOW_TO = snippets.ROOT / "docs" / "how-to" / "ray_search.md"

# Two trials of a tiny classifier; one epoch each.
SWEEP = {
    "version": 1,
    "name": "cells",
    "task": {"type": "long_lag", "lag": 5, "n": 80, "num_distractors": 4},
    "model": {"type": "sequence_classifier", "encoder": {"type": "rnn", "cell": "gru", "units": 4}},
    "train": {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 2},
    "sweep": {"parameters": {"model.encoder.cell": ["gru", "simple"]}},
}


def test_a_trial_that_fails_a_data_check_writes_nothing(tmp_path):
    # 8×8 digits: patch size 2 divides the image, 3 does not; only prepare() can tell.
    spec = {
        "version": 1,
        "name": "patches",
        "task": {"type": "digits"},
        "model": {"type": "vision_transformer", "embed_dim": 8, "num_heads": 2},
        "train": {"epochs": 1},
        "sweep": {"parameters": {"model.patch_size": [2, 3]}},
    }
    store = RunStore(tmp_path)
    with pytest.raises(SpecError) as excinfo:
        executors.run_sweep(spec, store=store)
    (path, message), *others = excinfo.value.problems
    assert not others
    assert path == "model.patch_size"
    assert "divisor of the image height 8 and width 8" in message
    assert message.endswith("(trial 1: model.patch_size=3)")
    assert store.list_runs() == []


# The refusals under JAX run in one fresh JAX interpreter (`refused_under_jax`): each
# command is `keras-seq`'s `main` there, its stdout and stderr captured apart.
JAX_CHILD = """
import contextlib, io, json, sys
from builder_ui import cli

results = {}
for name, argv in json.loads(sys.argv[1]).items():
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv)
        except SystemExit as exit:
            code = exit.code
    results[name] = {"returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()}
print(json.dumps(results))
"""
TRANSFORMER = Path(__file__).resolve().parents[3] / "examples" / "specs" / "transformer.yaml"


@pytest.fixture(scope="module")
def refused_under_jax(tmp_path_factory):
    """What `keras-seq` said to each refused command under JAX, and each one's run store."""
    directory = tmp_path_factory.mktemp("jax")
    mirrored = directory / "sweep.yaml"
    document = {**SWEEP, "train": {**SWEEP["train"], "distribution": "mirrored"}}
    mirrored.write_text(yaml.safe_dump(document), encoding="utf-8")
    runs = {name: directory / name / "runs" for name in ("mirrored", "train", "sweep")}
    float16 = ["--set", "train.mixed_precision=mixed_float16", "--set", "train.epochs=1"]
    commands = {
        "mirrored": ["sweep", str(mirrored), "--runs", str(runs["mirrored"])],
        "train": ["train", str(TRANSFORMER), "--runs", str(runs["train"]), *float16],
        "sweep": [
            *["sweep", str(TRANSFORMER), "--runs", str(runs["sweep"]), *float16],
            *["--set", "sweep={method: grid, parameters: {train.seed: [0, 1]}}"],
        ],
    }
    env = {**os.environ, "KERAS_BACKEND": "jax", "TF_CPP_MIN_LOG_LEVEL": "3"}
    argv = [sys.executable, "-c", JAX_CHILD, json.dumps(commands)]
    child = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert child.returncode == 0, child.stderr[-3000:]
    results = json.loads(child.stdout.strip().splitlines()[-1])
    return {name: (results[name], runs[name]) for name in commands}


@pytest.mark.large
def test_a_distribution_the_backend_cannot_run_names_its_field_once(refused_under_jax):
    # `mirrored` is TensorFlow's; under JAX each trial is refused, the path printed once.
    result, runs = refused_under_jax["mirrored"]
    assert result["returncode"] == 2, result["stderr"]
    lines = [line for line in result["stderr"].splitlines() if "train.distribution" in line]
    assert lines and all(line.count("train.distribution") == 1 for line in lines), lines
    assert not runs.exists()


def test_executor_options_are_checked_before_anything_runs(tmp_path):
    store = RunStore(tmp_path)
    with pytest.raises(ValueError, match="expected one of \\['local', 'ray'\\], got 'dask'"):
        executors.run_sweep(SWEEP, store=store, executor="dask")
    with pytest.raises(ValueError, match="`address`: it is for the 'ray' executor only"):
        executors.run_sweep(SWEEP, store=store, address="auto")
    with pytest.raises(ValueError, match="`storage`: it is for the 'ray' executor only"):
        executors.run_sweep(SWEEP, store=store, storage=str(tmp_path / "bucket"))
    assert store.list_runs() == []


def test_a_storage_uri_that_cannot_be_written_is_refused_before_any_run(tmp_path):
    pytest.importorskip("ray")
    blocker = tmp_path / "a-file"
    blocker.write_text("kept")
    store = RunStore(tmp_path / "runs")
    uri = (blocker / "bucket").as_uri()
    with pytest.raises(ValueError, match="`storage`: cannot write under") as raised:
        executors.run_sweep(SWEEP, store=store, executor="ray", storage=uri)
    assert repr(uri) in str(raised.value)
    assert store.list_runs() == [] and not (tmp_path / "runs").exists()
    assert blocker.read_text() == "kept"


def test_missing_ray_names_the_extra_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` sees when it is absent
    store = RunStore(tmp_path)
    with pytest.raises(executors.ExecutorError, match=r'pip install "keras-seq\[ray\]"'):
        executors.run_sweep(SWEEP, store=store, executor="ray")
    assert store.list_runs() == []


def test_missing_optuna_names_the_search_extra_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "optuna", None)  # what `import optuna` sees when absent
    with pytest.raises(ModuleNotFoundError) as raised:
        search.import_optuna()
    assert str(raised.value) == (
        "A sweep with method 'bayes' or a scheduler needs Optuna: pip install \"keras-seq[search]\""
    )


@pytest.mark.large
def test_ray_runs_each_trial_in_a_worker_on_its_train_backend_into_one_store(local_ray, tmp_path):
    # Keras fixes its backend at import; a trial asking for another one than the driver's
    # gets Ray workers started on it (a runtime environment of its own). That a trial trains
    # on JAX or PyTorch under a TensorFlow driver also shows it trained in a worker.
    store = RunStore(tmp_path / "runs")
    ended = []

    class Ended:
        def on_run_end(self, record):
            ended.append(record.id)

    document = {**SWEEP, "sweep": {"parameters": {"train.backend": ["jax", "torch", "auto"]}}}
    result = executors.run_sweep(document, store=store, executor="ray", callbacks=[Ended()])
    records = store.list_runs(sweep_id=result.sweep_id, history=True)
    assert [record.status for record in records] == ["done"] * 3, [r.error for r in records]
    assert sorted(record.id for record in records) == sorted(result.run_ids) == sorted(ended)
    assert [record.name for record in records] == ["cells-0", "cells-1", "cells-2"]
    assert [record.spec["train"]["backend"] for record in records] == ["jax", "torch", "auto"]
    driver = os.environ.get("KERAS_BACKEND", "tensorflow")
    assert [record.backend for record in records] == ["jax", "torch", driver]
    for record in records:
        assert [row.epoch for row in record.history] == [1]
        assert record.pid == os.getpid()  # the driver owns the run and writes its record
        assert (store.artifact_dir(record.id) / "model.keras").is_file()
        assert record.device and record.params
    assert local_ray.is_initialized()  # an instance started by the caller is left running


@pytest.mark.large
def test_the_ray_how_to_starts_its_own_instance_despite_a_stale_cluster_file(
    ray_tmpdir, tmp_path, monkeypatch
):
    # The how-to's "On one machine" block (docs/how-to/ray_search.md), run as written: two
    # trials on a new local instance, which it asserts end `done`. Here it runs beside what a
    # `ray start` whose processes are gone leaves behind: the address of a dead cluster. A
    # plain ray.init() tried to join it and refused num_cpus ("When connecting to an existing
    # cluster, num_cpus and num_gpus must not be provided").
    ray = pytest.importorskip("ray")
    (block,) = [
        b for b in snippets.section_blocks(HOW_TO, "On one machine") if b.language == "python"
    ]
    ray_tmpdir.mkdir(parents=True)
    (ray_tmpdir / "ray_current_cluster").write_text("127.0.0.1:1\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    exec(compile(block.code, block.where, "exec"), {"__name__": "how_to"})
    assert not ray.is_initialized()  # the instance it started is stopped at the end
    # Its session lived in the test's Ray directory, not the machine's.
    assert any(path.name.startswith("session_") for path in ray_tmpdir.iterdir())


@pytest.mark.large
@pytest.mark.parametrize("command", ["train", "sweep"])
def test_float16_on_jax_without_a_gpu_is_refused_before_any_run(refused_under_jax, command):
    # XLA's CPU dot_general has no float16 form: the Transformer preset trained one epoch under
    # mixed_float16 on JAX and then failed. Now it is refused with the field, nothing written.
    result, runs = refused_under_jax[command]
    if result["returncode"] != 2 and "GPU" in result["stdout"]:
        pytest.skip("this machine has a GPU for JAX: float16 is allowed there")
    assert result["returncode"] == 2, result["stderr"]
    assert "train.mixed_precision" in result["stderr"]
    assert "mixed_bfloat16" in result["stderr"]  # what to use instead
    assert not runs.exists()
