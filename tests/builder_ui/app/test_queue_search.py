"""The app's Train tab queues `bayes` and ASHA searches: the study in the app, each trial in the
slot's training process, asking the study after every epoch whether to stop.

How a search is queued, cancelled and taken up again is checked with a runner that does not
train (`QuickRunner`: the real queue, study and store, the training step replaced); the trials
of an ASHA search, and the error of a metric they do not log, in the slot's training process
on real training, where the study's verdicts travel between the processes.
"""

from __future__ import annotations

import copy
import itertools
import os
import time

import keras  # noqa: F401 - the app checks each trial's spec with Keras: loaded at collection
import pytest
import yaml

from builder_ui.app import actions
from builder_ui.specs import SpecError
from tests.builder_ui.engine.quick_runner import QuickRunner
from tests.builder_ui.engine.test_search import BASE  # a tiny seeded long-lag classifier

pytest.importorskip("optuna")

WAIT_S = 240  # a hang guard for a few tiny runs on a loaded 2-core machine


def _text(**sweep) -> str:
    document = copy.deepcopy(BASE)
    document["sweep"] = sweep
    return yaml.safe_dump(document)


@pytest.fixture
def ctx(tmp_path):
    """An app whose queue runs its trials with a `QuickRunner`, in this process."""
    context = actions.AppContext(tmp_path / "runs", slots=["CPU"], runner=QuickRunner())
    yield context
    context.close()


@pytest.fixture
def held_ctx(tmp_path):
    """An app whose `QuickRunner` holds each run after its first epoch until it is stopped."""
    context = actions.AppContext(tmp_path / "runs", slots=["CPU"], runner=QuickRunner(hold_after=1))
    yield context
    context.close()


@pytest.fixture(scope="module")
def process_ctx(tmp_path_factory):
    """An app whose trials train in the slot's training process, as `keras-seq ui`'s do.

    One app (one training process) for the module's tests: each reads only its own runs.
    """
    context = actions.AppContext(tmp_path_factory.mktemp("process") / "runs", slots=["CPU"])
    yield context
    context.close()


def _wait_for_an_epoch(ctx, run_id):
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        progress = ctx.jobs.board.get(run_id)
        if progress is not None and progress.history:
            return
        time.sleep(0.05)
    pytest.fail(f"run {run_id} did not finish an epoch in time")


def test_a_bayes_search_queues_each_trial_as_the_one_before_ends(ctx):
    parameters = {"train.learning_rate": [0.003, 0.01, 0.03, 0.1], "model.encoder.units": [2, 4]}
    submitted = actions.queue_spec(
        ctx, _text(method="bayes", num_trials=3, seed=3, parameters=parameters)
    )
    # Only the first trial exists yet: the next ones are chosen from its result.
    assert len(submitted.run_ids) == 1
    assert "TPE chooses 3 trials on val_accuracy" in submitted.message
    (record,) = ctx.store.list_runs()
    sweep_id = record.sweep_id
    assert ctx.jobs.wait_sweep(sweep_id, timeout=WAIT_S)

    records = ctx.store.list_runs(sweep_id=sweep_id, history=True)
    assert [r.status for r in records] == ["done"] * 3, [r.error for r in records]
    assert [r.name for r in records] == ["search-0", "search-1", "search-2"]
    chosen = {
        (r.spec["train"]["learning_rate"], r.spec["model"]["encoder"]["units"]) for r in records
    }
    assert len(chosen) == 3  # three distinct combinations
    for earlier, later in itertools.pairwise(records):
        assert later.created >= earlier.finished  # chosen once the one before had ended
    histories = [[row.epoch for row in r.history] for r in records]
    assert histories == [[1, 2]] * 3, histories
    line = actions.progress_html(ctx, records[-1].id)
    assert f"search {sweep_id}: 3 of 3 trials chosen" in line


def test_a_bayes_search_over_ranges_queues_trials_with_values_within_them(ctx):
    parameters = {
        "train.learning_rate": {"low": 1e-3, "high": 1e-1, "log": True},
        "model.encoder.units": {"low": 2, "high": 4},
    }
    submitted = actions.queue_spec(
        ctx, _text(method="bayes", num_trials=3, seed=0, parameters=parameters)
    )
    assert "TPE chooses 3 trials" in submitted.message
    (record,) = ctx.store.list_runs()
    assert ctx.jobs.wait_sweep(record.sweep_id, timeout=WAIT_S)
    records = ctx.store.list_runs(sweep_id=record.sweep_id, history=True)
    assert [r.status for r in records] == ["done"] * 3, [r.error for r in records]
    rates = [r.spec["train"]["learning_rate"] for r in records]
    units = [r.spec["model"]["encoder"]["units"] for r in records]
    assert all(1e-3 <= rate <= 1e-1 for rate in rates) and len(set(rates)) == 3
    assert all(type(unit) is int and 2 <= unit <= 4 for unit in units)


