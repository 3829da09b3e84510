"""Comparing runs: the table of differing spec fields and results, curves, CSV."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from builder_ui.engine.store import RunStore
from builder_ui.results.compare import (
    compare,
    default_columns,
    differences,
    differing_fields,
    filter_table,
    flatten,
    group_table,
    metric_columns,
    page_of,
    plot_curves,
    search_texts,
    short_headers,
    to_csv,
)
from tests.app.compare_runs import record_runs


def _spec(units, learning_rate, name="cmp", lag=6):
    return {
        "version": 1,
        "name": name,
        "task": {"type": "long_lag", "lag": lag, "n": 300},
        "model": {
            "type": "sequence_classifier",
            "encoder": {"type": "rnn", "cell": "lstm", "units": units, "forget_gate": None},
        },
        "train": {"epochs": 3, "learning_rate": learning_rate, "early_stopping": None},
    }


def _finished_run(store, spec, losses, *, accuracy, sweep_id=None, params=100):
    """A run recorded through the store's API as the engine records one."""
    run_id = store.create_run(spec, sweep_id=sweep_id)
    store.set_status(run_id, "running", backend="tensorflow", device="CPU", precision="float32")
    store.update(run_id, params=params)
    for epoch, loss in enumerate(losses, start=1):
        store.append_epoch(run_id, epoch, {"loss": loss + 0.1, "val_loss": loss})
    store.finish(
        run_id,
        "done",
        metrics={"accuracy": accuracy, "loss": losses[-1]},
        wall_time=2.5,
        examples_per_sec=960.0,
    )
    return run_id


@pytest.fixture
def store(tmp_path):
    with RunStore(tmp_path / "runs") as store:
        store.ids = [
            _finished_run(store, _spec(8, 0.01), [0.7, 0.5, 0.4], accuracy=0.8, sweep_id="s1"),
            _finished_run(
                store, _spec(16, 0.01), [0.69, 0.3, 0.2], accuracy=0.9, sweep_id="s1", params=300
            ),
            _finished_run(store, _spec(16, 0.1), [0.7, 0.9, math.inf], accuracy=0.5),
        ]
        yield store


def test_flatten_gives_dotted_paths():
    assert flatten({"model": {"encoder": {"units": 8}, "type": "x"}, "train": {}}) == {
        "model.encoder.units": 8,
        "model.type": "x",
        "train": {},
    }


def test_flatten_gives_each_graph_block_field_by_the_blocks_id_as_a_sweep_names_it():
    nodes = [
        {"id": "tokens", "layer": "Input"},
        {"id": "encoder", "layer": "GRU", "inputs": {"inputs": "tokens"}, "params": {"units": 8}},
    ]
    assert flatten({"model": {"type": "graph", "nodes": nodes}, "kernel": [3, 3]}) == {
        "model.type": "graph",
        "model.nodes.tokens.layer": "Input",
        "model.nodes.encoder.layer": "GRU",
        "model.nodes.encoder.inputs.inputs": "tokens",
        "model.nodes.encoder.params.units": 8,
        "kernel": [3, 3],  # a list of values, or of items without distinct ids, stays whole
    }
    twice = [{"id": "a", "layer": "Input"}, {"id": "a", "layer": "Dense"}]
    assert flatten({"nodes": twice}) == {"nodes": twice}


def test_graph_runs_differing_in_one_block_parameter_show_it_as_a_short_column(tmp_path):
    def graph(units, heads):
        return {
            "version": 2,
            "name": "graph",
            "task": {"type": "long_lag", "lag": 6, "n": 300},
            "model": {
                "type": "graph",
                "nodes": [
                    {"id": "steps", "layer": "Input"},
                    {
                        "id": "encoder",
                        "layer": "GRU",
                        "inputs": {"inputs": "steps"},
                        "params": {"units": units, "return_sequences": True},
                    },
                    {
                        "id": "attention",
                        "layer": "MultiHeadSelfAttention",
                        "inputs": {"inputs": "encoder"},
                        "params": {"num_heads": heads},
                    },
                ],
            },
            "train": {"epochs": 3, "learning_rate": 0.01},
        }

    with RunStore(tmp_path / "runs") as store:
        ids = [
            _finished_run(store, graph(8, 2), [0.5], accuracy=0.7),
            _finished_run(store, graph(16, 2), [0.4], accuracy=0.8),
        ]
        table = compare(store, ids)
    assert "model.nodes.encoder.params.units" in table.columns
    assert list(table["model.nodes.encoder.params.units"]) == [8, 16]
    assert not any(column.startswith("model.nodes.attention") for column in table.columns)
    assert not any(str(value).startswith("[") for value in table.to_numpy().ravel())
    assert short_headers(
        ["model.nodes.encoder.params.units", "model.nodes.attention.params.units"]
    ) == {
        "model.nodes.encoder.params.units": "encoder.units",
        "model.nodes.attention.params.units": "attention.units",
    }
    assert short_headers(["model.nodes.attention.params.num_heads", "train.learning_rate"]) == {
        "model.nodes.attention.params.num_heads": "num_heads",
        "train.learning_rate": "learning_rate",
    }


