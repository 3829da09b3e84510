"""`train.schedule` and `train.label_smoothing`: validation messages by field, shorthand, sweeps.

No Keras model is built here: these checks need neither a model nor data.
"""

from __future__ import annotations

import copy

import jsonschema
import pytest

from builder_ui.builders import expand, json_schema, load_spec
from builder_ui.specs import SpecError

BASE = {
    "version": 2,
    "name": "recipe",
    "task": {"type": "long_lag", "lag": 10, "n": 100},
    "model": {"type": "sequence_classifier", "encoder": {"type": "rnn", "units": 8}},
    "train": {"epochs": 10},
}


def with_train(**train):
    data = copy.deepcopy(BASE)
    data["train"].update(train)
    return data


def refusal(data):
    with pytest.raises(SpecError) as error:
        load_spec(data)
    return str(error.value)


def test_the_defaults_are_a_constant_rate_and_no_smoothing():
    train = load_spec(BASE).train
    assert train.schedule.type == "constant" and train.label_smoothing == 0.0
    assert load_spec(BASE).to_dict()["train"]["schedule"] == {"type": "constant"}


def test_a_schedule_can_be_given_by_its_type_alone():
    train = load_spec(with_train(schedule="cosine")).train
    assert (train.schedule.type, train.schedule.warmup_steps, train.schedule.alpha) == (
        "cosine",
        0,
        0.0,
    )
    paper = load_spec(with_train(schedule="inverse_sqrt")).train.schedule
    assert (paper.warmup_steps, paper.d_model, paper.scale) == (4000, None, 1.0)


@pytest.mark.parametrize(
    ("train", "message"),
    [
        (
            {"schedule": {"type": "inverse_sqrt", "warmup_steps": 0}},
            "train.schedule.warmup_steps: expected an integer ≥ 1, got 0",
        ),
        (
            {"schedule": {"type": "cosine", "warmup_steps": -1}},
            "train.schedule.warmup_steps: expected an integer ≥ 0, got -1",
        ),
        (
            {"schedule": {"type": "cosine", "alpha": 1.5}},
            "train.schedule.alpha: expected a number ≤ 1, got 1.5",
        ),
        (
            {"schedule": {"type": "step", "every_epochs": 2, "factor": 1.0}},
            "train.schedule.factor: expected a number < 1, got 1.0",
        ),
        (
            {"schedule": {"type": "cosine", "warmup": 5}},
            "train.schedule.warmup: unknown field; allowed fields: alpha, type, warmup_steps",
        ),
        (
            {"schedule": {"type": "linear"}},
            "train.schedule: unknown type 'linear'; expected one of 'constant', 'cosine', "
            "'step', 'inverse_sqrt'",
        ),
        ({"label_smoothing": 1.0}, "train.label_smoothing: expected a number < 1, got 1.0"),
        ({"label_smoothing": -0.1}, "train.label_smoothing: expected a number ≥ 0, got -0.1"),
        (
            {"schedule": "inverse_sqrt", "learning_rate": 0.01},
            "train.learning_rate: not used with schedule inverse_sqrt, whose rate is scale · "
            "d_model^-0.5 · min(step^-0.5, step · warmup_steps^-1.5); leave it at 0.001 and "
            "set train.schedule.scale instead, got 0.01",
        ),
        (
            {"schedule": "step"},
            "train.schedule.every_epochs: required, or give schedule.boundaries instead: when "
            "the learning rate decays (every N epochs, or after the epochs listed)",
        ),
        (
            {"schedule": {"type": "step", "every_epochs": 2, "boundaries": [4]}},
            "train.schedule.boundaries: give every_epochs or boundaries, not both "
            "(every_epochs is 2)",
        ),
        (
            {"schedule": {"type": "step", "boundaries": [4, 4]}},
            "train.schedule.boundaries: expected increasing epochs, got 4 after 4",
        ),
        (
            {"schedule": {"type": "step", "boundaries": [3, 10]}},
            "train.schedule.boundaries: expected epochs before the last one (train.epochs is "
            "10; a decay after it never happens), got 10",
        ),
        (
            {"schedule": {"type": "step", "every_epochs": 12}},
            "train.schedule.every_epochs: expected epochs before the last one (train.epochs is "
            "10; a decay after it never happens), got 12",
        ),
    ],
)
def test_a_bad_recipe_is_refused_naming_the_field_and_the_value(train, message):
    assert refusal(with_train(**train)) == message


def test_inverse_sqrt_specs_survive_their_own_round_trip():
    """`to_dict` writes the default learning rate, which the inverse_sqrt check accepts."""
    spec = load_spec(with_train(schedule={"type": "inverse_sqrt", "warmup_steps": 50}))
    assert load_spec(spec.to_dict()) == spec


def test_a_sweep_varies_label_smoothing_and_the_schedule():
    data = with_train()
    data["sweep"] = {
        "parameters": {
            "train.label_smoothing": [0.0, 0.1],
            "train.schedule": ["constant", {"type": "step", "every_epochs": 3}],
        }
    }
    specs = expand(load_spec(data))
    assert [(s.train.label_smoothing, s.train.schedule.type) for s in specs] == [
        (0.0, "constant"),
        (0.0, "step"),
        (0.1, "constant"),
        (0.1, "step"),
    ]


def test_a_sweep_reaches_a_schedule_field_only_when_the_schedule_has_it():
    data = with_train(schedule={"type": "cosine"})
    data["sweep"] = {"parameters": {"train.schedule.warmup_steps": [0, 5]}}
    assert [s.train.schedule.warmup_steps for s in expand(load_spec(data))] == [0, 5]
    data["train"]["schedule"] = {"type": "constant"}
    assert refusal(data) == (
        'sweep.parameters["train.schedule.warmup_steps"]: unknown field path '
        "'train.schedule.warmup_steps'; train.schedule has fields: type"
    )


def test_a_sweep_trial_with_a_bad_combination_is_refused():
    data = with_train(schedule="inverse_sqrt")
    data["sweep"] = {"parameters": {"train.learning_rate": [0.001, 0.01]}}
    spec = load_spec(data)  # each trial is validated when the sweep expands
    with pytest.raises(SpecError) as error:
        expand(spec)
    assert "train.learning_rate: not used with schedule inverse_sqrt" in str(error.value)
    assert "0.01" in str(error.value)


def test_the_json_schema_describes_every_schedule():
    schema = json_schema()
    names = set(schema["$defs"])
    assert {"ConstantSchedule", "CosineSchedule", "StepSchedule", "InverseSqrtSchedule"} <= names
    document = load_spec(
        with_train(schedule={"type": "step", "boundaries": [2, 5]}, label_smoothing=0.1)
    ).to_dict()
    jsonschema.validate(document, schema)
