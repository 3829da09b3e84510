"""Comparing runs: the table of differing spec fields and results, curves, CSV."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from builder_ui.engine.store import RunStore
from builder_ui.results.compare import compare, differing_fields, flatten, plot_curves, to_csv


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


def test_table_has_one_row_per_run_and_only_the_fields_that_differ(store):
    table = compare(store, store.ids)
    assert list(table.columns) == [
        "id",
        "name",
        "status",
        "model.encoder.units",
        "train.learning_rate",
        "accuracy",
        "loss",
        "params",
        "wall_time",
        "examples_per_sec",
        "device",
    ]
    assert list(table["id"]) == store.ids
    assert list(table["model.encoder.units"]) == [8, 16, 16]
    assert list(table["train.learning_rate"]) == [0.01, 0.01, 0.1]
    assert list(table["accuracy"]) == [0.8, 0.9, 0.5]
    assert table["loss"].iloc[0] == 0.4 and math.isnan(table["loss"].iloc[2])  # inf → missing
    assert list(table["params"]) == [100, 300, 100]
    assert set(table["status"]) == {"done"} and set(table["device"]) == {"CPU"}


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
