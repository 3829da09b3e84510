"""Sweeps: grid and random expansion into validated specs, refusals with the trial's values."""

from __future__ import annotations

import copy
import itertools

import pytest
import yaml

from builder_ui.builders import load_spec
from builder_ui.builders.sweeps import expand, grid_size, sweep_id, trials
from builder_ui.specs import SpecError

BASE = {
    "version": 1,
    "name": "cells",
    "task": {"type": "long_lag", "lag": 10, "n": 100},
    "model": {"type": "sequence_classifier", "encoder": {"type": "rnn", "units": 8}},
    "train": {"epochs": 2, "learning_rate": 0.01},
}

CELLS = ["simple", "gru", "lstm"]
RATES = [0.001, 0.01]


def with_sweep(**sweep):
    return {**copy.deepcopy(BASE), "sweep": sweep}


def test_grid_expands_every_combination_first_parameter_slowest():
    spec = load_spec(
        with_sweep(parameters={"model.encoder.cell": CELLS, "train.learning_rate": RATES})
    )
    specs = expand(spec)
    assert grid_size(spec) == 6
    assert [(s.model.encoder.cell, s.train.learning_rate) for s in specs] == list(
        itertools.product(CELLS, RATES)
    )
    assert [s.name for s in specs] == [f"cells-{i}" for i in range(6)]
    for trial in specs:
        assert trial.sweep is None
        # Everything the sweep does not touch is the base spec's.
        assert trial.model.encoder.units == 8 and trial.task == spec.task
        assert trial.train.epochs == 2


def test_trials_carry_their_values():
    spec = load_spec(with_sweep(parameters={"task.lag": [5, 7], "train.seed": [0, 1, 2]}))
    found = trials(spec)
    assert [t.index for t in found] == list(range(6))
    assert found[4].values == {"task.lag": 7, "train.seed": 1}
    assert (found[4].spec.task.lag, found[4].spec.train.seed) == (7, 1)


def test_a_sweep_may_replace_a_whole_nested_section():
    transformer = {"type": "transformer", "embed_dim": 8, "num_heads": 2}
    spec = load_spec(
        with_sweep(parameters={"model.encoder": [{"type": "rnn", "cell": "gru"}, transformer]})
    )
    first, second = expand(spec)
    assert first.model.encoder.cell == "gru"
    assert second.model.encoder.type == "transformer" and second.model.encoder.num_heads == 2


def test_random_draws_distinct_combinations_reproducibly():
    parameters = {"model.encoder.cell": CELLS, "train.learning_rate": RATES, "train.seed": [0, 1]}
    spec = load_spec(with_sweep(method="random", num_trials=5, seed=7, parameters=parameters))
    drawn = [tuple(t.values.values()) for t in trials(spec)]
    assert len(drawn) == 5 and len(set(drawn)) == 5
    assert set(drawn) <= set(itertools.product(*parameters.values()))
    assert drawn == [tuple(t.values.values()) for t in trials(spec)]
    draws = {
        tuple(
            tuple(t.values.values())
            for t in trials(
                load_spec(with_sweep(method="random", num_trials=5, seed=s, parameters=parameters))
            )
        )
        for s in range(5)
    }
    assert len(draws) > 1  # the seed matters


def test_random_cannot_draw_more_trials_than_combinations():
    with pytest.raises(SpecError) as excinfo:
        load_spec(with_sweep(method="random", num_trials=7, parameters={"train.seed": [0, 1]}))
    assert str(excinfo.value) == (
        "sweep.num_trials: expected at most 2 (the number of distinct combinations), got 7"
    )


def test_grid_refuses_num_trials():
    with pytest.raises(SpecError, match=r"^sweep\.num_trials: only used when method is 'random'"):
        load_spec(with_sweep(num_trials=3, parameters={"train.seed": [0, 1]}))


