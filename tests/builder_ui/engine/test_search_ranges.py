"""Ranges in a `bayes` search: Optuna's TPE draws them with `suggest_float` / `suggest_int`,
an `int` range is never chosen twice, and a stopped search's trials are replayed into a new
study with the same distributions, so it goes on where it stood.

The sampler is asked in-process, told objectives of the values alone (no training); the
searches through the engine (`large`) train the tiny long-lag classifier of test_search.py.
"""

from __future__ import annotations

import pytest

from builder_ui import cli
from builder_ui.builders import load_spec, sweeps
from builder_ui.engine import executors, search
from builder_ui.engine.store import RunStore
from builder_ui.results import compare
from tests.builder_ui.engine.test_search import BASE, _spec
from tests.builder_ui.engine.test_search_resume import _ended_trial, _queued_trial
from tests.builder_ui.engine.test_stopping import kill_sweep_in_its_second_trial

optuna = pytest.importorskip("optuna")

LOG_RATE = {"low": 1e-3, "high": 1e-1, "log": True}
UNITS = {"low": 2, "high": 5}


def _ranged(num_trials: int, seed: int, parameters: dict | None = None):
    """A bayes search, by default of the log range of rates and the range of units."""
    parameters = parameters or {"train.learning_rate": LOG_RATE, "model.encoder.units": UNITS}
    return load_spec(_spec(method="bayes", num_trials=num_trials, seed=seed, parameters=parameters))


def _objective(values) -> float:
    """A made-up loss of the values alone: best at a rate of 0.01 and 4 units."""
    rate = values["train.learning_rate"]
    return abs(rate - 0.01) * 10 + abs(values.get("model.encoder.units", 4) - 4) * 0.1


# --- the sampler -------------------------------------------------------------------------------


def test_the_sampler_draws_each_range_with_its_distribution_and_is_seeded():
    spec = _ranged(num_trials=8, seed=4)

    def sequence():
        study = search.Search(spec.sweep, "val_loss")
        chosen = []
        for _ in range(8):
            trial, values = study.ask()
            chosen.append(values)
            study.tell_value(trial, _objective(values), values)
        return chosen, study.study.trials

    chosen, trials = sequence()
    for values in chosen:
        rate, units = values["train.learning_rate"], values["model.encoder.units"]
        assert isinstance(rate, float) and 1e-3 <= rate <= 1e-1
        assert type(units) is int and 2 <= units <= 5
    assert len({values["train.learning_rate"] for values in chosen}) == 8  # floats: all differ
    distributions = trials[0].distributions
    assert distributions == {
        "train.learning_rate": optuna.distributions.FloatDistribution(1e-3, 1e-1, log=True),
        "model.encoder.units": optuna.distributions.IntDistribution(2, 5, log=False),
    }
    assert all(trial.distributions == distributions for trial in trials)
    assert sequence()[0] == chosen  # the same seed, the same choices


def test_an_int_range_with_few_values_is_never_chosen_twice():
    # Four whole numbers, four trials: TPE repeats itself long before the fourth, each repeat
    # is told the value it reached and asked again, and the last is drawn among the untried.
    units = {"low": 2, "high": 5, "log": True}
    spec = _ranged(num_trials=4, seed=1, parameters={"model.encoder.units": units})
    study = search.Search(spec.sweep, "val_loss")
    chosen = []
    for _ in range(4):
        trial, values = study.ask()
        chosen.append(values["model.encoder.units"])
        study.tell_value(trial, float(values["model.encoder.units"]), values)
    assert sorted(chosen) == [2, 3, 4, 5]
    assert len(study.study.trials) > 4  # repeats were asked, and told, along the way
    assert optuna.distributions.IntDistribution(2, 5, log=True) in [
        trial.distributions["model.encoder.units"] for trial in study.study.trials
    ]


# --- going on after a stop ---------------------------------------------------------------------


