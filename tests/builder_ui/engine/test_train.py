"""The experiment engine trains real tiny models and records them in a real run store."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import keras
import numpy as np
import pytest

from builder_ui import builders, engine
from builder_ui.builders import prepare
from builder_ui.engine import artifacts, devices
from builder_ui.engine.progress import ProgressCallback, QueueProgress, TerminalProgress
from builder_ui.engine.records import RunRecord
from builder_ui.engine.store import RunStore
from builder_ui.specs import SpecError

pytestmark = pytest.mark.large

ROOT = Path(__file__).resolve().parents[3]

# 240 training and 60 validation sequences of 6 one-hot steps; 8 batches per epoch.
TINY = {
    "version": 1,
    "name": "tiny-lstm",
    "task": {"type": "long_lag", "lag": 6, "n": 300, "num_distractors": 4},
    "model": {
        "type": "sequence_classifier",
        "encoder": {"type": "rnn", "cell": "lstm", "units": 8},
    },
    "train": {"epochs": 2, "batch_size": 32, "learning_rate": 0.01, "seed": 3},
}
TINY_STEPS = 8
TINY_TRAIN = 240

# SGD with the largest learning rate a spec allows, on an unclipped simple RNN
# regressing sums: the loss overflows within the first epoch.
DIVERGING = {
    "version": 1,
    "name": "diverging",
    "task": {"type": "adding_problem", "length": 5, "n": 200},
    "model": {
        "type": "sequence_regressor",
        "encoder": {"type": "rnn", "cell": "simple", "units": 8},
    },
    "train": {"epochs": 3, "batch_size": 16, "optimizer": "sgd", "learning_rate": 10.0},
}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One tiny run, trained once for the tests that read its results (and what a
    `TerminalProgress` printed of it, on a stream that is not a terminal)."""
    store = RunStore(tmp_path_factory.mktemp("runs"))
    events = QueueProgress()
    printed = io.StringIO()
    record = engine.run(TINY, store=store, callbacks=[events, TerminalProgress(stream=printed)])
    drained = []
    while not events.events.empty():
        drained.append(events.events.get())
    yield store, record, drained, printed.getvalue()
    store.close()


def test_tiny_run_is_recorded_done_with_history_and_metrics(trained):
    store, record, _, _ = trained
    assert record.status == "done", record.error
    assert record.error is None
    assert record.name == "tiny-lstm" and record.spec["task"]["lag"] == 6
    assert record.backend == keras.backend.backend()
    assert record.device == devices.detect().name
    assert record.precision == "float32"  # mixed_precision: auto on a CPU
    # LSTM(8) on 6 one-hot features: 4·8·(6 + 8 + 1) weights, then a Dense(2) head.
    assert record.params == 4 * 8 * (6 + 8 + 1) + (8 * 2 + 2)
    assert [row.epoch for row in record.history] == [1, 2]
    for row in record.history:
        assert set(row.metrics) == {"loss", "accuracy", "val_loss", "val_accuracy"}
        assert row.seconds > 0
    assert set(record.metrics) == {"loss", "accuracy"}
    assert record.started <= record.finished
    fit_seconds = sum(row.seconds for row in record.history)
    assert record.wall_time >= fit_seconds
    # examples/s is training examples × epochs over the time fit took (≥ the epochs' time).
    assert 0 < record.examples_per_sec <= TINY_TRAIN * 2 / fit_seconds
    assert store.get(record.id) == record  # what was returned is what is stored
    assert not (store.artifact_dir(record.id) / engine.BACKUP_DIR).exists()


