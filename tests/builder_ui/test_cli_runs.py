"""`keras-seq runs` says what its numbers are: validation metrics, epochs run and planned.

A real run store written through `RunStore`'s API, read by `cli.main` as a person runs it.
"""

from __future__ import annotations

import pandas as pd
import pytest

from builder_ui import cli
from builder_ui.app.actions import AppContext, results_view
from builder_ui.engine.store import RunStore
from tests.app.compare_runs import full_spec, record_runs


@pytest.fixture
def runs(tmp_path):
    """Three finished runs of two epochs, and one that planned five and stopped after one."""
    directory = tmp_path / "runs"
    with RunStore(directory) as store:
        ids = record_runs(store, 3)
        stopped = store.create_run(full_spec("sequence_classifier", epochs=5), name="stopped")
        store.set_status(stopped, "running")
        store.append_epoch(stopped, 1, {"loss": 0.7, "val_loss": 0.8})
        store.finish(stopped, "done", metrics={"loss": 0.8, "accuracy": 0.25})
    return directory, [*ids, stopped]


def test_the_runs_table_names_validation_metrics_and_epochs_run_against_planned(
    runs, tmp_path, capsys
):
    directory, ids = runs
    csv = tmp_path / "runs.csv"
    assert cli.main(["runs", "--runs", str(directory), "--csv", str(csv)]) == 0
    header = capsys.readouterr().out.splitlines()[0].split()
    assert {"val_accuracy", "val_loss", "epochs_run", "epochs_planned"} <= set(header)
    assert "accuracy" not in header and "epochs" not in header
    table = pd.read_csv(csv)
    assert list(table["id"]) == ids
    assert list(table["epochs_run"]) == [2, 2, 2, 1]  # the epochs appended to the store
    assert list(table["epochs_planned"]) == [2, 2, 2, 5]  # the specs' train.epochs
    # Accuracies written as 0, none (a translator), 2/3 and 0.25; the CSV keeps 16+ digits.
    accuracy = table["val_accuracy"]
    assert accuracy.isna().tolist() == [False, True, False, False]
    assert list(accuracy.dropna()) == pytest.approx([0.0, 2 / 3, 0.25], abs=1e-12)
    assert table["val_bleu"].notna().tolist() == [False, True, False, False]
    assert "accuracy" not in table.columns and "loss" not in table.columns


def test_runs_compare_names_them_the_same_way(runs, tmp_path, capsys):
    directory, ids = runs
    csv = tmp_path / "compare.csv"
    argv = ["runs", "--runs", str(directory), "--compare", ids[0], ids[3], "--csv", str(csv)]
    assert cli.main(argv) == 0
    table = pd.read_csv(csv)
    assert list(table["epochs_run"]) == [2, 1] and list(table["epochs_planned"]) == [2, 5]
    assert list(table["val_accuracy"]) == pytest.approx([0.0, 0.25], abs=1e-12)
    assert "val_accuracy" in capsys.readouterr().out


def test_runs_prints_the_columns_the_compare_tab_shows_and_any_other_on_request(
    runs, tmp_path, capsys
):
    directory, _ = runs
    ctx = AppContext(directory, slots=["cpu"])
    try:
        shown = results_view(ctx)
    finally:
        ctx.close()
    assert cli.main(["runs", "--runs", str(directory)]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[0].split()
    assert set(header) == set(shown.table.columns)  # the app's short headers, every one
    # A shortened header is spelled out under the table, as under the app's.
    for column, head in zip(shown.shown, shown.table.columns, strict=True):
        if head != column:
            assert f"{head} = {column}" in out
    # Any other column on request, the id first; every one with `all`.
    assert cli.main(["runs", "--runs", str(directory), "--columns", "train.learning_rate"]) == 0
    assert capsys.readouterr().out.splitlines()[0].split() == ["id", "learning_rate"]
    assert cli.main(["runs", "--runs", str(directory), "--columns", "all"]) == 0
    assert "best_val_loss_epoch" in capsys.readouterr().out.splitlines()[0]
    assert cli.main(["runs", "--runs", str(directory), "--columns", "id,nope"]) == 2
    assert "--columns: no column 'nope' in this table; its columns: id" in capsys.readouterr().err
