"""The Compare tab's actions on stores of runs of several model types: filters, columns, pages.

Real run stores written through `RunStore`'s API (as the engine writes runs), read by the
same actions the tab calls; no Gradio, no training.
"""

from __future__ import annotations

import pytest
import yaml

from builder_ui.app import actions
from builder_ui.app.actions import compare as compare_actions
from builder_ui.app.actions.compare import (
    MAX_VIEW_TEXT,
    OUTCOME_LINES,
    CompareView,
    ResultsFilters,
    parse_bound,
    parse_brush,
    results_view,
    run_outcome,
    run_spec_yaml,
    view_of,
    view_query,
)
from tests.app.compare_runs import record_failed_run, record_runs


@pytest.fixture
def ctx(tmp_path):
    context = actions.AppContext(tmp_path / "runs", slots=["cpu"])
    yield context
    context.close()


@pytest.fixture
def mixed(ctx):
    """Six finished runs of three model types, and one queued run with no results at all."""
    ids = record_runs(ctx.store, 6)
    queued = ctx.store.create_run(ctx.store.get(ids[0]).spec, name="waiting", sweep_id="sw1")
    return ctx, [*ids, queued]


def test_a_text_filter_over_empty_cells_finds_rows_and_never_errors(mixed):
    ctx, ids = mixed
    # Empty cells everywhere: fields of other model types, the queued run's metrics.
    assert list(actions.results_frame(ctx, "waiting")["id"]) == [ids[-1]]
    assert list(actions.results_frame(ctx, "SEQ2SEQ")["id"]) == [ids[4], ids[1]]  # newest first
    assert actions.results_frame(ctx, "no such text").empty
    assert list(results_view(ctx, ResultsFilters(query="waiting")).table["id"]) == [ids[-1]]
    # Translators have no accuracy: their table is read by a metric they have.
    translators = results_view(ctx, ResultsFilters(query="seq2seq", metric="val_accuracy"))
    assert translators.metric == "val_loss" and "val_loss" in translators.shown


def test_text_status_sweep_and_metric_range_filters_combine(mixed):
    ctx, ids = mixed
    both = ResultsFilters(query="tiny", statuses=("done",))
    assert list(actions.results_frame(ctx, filters=both)["id"]) == ids[:6][::-1]
    swept = ResultsFilters(query="wait", sweep="sw1")
    assert list(actions.results_frame(ctx, filters=swept)["id"]) == [ids[-1]]
    # Accuracy of the i-th run is i / 6: at least 0.5 is runs 3 and 5 (4 is a translator).
    ranged = ResultsFilters(query="tiny", metric="val_accuracy", metric_min=0.5)
    assert list(actions.results_frame(ctx, filters=ranged)["id"]) == [ids[5], ids[3]]
    upside_down = ResultsFilters(metric="val_accuracy", metric_min=0.9, metric_max=0.1)
    with pytest.raises(actions.AppError, match=r"minimum 0\.9 is above the maximum 0\.1"):
        actions.results_frame(ctx, filters=upside_down)


def test_the_view_shows_the_differing_columns_under_short_headers_with_a_legend(mixed):
    ctx, ids = mixed
    view = results_view(ctx)
    assert len(view.columns) > 40  # every field of every model type is in the table
    # At most 17 by default: the core columns, what differs, the metric with its best and when.
    assert view.shown[0] == "id" and "val_accuracy" in view.shown and len(view.shown) <= 17
    assert "model.encoder.units" in view.columns and "model.encoder.units" not in view.shown
    headers = list(view.table.columns)
    assert "learning_rate" in headers and "train.learning_rate" not in headers
    assert "`learning_rate` = train.learning_rate" in view.legend
    assert "`epochs_run`: epochs recorded in the store" in view.legend
    assert "validation split" in view.legend
    # The chosen metric's best epoch is shown, and what it means is said.
    assert {"best_val_accuracy", "best_val_accuracy_epoch"} <= set(view.shown)
    assert "`best_val_*`: the best value of the metric over the run's epochs" in view.legend
    assert view.metric == "val_accuracy"
    assert view.metrics[:3] == ["val_accuracy", "val_loss", "val_bleu"]
    assert view.sweeps == ["sw1"] and (view.page, view.pages, view.total) == (1, 1, 7)
    # The queued run's empty cells are None (shown blank), not NaN.
    queued = view.table[view.table["id"] == ids[-1]].iloc[0]
    assert queued["val_accuracy"] is None and queued["params"] is None


def test_picked_columns_are_shown_with_id_first_and_unknown_ones_dropped(mixed):
    ctx, _ = mixed
    view = results_view(ctx, columns=["model.encoder.units", "val_bleu", "gone.column"])
    assert view.shown == ["id", "model.encoder.units", "val_bleu"]
    assert list(view.table.columns) == ["id", "units", "val_bleu"]