def test_saved_model_loads_safely_and_scores_the_recorded_metrics(trained):
    store, record, _, _ = trained
    path = artifacts.artifact_path(store, record.id, engine.MODEL_FILE)
    assert path == store.artifact_dir(record.id) / "model.keras"
    assert sorted(p.name for p in path.parent.iterdir()) == ["model.keras"]  # no temp left
    model = keras.saving.load_model(path, safe_mode=True)
    assert model.count_params() == record.params
    prepared = prepare(record.spec)
    probabilities = model.predict(prepared.x_val, verbose=0)
    accuracy = np.mean(np.argmax(probabilities, axis=-1) == prepared.y_val)
    assert accuracy == pytest.approx(record.metrics["accuracy"], abs=1e-6)
    # The final loss (taken from fit's last validation pass) is the cross-entropy of these
    # probabilities, computed here with NumPy.
    picked = probabilities[np.arange(len(prepared.y_val)), prepared.y_val]
    assert -np.mean(np.log(picked)) == pytest.approx(record.metrics["loss"], rel=1e-5)
    assert record.metrics == {
        "loss": record.history[-1].metrics["val_loss"],
        "accuracy": record.history[-1].metrics["val_accuracy"],
    }


def test_progress_callbacks_see_every_batch_and_epoch_in_order(trained):
    _, record, events, _ = trained
    kinds = [kind for kind, _ in events]
    per_epoch = ["epoch_begin"] + ["batch_end"] * TINY_STEPS + ["epoch_end"]
    assert kinds == ["run_start", *per_epoch, *per_epoch, "run_end"]
    start = events[0][1]
    assert (start["epochs"], start["steps"]) == (2, TINY_STEPS)
    assert start["record"].status == "running" and start["record"].id == record.id
    assert [p["step"] for k, p in events if k == "batch_end"] == list(range(1, 9)) * 2
    assert [p["epoch"] for k, p in events if k == "epoch_begin"] == [1, 2]
    ends = [p for k, p in events if k == "epoch_end"]
    assert [p["logs"] for p in ends] == [row.metrics for row in record.history]
    assert events[-1][1]["record"] == record


def test_same_spec_gives_the_same_history_on_cpu(trained):
    """Seeds make a CPU run reproducible; also runs a queued run by its id, as a sweep does."""
    store, record, _, _ = trained
    if devices.detect().is_gpu:
        pytest.skip("bit-for-bit reproducibility is promised on the CPU only")
    queued = store.create_run(TINY, name="again")
    again = engine.run(None, store=store, run_id=queued)
    assert again.id == queued and again.status == "done"
    assert [row.metrics for row in again.history] == [row.metrics for row in record.history]
    assert again.metrics == record.metrics


def test_terminal_progress_prints_epochs_and_the_result(trained):
    _, record, _, printed = trained
    out = printed.splitlines()
    assert out[0].startswith(f"Run {record.id} (tiny-lstm) on ")
    assert out[1].startswith("Epoch 1/2 ") and "val_accuracy" in out[1]
    assert out[2].startswith("Epoch 2/2 ") and "val_accuracy" in out[2]
    assert out[3].startswith(f"Run {record.id}: done")
    assert "examples/s" in out[3]


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_terminal_bar_is_redrawn_in_place_on_a_terminal():
    out = _Terminal()
    bar = TerminalProgress(stream=out, width=10)
    record = RunRecord(
        id="r1", name="n", sweep_id=None, spec={}, status="running", created=0.0, params=1234
    )
    bar.on_run_start(record, epochs=3, steps=4)
    bar.on_epoch_begin(2, 3)
    bar.on_batch_end(2, 4, {"loss": 0.5})
    bar.on_batch_end(4, 4, {"loss": 0.25})
    bar.on_epoch_end(2, {"loss": 0.25, "val_loss": 0.3})
    text = out.getvalue()
    assert text.startswith("Run r1 (n) on 1,234 parameters\n")
    assert "\rEpoch 2/3 [#####.....] 2/4  loss 0.5" in text
    assert "\rEpoch 2/3 [##########] 4/4  loss 0.25" in text
    assert text.rstrip().endswith("loss 0.25  val_loss 0.3")


