"""The app runs what is left of a sweep a killed `keras-seq sweep` left behind, once.

The sweep trains for real in a child process, killed -9 mid-way; the app's queue then runs
what is left with a runner that does not train (`QuickRunner`): what is checked is which
trials the app offers and queues, not their training.
"""

from __future__ import annotations

import json

import pytest

from builder_ui.app import actions
from builder_ui.engine.store import RunStore
from tests.builder_ui.engine.quick_runner import QuickRunner
from tests.builder_ui.engine.test_stopping import SWEEP_CHILD, WAIT_S, child, kill, spec, wait_until

pytestmark = pytest.mark.large


def killed_sweep(runs, stop_when) -> list:
    """Start a 3-trial sweep in a child process and kill it -9 when `stop_when(records)`."""
    data = spec(epochs=2, parameters={"model.encoder.units": [3, 4, 5]})
    process = child(SWEEP_CHILD, str(runs), json.dumps(data))
    watcher = RunStore(runs, recover=False)
    try:
        wait_until(lambda: stop_when(watcher.list_runs(history=True)), process, "the moment")
    finally:
        kill(process)
        watcher.close()
    with RunStore(runs) as store:
        return store.list_runs()


def test_resume_in_the_app_finishes_a_killed_cli_sweep_without_duplicating_it(tmp_path):
    runs = tmp_path / "runs"
    before = killed_sweep(
        runs, lambda rs: len(rs) == 3 and rs[0].status == "done" and rs[1].epochs_done >= 1
    )
    assert [r.status for r in before] == ["done", "interrupted", "queued"]
    ctx = actions.AppContext(runs, slots=["CPU"], runner=QuickRunner())
    try:
        [(label, chosen)] = actions.interrupted_choices(ctx)
        assert chosen == before[1].id and "interrupted" in label
        submitted = actions.resume(ctx, chosen)
        assert submitted.run_ids == [before[1].id, before[2].id]
        assert "sweep" in submitted.message
        assert ctx.jobs.wait(submitted.run_ids, timeout=WAIT_S)
        after = ctx.store.list_runs(history=True)
        assert [r.id for r in after] == [r.id for r in before]  # no trial added
        assert [r.status for r in after] == ["done"] * 3
        assert all([e.epoch for e in r.history] == [1, 2] for r in after)
        with pytest.raises(actions.AppError, match="nothing left to resume"):
            actions.resume(ctx, before[1].id)
        assert actions.interrupted_choices(ctx) == []
    finally:
        ctx.close()


def test_a_sweep_killed_between_trials_is_offered_by_its_trials_never_started(tmp_path):
    runs = tmp_path / "runs"
    # Killed once the first trial is done and before the second starts training an epoch:
    # whatever the second trial's state then, what is left is offered once.
    before = killed_sweep(runs, lambda rs: len(rs) == 3 and rs[0].status == "done")
    ctx = actions.AppContext(runs, slots=["CPU"], runner=QuickRunner())
    try:
        choices = actions.interrupted_choices(ctx)
        assert len(choices) == 1
        submitted = actions.resume(ctx, choices[0][1])
        assert set(submitted.run_ids) == {r.id for r in before[1:]}
        assert ctx.jobs.wait(submitted.run_ids, timeout=WAIT_S)
        assert [r.status for r in ctx.store.list_runs()] == ["done"] * 3
    finally:
        ctx.close()
