"""Smarter sweeps: `method: bayes` (Optuna's TPE) and `scheduler: asha` (successive halving)
through the real engine into a real run store, and the spec fields that configure them."""

from __future__ import annotations

import pytest
import yaml

from builder_ui import cli
from builder_ui.app import actions
from builder_ui.builders import load_spec
from builder_ui.engine import executors, search
from builder_ui.engine.records import FINAL_STATUSES, STATUSES
from builder_ui.engine.store import RunStore
from builder_ui.specs import SpecError

pytest.importorskip("optuna")

# A tiny classifier on the long-lag task (the Ray tests' sweep), seeded.
BASE = {
    "version": 2,
    "name": "search",
    "task": {"type": "long_lag", "lag": 5, "n": 120, "num_distractors": 4},
    "model": {"type": "sequence_classifier", "encoder": {"type": "rnn", "cell": "gru", "units": 4}},
    "train": {"epochs": 2, "batch_size": 32, "learning_rate": 0.01, "seed": 2},
}


def _spec(**sweep):
    return {**BASE, "sweep": sweep}


def _problems(document):
    with pytest.raises(SpecError) as excinfo:
        load_spec(document)
    return excinfo.value.problems


# --- the spec --------------------------------------------------------------------------------


def test_bayes_needs_num_trials_named_by_its_field():
    problems = _problems(_spec(method="bayes", parameters={"train.learning_rate": [0.1, 0.01]}))
    assert any(path == "sweep.num_trials" and "'bayes'" in message for path, message in problems)


def test_bayes_asks_no_more_trials_than_combinations():
    document = _spec(method="bayes", num_trials=3, parameters={"train.learning_rate": [0.1, 0.01]})
    with pytest.raises(SpecError) as excinfo:
        executors.plan_sweep(document)
    assert excinfo.value.problems == [
        ("sweep.num_trials", "expected at most 2 (the number of distinct combinations), got 3")
    ]


@pytest.mark.parametrize(
    ("scheduler", "field"),
    [
        ({"type": "hyperband"}, "sweep.scheduler.type"),
        ({"type": "asha", "grace_period": 0}, "sweep.scheduler.grace_period"),
        ({"type": "asha", "reduction_factor": 1}, "sweep.scheduler.reduction_factor"),
        ({"type": "asha", "patience": 2}, "sweep.scheduler.patience"),
    ],
)
def test_a_bad_scheduler_field_is_named(scheduler, field):
    problems = _problems(_spec(parameters={"train.seed": [0, 1]}, scheduler=scheduler))
    assert field in [path for path, _ in problems], problems


def test_a_metric_that_is_not_a_validation_metric_is_refused():
    problems = _problems(_spec(parameters={"train.seed": [0, 1]}, metric="loss"))
    assert [path for path, _ in problems] == ["sweep.metric"]


def test_a_scheduler_is_valid_with_grid_and_its_defaults_are_asha_1_3():
    spec = load_spec(_spec(parameters={"train.seed": [0, 1]}, scheduler={"type": "asha"}))
    assert (spec.sweep.scheduler.grace_period, spec.sweep.scheduler.reduction_factor) == (1, 3)


@pytest.mark.parametrize(
    ("metric", "mode", "expected"),
    [
        ("val_loss", "auto", "min"),
        ("val_mean_absolute_error", "auto", "min"),
        ("val_accuracy", "auto", "max"),
        ("val_bleu", "auto", "max"),
        ("val_accuracy", "min", "min"),
    ],
)
def test_the_metric_direction(metric, mode, expected):
    assert executors.sweeps.metric_mode(metric, mode) == expected


# --- the sampler, without training -----------------------------------------------------------


def test_the_sampler_asks_every_combination_once_and_is_seeded():
    # Six combinations, six trials: the sampler repeats itself before the sixth, so this also
    # goes through a repeat being told the value it reached and asked again.
    encoders = [{"type": "rnn", "cell": cell, "units": 4} for cell in ("gru", "lstm")]
    parameters = {"train.learning_rate": [0.1, 0.01, 0.001], "model.encoder": encoders}
    sweep = load_spec(_spec(method="bayes", num_trials=6, seed=7, parameters=parameters)).sweep

    def sequence():
        study = search.Search(sweep, "val_loss")
        chosen = []
        for _ in range(6):
            trial, values = study.ask()
            chosen.append(values)
            # An objective of the values alone (no training): lower rates and the GRU score lower.
            gru = values["model.encoder"]["cell"] == "gru"
            study.tell_value(trial, values["train.learning_rate"] + (0.0 if gru else 1.0), values)
        return chosen, len(study.study.trials)

    first, asked = sequence()
    assert len({repr(sorted(values.items())) for values in first}) == 6  # none twice
    assert all(values["model.encoder"] in encoders for values in first)  # the values themselves
    assert asked > 6  # repeats were asked (and told their value) along the way
    assert sequence() == (first, asked)  # the same seed, the same choices


