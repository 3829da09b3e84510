"""Sweep ranges: a parameter given as `{low, high, log, type}` instead of a list of values.

The spec's refusals (each naming the field and the value), `random`'s draws (within the
range, reproducible with the seed, log-uniform with `log`, whole numbers with both ends
reached for an `int` range, never a combination twice), the distinct-combination count that
bounds `num_trials`, and the combinations `bayes` checks before it trains (each range at
its ends). No training.
"""

from __future__ import annotations

import copy
import json
import math
import random

import jsonschema
import pytest

from builder_ui.builders import json_schema, load_spec
from builder_ui.builders.sweeps import describe_space, grid_size, sweep_id, trials
from builder_ui.specs import SpecError, dump_spec
from builder_ui.specs.experiment import ParameterRange
from builder_ui.specs.sweep_space import draw_value, random_combinations

BASE = {
    "version": 2,
    "name": "ranges",
    "task": {"type": "long_lag", "lag": 5, "n": 100},
    "model": {"type": "sequence_classifier", "encoder": {"type": "rnn", "cell": "gru", "units": 8}},
    "train": {"epochs": 2, "learning_rate": 0.01},
}
LOG_RATE = {"low": 1e-4, "high": 1e-1, "log": True}


def with_sweep(**sweep):
    return {**copy.deepcopy(BASE), "sweep": sweep}


def problems_of(document) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as excinfo:
        load_spec(document)
    return excinfo.value.problems


# --- the spec ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (LOG_RATE, ParameterRange(low=1e-4, high=1e-1, log=True, type="float")),
        ({"low": 8, "high": 64}, ParameterRange(low=8, high=64, log=False, type="int")),
        ({"low": 8.0, "high": 64}, ParameterRange(low=8.0, high=64.0, log=False, type="float")),
        ({"low": 8.0, "high": 64.0, "type": "int"}, ParameterRange(low=8, high=64, type="int")),
        ({"low": 1, "high": 2, "type": "float"}, ParameterRange(low=1.0, high=2.0, type="float")),
    ],
)
def test_a_range_is_read_its_type_following_its_ends(given, expected):
    spec = load_spec(
        with_sweep(method="random", num_trials=2, parameters={"train.learning_rate": given})
    )
    found = spec.sweep.parameters["train.learning_rate"]
    assert found == expected
    assert type(found.low) is type(expected.low) and type(found.high) is type(expected.high)
    # The validated spec written out reads back the same (a stored sweep resumes from it).
    assert load_spec(spec.to_dict()) == spec


KEY = 'sweep.parameters["train.learning_rate"]'


@pytest.mark.parametrize(
    ("given", "path", "message"),
    [
        ({"low": 0.1, "high": 0.01}, f"{KEY}.high", "expected a number above low (0.1), got 0.01"),
        ({"low": 0.1, "high": 0.1}, f"{KEY}.high", "expected a number above low (0.1), got 0.1"),
        (
            {"low": 0, "high": 1, "log": True},
            f"{KEY}.low",
            "a log range needs low above 0, got 0; use log: false or a positive low",
        ),
        (
            {"low": 1, "high": 2, "step": 1},
            f"{KEY}.step",
            "unknown field; allowed fields: high, log, low, type",
        ),
        ({"low": "small", "high": 1}, f"{KEY}.low", "expected a finite number, got 'small'"),
        ({"low": 0.0, "high": math.inf}, f"{KEY}.high", "expected a finite number, got inf"),
        ({"low": True, "high": 2}, f"{KEY}.low", "expected a finite number, got true"),
        (
            {"low": 1.5, "high": 3, "type": "int"},
            f"{KEY}.low",
            "expected a whole number for a range of type 'int', got 1.5",
        ),
        ({"low": 1, "high": 3, "type": "double"}, f"{KEY}.type", "expected one of 'float' or "),
        ({"low": 1}, f"{KEY}.high", "required field is missing"),
        ({"low": 1, "high": 2, "log": "yes"}, f"{KEY}.log", "expected true or false, got 'yes'"),
        (
            0.01,
            KEY,
            "expected a list of values ([0.001, 0.01]) or a range ({low: 0.001, high: 0.1, "
            "log: true}), got 0.01",
        ),
    ],
)
def test_a_bad_range_is_named_by_its_field_and_value(given, path, message):
    problems = problems_of(
        with_sweep(method="random", num_trials=2, parameters={"train.learning_rate": given})
    )
    assert len(problems) == 1, problems
    assert problems[0][0] == path
    assert problems[0][1].startswith(message), problems[0][1]


