"""Compare runs: a table of what differs and how each did, learning curves, CSV.

`compare(store, run_ids)` gives one row per run with the columns

    id, name, status, <spec fields that differ>, <final metrics>,
    params, wall_time, examples_per_sec, device

where a spec field is a dotted path into the spec (`model.units`,
`train.learning_rate`); fields equal in every run are left out, so the table
shows exactly what the runs vary. `plot_curves` overlays one logged metric of
several runs on one figure; `to_csv` writes a table atomically.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from builder_ui.engine.store import RunRecord, RunStore

LEADING_COLUMNS = ("id", "name", "status")
TRAILING_COLUMNS = ("params", "wall_time", "examples_per_sec", "device")

# Spec fields never shown as differences: the name has its own column.
_IGNORED_FIELDS = frozenset({"name"})


def flatten(spec: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """`{"model": {"units": 8}}` → `{"model.units": 8}`; lists stay whole values."""
    flat: dict[str, Any] = {}
    for key, value in spec.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, prefix=f"{path}."))
        else:
            flat[path] = value
    return flat


def _comparable(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _cell(value: Any) -> Any:
    """Lists and dicts as JSON text, so every cell is a scalar a CSV can hold."""
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, sort_keys=True, default=str)
    return value


def differing_fields(records: Iterable[RunRecord]) -> list[str]:
    """The dotted spec paths whose values are not the same in every run, in spec order."""
    flats = [flatten(record.spec) for record in records]
    if len(flats) < 2:
        return []
    paths: list[str] = []
    for flat in flats:
        paths += [path for path in flat if path not in paths]
    differing = []
    for path in paths:
        if path in _IGNORED_FIELDS:
            continue
        values = {_comparable(flat[path]) if path in flat else "<missing>" for flat in flats}
        if len(values) > 1:
            differing.append(path)
    return differing


def select(
    store: RunStore,
    run_ids: Iterable[str] | None = None,
    *,
    where: Mapping[str, Any] | Callable[[RunRecord], bool] | None = None,
    history: bool = False,
) -> list[RunRecord]:
    """The runs to compare: the ids given (in that order), else every run matching `where`.

    `where` is either keyword filters of `RunStore.list_runs` (`{"sweep_id":
    ..., "status": "done"}`) or a predicate on a `RunRecord`.
    """
    filters = dict(where) if isinstance(where, Mapping) else {}
    predicate = where if callable(where) else None
    if run_ids is not None:
        run_ids = [run_ids] if isinstance(run_ids, str) else list(run_ids)
        records = store.list_runs(ids=run_ids, history=history, **filters)
        found = {record.id for record in records}
        missing = [run_id for run_id in run_ids if run_id not in found and not filters]
        if missing:
            raise KeyError(f"No runs with ids {missing} in {str(store.directory)!r}.")
    else:
        records = store.list_runs(history=history, **filters)
    if predicate is not None:
        records = [record for record in records if predicate(record)]
    return records


def compare(
    store: RunStore,
    run_ids: Iterable[str] | None = None,
    *,
    where: Mapping[str, Any] | Callable[[RunRecord], bool] | None = None,
):
    """A pandas DataFrame with one row per run (see the module docstring for the columns).

    Args:
        store: The run store.
        run_ids: The runs, in the order of the rows; None for all runs (or
            those matching `where`), oldest first.
        where: Filters (see `select`).

    Returns:
        A `pandas.DataFrame`; missing values are NaN.
    """
    # pandas loads when a table is made, not on import.
    import pandas as pd

    records = select(store, run_ids, where=where)
    fields = differing_fields(records)
    metric_names: list[str] = []
    for record in records:
        metric_names += [name for name in record.metrics if name not in metric_names]
    rows = []
    for record in records:
        flat = flatten(record.spec)
        row = {column: getattr(record, column) for column in LEADING_COLUMNS}
        for path in fields:
            row[path] = _cell(flat.get(path))
        for name in metric_names:
            value = record.metrics.get(name)
            row[name] = float("nan") if value is None else value
        for column in TRAILING_COLUMNS:
            row[column] = getattr(record, column)
        rows.append(row)
    columns = [*LEADING_COLUMNS, *fields, *metric_names, *TRAILING_COLUMNS]
    return pd.DataFrame(rows, columns=columns)


def plot_curves(store: RunStore, run_ids: Iterable[str], metric: str = "val_loss"):
    """One `matplotlib.figure.Figure` with `metric` per epoch for each run, overlaid.

    Raises:
        ValueError: No run logged `metric` (the message lists what they logged).
    """
    # matplotlib loads when a figure is drawn, not on import.
    from matplotlib.figure import Figure

    records = select(store, run_ids, history=True)
    figure = Figure(figsize=(7, 4), layout="constrained")
    axes = figure.add_subplot()
    logged: set[str] = set()
    drawn = 0
    for record in records:
        for row in record.history:
            logged.update(row.metrics)
        epochs, values = record.curve(metric)
        if epochs:
            axes.plot(
                epochs, values, marker="o", markersize=3, label=f"{record.name} ({record.id})"
            )
            drawn += 1
    if not drawn:
        raise ValueError(
            f"Received an invalid value for argument `metric`, expected a metric the runs "
            f"logged ({sorted(logged) or 'none yet'}), got {metric!r}."
        )
    axes.set_xlabel("epoch")
    axes.set_ylabel(metric)
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small")
    return figure


def to_csv(table, path: str | os.PathLike) -> Path:
    """Write a DataFrame to `path` as CSV, through a temporary file renamed into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp-{secrets.token_hex(4)}")
    try:
        table.to_csv(temp, index=False)
        os.replace(temp, path)
    finally:
        if temp.exists():
            temp.unlink()
    return path