def test_the_whole_spec_of_a_run_is_its_yaml(mixed):
    ctx, ids = mixed
    assert yaml.safe_load(run_spec_yaml(ctx, ids[2])) == ctx.store.get(ids[2]).spec
    with pytest.raises(actions.AppError):
        run_spec_yaml(ctx, "")


def test_a_store_of_a_thousand_runs_gives_pages_of_two_hundred(ctx):
    ids = record_runs(ctx.store, 1000, epochs=1)
    view = results_view(ctx)
    assert (view.page, view.pages, view.total, len(view.table)) == (1, 5, 1000, 200)
    assert view.table["id"].iloc[0] == ids[-1]  # newest first
    last = results_view(ctx, page=5)
    assert list(last.table["id"]) == ids[:200][::-1]
    assert "Runs 801–1000 of 1000 (page 5 of 5)" in last.legend
    assert results_view(ctx, page=77).page == 5


def test_a_metric_bound_that_is_not_a_number_is_named_with_what_was_typed():
    assert parse_bound("", "Metric at least") is None and parse_bound(" 0.9 ", "x") == 0.9
    with pytest.raises(actions.AppError, match=r"Metric at most: expected a number .*got 'abc'"):
        parse_bound("abc", "Metric at most")
    with pytest.raises(actions.AppError, match=r"got 'nan'"):
        parse_bound("nan", "Metric at least")


def test_a_brush_on_the_parallel_coordinates_keeps_its_runs_and_a_new_chart_has_none(mixed):
    ctx, ids = mixed
    brushed = ResultsFilters(query="tiny", brushed=(ids[0], ids[4], ids[-1]))
    view = results_view(ctx, brushed)
    assert list(view.table["id"]) == [ids[4], ids[0]]  # the text filter too: not the queued run
    assert "Brushed on the parallel coordinates: only the 3 runs" in view.legend
    assert "Brushed" not in results_view(ctx, ResultsFilters(query="tiny")).legend
    assert results_view(ctx, ResultsFilters(brushed=())).total == 0
    # The chart is drawn over the runs the other filters keep, the brush aside.
    (trace,) = compare_actions.hparams_chart(ctx, brushed, "val_loss").data
    (unbrushed,) = compare_actions.hparams_chart(ctx, ResultsFilters(query="tiny"), "val_loss").data
    assert trace.meta["run_ids"] == unbrushed.meta["run_ids"]
    assert sorted(trace.meta["run_ids"]) == sorted(ids[:6])  # every finished run has val_loss


def test_a_brush_message_is_read_or_refused_naming_the_brush():
    assert parse_brush("") is None and parse_brush(None) is None
    assert parse_brush('{"run_ids": null}') is None
    assert parse_brush('{"run_ids": ["a", "b"]}') == ("a", "b")
    assert parse_brush('{"run_ids": []}') == ()
    for bad in ("[1, 2]", '{"run_ids": [1]}', "{", '{"ids": []}', " " + "x" * (5 * 2**20)):
        with pytest.raises(actions.AppError, match=r'^Brush: expected \{"run_ids"'):
            parse_brush(bad)


def test_a_failed_runs_outcome_is_its_error_and_the_end_of_its_traceback(mixed):
    ctx, _ = mixed
    failed = record_failed_run(ctx.store, "sequence_classifier", IndexError("list ```index```"))
    shown = run_outcome(ctx, failed)
    assert "**failed**" in shown and "broken-run" in shown
    # The error holds a run of three backticks: the fence around it is longer.
    assert "````text\nIndexError: list ```index```\n````" in shown
    traceback_lines = (ctx.store.artifact_dir(failed) / "traceback.txt").read_text().splitlines()
    assert len(traceback_lines) > 3 * OUTCOME_LINES  # 30 calls deep: most of it is left out
    block = shown.split("```python\n", 1)[1].rsplit("\n```", 1)[0]
    assert block.splitlines() == traceback_lines[-OUTCOME_LINES:]
    assert traceback_lines[-1] == "IndexError: list ```index```"


def test_a_finished_runs_outcome_says_so_and_shows_no_traceback(mixed):
    ctx, ids = mixed
    assert run_outcome(ctx, ids[0]) == f"Run `{ids[0]}` (tiny-gru): **done**."
    with pytest.raises(actions.AppError, match="nope"):
        run_outcome(ctx, "261206-000000-nope")


def test_a_view_written_into_a_link_reads_back_the_same():
    view = CompareView(
        text="lstm",
        statuses=("done", "failed"),
        sweep="sw1",
        metric="val_bleu",
        low="0.5",
        high="",
        tag="best",
        archived=True,
        sort_by="val_loss",
        order="ascending",
        page=3,
        columns=("id", "model.nodes.encoder.params.units"),
    )
    link = {key: value for key, value in view_query(view).items() if value is not None}
    assert link["open"] == "compare" and "max" not in link  # the defaults are left out
    assert view_of(link) == view
    assert view_query(CompareView()) == {
        **dict.fromkeys(view_query(view), None),
        "open": "compare",
    }