def test_a_grid_refuses_a_range_and_says_what_to_do_instead():
    problems = problems_of(with_sweep(parameters={"train.learning_rate": LOG_RATE}))
    assert problems == [
        (
            KEY,
            "method grid tries every value, so it needs a list of values, got a range from "
            "0.0001 to 0.1; use method random or bayes (with num_trials) to draw from the "
            "range, or list the values to try (e.g. [0.0001, 0.1])",
        )
    ]


def test_num_trials_is_bounded_by_the_distinct_combinations_of_lists_and_int_ranges():
    finite = {"model.encoder.units": {"low": 2, "high": 4}, "model.encoder.cell": ["gru", "lstm"]}
    problems = problems_of(with_sweep(method="bayes", num_trials=7, parameters=finite))
    assert problems == [
        ("sweep.num_trials", "expected at most 6 (the number of distinct combinations), got 7")
    ]
    six = load_spec(with_sweep(method="random", num_trials=6, parameters=finite))
    assert grid_size(six) == 6
    # A float range has endlessly many values: any number of trials.
    endless = load_spec(
        with_sweep(
            method="random",
            num_trials=500,
            parameters={**finite, "train.learning_rate": LOG_RATE},
        )
    )
    assert grid_size(endless) == math.inf


def test_the_json_schema_takes_a_range_and_refuses_an_unknown_key():
    validator = jsonschema.Draft202012Validator(json_schema())
    spec = load_spec(
        with_sweep(method="random", num_trials=3, parameters={"train.learning_rate": LOG_RATE})
    )
    validator.validate(json.loads(dump_spec(spec, "json")))
    bad = with_sweep(
        method="random", num_trials=3, parameters={"train.learning_rate": {**LOG_RATE, "step": 2}}
    )
    assert list(validator.iter_errors(bad))


# --- random's draws ----------------------------------------------------------------------------


def test_random_draws_within_the_range_and_the_seed_fixes_the_draws():
    def drawn(seed: int) -> list[float]:
        spec = load_spec(
            with_sweep(
                method="random",
                num_trials=20,
                seed=seed,
                parameters={"train.learning_rate": LOG_RATE},
            )
        )
        found = trials(spec)
        assert [t.spec.train.learning_rate for t in found] == [
            t.values["train.learning_rate"] for t in found
        ]
        return [t.values["train.learning_rate"] for t in found]

    first = drawn(3)
    assert all(isinstance(value, float) and 1e-4 <= value <= 1e-1 for value in first)
    assert len(set(first)) == 20
    assert drawn(3) == first  # the same seed, the same draws
    assert drawn(4) != first


def test_a_log_range_is_drawn_uniformly_in_the_logarithm_and_a_linear_one_in_the_value():
    # 4,000 draws: the standard error of a share is at most 0.008, so 0.05 is over six of them.
    rng = random.Random(0)
    log_draws = [draw_value(rng, ParameterRange(**LOG_RATE)) for _ in range(4000)]
    # Log-uniform from 1e-4 to 1e-1: each decade holds a third of the draws. (Uniform, the
    # first two decades would hold 1 %.)
    for low, high in ((1e-4, 1e-3), (1e-3, 1e-2), (1e-2, 1e-1)):
        share = sum(low <= value < high for value in log_draws) / len(log_draws)
        assert share == pytest.approx(1 / 3, abs=0.05), (low, high)
    linear = [draw_value(rng, ParameterRange(low=0.0, high=0.5)) for _ in range(4000)]
    assert min(linear) >= 0.0 and max(linear) <= 0.5
    assert sum(value < 0.25 for value in linear) / len(linear) == pytest.approx(0.5, abs=0.05)