def test_differences_show_what_differs_and_metric_deltas_against_the_first_run(store):
    first, second, third = store.ids  # units 8, 16, 16; learning rate 0.01, 0.01, 0.1
    table = differences(store, [second, first, third])
    assert list(table.columns)[1:] == [
        f"{run} (cmp)" for run in (second, first, third)
    ]  # the baseline first, as picked
    by_field = table.set_index("field")
    assert list(by_field.loc["model.encoder.units"]) == ["16", "8", "16"]
    assert list(by_field.loc["train.learning_rate"]) == ["0.01", "0.01", "0.1"]
    assert "task.lag" not in by_field.index  # the same in all three
    deltas = list(by_field.loc["Δ val_accuracy"])  # accuracies 0.9, 0.8, 0.5
    assert deltas[0] == 0 and deltas[1] == pytest.approx(-0.1) and deltas[2] == pytest.approx(-0.4)
    assert by_field.loc["val_loss"].iloc[2] == "—"  # the third diverged to inf
    assert by_field.loc["Δ val_loss"].iloc[2] == "—"
    with pytest.raises(ValueError, match="two or more runs"):
        differences(store, [first, first])


def test_differences_of_graphs_name_the_blocks_and_edges_added_and_removed(tmp_path):
    def graph(extra: bool):
        nodes = [
            {"id": "steps", "layer": "Input"},
            {
                "id": "encoder",
                "layer": "GRU",
                "inputs": {"inputs": "steps"},
                "params": {"units": 8},
            },
        ]
        if extra:
            nodes.append({"id": "drop", "layer": "Dropout", "inputs": {"inputs": "encoder"}})
        return {
            "version": 2,
            "name": "g",
            "task": {"type": "long_lag"},
            "model": {"type": "graph", "nodes": nodes},
        }

    with RunStore(tmp_path / "runs") as store:
        base = _finished_run(store, graph(False), [0.5], accuracy=0.7)
        more = _finished_run(store, graph(True), [0.4], accuracy=0.8)
        by_field = differences(store, [base, more]).set_index("field")
    assert list(by_field.loc["blocks"]) == ["2 blocks", "+drop"]
    assert list(by_field.loc["edges"]) == ["1 edge", "+encoder → drop"]
    assert list(by_field.loc["model.nodes.drop.layer"]) == ["—", "Dropout"]
    assert "model.nodes.encoder.params.units" not in by_field.index


def test_grouping_gives_each_values_runs_with_the_mean_and_spread_of_each_metric(store):
    table = compare(store, store.ids)  # units 8, 16, 16; accuracy 0.8, 0.9, 0.5
    groups = group_table(table, "model.encoder.units").set_index("model.encoder.units")
    assert list(groups.index) == ["8", "16"] and list(groups["runs"]) == [1, 2]
    assert groups.loc["16", "val_accuracy mean"] == pytest.approx(np.mean([0.9, 0.5]), rel=1e-12)
    assert groups.loc["16", "val_accuracy std"] == pytest.approx(
        np.std([0.9, 0.5], ddof=1), rel=1e-12
    )
    assert groups.loc["8", "val_accuracy mean"] == pytest.approx(0.8, rel=1e-12)
    assert math.isnan(groups.loc["8", "val_accuracy std"])  # one run: no spread
    # The third run's val_loss diverged (inf): the group's mean is over the finite one.
    assert groups.loc["16", "val_loss mean"] == pytest.approx(0.2, rel=1e-12)
    assert "best_val_loss mean" in groups.columns and "best_val_loss_epoch mean" not in groups
    by_sweep = group_table(table, "sweep")
    assert list(by_sweep["sweep"]) == ["s1", "(none)"] and list(by_sweep["runs"]) == [2, 1]
    with pytest.raises(ValueError, match="expected a column of the table"):
        group_table(table, "model.nope")


