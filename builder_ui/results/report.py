"""A comparison as one self-contained HTML file: the table, curves, parallel coordinates.

    html = report_html(store, run_ids, metric="val_accuracy", sweep_id=None)
    write_report("compare.html", html)

The file opens in a browser with no server and no network: the Plotly bundle is inline
(once, however many charts), the charts are Plotly's (zoom, hover, legend), the table is
plain HTML with every cell escaped. It holds, for the runs given:

- the table `results.compare.compare` makes of them (what differs, the final and best
  metrics, epochs, parameters, time);
- each run's learning curves of the metric's per-epoch values and of `val_loss`
  (`charts.learning_curves`), for the first `MAX_CURVE_RUNS` runs;
- parallel coordinates of the hyperparameters that differ against the metric
  (`charts.parallel_coordinates`), where there are any;
- with a sweep, each parameter's importance (`results.importance`, fANOVA).

A chart that cannot be drawn (no epochs logged, a single run, too few trials) is left out
with a line saying why, so a report is always written.
"""

from __future__ import annotations

import datetime
import html
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from plotly.offline import get_plotlyjs

from builder_ui import files
from builder_ui.engine.store import RunStore
from builder_ui.results import charts, compare, importance

# The most runs whose curves a report draws (the table holds every run given).
MAX_CURVE_RUNS = 20
STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; }
th { background: #f4f4f4; position: sticky; top: 0; }
.scroll { overflow: auto; max-height: 70vh; }
.note { color: #666; }
"""


def report_html(
    store: RunStore,
    run_ids: Sequence[str],
    *,
    metric: str | None = None,
    sweep_id: str | None = None,
    title: str = "keras_seq runs",
) -> str:
    """The report of `run_ids` (see the module docstring) as one HTML document.

    Args:
        store: The run store.
        run_ids: The runs, in the table's order.
        metric: The metric column the charts read (default: the table's, `compare.
            default_metric`).
        sweep_id: A sweep whose parameters' importance to add, or None.
        title: The page's heading.

    Raises:
        ValueError: no runs given.
    """
    run_ids = list(dict.fromkeys(run_ids))
    if not run_ids:
        raise ValueError("Received an invalid value for argument `run_ids`: no runs to report.")
    table = compare.compare(store, run_ids, annotations=True)
    metric = metric if metric in table.columns else compare.default_metric(table)
    sections = [_section("Runs", _table_html(table))]
    records = compare.select(store, run_ids[:MAX_CURVE_RUNS], history=True)
    curve_metrics = [m for m in dict.fromkeys([metric or "val_loss", "val_loss"]) if m]
    sections.append(
        _chart("Learning curves", lambda: charts.learning_curves(records, curve_metrics))
    )
    if metric is not None:
        sections.append(
            _chart(
                f"Hyperparameters against {metric}",
                lambda: charts.parallel_coordinates(table, metric),
            )
        )
    if sweep_id:
        sections.append(
            _chart(f"Parameter importance, sweep {sweep_id}", lambda: _importance(store, sweep_id))
        )
    made = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    heading = html.escape(title)
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            f"<title>{heading}</title><style>{STYLE}</style>",
            f"<script>{get_plotlyjs()}</script></head><body>",
            f"<h1>{heading}</h1>",
            f'<p class="note">{len(run_ids)} runs from {html.escape(str(store.directory))}, '
            f"made {made} by keras_seq.</p>",
            *sections,
            "</body></html>",
        ]
    )


def write_report(path: str | Path, text: str) -> Path:
    """Write a report through a temporary file renamed into place (never half a file)."""
    return files.write_text(path, text)


def _importance(store: RunStore, sweep_id: str) -> Any:
    found = importance.sweep_importance(store, sweep_id)
    return charts.importance_figure(found.shares, found.metric, found.trials)


def _section(heading: str, body: str) -> str:
    return f"<h2>{html.escape(heading)}</h2>\n{body}"


def _chart(heading: str, make) -> str:
    """A figure's section, or a line saying why it could not be drawn."""
    try:
        figure = make()
    except ValueError as error:  # importance.ImportanceError is one
        return _section(heading, f'<p class="note">Not drawn: {html.escape(str(error))}</p>')
    body = figure.to_html(full_html=False, include_plotlyjs=False)
    return _section(heading, body)


def _table_html(table) -> str:
    """The table with every cell escaped, empty cells blank, under its full column names."""
    shown = table.astype(object).where(table.notna(), "")
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(compare.cell_text(v))}</td>" for v in row) + "</tr>"
        for row in shown.itertuples(index=False)
    )
    head = "".join(f"<th>{html.escape(str(column))}</th>" for column in table.columns)
    table_html = f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    return f'<div class="scroll">{table_html}</div>'