@pytest.mark.large
def test_asha_in_the_app_prunes_the_weak_trials_and_compare_shows_them(process_ctx):
    ctx = process_ctx
    # The set-up of the engine's ASHA test (test_search.py): a learning rate that learns, then
    # two that barely move the weights; at epoch 1 both weak ones are behind and stop there.
    document = yaml.safe_load(
        _text(
            parameters={"train.learning_rate": [0.03, 1e-6, 1e-7]},
            metric="val_loss",
            scheduler={"type": "asha", "grace_period": 1, "reduction_factor": 3},
        )
    )
    document["task"]["n"] = 400
    document["train"].update(epochs=3, batch_size=16)
    submitted = actions.queue_spec(ctx, yaml.safe_dump(document))
    assert len(submitted.run_ids) == 3  # a grid: every planned trial is queued at once
    assert "ASHA stops weak trials from epoch 1" in submitted.message
    assert ctx.jobs.wait(submitted.run_ids, timeout=WAIT_S)

    good, *weak = ctx.store.list_runs(ids=submitted.run_ids, history=True)
    assert good.status == "done", good.error
    assert [row.epoch for row in good.history] == [1, 2, 3]
    for record in weak:
        assert record.status == "pruned", (record.status, record.error)
        assert [row.epoch for row in record.history] == [1]
        assert record.pid != os.getpid()
    table = actions.results_frame(ctx, statuses=["pruned"])
    assert sorted(table["id"]) == sorted(record.id for record in weak)


def test_cancelling_a_trial_of_a_bayes_search_ends_the_search(held_ctx):
    ctx = held_ctx
    document = yaml.safe_load(
        _text(method="bayes", num_trials=3, parameters={"model.encoder.units": [2, 3, 4]})
    )
    document["train"]["epochs"] = 500
    (run_id,) = actions.queue_spec(ctx, yaml.safe_dump(document)).run_ids
    _wait_for_an_epoch(ctx, run_id)
    message = actions.cancel(ctx, run_id)
    assert "stops after its current batch" in message and "chooses no more trials" in message
    sweep_id = ctx.store.get(run_id).sweep_id
    assert ctx.jobs.wait_sweep(sweep_id, timeout=WAIT_S)
    (record,) = ctx.store.list_runs(sweep_id=sweep_id)
    assert record.status == "cancelled"


def test_a_search_with_an_invalid_combination_stores_nothing(ctx):
    text = _text(method="bayes", num_trials=2, parameters={"model.encoder.units": [4, 0]})
    with pytest.raises(SpecError) as excinfo:
        actions.queue_spec(ctx, text)
    paths = [path for path, _ in excinfo.value.problems]
    assert "model.encoder.units" in paths, excinfo.value.problems
    assert "model.encoder.units=0" in str(excinfo.value)
    assert ctx.store.list_runs() == []


def test_a_bayes_search_asking_for_more_trials_than_one_click_queues_is_refused(ctx):
    units = list(range(2, 80))
    text = _text(method="bayes", num_trials=70, parameters={"model.encoder.units": units})
    with pytest.raises(actions.AppError, match="70 trials is more than the app queues"):
        actions.queue_spec(ctx, text)
    assert ctx.store.list_runs() == []


@pytest.mark.large
def test_a_metric_the_trials_do_not_log_fails_them_with_the_field_named(process_ctx):
    # The study judges each epoch in the app; its error travels back to the training process
    # with the verdict and fails the run there, as it would in `keras-seq sweep`.
    text = _text(
        parameters={"model.encoder.units": [2, 3]},
        metric="val_bleu",
        scheduler={"type": "asha"},
    )
    ctx = process_ctx
    submitted = actions.queue_spec(ctx, text)
    assert ctx.jobs.wait(submitted.run_ids, timeout=WAIT_S)
    records = ctx.store.list_runs(ids=submitted.run_ids, history=True)
    assert len(records) == 2
    for record in records:
        assert record.pid != os.getpid()  # in the slot's training process
        assert record.status == "failed"
        assert "sweep.metric" in record.error and "'val_bleu'" in record.error, record.error
        assert "val_loss" in record.error  # the metrics it does log are listed


def test_a_bayes_search_stopped_with_the_app_goes_on_as_a_search_in_the_next_app(tmp_path):
    # The app stops while the first trial trains (it ends `interrupted`); the next app's Resume
    # continues that trial inside a new study and lets it choose the two trials left.
    runs = tmp_path / "runs"
    document = yaml.safe_load(
        _text(method="bayes", num_trials=3, seed=4, parameters={"model.encoder.units": [2, 3, 4]})
    )
    document["train"]["epochs"] = 30
    # The first app's trial waits after its first epoch: the app stops while it trains.
    first = actions.AppContext(runs, slots=["CPU"], runner=QuickRunner(hold_after=1))
    try:
        (run_id,) = actions.queue_spec(first, yaml.safe_dump(document)).run_ids
        _wait_for_an_epoch(first, run_id)
    finally:
        first.close()
    stopped = actions.AppContext(runs, slots=["CPU"], runner=QuickRunner())
    try:
        record = stopped.store.get(run_id)
        assert record.status == "interrupted" and record.epochs_done < 30, record.status
        submitted = actions.resume(stopped, run_id)
        assert submitted.run_ids == [run_id]
        assert f"search {record.sweep_id}" in submitted.message
        assert stopped.jobs.wait_sweep(record.sweep_id, timeout=WAIT_S)
        records = stopped.store.list_runs(sweep_id=record.sweep_id, history=True)
    finally:
        stopped.close()
    assert [r.status for r in records] == ["done"] * 3, [r.error for r in records]
    assert records[0].id == run_id and [r.name for r in records] == [
        "search-0",
        "search-1",
        "search-2",
    ]
    assert [row.epoch for row in records[0].history] == list(range(1, 31))  # no epoch twice
    assert sorted(r.spec["model"]["encoder"]["units"] for r in records) == [2, 3, 4]