def test_a_link_is_checked_field_by_field_and_what_does_not_fit_is_dropped():
    assert view_of({}) is None and view_of({"q": "lstm"}) is None  # no open=compare: no view
    odd = view_of(
        {
            "open": "compare",
            "q": "x" * 10_000,
            "status": "done,<script>,failed",
            "metric": "loss; DROP TABLE runs",
            "order": "sideways",
            "runs_page": "99999999999",
            "cols": ",".join(f"c{i}" for i in range(500)),
        }
    )
    assert odd.text == "x" * MAX_VIEW_TEXT
    assert odd.statuses == ("done", "failed")
    assert odd.metric is None and odd.order == "descending"
    assert odd.page == 1_000_000 and len(odd.columns) == 100
    assert view_of({"open": "compare", "runs_page": "two"}).page == 1


def test_the_report_holds_the_runs_the_filters_keep(mixed):
    ctx, ids = mixed
    kept = ResultsFilters(query="tiny-gru")
    path = compare_actions.results_report(ctx, filters=kept)
    text = path.read_text(encoding="utf-8")
    assert path.suffix == ".html" and path.parent.parent == ctx.scratch
    shown = [run_id for run_id in ids if f"<td>{run_id}</td>" in text]
    assert shown and all(ctx.store.get(run_id).name == "tiny-gru" for run_id in shown)
    with pytest.raises(actions.AppError, match="the filters keep none"):
        compare_actions.results_report(ctx, filters=ResultsFilters(query="no such run"))


def test_grouping_the_runs_shown_by_a_column_gives_each_groups_mean_and_std(mixed):
    ctx, ids = mixed  # six finished runs cycling through three model types, and a queued one
    groups = compare_actions.grouped(ctx, ResultsFilters(statuses=("done",)), "model.type")
    by_type = groups.set_index("model.type")
    assert dict(by_type["runs"]) == {
        "sequence_classifier": 2,
        "seq2seq": 2,
        "pointer_network": 2,
    }
    accuracies = [
        ctx.store.get(run_id).metrics.get("accuracy")
        for run_id in ids[:6]  # the finished ones
        if ctx.store.get(run_id).spec["model"]["type"] == "sequence_classifier"
    ]
    expected = sum(accuracies) / 2  # rounded to 4 significant digits for reading
    assert by_type.loc["sequence_classifier", "val_accuracy mean"] == pytest.approx(
        expected, rel=1e-3
    )
    assert by_type.loc["seq2seq", "val_accuracy mean"] is None  # translators have none
    with pytest.raises(actions.AppError, match="Choose a column"):
        compare_actions.grouped(ctx, None, "")
    with pytest.raises(actions.AppError, match=r"'model\.nope' is not a column"):
        compare_actions.grouped(ctx, None, "model.nope")


def test_curves_by_group_draw_one_mean_per_value_of_the_column(mixed):
    ctx, ids = mixed  # six finished runs, two of each of three model types
    figure = compare_actions.curves_chart(ctx, ids[:6], "val_loss", group_by="model.type")
    means = [trace.name for trace in figure.data if trace.mode == "lines+markers"]
    assert sorted(means) == [
        "pointer_network (2 runs)",
        "seq2seq (2 runs)",
        "sequence_classifier (2 runs)",
    ]
    # A column every run picked shares is one group, not an error.
    figure = compare_actions.curves_chart(ctx, ids[:6], "val_loss", group_by="status")
    assert [t.name for t in figure.data if t.mode == "lines+markers"] == ["done (6 runs)"]
    with pytest.raises(actions.AppError, match="is not a column of the runs picked"):
        compare_actions.curves_chart(ctx, ids[:6], "val_loss", group_by="model.nope")


def test_the_table_kept_between_keystrokes_shows_every_change_to_the_store(mixed):
    """The table is read once and kept while the store is unchanged (a keystroke reads no
    run again); a run added, renamed, noted or deleted since shows at the next keystroke."""
    ctx, ids = mixed
    seen = results_view(ctx, ResultsFilters(query="tiny")).total
    assert results_view(ctx, ResultsFilters(query="TINY")).total == seen
    added = ctx.store.create_run(ctx.store.get(ids[0]).spec, name="tiny-late")
    assert results_view(ctx, ResultsFilters(query="TINY")).total == seen + 1
    ctx.store.set_note(ids[0], "a zebra note")
    assert list(results_view(ctx, ResultsFilters(query="zebra")).table["id"]) == [ids[0]]
    ctx.store.set_status(added, "cancelled")  # a queued run is cancelled before it is deleted
    assert "cancelled" in results_view(ctx, ResultsFilters(query="tiny-late")).table["status"][0]
    compare_actions.delete_run(ctx, added, confirmed=True)
    assert results_view(ctx, ResultsFilters(query="TINY")).total == seen
    assert added not in [run_id for _, run_id in compare_actions.run_choices(ctx)]
