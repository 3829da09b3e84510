"""What quick experiment 1 (vanishing gradients) leaves: its report, figure, tables,
results.json and runs, as the app's Lab list runs it (tests/app/test_app_client.py)."""

import json

import pytest

from builder_ui.engine.store import RunStore
from builder_ui.lab import report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def check_the_report_of_quick_experiment_one(out, runs):
    """The report, figure, tables, results.json and runs experiment 1 left (quick mode)."""
    text = (out / report.REPORT_FILE).read_text(encoding="utf-8")
    assert "## 1. Vanishing gradients" in text
    assert "**The papers' claim.**" in text and "**Measured.**" in text
    assert "**Verdict:" in text and "Quick mode" in text
    for other in range(2, 6):  # only experiment 1 ran
        assert f"## {other}." not in text

    data = json.loads((out / report.RESULTS_FILE).read_text(encoding="utf-8"))
    entry = data["experiments"]["1"]
    assert entry["mode"] == "quick" and data["invocation"]["experiments"] == [1]
    figure = out / entry["figures"][0]
    assert f"]({entry['figures'][0]})" in text
    assert figure.read_bytes()[:8] == PNG_MAGIC and figure.stat().st_size > 10_000

    # Table (a): every layer measured, the SimpleRNN vanishing, the truncated carousel flat.
    gradient_rows = {row["layer"]: row for row in entry["tables"][0]["rows"]}
    assert len(gradient_rows) == 5
    ratio_column = next(c for c in entry["tables"][0]["columns"] if c.startswith("ratio"))
    assert gradient_rows["SimpleRNN"][ratio_column] < 1e-6
    assert 0.5 <= gradient_rows["CEC-LSTM 1997, truncated gradient"][ratio_column] <= 2.0
    assert "| SimpleRNN |" in text

    # Table (b): clipping caps the exploding side at the clip norm, keeps the vanishing ratio.
    exploding, vanishing = entry["tables"][1]["rows"]
    assert exploding["total grad norm"] > 1e3
    assert exploding["after clipping to 1"] == pytest.approx(1.0, rel=1e-3)
    assert vanishing["same ratio after clipping"] == pytest.approx(
        vanishing["ratio lag 99 / lag 0"], rel=1e-3
    )

    # The runs are in the store, in the experiment's sweep, named, and agree with table (c).
    with RunStore(runs) as store:
        records = store.list_runs(sweep_id=entry["sweep_id"], history=True)
    assert sorted(r.id for r in records) == sorted(entry["run_ids"])
    assert sorted(r.name for r in records) == [
        "lab-1-simple-lag50-clip",
        "lab-1-simple-lag50-noclip",
    ]
    assert all(r.status == "done" and r.spec["task"]["type"] == "long_lag" for r in records)
    clipnorms = {r.name: r.spec["train"]["clipnorm"] for r in records}
    assert clipnorms == {"lab-1-simple-lag50-clip": 1.0, "lab-1-simple-lag50-noclip": None}
    trained = {row["run"]: row for row in entry["tables"][2]["rows"]}
    for record in records:
        best = max(epoch.metrics["val_accuracy"] for epoch in record.history)
        assert trained[record.name]["best val accuracy"] == pytest.approx(best, abs=1e-3)
