"""What the Train tab shows, without a browser: progress shares, throughput, following, curves.

The progress arithmetic is checked on `Progress` directly; following a sweep, the
live curves and a cancelled run on a real two-trial sweep trained by the app's queue
(a training process, the SQLite store).
"""

from __future__ import annotations

import time

import pytest

from builder_ui.app import actions
from builder_ui.app.actions.train import (
    curves_key,
    followed_run,
    live_curves_figure,
    training_now,
)
from builder_ui.engine.progress import TRAINING, Progress
from tests.builder_ui.app.test_actions import text_of, tiny_classifier

WAIT_S = 300  # a hang guard for tiny runs on a loaded machine


@pytest.mark.parametrize("status", ["cancelled", "failed", "interrupted"])
def test_a_run_that_stopped_at_2_of_4_epochs_is_at_half_not_100_percent(status):
    progress = Progress("r", epochs=4, steps=10, epoch=2, step=10, status=status)
    assert progress.fraction == pytest.approx(0.5, abs=1e-12)  # 20 of 40 batches, exact in binary


def test_only_a_done_run_is_at_100_percent():
    assert Progress("r", epochs=4, steps=10, epoch=1, step=3, status="done").fraction == 1.0


def test_the_rate_is_measured_from_the_first_report_and_gives_the_time_left():
    progress = Progress("r", epochs=2, steps=10, epoch=1, step=2, status=TRAINING)
    progress.measure(100.0)  # the first report: its batches (and compile time) are not counted
    assert progress.rate is None and progress.eta_s is None
    progress.step = 6
    progress.measure(102.0)
    assert progress.rate == pytest.approx(2.0, rel=1e-9)  # 4 batches in 2 s
    assert progress.eta_s == pytest.approx(7.0, rel=1e-9)  # 14 batches left at 2 per second


def test_the_curves_table_is_numeric_even_before_the_first_epoch(tmp_path):
    context = actions.AppContext(tmp_path / "runs", slots=["CPU"])
    try:
        frame = actions.curves_frame(context, None)
        assert frame.empty
        assert str(frame["epoch"].dtype) == "int64" and str(frame["value"].dtype) == "float64"
        assert live_curves_figure(context, None) is None
        assert followed_run(context) is None and not training_now(context)
    finally:
        context.close()


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    """A two-trial sweep: trial 0 trains 2 epochs, trial 1 would train 200 (it is cancelled)."""
    context = actions.AppContext(tmp_path_factory.mktemp("runs"), slots=["CPU"])
    spec = tiny_classifier("follow-sweep", epochs=2)
    spec["sweep"] = {"parameters": {"train.epochs": [2, 200]}}
    submitted = actions.queue_spec(context, text_of(spec))
    yield context, submitted.run_ids
    context.close()


def _wait_for(condition, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.large
def test_the_tab_follows_a_sweep_to_its_next_trial_and_shows_a_cancelled_one_truly(sweep):
    ctx, (first, second) = sweep
    assert {value for _, value in actions.queue_choices(ctx)} >= {first, second}

    def second_training() -> bool:
        progress = ctx.jobs.board.get(second)
        return progress is not None and progress.epoch >= 2

    _wait_for(second_training, "the second trial's second epoch")
    assert followed_run(ctx) == second and training_now(ctx)
    bar = actions.progress_html(ctx, second)
    assert 'data-status="running"' in bar and "2 trials, 1 done, 1 running" in bar
    assert "batches/s" in bar and " left" in bar

    actions.cancel(ctx, second)
    assert ctx.jobs.wait([second], timeout=WAIT_S)
    record = ctx.store.get(second)
    assert record.status == "cancelled" and 1 <= record.epochs_done < 200
    bar = actions.progress_html(ctx, second)
    assert f"{record.epochs_done} of 200 epochs trained" in bar
    assert "width:100" not in bar
    assert not training_now(ctx)


@pytest.mark.large
def test_the_live_curves_draw_each_logged_metric_of_the_run_with_a_legend(sweep):
    ctx, (first, _) = sweep
    assert ctx.jobs.wait([first], timeout=WAIT_S)
    history = ctx.store.get(first).history
    figure = live_curves_figure(ctx, first)
    drawn = {}
    for axes in figure.axes:
        legend = [text.get_text() for text in axes.get_legend().get_texts()]
        lines = {line.get_label(): line for line in axes.get_lines()}
        assert legend == list(lines)
        for name, line in lines.items():
            drawn[name] = (list(line.get_xdata()), list(line.get_ydata()))
    expected = {
        name: ([e.epoch for e in history], [e.metrics[name] for e in history])
        for name in history[0].metrics
    }
    assert set(drawn) == set(expected) >= {"loss", "val_loss", "accuracy", "val_accuracy"}
    for name, (epochs, values) in expected.items():
        assert drawn[name][0] == epochs
        assert drawn[name][1] == pytest.approx(values, rel=1e-12)  # the stored floats, as drawn
    for axes in figure.axes:  # one tick per epoch, none between two (a short run)
        assert list(axes.get_xticks()) == [e.epoch for e in history]
    assert curves_key(ctx, first) == f"{first}:{len(history)}"


def test_a_page_is_sent_only_the_parts_it_has_not_got(tmp_path):
    """The stream's rule: a refresh that finds nothing new sends nothing."""
    context = actions.AppContext(tmp_path / "runs", slots=["CPU"])
    try:
        view = actions.TrainView()
        first = actions.snapshot(context, view)
        assert first.news(view) == set(actions.Snapshot.PARTS)  # a new page gets everything
        assert actions.snapshot(context, view).news(view) == set()
        # A run that ended in another tool changes the store's version (the Compare tab's
        # cue), and nothing else this page shows.
        run_id = context.store.create_run(tiny_classifier("elsewhere", epochs=1))
        context.store.finish(run_id, "cancelled", error="stopped in another tool")
        assert actions.snapshot(context, view).news(view) == {"store_version"}
        # Parts a handler put on the page are not sent again; the others still are.
        other = actions.TrainView()
        actions.snapshot(context, other).news(other, ("table", "progress"))
        assert actions.snapshot(context, other).news(other) == {"curves", "follow", "store_version"}
    finally:
        context.close()


def test_views_are_kept_per_page_and_the_oldest_page_goes_first():
    views = actions.TrainViews(limit=2)
    first = views.of("a")
    assert views.of("a") is first  # the same page gets its own view back
    views.of("b")
    views.of("a")  # used again: now the newest
    views.of("c")  # over the limit: "b", the least recently used, goes
    assert len(views) == 2 and views.of("a") is first
    views.forget("a")
    assert views.of("a") is not first  # a reloaded page starts afresh
    assert views.of(None) is not views.of(None)  # no session: nothing is kept


@pytest.mark.large
def test_a_view_follows_the_newest_run_until_one_is_chosen(sweep):
    ctx, (first, second) = sweep
    # Once the second trial has left the queue, the newest run stays the same a while.
    _wait_for(
        lambda: all(job.state != "queued" for job in ctx.jobs.jobs() if job.run_id == second),
        "the second trial to start",
    )
    view = actions.TrainView()
    assert view.follows(ctx) == followed_run(ctx)
    # Chosen by hand (pinned): it stays, whatever trains.
    view.run_id, view.newest, view.auto_run = first, False, ""
    assert view.follows(ctx) == first
    # "Follow the newest" ticked again: the newest run, as the tab would choose it.
    view.newest, view.run_id = True, None
    assert view.follows(ctx) == followed_run(ctx) and view.auto_run == view.run_id