def test_an_int_range_gives_whole_numbers_with_both_ends_included():
    rng = random.Random(1)
    small = ParameterRange(low=2, high=4)
    assert {draw_value(rng, small) for _ in range(200)} == {2, 3, 4}
    logged = ParameterRange(low=1, high=1000, log=True)
    values = [draw_value(rng, logged) for _ in range(2000)]
    assert all(type(value) is int and 1 <= value <= 1000 for value in values)
    assert 1 in values  # [0.5, 1.5) is 14 % of the log-width of [0.5, 1000.5)
    # Small values are as frequent as a log scale says: 1 to 9 take about a third (log 9.5 /
    # log 1000.5 of the width from 0.5), not the 0.9 % of a uniform draw.
    assert sum(value < 10 for value in values) / len(values) == pytest.approx(
        math.log(9.5 / 0.5) / math.log(1000.5 / 0.5), abs=0.05
    )


def test_random_never_draws_a_combination_twice_even_when_it_must_draw_them_all():
    # Six combinations, six trials: every one, each once, whatever the draws repeat.
    parameters = {
        "model.encoder.units": {"low": 2, "high": 4},
        "model.encoder.cell": ["gru", "lstm"],
    }
    spec = load_spec(with_sweep(method="random", num_trials=6, seed=5, parameters=parameters))
    combos = [
        (t.values["model.encoder.units"], t.values["model.encoder.cell"]) for t in trials(spec)
    ]
    assert sorted(combos) == sorted((u, c) for u in (2, 3, 4) for c in ("gru", "lstm"))
    # A log range's top values come about once in 2,000 draws: after 100 repeats in a row an
    # untried value is drawn uniformly instead, so all 300 still come, each once.
    every = random_combinations({"x": ParameterRange(low=1, high=300, log=True)}, 300, seed=0)
    assert sorted(values["x"] for values in every) == list(range(1, 301))


# --- what bayes checks ---------------------------------------------------------------------------


def test_bayes_checks_each_list_combination_with_the_ranges_at_their_ends():
    parameters = {
        "train.learning_rate": LOG_RATE,
        "model.encoder.cell": ["gru", "lstm"],
        "model.encoder.units": {"low": 4, "high": 16},
    }
    spec = load_spec(with_sweep(method="bayes", num_trials=5, parameters=parameters))
    assert [t.values for t in trials(spec)] == [
        {"train.learning_rate": 1e-4, "model.encoder.cell": "gru", "model.encoder.units": 4},
        {"train.learning_rate": 1e-1, "model.encoder.cell": "gru", "model.encoder.units": 16},
        {"train.learning_rate": 1e-4, "model.encoder.cell": "lstm", "model.encoder.units": 4},
        {"train.learning_rate": 1e-1, "model.encoder.cell": "lstm", "model.encoder.units": 16},
    ]
    assert describe_space(spec) == "a continuous space (4 checked: each range at its ends)"
    lists = load_spec(
        with_sweep(method="bayes", num_trials=2, parameters={"model.encoder.cell": ["gru", "lstm"]})
    )
    assert describe_space(lists) == "2 combinations"


def test_a_range_whose_end_the_field_refuses_is_reported_with_that_trials_values():
    spec = load_spec(
        with_sweep(
            method="bayes",
            num_trials=3,
            parameters={"model.encoder.dropout": {"low": 0.0, "high": 1.5}},
        )
    )
    with pytest.raises(SpecError) as excinfo:
        trials(spec)
    (line,) = str(excinfo.value).splitlines()
    assert line.startswith("model.encoder.dropout: expected a number")
    assert line.endswith("(trial 1: model.encoder.dropout=1.5)")


def test_the_sweep_id_of_a_range_is_stable_and_follows_its_bounds():
    document = with_sweep(
        method="random", num_trials=3, parameters={"train.learning_rate": LOG_RATE}
    )
    assert sweep_id(load_spec(document)) == sweep_id(load_spec(copy.deepcopy(document)))
    moved = copy.deepcopy(document)
    moved["sweep"]["parameters"]["train.learning_rate"]["high"] = 0.2
    assert sweep_id(load_spec(moved)) != sweep_id(load_spec(document))