def test_table_has_one_row_per_run_and_only_the_fields_that_differ(store):
    table = compare(store, store.ids)
    assert list(table.columns) == [
        "id",
        "name",
        "status",
        "sweep",
        "model.encoder.units",
        "train.learning_rate",
        "val_accuracy",
        "val_loss",
        "best_val_loss",
        "best_val_loss_epoch",
        "epochs_run",
        "epochs_planned",
        "params",
        "wall_time",
        "examples_per_sec",
        "device",
    ]
    assert list(table["id"]) == store.ids
    assert list(table["sweep"].iloc[:2]) == ["s1", "s1"] and table["sweep"].isna().iloc[2]
    assert list(table["model.encoder.units"]) == [8, 16, 16]
    assert list(table["train.learning_rate"]) == [0.01, 0.01, 0.1]
    # Values stored exactly as given (JSON round trip of these decimals is exact).
    assert list(table["val_accuracy"]) == [0.8, 0.9, 0.5]
    assert table["val_loss"].iloc[0] == 0.4 and math.isnan(table["val_loss"].iloc[2])  # inf
    assert list(table["params"]) == [100, 300, 100]
    assert set(table["status"]) == {"done"} and set(table["device"]) == {"CPU"}


def test_best_epoch_columns_take_each_metrics_direction_and_skip_what_is_not_finite(store):
    # The fixture's val_loss by epoch: [0.7, 0.5, 0.4], [0.69, 0.3, 0.2], [0.7, 0.9, inf].
    table = compare(store, store.ids)
    assert list(table["best_val_loss"]) == [0.4, 0.2, 0.7]
    assert list(table["best_val_loss_epoch"]) == [3, 3, 1]
    run_id = _finished_run(store, _spec(4, 0.5), [0.6, 0.5, 0.55, 0.5], accuracy=0.6)
    for epoch, accuracy in enumerate([0.5, 0.75, 0.75, 0.6], start=1):  # a tie: the first
        store.append_epoch(run_id, epoch + 4, {"val_accuracy": accuracy, "val_loss": 0.5})
    row = compare(store, [run_id]).iloc[0]
    assert (row["best_val_accuracy"], row["best_val_accuracy_epoch"]) == (0.75, 6)
    assert (row["best_val_loss"], row["best_val_loss_epoch"]) == (0.5, 2)  # lowest, first
    assert "best_loss" not in compare(store).columns  # the epochs' training loss: no column


def test_the_default_columns_hold_the_chosen_metrics_best_and_not_the_others(store):
    run_id = _finished_run(store, _spec(4, 0.5), [0.6], accuracy=0.6)
    store.append_epoch(run_id, 2, {"val_accuracy": 0.7, "val_loss": 0.5})
    table = compare(store)
    shown = default_columns(table, "val_accuracy")
    assert {"best_val_accuracy", "best_val_accuracy_epoch"} <= set(shown)
    assert "best_val_loss" not in shown and "best_val_loss" in table.columns


def test_filters_pick_the_runs(store):
    sweep = compare(store, where={"sweep_id": "s1"})
    assert list(sweep["id"]) == store.ids[:2]
    # Within the sweep only the units differ.
    assert [c for c in sweep.columns if "." in c] == ["model.encoder.units"]
    fast = compare(store, where=lambda record: record.spec["train"]["learning_rate"] > 0.05)
    assert list(fast["id"]) == [store.ids[2]]
    assert [c for c in fast.columns if "." in c] == []  # one run: nothing differs
    assert list(compare(store)["id"]) == store.ids
    with pytest.raises(KeyError, match="missing-run"):
        compare(store, ["missing-run"])


def test_fields_present_in_only_some_runs_differ(store):
    other = store.create_run({**_spec(8, 0.01), "sweep": {"parameters": {"x": [1]}}})
    assert "sweep.parameters.x" in differing_fields(store.list_runs(ids=[store.ids[0], other]))


