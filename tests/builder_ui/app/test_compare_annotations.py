"""The Compare tab's run annotations and charts, as its actions do them (no Gradio).

Real run stores written through `RunStore`'s API, changed by the same actions the tab's
buttons call, and read back from the store.
"""

from __future__ import annotations

import pytest

from builder_ui.app import actions
from builder_ui.app.actions import compare as compare_actions
from builder_ui.app.actions.compare import ResultsFilters, results_view
from tests.app.compare_runs import record_runs


@pytest.fixture
def ctx(tmp_path):
    context = actions.AppContext(tmp_path / "runs", slots=["cpu"])
    yield context
    context.close()


@pytest.fixture
def six(ctx):
    return ctx, record_runs(ctx.store, 6)


def test_saved_name_tags_and_note_show_in_the_table_and_the_tag_filter(six):
    ctx, ids = six
    notes = compare_actions.save_annotations(ctx, ids[0], "baseline run", "lstm, base", "ok")
    assert (notes.name, notes.tags, notes.note) == ("baseline run", "base, lstm", "ok")
    compare_actions.toggle_star(ctx, ids[0])
    view = results_view(ctx)
    row = view.table[view.table["id"] == ids[0]].iloc[0]
    assert (row["★"], row["tags"], row["name"]) == ("★", "base, lstm", "baseline run")
    assert "tags" in view.shown and view.tags == ["base", "lstm"]
    assert list(results_view(ctx, ResultsFilters(tag="lstm")).table["id"]) == [ids[0]]
    # Tags typed again replace the run's tags: one taken away, one added.
    compare_actions.save_annotations(ctx, ids[0], "baseline run", "lstm gru", "ok")
    assert ctx.store.get(ids[0]).tags == ("gru", "lstm")


def test_archived_runs_are_hidden_unless_show_archived(six):
    ctx, ids = six
    assert compare_actions.toggle_archive(ctx, ids[2]).archived
    assert ids[2] not in list(results_view(ctx).table["id"])
    assert ids[2] in list(results_view(ctx, ResultsFilters(show_archived=True)).table["id"])
    assert not compare_actions.toggle_archive(ctx, ids[2]).archived


@pytest.mark.parametrize(
    ("name", "tags", "note", "said"),
    [
        ("", "a", "", "`name`"),
        ("ok", "fine, not/ok!", "", "'not/ok!'"),
        ("ok", "a", "x" * 10_001, "`note`"),
    ],
)
def test_a_refused_field_changes_nothing_at_all(six, name, tags, note, said):
    ctx, ids = six
    before = ctx.store.get(ids[0], history=False)
    with pytest.raises(actions.AppError, match="invalid value") as caught:
        compare_actions.save_annotations(ctx, ids[0], name, tags, note)
    assert said in str(caught.value)
    assert ctx.store.get(ids[0], history=False) == before


def test_delete_needs_the_tick_then_removes_the_run_and_refuses_a_queued_one(six):
    ctx, ids = six
    with pytest.raises(actions.AppError, match="Tick"):
        compare_actions.delete_run(ctx, ids[1], False)
    assert ctx.store.exists(ids[1])
    assert "Deleted run" in compare_actions.delete_run(ctx, ids[1], True)
    assert not ctx.store.exists(ids[1]) and not ctx.store.artifact_dir(ids[1]).exists()
    queued = ctx.store.create_run(ctx.store.get(ids[0]).spec, name="waiting")
    with pytest.raises(actions.AppError, match="is queued"):
        compare_actions.delete_run(ctx, queued, True)
    with pytest.raises(actions.AppError, match="choose a run"):
        compare_actions.toggle_star(ctx, "")


def test_the_charts_draw_the_runs_the_filters_keep(six):
    ctx, ids = six
    curves = compare_actions.curves_chart(ctx, ids[:2], ["loss", "val_loss"])
    assert len(curves.data) == 4
    kept = ResultsFilters(query="tiny-gru")  # the classifiers: runs 0 and 3
    (lines,) = compare_actions.hparams_chart(ctx, kept, "val_accuracy").data
    assert list(lines.dimensions[-1].values) == pytest.approx([3 / 6, 0 / 6], abs=1e-12)
    scatter = compare_actions.scatter_chart(ctx, kept, "train.learning_rate", "val_accuracy")
    assert sorted(scatter.data[0].x) == pytest.approx(
        [0.001, 0.03], abs=1e-12
    )  # rates of runs 0, 3
    assert "train.learning_rate" in results_view(ctx).hyperparameters
    with pytest.raises(actions.AppError, match="Choose a hyperparameter"):
        compare_actions.scatter_chart(ctx, kept, "", "val_accuracy")