def test_a_stopped_range_search_is_replayed_with_the_same_distributions(tmp_path):
    units = {"low": 2, "high": 4}
    spec = _ranged(4, 0, {"train.learning_rate": LOG_RATE, "model.encoder.units": units})
    store = RunStore(tmp_path / "runs")
    ran = [
        {"train.learning_rate": 0.0042, "model.encoder.units": 2},
        {"train.learning_rate": 0.031, "model.encoder.units": 4},
    ]
    records = [
        _ended_trial(store, spec, n, values, [0.6, 0.5 + values["train.learning_rate"]])
        for n, values in enumerate(ran)
    ]
    left = _queued_trial(store, spec, 2, {"train.learning_rate": 0.02, "model.encoder.units": 3})
    # A run of another spec (another seed), and one whose value lies outside the range: no
    # values.
    other = load_spec({**BASE, "train": {**BASE["train"], "seed": 9}})
    stranger = _queued_trial(store, other, 8, {"train.learning_rate": 0.02})
    outside = _queued_trial(store, spec, 9, {"train.learning_rate": 0.5, "model.encoder.units": 3})
    candidates = sweeps.trials(spec)  # the ranges at their ends
    found = search.trial_values(candidates, [*records, left, stranger, outside], spec.sweep)
    assert found == [*ran, {"train.learning_rate": 0.02, "model.encoder.units": 3}, None, None]
    # Without the sweep, a range's values cannot be told from the candidates' ends.
    assert search.trial_values(candidates, records) == [None, None]

    study = search.Search(spec.sweep, "val_loss")
    for record, values in zip(records, found[:2], strict=True):
        study.replay(record, values)
    resumed = study.resume(left, found[2])
    replayed = study.study.trials
    for trial, values in zip(replayed, [*ran, found[2]], strict=True):
        assert trial.params == values  # each trial's own values, as numbers
        assert trial.distributions == {
            "train.learning_rate": optuna.distributions.FloatDistribution(1e-3, 1e-1, log=True),
            "model.encoder.units": optuna.distributions.IntDistribution(2, 4),
        }
    assert [trial.value for trial in replayed[:2]] == pytest.approx([0.5042, 0.531], abs=1e-9)
    study.tell_value(resumed, 0.52, found[2])
    # The fourth trial: a new combination, within the ranges.
    _, values = study.ask()
    assert values not in found[:3]
    assert 1e-3 <= values["train.learning_rate"] <= 1e-1
    assert values["model.encoder.units"] in (2, 3, 4)


# --- through the engine -------------------------------------------------------------------------


@pytest.mark.large
def test_a_bayes_search_over_a_log_range_records_its_trials_values(tmp_path, capsys):
    store = RunStore(tmp_path / "runs")
    document = _spec(
        method="bayes",
        num_trials=4,
        seed=3,
        metric="val_loss",
        parameters={"train.learning_rate": LOG_RATE},
    )
    result = executors.run_sweep(document, store=store)
    records = store.list_runs(sweep_id=result.sweep_id, history=True)
    assert [record.status for record in records] == ["done"] * 4, [r.error for r in records]
    rates = [record.spec["train"]["learning_rate"] for record in records]
    assert all(1e-3 <= rate <= 1e-1 for rate in rates)
    assert len(set(rates)) == 4
    # The store's sweep resumes from its values: each run's rate read back as its value.
    spec = load_spec(store.sweep_spec(result.sweep_id))
    values = search.trial_values(sweeps.trials(spec), records, spec.sweep)
    assert [v["train.learning_rate"] for v in values] == rates
    # Compare's table and `keras-seq runs` show the rate each trial trained with.
    table = compare.compare(store)
    assert list(table["train.learning_rate"]) == rates
    capsys.readouterr()
    runs = str(tmp_path / "runs")
    assert cli.main(["runs", "--runs", runs, "--columns", "train.learning_rate"]) == 0
    out = capsys.readouterr().out
    assert all(record.id in out for record in records)
    assert "learning_rate" in out
    store.close()


@pytest.mark.large
def test_a_killed_range_search_resumes_with_new_values_within_its_ranges(tmp_path):
    runs = tmp_path / "runs"
    units = {"low": 2, "high": 5}
    document = _spec(
        method="bayes",
        num_trials=4,
        seed=1,
        parameters={"model.encoder.units": units, "train.learning_rate": LOG_RATE},
    )
    document["train"] = {**document["train"], "epochs": 3}  # not BASE's own dict
    before = kill_sweep_in_its_second_trial(runs, document, trials=2)
    assert [r.status for r in before] == ["done", "interrupted"]
    sweep_id = before[0].sweep_id

    assert cli.main(["resume", sweep_id, "--runs", str(runs)]) == 0
    with RunStore(runs) as store:
        after = store.list_runs(history=True)
    assert [r.id for r in after[:2]] == [r.id for r in before]  # the same two, then two chosen
    assert [r.status for r in after] == ["done"] * 4, [r.error for r in after]
    chosen = [
        (r.spec["model"]["encoder"]["units"], r.spec["train"]["learning_rate"]) for r in after
    ]
    assert all(2 <= units <= 5 and 1e-3 <= rate <= 1e-1 for units, rate in chosen)
    assert len(set(chosen)) == 4
    # The interrupted trial went on with its own values.
    assert after[1].spec == before[1].spec
