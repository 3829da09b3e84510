"""Lab experiment 6 end to end at a small size: three captioners in the store, gaze, report.

The sizes are shrunk (the experiment's `SETTINGS`) so that it runs in well under a
minute; what the experiment measures at the lab's sizes is in `docs/lab/`. The learning
claim itself is tested in tests/keras_seq/models/test_captioning_learning.py.
"""

from __future__ import annotations

import pytest

from builder_ui import lab
from builder_ui.engine.store import RunStore
from builder_ui.lab import visual_attention
from builder_ui.lab.common import VERDICTS

pytestmark = pytest.mark.large


@pytest.mark.timeout(300)
def test_experiment_six_trains_three_captioners_and_reports_their_gaze(tmp_path, monkeypatch):
    monkeypatch.setitem(visual_attention.SETTINGS, "quick", {"images": 120, "epochs": 1})
    store = RunStore(tmp_path / "runs")
    result = lab.run_experiment(6, store, quick=True, out_dir=tmp_path / "report", log=print)
    assert result.verdict in VERDICTS
    assert len(result.run_ids) == 3
    records = [store.get(run_id, history=False) for run_id in result.run_ids]
    assert [r.name for r in records] == [
        "lab-6-paper",
        "lab-6-doubly-stochastic",
        "lab-6-no-positions",
    ]
    assert all(r.status == "done" for r in records)
    assert all(0.0 <= r.metrics["gaze_on_object"] <= 1.0 for r in records)
    rows = result.tables[0]["rows"]
    assert [row["status"] for row in rows] == ["done"] * 3
    assert all(row["uniform gaze"] > 0 for row in rows)
    assert [path.name for path in result.figure_paths] == [
        "6-visual-attention.png",
        "6-visual-attention-gaze.png",
    ]
    assert all(path.is_file() and path.stat().st_size > 0 for path in result.figure_paths)
    assert "of an object word's attention" in result.finding
    store.close()
