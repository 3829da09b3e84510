"""The training recipe of `train`: schedules and label smoothing made from the spec and the data.

Every expected learning rate is computed here with NumPy from the formulas in
the spec reference (not from Keras' schedules), and compared with the rate the
optimiser of a really trained model holds after N updates.
"""

from __future__ import annotations

import copy
import math

import keras
import numpy as np
import pytest

from builder_ui.builders import prepare
from builder_ui.builders.prepared import make_learning_rate
from builder_ui.specs import SpecError

# 240 training and 60 validation sequences; batches of 32: 8 updates per epoch.
TINY = {
    "version": 2,
    "name": "recipe",
    "task": {"type": "long_lag", "lag": 6, "n": 300, "num_distractors": 4},
    "model": {"type": "sequence_classifier", "encoder": {"type": "rnn", "units": 8}},
    "train": {"epochs": 4, "batch_size": 32, "learning_rate": 0.01, "seed": 2},
}
STEPS = 8
TRANSFORMER = {"type": "transformer", "embedding_dim": 16, "num_heads": 2, "ff_dim": 16}


def with_train(base=TINY, model=None, **train):
    spec = copy.deepcopy(base)
    spec["train"].update(train)
    if model is not None:
        spec["model"] = model
    return spec


def numpy_cosine(s, rate, total, warmup, alpha):
    """Linear warm-up from 0 over `warmup` updates, then cosine decay to alpha·rate."""
    if warmup and s < warmup:
        return rate * s / warmup
    span = total - warmup
    t = min(s - warmup, span)
    return rate * (alpha + (1 - alpha) * 0.5 * (1 + math.cos(math.pi * t / span)))


def numpy_step(s, rate, factor, decay_epochs, steps):
    """rate · factor^(decay points passed); update s (from 0) belongs to epoch s // steps + 1."""
    epoch = s // steps + 1
    return rate * factor ** sum(1 for point in decay_epochs if epoch > point)


def numpy_inverse_sqrt(s, d_model, warmup, scale):
    n = s + 1  # the paper's step_num
    return scale * d_model**-0.5 * min(n**-0.5, n * warmup**-1.5)


def rate_at(schedule, step):
    return float(keras.ops.convert_to_numpy(schedule(step)))


SCHEDULES = {
    "cosine_warmup": (
        {"type": "cosine", "warmup_steps": 5, "alpha": 0.1},
        lambda s: numpy_cosine(s, 0.01, 4 * STEPS, 5, 0.1),
    ),
    "cosine": ({"type": "cosine"}, lambda s: numpy_cosine(s, 0.01, 4 * STEPS, 0, 0.0)),
    "step_every": (
        {"type": "step", "every_epochs": 1, "factor": 0.5},
        lambda s: numpy_step(s, 0.01, 0.5, [1, 2, 3], STEPS),
    ),
    "step_boundaries": (
        {"type": "step", "boundaries": [1, 3], "factor": 0.2},
        lambda s: numpy_step(s, 0.01, 0.2, [1, 3], STEPS),
    ),
}


@pytest.mark.parametrize("name", SCHEDULES)
def test_each_schedule_follows_its_formula_over_the_whole_run(name):
    schedule, formula = SCHEDULES[name]
    prepared = prepare(with_train(schedule=schedule))
    assert prepared.steps_per_epoch == STEPS
    keras_schedule = prepared.learning_rate()
    for step in range(4 * STEPS):
        # float32 schedules against float64 formulas.
        assert rate_at(keras_schedule, step) == pytest.approx(formula(step), rel=1e-5, abs=1e-9)


def test_a_step_decay_starts_with_the_first_update_after_its_epoch():
    prepared = prepare(with_train(schedule={"type": "step", "boundaries": [2], "factor": 0.1}))
    schedule = prepared.learning_rate()
    last_of_epoch_2, first_of_epoch_3 = 2 * STEPS - 1, 2 * STEPS
    assert rate_at(schedule, last_of_epoch_2) == pytest.approx(0.01, rel=1e-6)
    assert rate_at(schedule, first_of_epoch_3) == pytest.approx(0.001, rel=1e-5)


def test_the_constant_schedule_is_the_plain_learning_rate():
    prepared = prepare(TINY)
    assert prepared.learning_rate() == 0.01
    optimizer = prepared.build().optimizer
    assert float(keras.ops.convert_to_numpy(optimizer.learning_rate)) == pytest.approx(0.01)