# --- through the engine ----------------------------------------------------------------------


@pytest.mark.large
def test_a_bayes_sweep_records_every_trial_it_chose(tmp_path):
    store = RunStore(tmp_path / "runs")
    parameters = {"train.learning_rate": [0.003, 0.01, 0.03, 0.1], "model.encoder.units": [2, 4]}
    document = _spec(method="bayes", num_trials=6, seed=3, parameters=parameters)
    result = executors.run_sweep(document, store=store)
    records = store.list_runs(sweep_id=result.sweep_id, history=True)
    assert [record.status for record in records] == ["done"] * 6, [r.error for r in records]
    assert sorted(record.name for record in records) == [f"search-{i}" for i in range(6)]
    chosen = set()
    for record in records:
        rate = record.spec["train"]["learning_rate"]
        units = record.spec["model"]["encoder"]["units"]
        assert rate in parameters["train.learning_rate"] and units in (2, 4)
        chosen.add((rate, units))
        assert [row.epoch for row in record.history] == [1, 2]
        assert record.spec["sweep"] is None
    assert len(chosen) == 6  # six distinct combinations of the eight


@pytest.mark.large
def test_asha_prunes_the_weak_trials_and_keeps_their_epochs(tmp_path, capsys):
    # Grid order: a learning rate that learns, then two that barely move the weights (the same
    # seed, so the same initial weights). At epoch 1 (grace_period 1) each weak trial's val_loss
    # is compared with the trials before it: with fewer than reduction_factor trials at that
    # rung only the best goes on, so both weak ones stop there. The learning one, first, ran
    # alone at every rung and completes.
    store = RunStore(tmp_path / "runs")
    document = _spec(
        parameters={"train.learning_rate": [0.03, 1e-6, 1e-7]},
        metric="val_loss",
        scheduler={"type": "asha", "grace_period": 1, "reduction_factor": 3},
    )
    # Enough data that the learning rate 0.03 is clearly ahead after one epoch (val_loss about
    # 0.38 against 0.69 for the weak ones on this seed): the margin keeps the test from flaking.
    document["task"] = {**BASE["task"], "n": 400}
    document["train"] = {**BASE["train"], "epochs": 3, "batch_size": 16}
    path = tmp_path / "asha.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    runs = str(tmp_path / "runs")
    # Through `keras-seq sweep`: pruned trials ended as asked, so the sweep exits 0.
    assert cli.main(["sweep", str(path), "--runs", runs]) == 0
    good, *weak = store.list_runs(history=True)
    assert good.status == "done", good.error
    assert [row.epoch for row in good.history] == [1, 2, 3]
    assert (store.artifact_dir(good.id) / "model.keras").is_file()
    for record in weak:
        assert record.status == "pruned", (record.status, record.error)
        assert [row.epoch for row in record.history] == [1]  # its partial history is kept
        assert "after epoch 1" in record.error
        assert not (store.artifact_dir(record.id) / "model.keras").exists()
        # Its metrics are where it stood: its epoch-1 validation loss, worse than the good one's.
        # (Equal up to the float32 → JSON round trip of the two stored copies.)
        assert record.metrics["loss"] == pytest.approx(record.history[0].metrics["val_loss"])
        assert record.history[0].metrics["val_loss"] > good.history[0].metrics["val_loss"]
    capsys.readouterr()
    assert cli.main(["runs", "--runs", runs, "--status", "pruned"]) == 0
    listed = capsys.readouterr().out
    assert all(record.id in listed for record in weak) and good.id not in listed

    # Compare shows them: in the table, and by the status filter.
    ctx = actions.AppContext(tmp_path / "runs", slots=["cpu"])
    try:
        table = actions.results_frame(ctx)
        assert sorted(table["status"]) == ["done", "pruned", "pruned"]
        pruned = actions.results_frame(ctx, statuses=["pruned"])
        assert sorted(pruned["id"]) == sorted(record.id for record in weak)
    finally:
        ctx.close()


def test_pruned_is_a_final_status_of_the_store():
    assert "pruned" in STATUSES and "pruned" in FINAL_STATUSES