@pytest.mark.backend_agnostic  # JAX too: stopping mid-epoch must not break `fit` there
def test_diverging_run_is_recorded_diverged_without_a_model(tmp_path):
    store = RunStore(tmp_path)
    record = engine.run(DIVERGING, store=store)
    assert record.status == "diverged"
    # Where it blows up depends on the backend's arithmetic (epoch 1 on TensorFlow, 2 on JAX).
    found = re.fullmatch(
        r"The loss became NaN or infinite at epoch (\d), batch (\d+); no model was saved\.",
        record.error,
    )
    assert found, record.error
    assert record.metrics == {}
    assert engine.MODEL_FILE not in record.artifacts
    assert not (store.artifact_dir(record.id) / engine.MODEL_FILE).exists()
    assert not (store.artifact_dir(record.id) / engine.BACKUP_DIR).exists()
    # Training stopped in that epoch, which is kept, its non-finite loss stored as null.
    epoch = int(found[1])
    assert [row.epoch for row in record.history] == list(range(1, epoch + 1))
    assert record.history[-1].metrics["loss"] is None


class _CancelAt(ProgressCallback):
    """Sets the cancel event at one batch, as the app's Stop button would."""

    def __init__(self, event, epoch, step):
        self.event, self.epoch, self.step = event, epoch, step
        self.current = 0
        self.steps_seen = []

    def on_epoch_begin(self, epoch, epochs):
        self.current = epoch

    def on_batch_end(self, step, steps, logs):
        self.steps_seen.append((self.current, step))
        if (self.current, step) == (self.epoch, self.step):
            self.event.set()


def test_cancel_stops_after_the_current_batch(tmp_path):
    store = RunStore(tmp_path)
    cancel = threading.Event()
    watcher = _CancelAt(cancel, epoch=2, step=3)
    spec = {**TINY, "train": {**TINY["train"], "epochs": 4}}
    record = engine.run(spec, store=store, callbacks=[watcher], cancel=cancel)
    assert record.status == "cancelled"
    assert watcher.steps_seen[-1] == (2, 3)  # no batch after the one that cancelled
    assert [row.epoch for row in record.history] == [1]  # the cut-short epoch is not recorded
    assert not (store.artifact_dir(record.id) / engine.MODEL_FILE).exists()


class _RaiseAt(keras.callbacks.Callback):
    """Raises an exception when an epoch begins, as a crash in the middle of a run."""

    def __init__(self, epoch, error):
        super().__init__()
        self.epoch, self.error = epoch, error

    def on_epoch_begin(self, epoch, logs=None):
        if epoch + 1 == self.epoch:
            raise self.error


def test_an_error_during_training_is_recorded_failed_with_its_traceback(tmp_path):
    store = RunStore(tmp_path)
    spec = {**TINY, "train": {**TINY["train"], "epochs": 3}}
    record = engine.run(spec, store=store, callbacks=[_RaiseAt(2, RuntimeError("disk on fire"))])
    assert record.status == "failed"
    assert record.error == "RuntimeError: disk on fire"
    assert [row.epoch for row in record.history] == [1]
    traceback_text = artifacts.artifact_path(store, record.id, engine.TRACEBACK_FILE).read_text()
    assert "RuntimeError: disk on fire" in traceback_text and "model.fit" in traceback_text
    assert not (store.artifact_dir(record.id) / engine.MODEL_FILE).exists()
    assert not (store.artifact_dir(record.id) / engine.BACKUP_DIR).exists()


def test_keyboard_interrupt_leaves_a_resumable_run(tmp_path):
    store = RunStore(tmp_path)
    spec = {**TINY, "train": {**TINY["train"], "epochs": 3}}
    with pytest.raises(KeyboardInterrupt):
        engine.run(spec, store=store, callbacks=[_RaiseAt(3, KeyboardInterrupt())])
    (record,) = store.list_runs(history=True)
    assert record.status == "interrupted" and "KeyboardInterrupt" in record.error
    assert [row.epoch for row in record.history] == [1, 2]
    with pytest.raises(ValueError, match="pass resume=True"):
        engine.run(None, store=store, run_id=record.id)
    resumed = engine.run(None, store=store, run_id=record.id, resume=True)
    assert resumed.status == "done"
    assert [row.epoch for row in resumed.history] == [1, 2, 3]
    assert resumed.history[:2] == record.history  # epochs 1 and 2 were not trained again


