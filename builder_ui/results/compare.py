"""Compare runs: a table of what differs and how each did, learning curves, CSV.

`compare(store, run_ids)` gives one row per run with the columns

    id, name, status, sweep, <spec fields that differ>, <final metrics as val_*>,
    <best_val_* and best_val_*_epoch>, epochs_run, epochs_planned, params, wall_time,
    examples_per_sec, device

where a spec field is a dotted path into the spec (`model.units`,
`train.learning_rate`); fields equal in every run are left out, so the table
shows exactly what the runs vary. The final metrics are measured on the
validation split, so they are named as Keras names validation logs
(`val_accuracy`, `val_loss`, `val_bleu`); `epochs_run` is the number of epochs
recorded in the store and `epochs_planned` the spec's `train.epochs`. For each
validation metric the epochs logged, `best_val_loss` is its best value over them
(lowest for a loss or an error, else highest) and `best_val_loss_epoch` the epoch
of it.

For a table too wide or too long to read, `default_columns` picks the columns
worth showing, `short_headers` names them by the last part of their path,
`filter_table` keeps the rows matching a text and a metric range, `sort_table`
orders every row by one column (empty cells last either way) before `page_of`
cuts one page. `plot_curves` overlays one logged metric of several
runs on one figure; `to_csv` writes a table atomically.

`differences(store, run_ids)` sets a few runs side by side against the first (metric
deltas, a graph's blocks and edges added and removed, the fields that differ), and
`group_table(table, column)` reads a table by groups (each metric's mean and spread over
the runs of each value of a column).
"""

from __future__ import annotations

import json
import math
import numbers
import os
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from builder_ui import files
from builder_ui.engine.records import RunRecord
from builder_ui.engine.store import RunStore
from builder_ui.specs.sweep_space import metric_mode

LEADING_COLUMNS = ("id", "name", "status", "sweep")
EPOCH_COLUMNS = ("epochs_run", "epochs_planned")
TRAILING_COLUMNS = ("params", "wall_time", "examples_per_sec", "device")
# What a person said about each run (`compare(..., annotations=True)`), after `sweep`.
ANNOTATION_COLUMNS = ("★", "tags", "note")

# Spec fields never shown as differences: the name and the planned epochs have their own
# columns (`name`, `epochs_planned`).
_IGNORED_FIELDS = frozenset({"name", "train.epochs"})

# Always worth a column, however many runs share the value (see `default_columns`).
CORE_COLUMNS = ("id", "★", "name", "status", "epochs_run", "params", "wall_time", "device")

# What the columns that are not spec paths hold, for a legend under the table.
COLUMN_MEANINGS = {
    "val_*": "final metrics of the run on the validation split (after its last epoch)",
    "best_val_*": "the best value of the metric over the run's epochs (lowest loss or error, "
    "else highest); best_val_*_epoch: the epoch of it",
    "★": "starred",
    "epochs_run": "epochs recorded in the store",
    "epochs_planned": "the spec's train.epochs",
    "wall_time": "seconds from the last start to the end",
    "examples_per_sec": "training examples per second of fit time",
}

PAGE_SIZE = 200


def metric_column(name: str) -> str:
    """The column of a final metric: `accuracy` → `val_accuracy` (it is a validation metric)."""
    return name if name.startswith("val_") else f"val_{name}"


def flatten(spec: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """`{"model": {"units": 8}}` → `{"model.units": 8}`; other lists stay whole values.

    A list of mappings with distinct ids (a graph's `model.nodes`) is flattened by each
    item's id, as a sweep names its fields: the node `{"id": "encoder", "layer": "GRU",
    "params": {"units": 8}}` gives `model.nodes.encoder.layer` and
    `model.nodes.encoder.params.units`, so each block parameter is a column of its own.
    """
    flat: dict[str, Any] = {}
    for key, value in spec.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            flat.update(flatten(value, prefix=f"{path}."))
        elif _items_with_ids(value):
            for item in value:
                rest = {field: part for field, part in item.items() if field != "id"}
                flat.update(flatten(rest, prefix=f"{path}.{item['id']}."))
        else:
            flat[path] = value
    return flat


def _items_with_ids(value: Any) -> bool:
    """A non-empty list of mappings, each with its own text `id` holding no dot."""
    if not isinstance(value, list) or not value:
        return False
    ids = [item.get("id") if isinstance(item, Mapping) else None for item in value]
    return all(isinstance(i, str) and i and "." not in i for i in ids) and len(set(ids)) == len(ids)


# Scalars compare as themselves (typed: 1, 1.0 and True differ in a spec); lists and
# mappings by their JSON text. No JSON for the scalars that most fields hold.
_SCALARS = (str, int, float, bool, type(None))


def _comparable(value: Any) -> Any:
    if isinstance(value, _SCALARS):
        return type(value), value
    return json.dumps(value, sort_keys=True, default=str)


def _cell(value: Any) -> Any:
    """Lists and dicts as JSON text, so every cell is a scalar a CSV can hold."""
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, sort_keys=True, default=str)
    return value