def test_csv_round_trips_and_is_written_atomically(store, tmp_path):
    table = compare(store, store.ids)
    path = to_csv(table, tmp_path / "out" / "compare.csv")
    assert sorted(p.name for p in path.parent.iterdir()) == ["compare.csv"]
    back = pd.read_csv(path)
    assert list(back.columns) == list(table.columns)
    pd.testing.assert_frame_equal(back, table, check_dtype=False)


def test_curves_of_several_runs_on_one_figure(store):
    figure = plot_curves(store, store.ids[:2], metric="val_loss")
    (axes,) = figure.axes
    lines = axes.get_lines()
    assert [line.get_label() for line in lines] == [f"cmp ({run_id})" for run_id in store.ids[:2]]
    assert list(lines[0].get_xdata()) == [1, 2, 3]
    assert list(lines[1].get_ydata()) == [0.69, 0.3, 0.2]
    assert axes.get_ylabel() == "val_loss"
    with pytest.raises(ValueError, match=r"logged \(\['loss', 'val_loss'\]\), got 'val_accuracy'"):
        plot_curves(store, store.ids, metric="val_accuracy")


@pytest.mark.parametrize(
    ("epochs", "ticks"),
    [(1, [1]), (2, [1, 2]), (12, list(range(1, 13)))],
)
def test_the_epoch_axis_ticks_each_epoch_of_a_short_run(tmp_path, epochs, ticks):
    # matplotlib's own ticks around one epoch are 0.96, 0.98, ..., 1.04: not epochs.
    with RunStore(tmp_path / "runs") as store:
        run = _finished_run(store, _spec(8, 0.01), [0.5] * epochs, accuracy=0.5)
        (axes,) = plot_curves(store, [run]).axes
        assert list(axes.get_xticks()) == ticks


def test_the_epoch_axis_of_a_long_run_has_whole_number_ticks_only(tmp_path):
    with RunStore(tmp_path / "runs") as store:
        run = _finished_run(store, _spec(8, 0.01), [0.5 / e for e in range(1, 41)], accuracy=0.5)
        (axes,) = plot_curves(store, [run]).axes
        axes.figure.canvas.draw()  # the locator places the ticks when the axes are drawn
        ticks = [tick for tick in axes.get_xticks() if 1 <= tick <= 40]
        assert 2 <= len(ticks) < 40 and all(float(tick).is_integer() for tick in ticks), ticks


def test_final_metrics_are_named_as_validation_metrics_and_epochs_run_as_recorded(store):
    # Planned 3 epochs, recorded 1 (stopped early), finished with its validation metrics.
    stopped = store.create_run(_spec(8, 0.01))
    store.set_status(stopped, "running")
    store.append_epoch(stopped, 1, {"loss": 0.6, "val_loss": 0.5, "val_accuracy": 0.7})
    store.finish(stopped, "done", metrics={"accuracy": 0.7, "loss": 0.5})
    table = compare(store).set_index("id")
    assert "accuracy" not in table.columns and "loss" not in table.columns
    assert table.loc[stopped, "val_accuracy"] == 0.7  # stored exactly as given
    assert list(table["epochs_run"]) == [3, 3, 3, 1]  # the epochs appended above
    assert list(table["epochs_planned"]) == [3, 3, 3, 3]  # the specs' train.epochs
    assert "train.epochs" not in table.columns  # it is epochs_planned


def test_a_metric_stored_with_and_without_its_val_prefix_is_one_column(store):
    """`loss` of one run and `val_loss` of another are the same validation metric."""
    prefixed = store.create_run(_spec(8, 0.01))
    store.set_status(prefixed, "running")
    store.finish(prefixed, "done", metrics={"val_loss": 0.25, "val_accuracy": 0.9})
    table = compare(store).set_index("id")
    assert list(table.columns).count("val_loss") == 1
    assert table.loc[prefixed, "val_loss"] == 0.25
    assert table.loc[prefixed, "val_accuracy"] == 0.9
    assert metric_columns(table).count("val_loss") == 1