@pytest.mark.large
@pytest.mark.parametrize("name", ["cosine_warmup", "step_boundaries"])
def test_a_built_model_trains_with_the_rate_of_its_schedule(name):
    schedule, formula = SCHEDULES[name]
    prepared = prepare(with_train(schedule=schedule))
    model = prepared.build()
    model.fit(prepared.x_train, prepared.y_train, batch_size=32, epochs=3, verbose=0)
    optimizer = model.optimizer
    updates = int(keras.ops.convert_to_numpy(optimizer.iterations))
    assert updates == 3 * STEPS
    # The rate the optimiser uses next: the schedule at the updates done so far.
    rate = float(keras.ops.convert_to_numpy(optimizer.learning_rate))
    assert rate == pytest.approx(formula(updates), rel=1e-5)


def test_inverse_sqrt_takes_the_transformer_width_as_d_model():
    model = {"type": "sequence_classifier", "encoder": TRANSFORMER}
    spec = with_train(model=model, schedule={"type": "inverse_sqrt", "warmup_steps": 6})
    spec["train"].pop("learning_rate")
    schedule = prepare(spec).learning_rate()
    assert schedule.get_config() == {"d_model": 16, "warmup_steps": 6, "scale": 1.0}
    for step in (0, 5, 6, 20):
        assert rate_at(schedule, step) == pytest.approx(
            numpy_inverse_sqrt(step, 16, 6, 1.0), rel=1e-5
        )


def test_inverse_sqrt_needs_a_d_model_for_a_recurrent_model():
    spec = with_train(schedule={"type": "inverse_sqrt", "warmup_steps": 6})
    spec["train"].pop("learning_rate")
    with pytest.raises(SpecError) as error:
        prepare(spec)
    assert error.value.problems[0][0] == "train.schedule.d_model"
    assert "model type 'sequence_classifier'" in str(error.value)
    spec["train"]["schedule"]["d_model"] = 8
    assert prepare(spec).learning_rate().get_config()["d_model"] == 8


@pytest.mark.parametrize("schedule", ["cosine", "inverse_sqrt"])
def test_a_warmup_as_long_as_the_run_is_refused_with_the_run_s_updates(schedule):
    spec = with_train(schedule={"type": schedule, "warmup_steps": 4 * STEPS, "d_model": 8})
    if schedule == "cosine":
        del spec["train"]["schedule"]["d_model"]
    else:
        spec["train"].pop("learning_rate")
    with pytest.raises(SpecError) as error:
        prepare(spec)
    assert str(error.value) == (
        "train.schedule.warmup_steps: expected fewer than the run's 32 updates "
        "(train.epochs=4 × 8 per epoch, 240 examples in batches of 32), so that the warm-up "
        "ends before training does; got 32"
    )
    spec["train"]["schedule"]["warmup_steps"] = 4 * STEPS - 1
    prepare(spec)


def test_label_smoothing_reaches_the_loss_of_every_class_and_token_model():
    classifier = prepare(with_train(label_smoothing=0.1)).build()
    assert type(classifier.loss).__name__ == "SmoothedSparseCategoricalCrossentropy"
    assert classifier.loss.label_smoothing == 0.1
    translation = {
        "version": 2,
        "name": "s2s",
        "task": {"type": "reverse", "length": 5, "n": 60, "vocab_size": 4},
        "model": {"type": "seq2seq", "architecture": TRANSFORMER},
        "train": {"label_smoothing": 0.2},
    }
    seq2seq = prepare(translation).build()
    assert type(seq2seq.loss).__name__ == "MaskedSparseCategoricalCrossentropy"
    assert seq2seq.loss.label_smoothing == 0.2
    assert prepare(TINY).build().loss == "sparse_categorical_crossentropy"  # ε = 0: unchanged


@pytest.mark.parametrize(
    ("task", "model", "kind"),
    [
        (
            {"type": "adding_problem", "length": 5, "n": 100},
            {"type": "sequence_regressor"},
            "regression",
        ),
        ({"type": "sort_numbers", "length": 4, "n": 100}, {"type": "pointer_network"}, "pointer"),
    ],
)
def test_label_smoothing_is_refused_for_targets_without_a_one_hot(task, model, kind):
    spec = {**with_train(label_smoothing=0.1), "task": task, "model": model}
    with pytest.raises(SpecError) as error:
        prepare(spec)
    assert error.value.problems == [
        (
            "train.label_smoothing",
            f"only for class or token targets (a one-hot target to smooth); task "
            f"{task['type']!r} has {kind} targets, so expected 0, got 0.1",
        )
    ]


def test_make_learning_rate_refuses_a_schedule_without_the_steps_it_needs():
    prepared = prepare(with_train(schedule="cosine"))
    with pytest.raises(ValueError, match="needs `steps_per_epoch`"):
        make_learning_rate(prepared.spec.train)
    assert np.isclose(
        rate_at(make_learning_rate(prepared.spec.train, steps_per_epoch=2), 4), 0.005, rtol=1e-5
    )
