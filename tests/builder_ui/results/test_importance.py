"""A sweep's parameter importance (fANOVA through Optuna): the library call and the CLI.

The stores are written as a sweep writes them (its spec recorded, one run per trial with
the trial's validated spec and its epochs), with made-up metrics whose cause is known: the
validation loss is set by the learning rate alone, up to noise far smaller than its effect.
So the learning rate must take nearly all the importance and the units nearly none, whatever
fANOVA's forest does inside; a store whose trials reached one value has nothing to compare.
"""

from __future__ import annotations

import math
import random

import pytest

from builder_ui import cli
from builder_ui.builders import load_spec, sweeps
from builder_ui.engine.store import RunStore
from builder_ui.results.importance import ImportanceError, sweep_importance
from builder_ui.specs.sweep_space import sweep_id

pytest.importorskip("optuna")

SWEEP = {
    "version": 2,
    "name": "lr-units",
    "task": {"type": "long_lag", "lag": 5, "n": 80, "num_distractors": 4},
    "model": {"type": "sequence_classifier", "encoder": {"type": "rnn", "cell": "gru", "units": 4}},
    "train": {"epochs": 2, "batch_size": 16, "learning_rate": 0.01, "seed": 0},
    "sweep": {
        "method": "grid",
        "metric": "val_loss",
        "parameters": {
            "train.learning_rate": [0.0001, 0.001, 0.01, 0.1],
            "model.encoder.units": [4, 8, 16],
        },
    },
}


def record_sweep(store: RunStore, loss_of, document=SWEEP) -> str:
    """Every trial of `document` (SWEEP) as a finished run whose epochs reach `loss_of(values)`."""
    spec = load_spec(document)
    sweep = sweep_id(spec)
    store.record_sweep(sweep, spec)
    for trial in sweeps.trials(spec):
        run_id = store.create_run(trial.spec.to_dict(), sweep_id=sweep, status="running")
        loss = loss_of(trial.values)
        for epoch in (1, 2):
            store.append_epoch(run_id, epoch, {"loss": loss + 0.1, "val_loss": loss})
        store.finish(run_id, "done", metrics={"loss": loss})
    return sweep


def learning_rate_alone(values) -> float:
    """The loss of a learning rate, best at 0.01, plus noise 1,000 times smaller."""
    noise = random.Random(repr(sorted(values.items()))).random() * 1e-3
    return abs(math.log10(values["train.learning_rate"]) + 2) + noise


def test_the_parameter_that_sets_the_metric_takes_nearly_all_the_importance(tmp_path):
    with RunStore(tmp_path / "runs") as store:
        sweep = record_sweep(store, learning_rate_alone)
        found = sweep_importance(store, sweep)
    assert found.metric == "val_loss" and found.trials == 12
    assert list(found.shares) == ["train.learning_rate", "model.encoder.units"]
    assert found.shares["train.learning_rate"] > 0.95  # the units' effect is the noise alone
    assert math.isclose(sum(found.shares.values()), 1.0, rel_tol=1e-9)  # shares, normalised


def test_a_sweep_of_ranges_is_measured_from_the_values_its_runs_drew(tmp_path):
    # 32 trials drawn from a log range of rates and a range of units: each run's values are
    # read from its spec (a range's values are no candidate's), so fANOVA sees the rates.
    ranged = {
        **SWEEP,
        "sweep": {
            "method": "random",
            "num_trials": 32,
            "seed": 2,
            "metric": "val_loss",
            "parameters": {
                "train.learning_rate": {"low": 1e-4, "high": 1e-1, "log": True},
                "model.encoder.units": {"low": 4, "high": 16},
            },
        },
    }
    with RunStore(tmp_path / "runs") as store:
        sweep = record_sweep(store, learning_rate_alone, ranged)
        found = sweep_importance(store, sweep)
    assert found.trials == 32
    assert list(found.shares) == ["train.learning_rate", "model.encoder.units"]
    # The forest splits a V-shaped loss over a continuous rate: seeds 0 to 3 give the rate
    # 0.92 to 0.96 of the variance (fewer trials, as low as 0.62).
    assert found.shares["train.learning_rate"] > 0.85


def test_keras_seq_runs_importance_prints_each_parameter_largest_first(tmp_path, capsys):
    with RunStore(tmp_path / "runs") as store:
        sweep = record_sweep(store, learning_rate_alone)
    code = cli.main(["runs", "--runs", str(tmp_path / "runs"), "--sweep", sweep, "--importance"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[0] == (
        f"sweep {sweep}: the importance of each parameter for val_loss "
        "(fANOVA over 12 finished trials)"
    )
    assert [line.split()[0] for line in out[1:]] == ["train.learning_rate", "model.encoder.units"]
    assert out[1].split()[1].endswith("%")


def test_trials_that_all_reached_one_value_or_an_unknown_sweep_are_refused_by_name(
    tmp_path, capsys
):
    with RunStore(tmp_path / "runs") as store:
        sweep = record_sweep(store, lambda values: 0.5)
        with pytest.raises(ImportanceError, match="not two that differ: nothing to compare"):
            sweep_importance(store, sweep)
    code = cli.main(["runs", "--runs", str(tmp_path / "runs"), "--sweep", "nope", "--importance"])
    assert code == 2
    assert "no sweep 'nope'" in capsys.readouterr().err
    code = cli.main(["runs", "--runs", str(tmp_path / "runs"), "--importance"])
    assert code == 2
    assert "give it with --sweep ID" in capsys.readouterr().err


def test_the_compare_tabs_chart_draws_a_bar_per_parameter_largest_on_top(tmp_path):
    from builder_ui.app import actions
    from builder_ui.app.actions import compare as compare_actions

    with RunStore(tmp_path / "runs") as store:
        sweep = record_sweep(store, learning_rate_alone)
    ctx = actions.AppContext(tmp_path / "runs", slots=["CPU"])
    try:
        figure = compare_actions.importance_chart(ctx, sweep)
        with pytest.raises(actions.AppError, match="Choose a sweep in the Sweep filter first"):
            compare_actions.importance_chart(ctx, "")
    finally:
        ctx.close()
    (bars,) = figure.data
    assert bars.orientation == "h"
    assert list(bars.y) == ["model.encoder.units", "train.learning_rate"]  # drawn bottom up
    assert bars.x[1] > 95 and math.isclose(sum(bars.x), 100.0, rel_tol=1e-9)