def test_a_run_killed_during_its_first_checkpoint_resumes_from_epoch_one(tmp_path):
    store = RunStore(tmp_path)
    spec = {**TINY, "train": {**TINY["train"], "epochs": 2}}
    with pytest.raises(KeyboardInterrupt):
        engine.run(spec, store=store, callbacks=[_RaiseAt(1, KeyboardInterrupt())])
    (record,) = store.list_runs()
    backup = engine.artifact_dir(store, record.id) / engine.BACKUP_DIR
    backup.mkdir(parents=True, exist_ok=True)
    # What a kill halfway through writing the first checkpoint leaves: a truncated
    # HDF5 file and no previous checkpoint to fall back to.
    (backup / "latest.weights.h5").write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 40)
    resumed = engine.run(None, store=store, run_id=record.id, resume=True)
    assert resumed.status == "done", resumed.error
    assert [row.epoch for row in resumed.history] == [1, 2]


def test_invalid_specs_write_nothing_to_the_store(tmp_path):
    store = RunStore(tmp_path)
    bad_units = {**TINY, "model": {**TINY["model"], "encoder": {"type": "rnn", "units": -3}}}
    with pytest.raises(SpecError, match=r"model\.encoder\.units"):
        engine.run(bad_units, store=store)
    wrong_model = {**DIVERGING, "model": {**TINY["model"]}}  # classifier on a regression task
    with pytest.raises(SpecError, match=r"model\.type"):
        engine.run(wrong_model, store=store)
    if importlib_util_find("tensorboard") is None:
        with pytest.raises(SpecError, match=r"train\.tensorboard.*tensorboard"):
            engine.run({**TINY, "train": {**TINY["train"], "tensorboard": True}}, store=store)
    assert store.list_runs() == []
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("runs.sqlite")) == []


def test_tensorboard_logs_are_written_when_asked_for(tmp_path):
    pytest.importorskip("tensorboard")
    store = RunStore(tmp_path)
    spec = {**TINY, "train": {**TINY["train"], "epochs": 1, "tensorboard": True}}
    record = engine.run(spec, store=store)
    assert record.status == "done"
    logs = engine.artifact_dir(store, record.id) / engine.TENSORBOARD_DIR
    events = sorted(path.parent.name for path in logs.rglob("events.out.tfevents.*"))
    assert events == ["train", "validation"], events


def importlib_util_find(name):
    import importlib.util

    return importlib.util.find_spec(name)


def test_a_queued_run_with_an_invalid_spec_is_marked_failed(tmp_path):
    store = RunStore(tmp_path)
    run_id = store.create_run({**TINY, "train": {**TINY["train"], "epochs": 0}})
    with pytest.raises(SpecError, match=r"train\.epochs"):
        engine.run(None, store=store, run_id=run_id)
    record = store.get(run_id)
    assert record.status == "failed" and "train.epochs" in record.error
    with pytest.raises(ValueError, match="'failed', expected 'queued'"):
        engine.run(None, store=store, run_id=run_id)
    with pytest.raises(ValueError, match="only an interrupted run can be resumed"):
        engine.run(None, store=store, run_id=run_id, resume=True)


def test_run_trains_in_its_precision_and_restores_the_callers_policy(tmp_path):
    store = RunStore(tmp_path)
    keras.mixed_precision.set_dtype_policy("mixed_float16")
    try:
        spec = {
            **TINY,
            "train": {**TINY["train"], "epochs": 1, "mixed_precision": "mixed_bfloat16"},
        }
        record = engine.run(spec, store=store)
        assert keras.mixed_precision.dtype_policy().name == "mixed_float16"
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
    assert record.status == "done" and record.precision == "mixed_bfloat16"
    model = keras.saving.load_model(artifacts.artifact_path(store, record.id, engine.MODEL_FILE))
    policies = {layer.name: layer.dtype_policy.name for layer in model.layers[1:]}
    assert policies == {"lstm_0": "mixed_bfloat16", "classifier": "float32"}