def differing_fields(records: Iterable[RunRecord]) -> list[str]:
    """The dotted spec paths whose values are not the same in every run, in spec order."""
    return _differing([flatten(record.spec) for record in records])


def _differing(flats: list[dict[str, Any]]) -> list[str]:
    """`differing_fields` of specs flattened already (`flatten`)."""
    if len(flats) < 2:
        return []
    paths = list(dict.fromkeys(path for flat in flats for path in flat))
    differing = []
    missing = object()
    for path in paths:
        if path in _IGNORED_FIELDS:
            continue
        first = flats[0].get(path, missing)
        first = first if first is missing else _comparable(first)
        for flat in flats[1:]:
            value = flat.get(path, missing)
            if (value if value is missing else _comparable(value)) != first:
                differing.append(path)
                break
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
    annotations: bool = False,
):
    """A pandas DataFrame with one row per run (see the module docstring for the columns).

    Args:
        store: The run store.
        run_ids: The runs, in the order of the rows; None for all runs (or
            those matching `where`), oldest first.
        where: Filters (see `select`); `{"archived": False, "tag": "lstm"}` too.
        annotations: Also the columns `ANNOTATION_COLUMNS` after `sweep`: `★`
            for a starred run (else ""), its tags joined by ", ", its note.

    Returns:
        A `pandas.DataFrame`; missing values are NaN.
    """
    records = select(store, run_ids, where=where)
    flats = [flatten(record.spec) for record in records]
    fields = _differing(flats)
    epochs_run = store.epoch_counts() if records else {}
    metric_names: list[str] = []
    for record in records:
        metric_names += [name for name in record.metrics if name not in metric_names]
    rows = []
    for record, flat in zip(records, flats, strict=True):
        row = {"id": record.id, "name": record.name, "status": record.status}
        row["sweep"] = record.sweep_id
        if annotations:
            row.update({"★": "★" if record.starred else "", "tags": ", ".join(record.tags)})
            row["note"] = record.note
        for path in fields:
            row[path] = _cell(flat.get(path))
        for name in metric_names:
            # `loss` and `val_loss` share a column: a run stores one or the other.
            value = record.metrics.get(name)
            if value is not None or metric_column(name) not in row:
                row[metric_column(name)] = float("nan") if value is None else value
        row["epochs_run"] = epochs_run.get(record.id, 0)
        row["epochs_planned"] = record.spec.get("train", {}).get("epochs")
        for column in TRAILING_COLUMNS:
            row[column] = getattr(record, column)
        rows.append(row)
    metrics = list(dict.fromkeys(metric_column(name) for name in metric_names))
    # The runs asked for by id: their epochs only (the whole store's otherwise).
    picked = [record.id for record in records] if run_ids is not None else None
    bests = best_epochs(store.epoch_metrics(picked) if records else {})
    best_columns = []
    for metric in dict.fromkeys(m for run in bests.values() for m in run):
        best_columns += [best_column(metric), f"{best_column(metric)}_epoch"]
    for row in rows:
        for metric, (value, epoch) in bests.get(row["id"], {}).items():
            row[best_column(metric)], row[f"{best_column(metric)}_epoch"] = value, epoch
    columns = [*LEADING_COLUMNS, *(ANNOTATION_COLUMNS if annotations else ()), *fields]
    columns += [*metrics, *best_columns, *EPOCH_COLUMNS, *TRAILING_COLUMNS]
    return pd.DataFrame(rows, columns=columns)


def run_cell(record: RunRecord, column: str) -> Any:
    """What `compare`'s table holds for `record` in `column`, read from the record alone: its
    id, name, status, sweep or tags (joined), else a spec field (`_MISSING` if it has none)."""
    attributes = {
        "id": record.id,
        "name": record.name,
        "status": record.status,
        "sweep": record.sweep_id,
        "tags": ", ".join(record.tags),
    }
    if column in attributes:
        return attributes[column]
    flat = flatten(record.spec)
    return _cell(flat[column]) if column in flat else MISSING


