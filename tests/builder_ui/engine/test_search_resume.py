"""A stopped search goes on: the sweep's spec is kept in the store, its trials are replayed into
a new Optuna study (the sampler skips what ran, ASHA's rungs stand where they stood), and a
`bayes` search chooses the trials it had not chosen yet."""

from __future__ import annotations

import sqlite3

import pytest

from builder_ui import cli
from builder_ui.builders import load_spec, sweeps
from builder_ui.engine import search
from builder_ui.engine.store import RunStore
from tests.builder_ui.engine.test_search import BASE, _spec
from tests.builder_ui.engine.test_stopping import kill_sweep_in_its_second_trial

pytest.importorskip("optuna")

SWEEP_ID = "sweep-under-test"


def _ended_trial(store, spec, number, values, losses, status="done"):
    """A trial of `spec` recorded in `store` as if it had trained: its epochs' val_loss, its end."""
    run_id = store.create_run(sweeps.trial(spec, number, values).spec, sweep_id=SWEEP_ID)
    store.set_status(run_id, "running")
    for epoch, loss in enumerate(losses, start=1):
        store.append_epoch(run_id, epoch, {"loss": loss, "val_loss": loss})
    if status == "interrupted":
        store.set_status(run_id, "interrupted")
    else:
        store.finish(run_id, status, metrics={"val_loss": losses[-1]})
    return store.get(run_id)


def _queued_trial(store, spec, number, values):
    return store.get(store.create_run(sweeps.trial(spec, number, values).spec, sweep_id=SWEEP_ID))


# --- the store keeps the sweep's spec ---------------------------------------------------------


def test_the_store_keeps_a_sweeps_spec_until_its_last_trial_is_deleted(tmp_path):
    store = RunStore(tmp_path / "runs")
    assert store.sweep_spec(SWEEP_ID) is None
    first = _spec(method="grid", parameters={"train.seed": [0, 1]})
    store.record_sweep(SWEEP_ID, first)
    # The id is a hash of the spec: a second record of the same id keeps the first spec.
    store.record_sweep(SWEEP_ID, _spec(method="grid", parameters={"train.seed": [5, 6]}))
    assert store.sweep_spec(SWEEP_ID)["sweep"]["parameters"] == {"train.seed": [0, 1]}
    spec = load_spec(first)
    a = _queued_trial(store, spec, 0, {"train.seed": 0})
    b = _queued_trial(store, spec, 1, {"train.seed": 1})
    store.delete(a.id)
    assert store.sweep_spec(SWEEP_ID) is not None  # a trial of it is left
    store.delete(b.id)
    assert store.sweep_spec(SWEEP_ID) is None


def test_a_store_made_before_sweeps_were_kept_gains_the_table_and_keeps_its_runs(tmp_path):
    store = RunStore(tmp_path / "runs")
    run_id = store.create_run(load_spec(BASE))
    store.close()
    with sqlite3.connect(tmp_path / "runs" / "runs.sqlite") as conn:
        conn.execute("DROP TABLE sweeps")  # as an older keras_seq made it
    store = RunStore(tmp_path / "runs")
    assert store.exists(run_id)
    assert store.sweep_spec(SWEEP_ID) is None
    store.record_sweep(SWEEP_ID, BASE)
    assert store.sweep_spec(SWEEP_ID)["name"] == BASE["name"]


def test_a_bad_sweep_id_is_refused_and_nothing_is_written(tmp_path):
    store = RunStore(tmp_path / "runs")
    with pytest.raises(ValueError, match=r"\.\./x"):
        store.record_sweep("../x", BASE)
    assert not (tmp_path / "runs").exists()


# --- replaying trials into a new study --------------------------------------------------------


def test_each_run_is_matched_to_the_values_of_its_combination(tmp_path):
    parameters = {"train.learning_rate": [0.1, 0.01], "model.encoder.units": [2, 4]}
    spec = load_spec(_spec(method="bayes", num_trials=4, parameters=parameters))
    store = RunStore(tmp_path / "runs")
    chosen = [{"train.learning_rate": 0.01, "model.encoder.units": 4}]
    chosen.append({"train.learning_rate": 0.1, "model.encoder.units": 2})
    records = [_queued_trial(store, spec, n, values) for n, values in enumerate(chosen)]
    stranger = _queued_trial(store, load_spec(BASE), 9, {"train.learning_rate": 0.5})
    candidates = sweeps.trials(spec)
    assert search.trial_values(candidates, [*records, stranger]) == [*chosen, None]


