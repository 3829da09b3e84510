"""The Compare charts as data: each Plotly figure's traces hold the runs' own numbers.

Real run stores written through `RunStore`'s API (as the engine writes runs); the
expected numbers are the ones written, read back independently of the code under test.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from builder_ui.engine.store import RunStore
from builder_ui.results import charts
from builder_ui.results.compare import compare
from tests.app.compare_runs import full_spec, record_runs

# Written to the store as JSON and read back: the same binary doubles, so `==` would hold;
# `approx` with 1e-12 still leaves room for a float64 -> float conversion on the way.
EXACT = 1e-12


@pytest.fixture
def store(tmp_path):
    """Four classifiers: two cells x two learning rates, three epochs each, known accuracies."""
    with RunStore(tmp_path / "runs") as store:
        runs = []
        for i, (cell, rate) in enumerate(
            [("gru", 0.01), ("lstm", 0.01), ("gru", 0.1), ("lstm", 0.1)]
        ):
            spec = full_spec("sequence_classifier", learning_rate=rate, epochs=3)
            spec["model"]["encoder"]["cell"] = cell
            run_id = store.create_run(spec, name=f"{cell}-{rate}")
            store.set_status(run_id, "running")
            for epoch in (1, 2, 3):
                logs = {"loss": 1.0 / (epoch + i), "val_loss": 1.5 / (epoch + i)}
                logs["val_accuracy"] = 0.5 + 0.1 * i + 0.01 * epoch
                store.append_epoch(run_id, epoch, logs)
            store.finish(run_id, "done", metrics={"loss": 0.2, "accuracy": 0.6 + 0.1 * i})
            runs.append(run_id)
        yield store, runs


def test_learning_curves_have_one_panel_per_metric_and_one_colour_and_legend_per_run(store):
    store, ids = store
    records = store.list_runs(ids=ids[:2], history=True)
    figure = charts.learning_curves(records, ["val_loss", "val_accuracy"])
    traces = figure.data
    assert len(traces) == 4  # two runs x two metrics
    by_run = {run_id: [t for t in traces if t.legendgroup == run_id] for run_id in ids[:2]}
    for i, run_id in enumerate(ids[:2]):
        loss, accuracy = by_run[run_id]
        assert list(loss.x) == [1, 2, 3]
        assert list(loss.y) == pytest.approx([1.5 / (e + i) for e in (1, 2, 3)], abs=EXACT)
        assert list(accuracy.y) == pytest.approx([0.5 + 0.1 * i + 0.01 * e for e in (1, 2, 3)])
        assert (loss.yaxis, accuracy.yaxis) == ("y", "y2")  # one panel per metric
        assert loss.line.color == accuracy.line.color
        assert [loss.showlegend, accuracy.showlegend] == [True, False]
    # The figure is plain JSON (lists, not binary arrays), as the browser receives it.
    assert json.loads(figure.to_json())["data"][0]["y"][0] == pytest.approx(1.5, abs=EXACT)


def test_the_epoch_axis_of_a_short_run_ticks_whole_epochs_only(store):
    """Three epochs: ticks at 1, 2, 3 (Plotly's own choice put 1.5 and 2.5 between them)."""
    store, ids = store
    figure = charts.learning_curves(store.list_runs(ids=ids[:2], history=True), ["val_loss"])
    axis = figure.layout.xaxis
    assert (axis.tick0, axis.dtick) == (1, 1)


def test_learning_curves_refuse_a_metric_no_run_logged_and_list_what_they_logged(store):
    store, ids = store
    with pytest.raises(ValueError, match=r"expected metrics the runs logged \(\['loss', 'val_acc"):
        charts.learning_curves(store.list_runs(ids=ids, history=True), ["bleu"])


def test_parallel_coordinates_have_an_axis_per_differing_hyperparameter_and_the_metric(store):
    store, ids = store
    table = compare(store, ids)
    figure = charts.parallel_coordinates(table, "val_accuracy")
    (trace,) = figure.data
    labels = [dimension.label for dimension in trace.dimensions]
    assert labels == ["cell", "learning_rate", "val_accuracy"]
    cell, rate, accuracy = trace.dimensions
    # Text becomes categories: codes with the names as ticks.
    assert list(cell.ticktext) == ["gru", "lstm"] and list(cell.values) == [0, 1, 0, 1]
    assert list(rate.values) == pytest.approx([0.01, 0.01, 0.1, 0.1], abs=EXACT)
    expected = [0.6 + 0.1 * i for i in range(4)]
    assert list(accuracy.values) == pytest.approx(expected, abs=EXACT)
    assert list(trace.line.color) == pytest.approx(expected, abs=EXACT)
    # Each line's run, in the values' order (the Compare tab filters by the brushed lines).
    assert trace.meta["run_ids"] == ids
    assert json.loads(figure.to_json())["data"][0]["meta"]["run_ids"] == ids


def test_parallel_coordinates_leave_out_runs_without_the_metric_and_say_when_none_has_it(store):
    store, ids = store
    queued = store.create_run(store.get(ids[0]).spec, name="waiting")
    table = compare(store, [*ids, queued])
    (trace,) = charts.parallel_coordinates(table, "val_accuracy").data
    assert len(trace.dimensions[-1].values) == 4
    with pytest.raises(ValueError, match="No run shown has a value of `val_accuracy`"):
        charts.parallel_coordinates(compare(store, [queued, ids[0]]).iloc[:1], "val_accuracy")
    with pytest.raises(ValueError, match="expected one of"):
        charts.parallel_coordinates(table, "accuracy")


def test_the_scatter_puts_one_point_per_run_at_its_hyperparameter_and_metric(store):
    store, ids = store
    table = compare(store, ids)
    (trace,) = charts.hyperparameter_scatter(table, "train.learning_rate", "val_accuracy").data
    assert list(trace.x) == pytest.approx([0.01, 0.01, 0.1, 0.1], abs=EXACT)
    assert list(trace.y) == pytest.approx([0.6 + 0.1 * i for i in range(4)], abs=EXACT)
    assert list(trace.text) == [f"{r.name} ({r.id})" for r in store.list_runs(ids=ids)]
    cells = charts.hyperparameter_scatter(table, "model.encoder.cell", "val_accuracy")
    assert list(cells.data[0].x) == ["gru", "lstm", "gru", "lstm"]
    assert cells.layout.xaxis.type == "category"
    with pytest.raises(ValueError, match=r"`hyperparameter`.*got 'nope'"):
        charts.hyperparameter_scatter(table, "nope", "val_accuracy")


def test_bleu_by_length_ticks_read_the_buckets_and_its_table_has_one_or_two_decimals():
    frame = pd.DataFrame(
        {
            "bucket": ["1-10", "11-20"],
            "min_length": [1, 11],
            "max_length": [10, 20],
            "n": [30, 12],
            "bleu": [41.23456, 18.98765],
            "exact_match": [0.123456, 0.0],
            "token_accuracy": [0.876543, 0.5],
        }
    )
    figure = charts.bleu_by_length_figure([("a", frame)])
    assert list(figure.layout.xaxis.ticktext) == ["1-10", "11-20"]
    assert list(figure.layout.xaxis.tickvals) == [5.5, 15.5] == list(figure.data[0].x)
    assert list(figure.data[0].y) == pytest.approx([41.23456, 18.98765], abs=EXACT)
    rounded = charts.bleu_table_rounded(frame)
    # Rounded to 1 and 2 decimals: within half a unit of the last decimal kept.
    assert list(rounded["bleu"]) == pytest.approx([41.2, 19.0], abs=1e-9)
    assert list(rounded["exact_match"]) == pytest.approx([0.12, 0.0], abs=1e-9)
    assert list(rounded["token_accuracy"]) == pytest.approx([0.88, 0.5], abs=1e-9)
    assert frame["bleu"].iloc[0] == pytest.approx(41.23456, abs=EXACT)  # the input is kept


def test_parallel_coordinates_of_several_model_types_skip_the_mostly_empty_fields(tmp_path):
    # Three model types: a field for every field of every type, each filled by a third.
    with RunStore(tmp_path / "mixed") as store:
        ids = record_runs(store, 6)
        table = compare(store, ids)
    assert len(charts.hyperparameter_columns(table)) > charts.MAX_AXES
    (trace,) = charts.parallel_coordinates(table, "val_loss").data
    labels = [dimension.label for dimension in trace.dimensions]
    # Five learning rates over two decades: a log axis.
    assert "learning_rate (log)" in labels and "units" not in labels
    assert labels[-1] == "val_loss" and len(labels) <= charts.MAX_AXES + 1


def test_a_parallel_axis_over_decades_is_logarithmic_and_a_grid_is_ticked_at_its_values():
    table = pd.DataFrame(
        {
            "id": ["a", "b", "c", "d"],
            "train.learning_rate": [0.001, 0.01, 0.1, 0.01],
            "model.encoder.units": [8, 16, 32, 16],
            "val_accuracy": [0.5, 0.75, 0.625, 0.7],
        }
    )
    (trace,) = charts.parallel_coordinates(table, "val_accuracy").data
    rate, units, _ = trace.dimensions
    assert rate.label == "learning_rate (log)"
    assert list(rate.values) == pytest.approx([-3.0, -2.0, -1.0, -2.0], abs=1e-12)
    assert list(rate.ticktext) == ["0.001", "0.01", "0.1"]
    assert units.label == "units" and list(units.values) == [8, 16, 32, 16]
    assert list(units.tickvals) == [8, 16, 32] and list(units.ticktext) == ["8", "16", "32"]


# A lower bound of the width of one character of Plotly's default 12 px sans-serif font
# (its narrowest lower-case letters are about half the font size wide).
CHAR_PX = 6


def _points_on_each_axis(figure) -> dict[str, list[float]]:
    """Layout axis name (`xaxis`, `yaxis2`, …) -> every number a trace draws on it."""
    points: dict[str, list[float]] = {}
    for trace in figure.data:
        if trace.type != "scatter":
            continue  # parcoords has no x and y: its dimensions are checked apart
        for letter in ("x", "y"):
            axis = getattr(trace, f"{letter}axis", None) or letter
            name = f"{letter}axis{axis[1:]}"
            values = [v for v in getattr(trace, letter) or () if isinstance(v, (int, float))]
            points.setdefault(name, []).extend(values)
    return points


def assert_every_range_holds_every_point(figure) -> None:
    """Each axis given a range (or a parcoords dimension) holds every point drawn on it."""
    for name, values in _points_on_each_axis(figure).items():
        axis_range = figure.layout[name].range
        if axis_range is not None and values:
            low, high = sorted(axis_range)
            assert low <= min(values) and max(values) <= high, (name, axis_range, values)
    for trace in figure.data:
        for dimension in getattr(trace, "dimensions", None) or ():
            if dimension.range is not None:
                low, high = sorted(dimension.range)
                assert low <= min(dimension.values) <= max(dimension.values) <= high


def test_every_chart_axis_holds_every_point_drawn_on_it(store):
    store, ids = store
    records = store.list_runs(ids=ids, history=True)  # val_loss 1.5 down to 0.25
    assert_every_range_holds_every_point(charts.learning_curves(records, ["val_loss"]))
    table = compare(store, ids)
    assert_every_range_holds_every_point(charts.parallel_coordinates(table, "val_accuracy"))
    scatter = charts.hyperparameter_scatter(table, "train.learning_rate", "val_accuracy")
    assert_every_range_holds_every_point(scatter)
    frame = pd.DataFrame(
        {
            "bucket": ["1-10", "11-20"],
            "min_length": [1, 11],
            "max_length": [10, 20],
            "n": [3, 2],
            "bleu": [100.0, 0.0],
            "exact_match": [1.0, 0.0],
            "token_accuracy": [1.0, 0.25],
        }
    )
    for metric in charts.BLEU_DECIMALS:
        assert_every_range_holds_every_point(charts.bleu_by_length_figure([("a", frame)], metric))


def test_runs_with_the_same_curve_differ_in_marker_and_share_one_hover(tmp_path):
    # A seeded spec trained twice logs the same curve: the second line lies exactly on
    # the first, so only its marker shape and the hover can show both runs are there.
    with RunStore(tmp_path / "runs") as store:
        ids = record_runs(store, 3, epochs=3)  # every run logs val_loss = 1.1 / epoch
        records = store.list_runs(ids=ids, history=True)
    figure = charts.learning_curves(records, ["val_loss", "loss"])
    assert [list(t.y) for t in figure.data[::2]] == [list(figure.data[0].y)] * 3
    symbols = {
        run_id: {t.marker.symbol for t in figure.data if t.legendgroup == run_id} for run_id in ids
    }
    assert all(len(shapes) == 1 for shapes in symbols.values())  # one shape per run
    shapes = {shapes.pop() for shapes in symbols.values()}
    assert len(shapes) == 3  # a different one each
    assert all(shape.endswith("-open") for shape in shapes)  # hollow: none hides another
    assert figure.layout.hovermode == "x unified"  # one hover lists every run's value
    assert all("%{fullData.name}" in trace.hovertemplate for trace in figure.data)


def _longest_text(dimension) -> int:
    """Characters of the widest tick text of a parcoords dimension (its numbers as shown)."""
    if dimension.ticktext is not None:
        return max(len(text) for text in dimension.ticktext)
    return max(len(f"{value:.4g}") for value in dimension.values)


def test_parallel_coordinates_have_room_for_the_outer_axes_ticks_and_names(tmp_path):
    # The first axis's tick texts lie left of it and each name is centred over its
    # axis: the margins must hold them, or the browser cuts them at the figure's edge.
    with RunStore(tmp_path / "mixed") as store:
        ids = record_runs(store, 6)  # model.type: sequence_classifier, pointer_network, …
        table = compare(store, ids)
    figure = charts.parallel_coordinates(table, "val_loss")
    (trace,) = figure.data
    first, last = trace.dimensions[0], trace.dimensions[-1]
    assert "sequence_classifier" in first.ticktext
    left = max(_longest_text(first), len(first.label) / 2) * CHAR_PX
    assert figure.layout.margin.l >= left
    assert figure.layout.margin.r >= len(last.label) / 2 * CHAR_PX
    assert figure.layout.margin.t >= 2 * 12  # the names sit above the tick at the top


def test_a_long_category_name_is_shortened_so_the_margin_stays_bounded(store):
    store, ids = store
    table = compare(store, ids)
    long_name = "data/uploads/" + "x" * 60 + ".txt"  # a data file path, say
    table["task.path"] = [long_name, "short.txt", long_name, "short.txt"]
    figure = charts.parallel_coordinates(table, "val_accuracy", ["task.path", "model.encoder.cell"])
    ticks = list(figure.data[0].dimensions[0].ticktext)
    assert ticks[0] == long_name[: charts.MAX_TICK_CHARS - 1] + "…" and ticks[1] == "short.txt"
    assert figure.layout.margin.l <= (charts.MAX_TICK_CHARS + 2) * 8  # not 60-odd characters


def test_smoothing_is_tensorboards_debiased_moving_average():
    # w = 0.5 by hand: m = 0.5 m + 0.5 x from m = 0, shown m / (1 - 0.5^n).
    #   x = 1: m = 0.5,    / 0.5   = 1
    #   x = 2: m = 1.25,   / 0.75  = 1.6667
    #   x = NaN: kept, skipped
    #   x = 3: m = 2.125,  / 0.875 = 2.4286
    got = charts.smoothed([1.0, 2.0, float("nan"), 3.0], 0.5)
    assert got[:2] == pytest.approx([1.0, 5 / 3], rel=1e-12)
    assert got[2] != got[2] and got[3] == pytest.approx(2.125 / 0.875, rel=1e-12)
    assert charts.smoothed([4.0, 1.0], 0.0) == [4.0, 1.0]


def test_curves_smoothed_on_the_seconds_of_training_with_a_log_scale(tmp_path):
    with RunStore(tmp_path / "runs") as store:
        run_id = store.create_run(full_spec("sequence_classifier", epochs=3), name="timed")
        store.set_status(run_id, "running")
        for epoch, seconds in ((1, 2.0), (2, 3.0), (3, 4.0)):
            store.append_epoch(run_id, epoch, {"val_loss": 1.5 / epoch}, seconds=seconds)
        records = store.list_runs(ids=[run_id], history=True)
    figure = charts.learning_curves(records, ["val_loss"], smoothing=0.6, x_axis="time", log_y=True)
    faint, shown = figure.data  # the logged curve, faint, under the smoothed one
    logged = [1.5 / epoch for epoch in (1, 2, 3)]
    assert list(faint.y) == pytest.approx(logged, rel=EXACT)
    assert faint.opacity < 1  # drawn faint, under the smoothed curve
    assert list(shown.y) == pytest.approx(charts.smoothed(logged, 0.6), rel=EXACT)
    assert list(shown.x) == pytest.approx([2.0, 5.0, 9.0], rel=EXACT)  # seconds, summed
    assert figure.layout.yaxis.type == "log"
    assert figure.layout.xaxis.title.text == "seconds of training"
    with pytest.raises(ValueError, match=r"`smoothing`, expected a number from 0 to 0\.99"):
        charts.learning_curves(records, ["val_loss"], smoothing=1.0)
    with pytest.raises(ValueError, match=r"`x_axis`, expected one of epoch, time, got 'step'"):
        charts.learning_curves(records, ["val_loss"], x_axis="step")


def test_grouped_curves_draw_each_groups_mean_and_a_band_of_one_std(tmp_path):
    losses = {"a1": [1.0, 2.0], "a2": [3.0, 4.0], "b1": [0.5, 0.25]}
    with RunStore(tmp_path / "runs") as store:
        ids = {}
        for name, values in losses.items():
            run_id = ids[name] = store.create_run(full_spec("sequence_classifier"), name=name)
            for epoch, value in enumerate(values, start=1):
                store.append_epoch(run_id, epoch, {"val_loss": value})
        records = store.list_runs(ids=list(ids.values()), history=True)
    groups = {ids["a1"]: "A", ids["a2"]: "A", ids["b1"]: "B"}
    figure = charts.group_curves(records, ["val_loss"], groups)
    band, mean_a, mean_b = figure.data  # one band for A (two runs), none for B (one)
    assert mean_a.name == "A (2 runs)" and mean_b.name == "B (1 run)"
    assert list(mean_a.y) == pytest.approx([2.0, 3.0], rel=EXACT)  # (1 + 3) / 2, (2 + 4) / 2
    assert list(mean_b.y) == pytest.approx([0.5, 0.25], rel=EXACT)
    spread = np.std([1.0, 3.0], ddof=1)  # = std of [2, 4]: sqrt(2)
    assert list(band.x) == [1, 2, 2, 1] and band.fill == "toself"
    assert list(band.y) == pytest.approx([2 + spread, 3 + spread, 3 - spread, 2 - spread])
    with pytest.raises(ValueError, match="expected metrics the runs of the groups logged"):
        charts.group_curves(records, ["bleu"], groups)