# `run_cell` of a column a run does not have.
MISSING = object()


def best_column(metric: str) -> str:
    """The column of a validation metric's best epoch value: `val_loss` → `best_val_loss`."""
    return f"best_{metric}"


def best_epochs(
    epochs: Mapping[str, Sequence[tuple[int, Mapping[str, Any]]]],
) -> dict[str, dict[str, tuple[float, int]]]:
    """Run id -> validation metric -> (its best value over the epochs, the epoch of it).

    Best by the metric's direction (`metric_mode`: lowest for a loss or an error, else
    highest); the first epoch on a tie. Only finite numbers count, so a run that diverged
    to NaN keeps the best epoch it had; a metric with no finite value has no entry.
    """
    bests: dict[str, dict[str, tuple[float, int]]] = {}
    for run_id, rows in epochs.items():
        run: dict[str, tuple[float, int]] = {}
        for epoch, metrics in rows:
            for metric, value in metrics.items():
                if not metric.startswith("val_") or not _finite(value):
                    continue
                sign = 1.0 if metric_mode(metric) == "min" else -1.0
                if metric not in run or sign * value < sign * run[metric][0]:
                    run[metric] = (float(value), epoch)
        if run:
            bests[run_id] = run
    return bests


def _finite(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def cell_text(value: Any) -> str:
    """A cell as the text a filter searches: `""` for an empty cell (None or NaN)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return str(value)


# Between two cells of a row's search text (`search_texts`): no typed filter holds it.
_CELL_SEPARATOR = "\x00"


def search_texts(table) -> list[str]:
    """Each row of a `compare` table as the text `filter_table` searches: its cells'
    `cell_text`, lowercased, one separator between two cells.

    Made once for a table that is filtered again and again (the Compare tab's filter, as
    you type), so that a keystroke searches one string per row.
    """
    return [
        _CELL_SEPARATOR.join(cell.lower() for cell in row) for row in table.map(cell_text).values
    ]


def metric_columns(table) -> list[str]:
    """The final-metric columns of a `compare` table (`val_*`), in table order."""
    return [column for column in table.columns if column.startswith("val_")]


def default_metric(table) -> str | None:
    """The metric a table is read by: `val_accuracy`, else the first `val_*` column.

    A metric no row has (accuracy of translators only) gives way to one some row has.
    """
    metrics = sorted(metric_columns(table), key=lambda name: name != "val_accuracy")
    filled = [name for name in metrics if table[name].notna().any()]
    return (filled or metrics or [None])[0]


def filter_table(
    table,
    text: str = "",
    *,
    sweep: str | None = None,
    metric: str | None = None,
    low: float | None = None,
    high: float | None = None,
    ids: Collection[str] | None = None,
    texts: Sequence[str] | None = None,
):
    """The rows of a `compare` table matching every filter given (all rows when none is).

    Args:
        text: Keep rows where any cell (shown or not) contains it, case-insensitive;
            an empty cell matches nothing.
        sweep: Keep the runs of this sweep.
        metric, low, high: Keep rows whose `metric` lies in `[low, high]` (either
            end may be None); a run without that metric is left out.
        ids: Keep only these runs (None: no such filter; empty: none), such as the
            lines a brush keeps on the parallel coordinates.
        texts: The table's `search_texts`, if made already (else made here).

    Raises:
        ValueError: `low` is above `high`, or `metric` is not a column of the table.
    """
    if texts is not None and len(texts) != len(table):
        raise ValueError(
            f"Received an invalid value for argument `texts`, expected one per row of the "
            f"table ({len(table)}), got {len(texts)}."
        )
    keep = [True] * len(table)
    if text and text.strip():
        needle = text.strip().lower()
        if _CELL_SEPARATOR in needle:  # no match may span two cells: search each alone
            rows = table.map(cell_text).values
            found = [any(needle in cell.lower() for cell in row) for row in rows]
        else:
            found = [needle in row for row in (search_texts(table) if texts is None else texts)]
        keep = [k and ok for k, ok in zip(keep, found, strict=True)]
    if sweep:
        keep = [k and value == sweep for k, value in zip(keep, table["sweep"], strict=True)]
    if low is not None or high is not None:
        in_range = _in_range(table, metric, low, high)
        keep = [k and ok for k, ok in zip(keep, in_range, strict=True)]
    if ids is not None:
        wanted = set(ids)
        keep = [k and run_id in wanted for k, run_id in zip(keep, table["id"], strict=True)]
    return table.loc[keep].reset_index(drop=True)  # `loc`: an empty list keeps the columns


def _in_range(table, metric: str | None, low: float | None, high: float | None) -> list[bool]:
    """Per row: whether `metric` is a number within `[low, high]`."""
    if low is not None and high is not None and low > high:
        raise ValueError(
            f"Received an invalid metric range for `{metric}`: the minimum {low!r} is above "
            f"the maximum {high!r}."
        )
    if metric not in table.columns:
        if table.empty:
            return []
        raise ValueError(
            f"Received an invalid value for argument `metric`, expected one of "
            f"{metric_columns(table)}, got {metric!r}."
        )
    keep = []
    for value in table[metric]:
        number = value if isinstance(value, (int, float)) and not math.isnan(value) else None
        keep.append(
            number is not None
            and (low is None or number >= low)
            and (high is None or number <= high)
        )
    return keep


def default_columns(table, metric: str | None = None, *, share: float = 0.5) -> list[str]:
    """The columns worth reading by default, in table order.

    `CORE_COLUMNS`, `metric` and its best epoch's value and number, then every other
    column (but the best epochs of the other metrics) whose values differ among
    the rows and that at least `share` of the rows fill; `epochs_planned` when some
    run recorded a different number of epochs than it planned; `tags` when some
    run has a tag. A table of runs of
    several model types has a column for every field of every type, mostly empty:
    this leaves those out (they stay one pick away).
    """
    wanted = {*CORE_COLUMNS, metric}
    if metric is not None:
        wanted |= {best_column(metric), f"{best_column(metric)}_epoch"}
    chosen = []
    for column in table.columns:
        if column.startswith("best_") and column not in wanted:
            continue  # another metric's best: one pick away
        if column in wanted or _informative(table[column], len(table), share):
            chosen.append(column)
        elif column == "epochs_planned" and _epochs_differ(table):
            chosen.append(column)
        elif column == "tags" and any(map(cell_text, table[column])):
            chosen.append(column)
    return chosen


def _informative(values, rows: int, share: float) -> bool:
    texts = [text for text in map(cell_text, values) if text]
    return len(set(texts)) > 1 and len(texts) >= share * rows


def _epochs_differ(table) -> bool:
    return any(
        cell_text(run) != cell_text(planned)
        for run, planned in zip(table["epochs_run"], table["epochs_planned"], strict=True)
    )


def short_headers(columns: Sequence[str]) -> dict[str, str]:
    """Column → the shortest tail of its dotted path that no other column ends with.

    `model.encoder.units` → `units`, unless `model.decoder.units` is also there (then
    `encoder.units` and `decoder.units`), so headers stay short and still unique. A graph
    block's parameter is read without the `params` of its path:
    `model.nodes.attention.params.num_heads` → `num_heads`, or `attention.num_heads`.
    """
    shown = {column: _shown_parts(column) for column in columns}
    headers = {}
    for column, parts in shown.items():
        for size in range(1, len(parts) + 1):
            tail = parts[-size:]
            if _ending(shown.values(), tail) == 1:
                headers[column] = ".".join(tail)
                break
        else:  # a block's field and a parameter of the same name: the whole path
            headers[column] = column
    return headers


def _shown_parts(column: str) -> list[str]:
    """The parts of a column's path a header shows: a block parameter's without `params`."""
    parts = column.split(".")
    if len(parts) >= 5 and parts[:2] == ["model", "nodes"] and parts[3] == "params":
        return [*parts[:3], *parts[4:]]
    return parts


def _ending(paths: Iterable[list[str]], tail: list[str]) -> int:
    """How many of `paths` end with the parts `tail`."""
    return sum(1 for parts in paths if parts[-len(tail) :] == tail)


def sort_table(table, column: str, *, descending: bool = False):
    """Every row of `table` ordered by `column`; empty cells (None, NaN, "") last either way.

    Numbers sort as numbers and before text (a column of spec values may hold both);
    text sorts case-insensitively. Rows that tie keep their order, so a table newest
    first stays newest first among equal values. Sorting the whole table, not a
    page of it, is what lets the first page show the best run of thousands.

    Raises:
        ValueError: `column` is not a column of the table.
    """
    if column not in table.columns:
        raise ValueError(
            f"Received an invalid value for argument `column`, expected one of "
            f"{list(table.columns)}, got {column!r}."
        )
    values = list(table[column])
    filled = [i for i, value in enumerate(values) if cell_text(value)]
    empty = [i for i, value in enumerate(values) if not cell_text(value)]
    # `reverse=True` keeps the order of equal keys, as a stable sort must.
    filled.sort(key=lambda i: _sort_key(values[i]), reverse=descending)
    return table.iloc[filled + empty].reset_index(drop=True)


def _sort_key(value: Any) -> tuple[int, float, str]:
    """Numbers by value, then text by its lower case (a cell of either kind)."""
    if isinstance(value, numbers.Real):
        return (0, float(value), "")
    return (1, 0.0, str(value).lower())


def page_of(table, page: int = 1, size: int = PAGE_SIZE):
    """`(rows of page `page`, that page, the number of pages)`; the page is clamped to 1..pages."""
    pages = max(1, math.ceil(len(table) / size))
    page = min(max(1, int(page)), pages)
    return table.iloc[(page - 1) * size : page * size], page, pages


# Up to this many epochs each has its tick; beyond, matplotlib spaces whole-number ticks.
EVERY_EPOCH_TICKS = 12


def label_epochs(axes, epochs: Iterable[int]) -> None:
    """Put an epoch axis's ticks on whole epochs.

    matplotlib's own ticks fall between epochs when there are few of them (0.96, 0.98, ...
    around a single epoch); a figure of up to `EVERY_EPOCH_TICKS` epochs gets one tick per
    epoch drawn, a longer one whole-number ticks only.
    """
    drawn = sorted({int(epoch) for epoch in epochs})
    if 0 < len(drawn) <= EVERY_EPOCH_TICKS:
        axes.set_xticks(drawn)
    else:
        axes.xaxis.get_major_locator().set_params(integer=True)


def plot_curves(store: RunStore, run_ids: Iterable[str], metric: str = "val_loss"):
    """One `matplotlib.figure.Figure` with `metric` per epoch for each run, overlaid.

    Raises:
        ValueError: No run logged `metric` (the message lists what they logged).
    """
    records = select(store, run_ids, history=True)
    figure = Figure(figsize=(7, 4), layout="constrained")
    axes = figure.add_subplot()
    logged: set[str] = set()
    drawn = 0
    every_epoch: set[int] = set()
    for record in records:
        for row in record.history:
            logged.update(row.metrics)
        epochs, values = record.curve(metric)
        if epochs:
            axes.plot(
                epochs, values, marker="o", markersize=3, label=f"{record.name} ({record.id})"
            )
            every_epoch.update(epochs)
            drawn += 1
    if not drawn:
        raise ValueError(
            f"Received an invalid value for argument `metric`, expected a metric the runs "
            f"logged ({sorted(logged) or 'none yet'}), got {metric!r}."
        )
    axes.set_xlabel("epoch")
    label_epochs(axes, every_epoch)
    axes.set_ylabel(metric)
    axes.grid(alpha=0.3)
    axes.legend(fontsize="small")
    return figure


def to_csv(table, path: str | os.PathLike) -> Path:
    """Write a DataFrame to `path` as CSV, through a temporary file renamed into place."""
    path = Path(path)
    with files.atomic_path(path) as temp:
        table.to_csv(temp, index=False)
    return path


def _graph(spec: Mapping[str, Any]) -> tuple[set[str], set[str]] | None:
    """A graph spec's block ids and edges (`source → block`), or None for a short form."""
    nodes = spec.get("model", {}).get("nodes")
    if not _items_with_ids(nodes):
        return None
    blocks, edges = set(), set()
    for node in nodes:
        blocks.add(node["id"])
        for sources in (node.get("inputs") or {}).values():
            for source in [sources] if isinstance(sources, str) else list(sources or []):
                edges.add(f"{source} → {node['id']}")
    return blocks, edges


