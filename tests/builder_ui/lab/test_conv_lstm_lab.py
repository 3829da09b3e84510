"""Lab experiment 7 end to end at a small size: two next-frame models, baselines, report.

The sizes are shrunk (the experiment's `SETTINGS`) so that it runs in well under a
minute; what the experiment measures at the lab's sizes is in `docs/lab/`. The baselines
are checked here against the task's arrays, computed independently of the experiment.
"""

from __future__ import annotations

import numpy as np
import pytest

from builder_ui import lab
from builder_ui.engine.store import RunStore
from builder_ui.lab import conv_lstm
from builder_ui.lab.common import VERDICTS
from keras_seq.tasks import moving_shapes

pytestmark = pytest.mark.large


@pytest.mark.timeout(300)
def test_experiment_seven_trains_conv_and_flat_lstms_and_reports_them_beside_baselines(
    tmp_path, monkeypatch
):
    monkeypatch.setitem(conv_lstm.SETTINGS, "quick", {"videos": 60, "epochs": 1, "seeds": (0, 1)})
    store = RunStore(tmp_path / "runs")
    result = lab.run_experiment(7, store, quick=True, out_dir=tmp_path / "report", log=print)
    assert result.verdict in VERDICTS
    records = [store.get(run_id, history=False) for run_id in result.run_ids]
    assert [r.name for r in records] == [
        "lab-7-conv",
        "lab-7-flat",
        "lab-7-conv-seed1",
        "lab-7-flat-seed1",
    ]
    assert all(r.status == "done" for r in records)
    assert [r.spec["model"]["layout"] for r in records] == ["conv", "flat"] * 2
    assert [r.spec["train"]["seed"] for r in records] == [0, 0, 1, 1]

    rows = result.tables[0]["rows"]
    assert [row["status"] for row in rows] == ["baseline"] * 2 + ["done"] * 4
    # The frame LSTM is matched to the ConvLSTM's size (within one unit's weights).
    conv_row, flat_row = rows[2], rows[3]
    assert conv_row["parameters"] == 29_797
    assert abs(flat_row["parameters"] - conv_row["parameters"]) < 2_000

    # The baselines, from the same validation split (60 videos, 80% for training).
    task = moving_shapes(60, size=16, frames=10, predict=5, seed=0)
    repeated = ((task.x_val[:, -1:] - task.y_val) ** 2).mean()
    mean_frame = ((task.y_train.mean(axis=(0, 1)) - task.y_val) ** 2).mean()
    assert rows[0]["val MSE"] == pytest.approx(repeated, abs=1e-4)
    assert rows[1]["val MSE"] == pytest.approx(mean_frame, abs=1e-4)
    per_frame = [rows[0][f"MSE t+{t}"] for t in range(1, 6)]
    assert np.mean(per_frame) == pytest.approx(repeated, abs=1e-3)
    # A model's measured MSE agrees with the validation MSE Keras reported (the run's final
    # metrics are the validation split's), and its loss is that run's.
    for record, row in zip(records, rows[2:], strict=True):
        assert row["val MSE"] == pytest.approx(record.metrics["mean_squared_error"], abs=1e-3)
        assert row["val loss"] == pytest.approx(record.metrics["loss"], abs=1e-3)
        assert record.metrics["val_mse_last_frame"] == pytest.approx(repeated, abs=1e-6)

    assert [path.name for path in result.figure_paths] == [
        "7-conv-lstm.png",
        "7-conv-lstm-video.png",
    ]
    assert all(path.is_file() and path.stat().st_size > 0 for path in result.figure_paths)
    assert "seed 1: ConvLSTM" in result.finding
    store.close()
