"""`train.backend`: the Keras backend a run asks for, chosen before Keras loads.

Keras fixes its backend at its first import (from `KERAS_BACKEND`), so the choice is made
by whoever starts the training process: `keras-seq train` (tested here in a fresh process,
as a user runs it), the app's slot processes (`test_queue.py`) and Ray's workers
(`test_executors.py`). In a process that already runs Keras on another backend the run is
refused, naming the field, and nothing is stored.
"""

from __future__ import annotations

import os
import subprocess
import sys

import keras
import pytest
import yaml

from builder_ui.builders import load_spec
from builder_ui.engine import devices, executors, train
from builder_ui.engine.store import RunStore

SPEC = {
    "version": 2,
    "name": "tiny",
    "task": {"type": "long_lag", "lag": 5, "n": 80, "num_distractors": 3},
    "model": {"type": "sequence_classifier", "encoder": {"type": "rnn", "units": 4}},
    "train": {"epochs": 1, "batch_size": 40, "seed": 0},
}


def _other_backend():
    return next(b for b in devices.BACKENDS if b != keras.backend.backend())


def test_auto_asks_for_nothing_and_a_named_backend_for_itself():
    spec = load_spec(SPEC)
    assert spec.train.backend == "auto"
    assert devices.wanted_backend(spec.train) is None
    assert devices.backend_environment(spec.train) == {}
    jax = load_spec({**SPEC, "train": {**SPEC["train"], "backend": "jax"}})
    assert devices.backend_environment(jax.train) == {"KERAS_BACKEND": "jax"}


def test_an_unknown_backend_is_refused_naming_the_field():
    with pytest.raises(ValueError, match=r"train\.backend") as raised:
        load_spec({**SPEC, "train": {**SPEC["train"], "backend": "mxnet"}})
    assert "mxnet" in str(raised.value)


@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_a_backend_that_is_not_installed_names_its_extra(monkeypatch, backend):
    spec = load_spec({**SPEC, "train": {**SPEC["train"], "backend": backend}})
    monkeypatch.setitem(sys.modules, backend, None)  # what find_spec sees when it is absent
    with pytest.raises(devices.DeviceError, match=r"train\.backend") as raised:
        devices.check_setup(spec.train)
    message = str(raised.value)
    assert f"{backend!r} is not installed here" in message
    assert message.endswith(f'pip install "keras-seq[{backend}]"')


def test_a_run_on_another_backend_than_this_processes_is_refused_and_nothing_stored(tmp_path):
    other = _other_backend()
    spec = load_spec({**SPEC, "train": {**SPEC["train"], "backend": other}})
    store = RunStore(tmp_path / "runs")
    with pytest.raises(ValueError, match=r"train\.backend") as raised:
        train.run(spec, store=store)
    assert f"{other!r} asked" in str(raised.value)
    assert f"KERAS_BACKEND={other}" in str(raised.value)
    assert store.list_runs() == [] and not (tmp_path / "runs").exists()


def test_a_local_sweep_over_backends_is_refused_before_any_run(tmp_path):
    document = {
        **SPEC,
        "sweep": {"parameters": {"train.backend": ["tensorflow", "jax"]}},
    }
    store = RunStore(tmp_path / "runs")
    with pytest.raises(ValueError, match=r"train\.backend: the trials of a local sweep") as raised:
        executors.run_sweep(document, store=store)
    assert "'ray' executor" in str(raised.value)
    assert store.list_runs() == []


@pytest.mark.large
@pytest.mark.parametrize("backend", ["jax", "torch"])
def test_keras_seq_train_starts_keras_on_the_specs_backend(tmp_path, backend):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(SPEC), encoding="utf-8")
    env = {**os.environ, "KERAS_BACKEND": "tensorflow", "TF_CPP_MIN_LOG_LEVEL": "3"}
    argv = [sys.executable, "-m", "builder_ui.cli", "train", str(path)]
    argv += ["--set", f"train.backend={backend}", "--runs", str(tmp_path / "runs")]
    result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    with RunStore(tmp_path / "runs") as store:
        (record,) = store.list_runs()
    assert record.status == "done" and record.backend == backend