def _changes(base: set[str], other: set[str]) -> str:
    """`+added, −removed` of `other` against `base`; `=` when they are the same."""
    parts = [f"+{item}" for item in sorted(other - base)]
    parts += [f"−{item}" for item in sorted(base - other)]
    return ", ".join(parts) or "="


def _count(items: set[str], noun: str) -> str:
    return f"{len(items)} {noun}{'' if len(items) == 1 else 's'}"


def differences(store: RunStore, run_ids: Sequence[str]):
    """Two or more runs side by side: only what differs, and metric deltas against the first.

    A pandas DataFrame with a `field` column and one column per run (`id (name)`), the first
    run being the baseline. Its rows:

    - for graphs, `blocks` and `edges`: each run's blocks and edges added (`+`) and removed
      (`−`) against the baseline's (`=` for none), the baseline's own count;
    - each final metric, and under it `Δ metric` (the run's value minus the baseline's);
    - every spec field whose value is not the same in all of them (`differing_fields`, a
      graph's block parameters and edges included), `—` where a run has no such field.

    Raises:
        ValueError: fewer than two runs; KeyError: a run that is not in the store.
    """
    run_ids = list(dict.fromkeys(run_ids))
    if len(run_ids) < 2:
        raise ValueError(f"Pick two or more runs to see what differs, got {len(run_ids)}.")
    records = select(store, run_ids)
    labels = [f"{record.id} ({record.name})" for record in records]
    rows: list[dict[str, Any]] = []

    def row(field: str, values: Iterable[Any]) -> None:
        rows.append({"field": field, **dict(zip(labels, values, strict=True))})

    graphs = [_graph(record.spec) for record in records]
    if all(graph is not None for graph in graphs):
        (base_blocks, base_edges), *others = graphs
        row(
            "blocks", [_count(base_blocks, "block"), *(_changes(base_blocks, b) for b, _ in others)]
        )
        row("edges", [_count(base_edges, "edge"), *(_changes(base_edges, e) for _, e in others)])
    metrics = dict.fromkeys(metric_column(name) for record in records for name in record.metrics)
    for column in metrics:  # `loss` and `val_loss` share a column, as in `compare`
        values = [
            next((v for n, v in record.metrics.items() if metric_column(n) == column), None)
            for record in records
        ]
        row(column, [value if _finite(value) else "—" for value in values])
        base = values[0]
        row(
            f"Δ {column}",
            [value - base if _finite(value) and _finite(base) else "—" for value in values],
        )
    flats = [flatten(record.spec) for record in records]
    for path in differing_fields(records):
        row(path, [cell_text(_cell(flat[path])) if path in flat else "—" for flat in flats])
    return pd.DataFrame(rows, columns=["field", *labels])


