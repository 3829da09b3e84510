"""The HTML report of a comparison: one file that opens with no server and no network.

Real run stores written through `RunStore`'s API (as the engine writes runs and sweeps);
the report is read as text and through `keras-seq runs --report`. The app's download of it is
opened offline in Chromium in tests/app/test_app_compare.py.
"""

from __future__ import annotations

import re

import pytest

from builder_ui import cli
from builder_ui.engine.store import RunStore
from builder_ui.results.report import MAX_CURVE_RUNS, report_html
from tests.app.compare_runs import record_runs
from tests.builder_ui.results.test_importance import learning_rate_alone, record_sweep


@pytest.fixture
def swept(tmp_path):
    """A 12-trial sweep whose loss the learning rate sets, and six runs of three model types."""
    directory = tmp_path / "runs"
    with RunStore(directory) as store:
        sweep = record_sweep(store, learning_rate_alone)
        ids = record_runs(store, 6)
        store.rename(ids[0], "<script>alert(1)</script>")
        yield store, sweep, ids


def test_the_report_holds_the_table_the_charts_and_the_plotly_bundle_once(swept):
    from plotly.offline import get_plotlyjs

    store, sweep, _ = swept
    trials = [record.id for record in store.list_runs(sweep_id=sweep)]
    text = report_html(store, trials, sweep_id=sweep)
    assert text.count(get_plotlyjs()) == 1  # inline, once for every chart
    assert not re.search(r"""<(script|link|img)[^>]+(src|href)=["']?(https?:)?//""", text)
    for run_id in trials:
        assert f"<td>{run_id}</td>" in text
    for heading in ("Runs", "Learning curves", "Hyperparameters against", "Parameter importance"):
        assert f"<h2>{heading}" in text
    assert text.count('class="plotly-graph-div"') == 3
    assert "Not drawn" not in text


def test_cells_are_escaped_and_a_chart_that_cannot_be_drawn_says_why(swept):
    store, _, ids = swept
    text = report_html(store, ids[:1], title="<b>mine</b>")
    assert "<script>alert(1)</script>" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<h1>&lt;b&gt;mine&lt;/b&gt;</h1>" in text
    # One run: the parallel coordinates have no hyperparameter that differs.
    assert re.search(
        r"<h2>Hyperparameters against val_accuracy</h2>\s*<p class=\"note\">Not drawn", text
    )
    with pytest.raises(ValueError, match="no runs to report"):
        report_html(store, [])


def test_keras_seq_runs_writes_the_report_of_the_runs_it_lists(swept, tmp_path, capsys):
    store, sweep, _ = swept
    out = tmp_path / "report.html"
    code = cli.main(
        ["runs", "--runs", str(store.directory), "--sweep", sweep, "--report", str(out)]
    )
    assert code == 0, capsys.readouterr().err
    assert f"wrote {out}" in capsys.readouterr().err
    text = out.read_text(encoding="utf-8")
    assert "<h2>Parameter importance" in text and text.count("<tr>") == 12 + 1  # the trials


def test_curves_are_drawn_for_the_first_runs_only(swept):
    store, _, ids = swept
    many = record_runs(store, MAX_CURVE_RUNS + 5, epochs=1)
    text = report_html(store, [*ids, *many])
    assert text.count("<tr>") == len(ids) + len(many) + 1  # every run in the table