def test_unknown_field_paths_are_refused_when_the_spec_loads():
    with pytest.raises(SpecError) as excinfo:
        load_spec(
            with_sweep(
                parameters={
                    "model.units": [8],
                    "model.encoder.heads": [2],
                    "name": ["x"],
                    "train.seed": [0],
                }
            )
        )
    assert str(excinfo.value).splitlines() == [
        "sweep.parameters[\"model.units\"]: unknown field path 'model.units'; model has "
        "fields: embedding_dim, encoder, mask_zero, type",
        "sweep.parameters[\"model.encoder.heads\"]: unknown field path 'model.encoder.heads'; "
        "model.encoder has fields: bidirectional, cell, cell_activation, dropout, forget_gate, "
        "forget_gate_bias, gate_activation, input_gate_bias, num_layers, output_activation, "
        "output_gate_bias, peephole, truncated_gradients, type, units",
        'sweep.parameters["name"]: expected a field path under task, model, train (e.g. '
        "train.learning_rate), got 'name'",
    ]


def test_empty_value_lists_are_refused():
    with pytest.raises(SpecError, match=r'sweep\.parameters\["train\.seed"\]: expected at least 1'):
        load_spec(with_sweep(parameters={"train.seed": []}))


def test_invalid_combinations_are_reported_with_the_trials_values():
    data = copy.deepcopy(BASE)
    data["model"]["encoder"] = {"type": "transformer", "embed_dim": 12, "num_heads": 2}
    data["sweep"] = {"parameters": {"model.encoder.num_heads": [2, 5], "train.seed": [0, 1]}}
    spec = load_spec(data)
    with pytest.raises(SpecError) as excinfo:
        expand(spec)
    message = (
        "model.encoder.num_heads: expected a divisor of embedding_dim=12 (each head gets "
        "embedding_dim / num_heads features), got 5"
    )
    assert str(excinfo.value).splitlines() == [
        f"{message} (trial 2: model.encoder.num_heads=5, train.seed=0)",
        f"{message} (trial 3: model.encoder.num_heads=5, train.seed=1)",
    ]


def test_a_trial_whose_model_cannot_read_its_task_is_reported():
    tasks = [{"type": "long_lag", "lag": 5, "n": 100}, {"type": "digits"}]
    spec = load_spec(with_sweep(parameters={"task": tasks}))
    with pytest.raises(SpecError) as excinfo:
        expand(spec)
    (line,) = str(excinfo.value).splitlines()
    assert line.startswith("model.type: 'sequence_classifier' reads tokens or numeric inputs")
    assert line.endswith("(trial 1: task={'type': 'digits'})")


def test_sweeping_a_type_alone_keeps_the_other_fields_and_says_which_do_not_fit():
    spec = load_spec(with_sweep(parameters={"task.type": ["long_lag", "digits"]}))
    with pytest.raises(SpecError) as excinfo:
        expand(spec)
    first = str(excinfo.value).splitlines()[0]
    assert first == (
        "task.lag: unknown field; allowed fields: seed, type, validation_split "
        "(trial 1: task.type='digits')"
    )


def test_invalid_values_are_reported_with_their_path():
    spec = load_spec(with_sweep(parameters={"train.learning_rate": [0.01, -1]}))
    with pytest.raises(SpecError) as excinfo:
        expand(spec)
    assert str(excinfo.value) == (
        "train.learning_rate: expected a number > 0, got -1 (trial 1: train.learning_rate=-1)"
    )


def test_too_many_combinations_are_refused_before_expanding():
    values = list(range(101))
    with pytest.raises(SpecError, match=r"^sweep\.parameters: 1,030,301 combinations, more than"):
        load_spec(
            with_sweep(parameters={"train.seed": values, "task.lag": values, "task.n": values})
        )


def test_a_spec_without_sweep_is_its_own_single_trial():
    spec = load_spec(BASE)
    assert expand(spec) == [spec]


def test_sweep_id_is_stable_and_depends_on_the_whole_spec():
    data = with_sweep(parameters={"train.seed": [0, 1]})
    spec = load_spec(data)
    reordered = yaml.safe_dump(dict(reversed(list(data.items()))))
    assert sweep_id(spec) == sweep_id(load_spec(reordered))
    assert len(sweep_id(spec)) == 12 and int(sweep_id(spec), 16) >= 0
    changed = with_sweep(parameters={"train.seed": [0, 2]})
    assert sweep_id(load_spec(changed)) != sweep_id(spec)


def test_example_sweep_expands_to_eight_trials():
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "examples/specs/recurrent_cells_sweep.yaml"
    specs = expand(load_spec(path))
    assert len(specs) == 8
    assert {s.model.encoder.cell for s in specs} == {"simple", "gru", "lstm", "cec_lstm"}