def group_table(table, column: str, metrics: Sequence[str] | None = None):
    """One row per value of `column`: its runs, and each metric's mean and std over them.

    What W&B and Aim call grouping: runs that differ only in a seed, or in any field, read
    as one mean with its spread. The rows are in the order the values first appear in
    `table`; an empty cell is the group `(none)`. For each metric `m` (default: the final
    metrics `val_*` and their best epochs' values `best_val_*`), `m mean` is the mean of the
    group's finite values and `m std` their sample standard deviation (n − 1; empty for a
    group with fewer than two values).

    Raises:
        ValueError: `column` is not a column of `table` (the message lists them).
    """
    if column not in table.columns:
        raise ValueError(
            f"Received an invalid value for argument `column`, expected a column of the "
            f"table ({', '.join(map(str, table.columns))}), got {column!r}."
        )
    if metrics is None:
        metrics = [
            c
            for c in table.columns
            if (c.startswith("val_") or c.startswith("best_val_")) and not c.endswith("_epoch")
        ]
    keys = [cell_text(value) or "(none)" for value in table[column]]
    rows = []
    for key in dict.fromkeys(keys):
        members = table[[k == key for k in keys]]
        row: dict[str, Any] = {column: key, "runs": len(members)}
        for metric in metrics:
            values = [float(v) for v in members[metric] if _finite(v)]
            mean = sum(values) / len(values) if values else math.nan
            row[f"{metric} mean"], row[f"{metric} std"] = mean, sample_std(values)
        rows.append(row)
    names = [column, "runs", *(f"{m} {s}" for m in metrics for s in ("mean", "std"))]
    return pd.DataFrame(rows, columns=names)


def sample_std(values: Sequence[float]) -> float:
    """The sample standard deviation (n − 1) of `values`; NaN for fewer than two."""
    if len(values) < 2:
        return math.nan
    mean = sum(values) / len(values)
    return math.sqrt(sum((value - mean) ** 2 for value in values) / (len(values) - 1))