def test_a_replayed_search_never_chooses_a_combination_that_ran(tmp_path):
    parameters = {"train.learning_rate": [0.3, 0.1, 0.03, 0.01]}
    ran = [0.3, 0.03, 0.01]  # the one left to choose is 0.1
    for seed in range(6):  # without the replay, most seeds choose one of those that ran
        spec = load_spec(_spec(method="bayes", num_trials=4, seed=seed, parameters=parameters))
        store = RunStore(tmp_path / f"runs-{seed}")
        records = [
            _ended_trial(store, spec, n, {"train.learning_rate": rate}, [0.6, 0.5 + rate])
            for n, rate in enumerate(ran)
        ]
        study = search.Search(spec.sweep, "val_loss")
        for record, values in zip(
            records, search.trial_values(sweeps.trials(spec), records), strict=True
        ):
            study.replay(record, values)
        _, values = study.ask()
        assert values == {"train.learning_rate": 0.1}, seed
        best = study.study.best_trial
        assert best.value == pytest.approx(0.51) and best.params == {"train.learning_rate": 0.01}


def test_asha_judges_resumed_and_new_trials_against_the_replayed_ones(tmp_path):
    # grace_period 1, reduction_factor 3: rungs at epochs 1 and 3. With fewer than three trials
    # at a rung only the best goes on, so a trial behind the replayed one at a rung stops there.
    document = _spec(
        parameters={"model.encoder.units": [2, 3, 4, 5]},
        metric="val_loss",
        scheduler={"type": "asha", "grace_period": 1, "reduction_factor": 3},
    )
    spec = load_spec(document)
    store = RunStore(tmp_path / "runs")
    good = _ended_trial(store, spec, 0, {"model.encoder.units": 2}, [0.3, 0.2, 0.1])
    # Interrupted after epoch 1, ahead of the good trial there (it went on to epoch 2).
    ahead = _ended_trial(store, spec, 1, {"model.encoder.units": 3}, [0.25], "interrupted")
    weak = _queued_trial(store, spec, 2, {"model.encoder.units": 4})
    strong = _queued_trial(store, spec, 3, {"model.encoder.units": 5})
    records = [good, ahead, weak, strong]
    values = search.trial_values(sweeps.trials(spec), records)

    study = search.Search(spec.sweep, "val_loss")
    study.replay(good, values[0])
    resumed = study.pruner(study.resume(ahead, values[1]))
    # Its epoch 1 is in the study: epoch 2 is no rung, and at epoch 3 it is behind the good one.
    assert resumed(2, {"val_loss": 0.22}) is False
    assert resumed(3, {"val_loss": 0.9}) is True
    # A new trial meets both at epoch 1: behind them it stops, ahead of them it goes on.
    assert study.pruner(study.resume(weak, values[2]))(1, {"val_loss": 0.7}) is True
    assert study.pruner(study.resume(strong, values[3]))(1, {"val_loss": 0.05}) is False


# --- through keras-seq resume -----------------------------------------------------------------


@pytest.mark.large
def test_a_killed_bayes_search_resumes_and_chooses_the_trials_it_had_not_yet(tmp_path, capsys):
    runs = tmp_path / "runs"
    units = [2, 3, 4, 5]
    document = _spec(
        method="bayes", num_trials=4, seed=1, parameters={"model.encoder.units": units}
    )
    document["train"] = {**document["train"], "epochs": 3}  # not BASE's own dict
    before = kill_sweep_in_its_second_trial(runs, document, trials=2)  # two not chosen yet
    sweep_id = before[0].sweep_id
    with RunStore(runs) as store:
        assert store.sweep_spec(sweep_id)["sweep"]["num_trials"] == 4
    assert [r.status for r in before] == ["done", "interrupted"]

    assert cli.main(["resume", sweep_id, "--runs", str(runs)]) == 0
    assert sweep_id in capsys.readouterr().out
    with RunStore(runs) as store:
        after = store.list_runs(history=True)
    assert [r.id for r in after[:2]] == [r.id for r in before]  # the same two, then two chosen
    assert [r.status for r in after] == ["done"] * 4, [r.error for r in after]
    assert [r.name for r in after] == [f"search-{i}" for i in range(4)]
    assert all([row.epoch for row in r.history] == [1, 2, 3] for r in after)
    # Every combination once: the new study knew the two that had run.
    assert sorted(r.spec["model"]["encoder"]["units"] for r in after) == units
    assert min(r.created for r in after[2:]) >= after[1].finished  # chosen after the resume
    # All four chosen: nothing is left, and the refusal names the sweep.
    assert cli.main(["resume", sweep_id, "--runs", str(runs)]) == 2
    assert sweep_id in capsys.readouterr().err