def test_text_filter_passes_over_empty_cells_and_combines_with_sweep_and_metric_range(store):
    table = compare(store, store.ids)  # the third run: no sweep, val_loss missing (inf)
    assert table["sweep"].isna().iloc[2] and table["val_loss"].isna().iloc[2]
    assert list(filter_table(table, "CMP")["id"]) == store.ids
    assert list(filter_table(table, "s1")["id"]) == store.ids[:2]
    assert filter_table(table, "nan").empty  # an empty cell holds no text
    assert list(filter_table(table, sweep="s1")["id"]) == store.ids[:2]
    ranged = filter_table(table, "cmp", sweep="s1", metric="val_accuracy", low=0.85)
    assert list(ranged["id"]) == [store.ids[1]]  # accuracies 0.8, 0.9 in the sweep
    assert list(filter_table(table, metric="val_loss", high=0.3)["id"]) == [store.ids[1]]
    with pytest.raises(ValueError, match=r"`val_loss`: the minimum 0.5 is above the maximum 0.2"):
        filter_table(table, metric="val_loss", low=0.5, high=0.2)
    with pytest.raises(ValueError, match=r"`metric`, expected one of .*got 'val_bleu'"):
        filter_table(table, metric="val_bleu", low=0.1)
    assert list(filter_table(table.iloc[:0], "x", metric="val_bleu", low=0.1).columns) == list(
        table.columns
    )
    # The rows' search texts made once (the app's, as you type) find the same rows.
    texts = search_texts(table)
    first, second = (str(cell) for cell in table.iloc[0, :2])
    across = first[-2:] + second[:2]  # the end of one cell and the start of the next
    for text in ("CMP", "s1", "nan", "cmp", "0.9", "no such text", across):
        assert list(filter_table(table, text, texts=texts)["id"]) == list(
            filter_table(table, text)["id"]
        )
    with pytest.raises(ValueError, match=r"`texts`, expected one per row of the table \(3\)"):
        filter_table(table, "x", texts=texts[:2])
    # The runs a brush keeps, with the other filters; an empty brush keeps none.
    brushed = [store.ids[2], store.ids[0]]
    assert list(filter_table(table, ids=brushed)["id"]) == [store.ids[0], store.ids[2]]
    assert list(filter_table(table, sweep="s1", ids=brushed)["id"]) == [store.ids[0]]
    assert filter_table(table, ids=[]).empty


def test_default_columns_of_three_model_types_are_the_few_that_differ_and_most_runs_have(
    tmp_path,
):
    with RunStore(tmp_path / "mixed") as mixed:
        record_runs(mixed, 6)
        table = compare(mixed)
    assert len(table.columns) > 40  # every field of every model type
    shown = default_columns(table, "val_accuracy")
    assert shown[:3] == ["id", "name", "status"] and shown[-3:] == ["params", "wall_time", "device"]
    assert {"model.type", "task.type", "train.learning_rate", "val_accuracy"} <= set(shown)
    # One model type's fields are in a third of the runs: left out, one pick away.
    assert "model.encoder.units" not in shown and "model.architecture.units" not in shown
    assert "val_bleu" not in shown  # only the seq2seq runs have BLEU
    assert len(shown) <= 17
    # The same store filtered to one model type shows that type's differing fields.
    one_type = table[table["model.type"] == "sequence_classifier"]
    assert "model.encoder.units" not in default_columns(one_type)  # the same in each
    assert "train.learning_rate" in default_columns(one_type)


def test_epochs_planned_is_shown_when_a_run_stopped_before_its_plan(store):
    assert "epochs_planned" not in default_columns(compare(store))
    stopped = store.create_run(_spec(8, 0.01))
    store.set_status(stopped, "running")
    store.append_epoch(stopped, 1, {"loss": 0.6})
    store.finish(stopped, "failed", error="boom")
    assert "epochs_planned" in default_columns(compare(store))


def test_short_headers_are_the_last_part_of_the_path_unless_two_columns_share_it():
    columns = ["id", "name", "task.name", "model.encoder.units", "model.decoder.units", "x.lr"]
    assert short_headers(columns) == {
        "id": "id",
        "name": "name",
        "task.name": "task.name",
        "model.encoder.units": "encoder.units",
        "model.decoder.units": "decoder.units",
        "x.lr": "lr",
    }


def test_pages_of_a_long_table_and_a_page_past_the_end_is_the_last(store):
    table = pd.DataFrame({"id": [f"r{i}" for i in range(450)]})
    rows, page, pages = page_of(table, 3, size=200)
    assert (page, pages, list(rows["id"])) == (3, 3, [f"r{i}" for i in range(400, 450)])
    assert page_of(table, 99, size=200)[1] == 3 and page_of(table, 0, size=200)[1] == 1
    assert page_of(table.iloc[:0])[1:] == (1, 1)
