"""Compare tab actions: the results table, curves, BLEU by sentence length, CSV download.

No Gradio here.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from builder_ui.app.context import AppContext, AppError
from builder_ui.engine.store import STATUSES, RunNotFoundError
from builder_ui.results import compare
from builder_ui.results.inspection import translator


def results_frame(
    ctx: AppContext, query: str = "", statuses: Sequence[str] | None = None, *, rounded: bool = True
):
    """Every run in the store as a comparison table (`builder_ui.results.compare`), filtered.

    Args:
        query: Keep rows where any cell contains this text (case-insensitive).
        statuses: Keep only these statuses (None or empty: all).
        rounded: Round numbers for reading (the CSV keeps them whole).
    """

    if statuses:
        unknown = [s for s in statuses if s not in STATUSES]
        if unknown:
            raise AppError(f"Unknown status {unknown[0]!r}; statuses: {', '.join(STATUSES)}.")
    table = compare.compare(ctx.store, where={"status": list(statuses)} if statuses else None)
    if query and query.strip():
        needle = query.strip().lower()
        keep = table.astype(str).apply(
            lambda row: any(needle in cell.lower() for cell in row), axis=1
        )
        table = table[keep] if len(table) else table
    table = table.iloc[::-1].reset_index(drop=True)  # newest first
    if rounded:
        for column in table.columns:
            if table[column].dtype.kind == "f":
                table[column] = table[column].map(_rounded)
    return table


def _rounded(value: Any) -> Any:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return value
    if isinstance(value, float):
        return float(f"{value:.4g}")
    return value


def run_choices(ctx: AppContext, statuses: Sequence[str] | None = None) -> list[tuple[str, str]]:
    """`(label, run id)` of the store's runs, newest first (only `statuses` if given)."""
    records = ctx.store.list_runs(status=list(statuses) if statuses else None)
    return [
        (f"{r.id} · {r.name} · {r.spec.get('model', {}).get('type', '?')} · {r.status}", r.id)
        for r in reversed(records)
    ]


def metric_choices(ctx: AppContext, run_ids: Sequence[str]) -> list[str]:
    """The metrics the runs logged per epoch (val_ ones first)."""
    names: list[str] = []
    for run_id in run_ids or []:
        with contextlib.suppress(RunNotFoundError):
            for epoch in ctx.store.history(run_id):
                names += [n for n in epoch.metrics if n not in names]
    return sorted(names, key=lambda n: (not n.startswith("val_"), n))


def curves_figure(ctx: AppContext, run_ids: Sequence[str], metric: str):
    """One metric per epoch of several runs, overlaid (a matplotlib figure)."""

    run_ids = list(run_ids or [])
    if not run_ids:
        raise AppError("Select one or more runs to overlay their curves.")
    try:
        return compare.plot_curves(ctx.store, run_ids, metric or "val_loss")
    except (KeyError, ValueError) as error:
        raise AppError(str(error.args[0]) if error.args else str(error)) from None


BLEU_ARTIFACT = "bleu_by_length.csv"


def bleu_table(ctx: AppContext, run_id: str):
    """BLEU per source-length bucket of a finished seq2seq run, computed once and kept."""
    # pandas loads when a table is made, not on import.
    import pandas as pd

    from keras_seq.metrics import evaluate_by_length

    record = ctx.record(run_id)
    if record.spec.get("model", {}).get("type") != "seq2seq":
        raise AppError(f"Run {run_id} is not a seq2seq run; BLEU by length needs a translator.")
    if BLEU_ARTIFACT in record.artifacts:
        path = ctx.store.directory / record.artifacts[BLEU_ARTIFACT]
        if path.is_file():
            return pd.read_csv(path)
    model, task = ctx.model(run_id), ctx.task(run_id)
    table = evaluate_by_length(translator(model, task), task)
    with ctx.store.atomic_artifact(run_id, BLEU_ARTIFACT) as path:
        table.to_csv(path, index=False)
    return table


def bleu_by_length(ctx: AppContext, run_ids: Sequence[str]):
    """BLEU against source length for the selected seq2seq runs: `(figure, table)`.

    Raises:
        AppError: none of the runs is a finished seq2seq run.
    """
    # pandas loads when a table is made, not on import.
    import pandas as pd

    from keras_seq.metrics import plot_bleu_by_length

    curves, frames = [], []
    for run_id in run_ids or []:
        record = ctx.record(run_id)
        if record.status != "done" or record.spec.get("model", {}).get("type") != "seq2seq":
            continue
        table = bleu_table(ctx, run_id)
        label = f"{record.name} ({run_id})"
        curves.append((label, table))
        frames.append(table.assign(run=label))
    if not curves:
        raise AppError("Select at least one finished seq2seq run to see BLEU by source length.")
    figure = plot_bleu_by_length(curves, title="BLEU by source sentence length")
    table = pd.concat(frames, ignore_index=True)
    columns = ["run", *[c for c in table.columns if c != "run"]]
    return figure, table[columns]


def results_csv(ctx: AppContext, query: str = "", statuses: Sequence[str] | None = None) -> Path:
    """The (filtered) results table as a CSV file to download, numbers unrounded."""

    table = results_frame(ctx, query, statuses, rounded=False)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return compare.to_csv(table, ctx.download_path(f"keras-seq-runs-{stamp}.csv"))