def test_precision_and_distribution_rules():
    cpu = devices.DeviceInfo("tensorflow", "CPU", "CPU")
    gpu = devices.DeviceInfo("tensorflow", "GPU", "NVIDIA H200", 1)
    assert devices.resolve_precision("auto", cpu) == "float32"
    assert devices.resolve_precision("auto", gpu) == "mixed_float16"
    assert devices.resolve_precision("mixed_bfloat16", cpu) == "mixed_bfloat16"
    with pytest.raises(devices.DeviceError, match=r"mixed_precision.*'half'"):
        devices.resolve_precision("half", cpu)
    with pytest.raises(devices.DeviceError, match=r"train\.distribution.*'jax'") as refused:
        devices.check_distribution("mirrored", "jax")
    # A device refusal is a spec problem at its field, reported as any other bad field is.
    assert isinstance(refused.value, SpecError)
    assert [path for path, _ in refused.value.problems] == ["train.distribution"]
    devices.check_distribution(None, "jax")
    devices.check_distribution("mirrored", "tensorflow")


@pytest.mark.backend_agnostic
def test_mirrored_on_another_backend_is_refused_before_anything_is_written(tmp_path):
    if keras.backend.backend() == "tensorflow":
        pytest.skip("runs under the other backends")
    store = RunStore(tmp_path)
    spec = {**TINY, "train": {**TINY["train"], "distribution": "mirrored"}}
    with pytest.raises(SpecError, match=r"^train\.distribution: 'mirrored' .*TensorFlow backend"):
        engine.run(spec, store=store)
    assert store.list_runs() == []


MIRRORED_CHILD = textwrap.dedent(
    """
    import json, sys
    import tensorflow as tf

    # Two logical CPUs: must be set before TensorFlow initialises its devices.
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

    import keras
    from builder_ui import engine
    from builder_ui.engine.store import RunStore
    from builder_ui.engine.records import RunRecord

    class Replicas(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            self.count = self.model.distribute_strategy.num_replicas_in_sync

    spec = json.loads(sys.argv[2])
    replicas = Replicas()
    record = engine.run(spec, store=RunStore(sys.argv[1]), callbacks=[replicas])
    print(json.dumps({"status": record.status, "error": record.error, "device": record.device,
                      "epochs": len(record.history), "replicas": replicas.count}))
    """
)


def test_mirrored_strategy_trains_over_two_logical_cpus(tmp_path):
    if keras.backend.backend() != "tensorflow":
        pytest.skip("MirroredStrategy needs the TensorFlow backend")
    spec = {**TINY, "name": "mirrored", "train": {**TINY["train"], "distribution": "mirrored"}}
    env = {**os.environ, "KERAS_BACKEND": "tensorflow", "CUDA_VISIBLE_DEVICES": ""}
    result = subprocess.run(
        [sys.executable, "-c", MIRRORED_CHILD, str(tmp_path), json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome == {
        "status": "done",
        "error": None,
        "device": "CPU x2 (mirrored)",
        "epochs": 2,
        "replicas": 2,
    }


def test_a_run_stored_before_fields_were_added_still_matches_its_spec(tmp_path):
    """A stored spec lacks fields added later; read again, it gets their defaults and matches."""
    store = RunStore(tmp_path)
    full = builders.load_spec(TINY).to_dict()
    older = {**full, "train": dict(full["train"])}
    for added in ("label_smoothing", "schedule"):  # fields newer than the stored run
        del older["train"][added]
    run_id = store.create_run(older)
    assert "schedule" not in store.get(run_id, history=False).spec["train"]
    record = engine.run(TINY, store=store, run_id=run_id)
    assert record.status == "done"
    # A real difference is still refused, naming the run.
    changed = {**TINY, "train": {**TINY["train"], "epochs": 3}}
    other = store.create_run(older)
    with pytest.raises(SpecError, match=f"differs from the one stored with run {other!r}"):
        engine.run(changed, store=store, run_id=other)
