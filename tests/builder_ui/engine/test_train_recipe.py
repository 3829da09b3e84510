"""The engine trains with `train.schedule` and `train.label_smoothing` and records the rate.

Real tiny runs in a real run store. Expected learning rates are the spec
reference's formulas in NumPy; the reported loss is checked against NumPy's
smoothed cross-entropy of the saved model's own predictions.
"""

from __future__ import annotations

import copy
import math

import keras
import numpy as np
import pytest

from builder_ui import engine
from builder_ui.builders import prepare, presets
from builder_ui.engine.store import RunStore

pytestmark = pytest.mark.large

# 240 training and 60 validation sequences; batches of 32: 8 updates per epoch.
TINY = {
    "version": 2,
    "name": "recipe",
    "task": {"type": "long_lag", "lag": 6, "n": 300, "num_distractors": 4},
    "model": {"type": "sequence_classifier", "encoder": {"type": "rnn", "units": 8}},
    "train": {
        "epochs": 3,
        "batch_size": 32,
        "learning_rate": 0.01,
        "seed": 3,
        "label_smoothing": 0.1,
        "schedule": {"type": "step", "every_epochs": 1, "factor": 0.5},
    },
}
STEPS = 8


def numpy_smoothed(targets, probabilities, epsilon):
    """−Σ_k q_k log p_k, q = (1 − ε)·onehot(y) + ε/K, averaged over the examples."""
    k = probabilities.shape[-1]
    q = (1 - epsilon) * np.eye(k)[targets] + epsilon / k
    return float(-(q * np.log(probabilities)).sum(-1).mean())


def numpy_inverse_sqrt(step_num, d_model, warmup):
    return d_model**-0.5 * min(step_num**-0.5, step_num * warmup**-1.5)


@pytest.fixture
def store(tmp_path):
    with RunStore(tmp_path / "runs") as runs:
        yield runs


def test_a_step_schedule_is_recorded_per_epoch_and_the_loss_includes_the_smoothing(store):
    record = engine.run(TINY, store=store)
    assert record.status == "done", record.error
    history = store.get(record.id).history
    # Epoch e's last update is number e·8 − 1 (from 0): e − 1 decays of 0.5 so far.
    rates = [row.metrics["learning_rate"] for row in history]
    np.testing.assert_allclose(rates, [0.01, 0.005, 0.0025], rtol=1e-6)  # float32 rates

    model = keras.saving.load_model(
        engine.artifact_dir(store, record.id) / engine.MODEL_FILE, safe_mode=True
    )
    assert model.loss.label_smoothing == 0.1
    prepared = prepare(TINY)  # the same seeded data
    probabilities = keras.ops.convert_to_numpy(model.predict(prepared.x_val, verbose=0))
    y_val = np.asarray(prepared.y_val).reshape(-1)
    smoothed = numpy_smoothed(y_val, probabilities.astype("float64"), 0.1)
    # The reported validation loss is the smoothed one (float32 batches: rel 1e-4) ...
    assert record.metrics["loss"] == pytest.approx(smoothed, rel=1e-4)
    picked = probabilities[np.arange(len(y_val)), y_val].astype("float64")
    # Not the plain negative log-likelihood: off by more than ten times the tolerance above.
    assert abs(record.metrics["loss"] - float(-np.log(picked).mean())) > 1e-3
    # ... and accuracy is still the share of argmax hits.
    accuracy = float((probabilities.argmax(-1) == y_val).mean())
    assert record.metrics["accuracy"] == pytest.approx(accuracy, abs=1e-6)


def test_a_constant_rate_adds_nothing_to_the_history(store):
    spec = copy.deepcopy(TINY)
    spec["train"].update(epochs=1, schedule="constant", label_smoothing=0.0)
    record = engine.run(spec, store=store)
    assert record.status == "done", record.error
    assert "learning_rate" not in store.get(record.id).history[0].metrics


def test_the_transformer_preset_trains_with_the_paper_recipe(store):
    spec = presets.spec("transformer")
    spec["task"].update(n=300, lag=6)
    spec["train"].update(
        epochs=2,
        label_smoothing=0.1,
        schedule={"type": "inverse_sqrt", "warmup_steps": 12},
    )
    assert spec["train"]["learning_rate"] == 0.001  # the default: inverse_sqrt sets the rate
    record = engine.run(spec, store=store)
    assert record.status == "done", record.error
    history = store.get(record.id).history
    d_model = spec["model"]["encoder"]["embedding_dim"]
    # The rate of epoch e's last update, the paper's step_num e·8 (the peak is at 12).
    expected = [numpy_inverse_sqrt(epoch * STEPS, d_model, 12) for epoch in (1, 2)]
    np.testing.assert_allclose(
        [row.metrics["learning_rate"] for row in history], expected, rtol=1e-5
    )
    assert all(math.isfinite(row.metrics["loss"]) for row in history)
    assert 0.0 <= record.metrics["accuracy"] <= 1.0


def test_the_transformer_translation_preset_trains_with_the_paper_recipe(store):
    spec = presets.spec("transformer_translation")
    spec["task"].update(n=120, max_len=6)
    spec["train"].pop("learning_rate")
    spec["train"].update(
        epochs=1, label_smoothing=0.1, schedule={"type": "inverse_sqrt", "warmup_steps": 1}
    )
    record = engine.run(spec, store=store)
    assert record.status == "done", record.error
    (row,) = store.get(record.id).history
    steps = math.ceil(prepare(spec).num_train / spec["train"]["batch_size"])
    d_model = spec["model"]["architecture"]["embedding_dim"]
    assert row.metrics["learning_rate"] == pytest.approx(
        numpy_inverse_sqrt(steps, d_model, 1), rel=1e-5
    )
    assert {"bleu", "token_accuracy", "loss"} <= set(record.metrics)
