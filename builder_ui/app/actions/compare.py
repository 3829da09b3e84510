"""Compare tab actions: the results table, run annotations, charts, BLEU by length, CSV.

A run's name, tags, note, star and archive mark are set here (`save_annotations`,
`toggle_star`, `toggle_archive`, `delete_run`), in the same SQLite store the CLI's
`keras-seq runs --add-tag/--note/--delete` writes. The charts are Plotly figures
(`builder_ui.results.charts`): learning curves of several metrics, parallel
coordinates and a scatter of the hyperparameters against a metric.

No Gradio here.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from builder_ui.app.context import AppContext, AppError
from builder_ui.builders.graph import translates
from builder_ui.engine import artifacts
from builder_ui.engine.artifacts import TRACEBACK_FILE
from builder_ui.engine.records import MAX_TAGS_PER_RUN, STATUSES, check_name, check_note, check_tag
from builder_ui.engine.store import RunNotFoundError
from builder_ui.results import charts, compare, importance, report
from builder_ui.results.inspection import translator
from keras_seq.metrics import evaluate_by_length


@dataclass(frozen=True)
class ResultsFilters:
    """What the Compare tab's controls ask of the table; every filter given must hold.

    Attributes:
        query: Keep rows where any cell contains this text (case-insensitive).
        statuses: Keep only these statuses (empty: all).
        sweep: Keep only the runs of this sweep (empty: all).
        metric: The metric column the table is read by (None, or one no run shown
            has: `val_accuracy`, else the first `val_*` column some run has).
        metric_min, metric_max: Keep rows whose `metric` lies in this range.
        tag: Keep only the runs with this tag (empty: all).
        show_archived: Also the archived runs (hidden by default).
        brushed: Keep only these runs: the lines that the brushes on the parallel
            coordinates' axes keep (None: no brush).
    """

    query: str = ""
    statuses: Sequence[str] = ()
    sweep: str | None = None
    metric: str | None = None
    metric_min: float | None = None
    metric_max: float | None = None
    tag: str | None = None
    show_archived: bool = False
    brushed: tuple[str, ...] | None = None


def results_frame(
    ctx: AppContext,
    query: str = "",
    statuses: Sequence[str] | None = None,
    *,
    filters: ResultsFilters | None = None,
    rounded: bool = True,
    sort_by: str | None = None,
    descending: bool = True,
):
    """Every run in the store as a comparison table (`builder_ui.results.compare`), filtered.

    Args:
        query: Keep rows where any cell contains this text (case-insensitive).
        statuses: Keep only these statuses (None or empty: all).
        filters: All the filters at once (then `query` and `statuses` are ignored).
        rounded: Round numbers for reading (the CSV keeps them whole).
        sort_by, descending: Order every row by this column (empty cells last); None,
            or a column the table lacks, for newest first.

    Raises:
        AppError: An unknown status, or a metric range that is not one.
    """
    filters = filters or ResultsFilters(query=query or "", statuses=tuple(statuses or ()))
    table = _filtered(_runs_table(ctx, filters), filters)
    return _readable(_ordered(table, sort_by, descending), rounded)


def _runs_table(ctx: AppContext, filters: ResultsFilters) -> tuple[Any, list[str]]:
    """`compare.compare` of the runs with one of the statuses, the tag, archived or not, and
    its rows' `compare.search_texts`; kept while the store is unchanged (`ctx.memo`: a
    keystroke in the filter reads no run again). The table is shared: change only copies.

    With its annotation columns (star, tags, note); archived runs only when
    `filters.show_archived`.
    """
    statuses = filters.statuses
    unknown = [s for s in statuses if s not in STATUSES]
    if unknown:
        raise AppError(f"Unknown status {unknown[0]!r}; statuses: {', '.join(STATUSES)}.")
    where: dict[str, Any] = {"status": list(statuses)} if statuses else {}
    if filters.tag:
        where["tag"] = filters.tag
    if not filters.show_archived:
        where["archived"] = False

    def make() -> tuple[Any, list[str]]:
        table = compare.compare(ctx.store, where=where or None, annotations=True)
        return table, compare.search_texts(table)

    return ctx.memo.get(("compare", json.dumps(where, sort_keys=True)), make)


def _filtered(runs: tuple[Any, list[str]], filters: ResultsFilters):
    """The rows of a `_runs_table` that match the text, sweep and metric range of `filters`."""
    table, texts = runs
    try:
        return compare.filter_table(
            table,
            filters.query,
            sweep=filters.sweep or None,
            metric=filters.metric or compare.default_metric(table),
            low=filters.metric_min,
            high=filters.metric_max,
            ids=filters.brushed,
            texts=texts,
        )
    except ValueError as error:
        raise AppError(str(error)) from None


def _ordered(table, sort_by: str | None, descending: bool):
    """Newest first, then (if `sort_by` is a column) every row by it, ties newest first.

    Sorted before paging and rounding, so page 1 holds the best runs of all, ranked
    by their unrounded values.
    """
    table = table.iloc[::-1].reset_index(drop=True)
    if sort_by and sort_by in table.columns:
        table = compare.sort_table(table, sort_by, descending=descending)
    return table


def _readable(table, rounded: bool):
    """Numbers rounded for reading unless `rounded` is False (the rows keep their order)."""
    if rounded:
        for column in table.columns:
            if table[column].dtype.kind == "f":
                table[column] = table[column].map(_rounded)
    return table


@dataclass(frozen=True)
class ResultsView:
    """One page of the results table as the Compare tab shows it, and its controls' choices.

    Attributes:
        table: The page: the columns shown, headed by `short_headers`, empty cells None.
        columns: Every column of the filtered table (full dotted paths), for the picker.
        shown: The columns shown (full paths), `id` first.
        metrics: The `val_*` columns; `metric` is the one the table is read by.
        sweeps: The sweep ids among the runs (before the sweep filter), for its menu.
        tags: Every tag in the store, for the tag filter's menu.
        page, pages, total: Which page of how many, and how many runs match.
        legend: Markdown: the full path of each shortened header, what the other
            columns hold, and which runs the page holds.
        hyperparameters: The spec fields that differ among the runs (full paths),
            for the scatter's x axis.
        sort_by, descending: The column every run is ordered by (None: newest first).
        sort_choices: `(label, column)` of the columns shown, for the "Sort by" menu.
        header_paths: Each header shown → its full path (for the headers' tooltips).
    """

    table: Any
    columns: list[str]
    shown: list[str]
    metrics: list[str]
    metric: str | None
    sweeps: list[str]
    tags: list[str]
    page: int
    pages: int
    total: int
    legend: str
    hyperparameters: list[str] = field(default_factory=list)
    sort_by: str | None = None
    descending: bool = True
    sort_choices: list[tuple[str, str]] = field(default_factory=list)
    header_paths: dict[str, str] = field(default_factory=dict)


def results_view(
    ctx: AppContext,
    filters: ResultsFilters | None = None,
    *,
    columns: Sequence[str] | None = None,
    page: int | float | None = 1,
    sort_by: str | None = None,
    descending: bool = True,
):
    """The Compare tab's table: the runs matching `filters`, a readable set of columns, a page.

    Args:
        filters: The filters (none: every run).
        columns: The columns to show (full paths); None or empty for
            `compare.default_columns` (those that differ among the runs and that
            most of them fill, plus id, name, status, the metric, epochs,
            parameters, time, device). Columns no longer in the table are dropped.
        page: 1-based page of `compare.PAGE_SIZE` runs (clamped to the pages there are).
        sort_by, descending: Order every run the filters keep by this column before
            paging (`compare.sort_table`: empty cells last either way); None, or a
            column no longer in the table, for newest first.
    """
    filters = filters or ResultsFilters()
    everything = _runs_table(ctx, filters)
    sweeps = sorted({sweep for sweep in everything[0]["sweep"] if isinstance(sweep, str)})
    filtered = _filtered(everything, filters)
    sort_by = sort_by if sort_by in filtered.columns else None
    table = _readable(_ordered(filtered, sort_by, descending), rounded=True)
    metric = filters.metric
    if metric not in table.columns or not table[metric].notna().any():
        metric = compare.default_metric(table)  # one the runs shown have
    chosen = [c for c in columns or () if c in table.columns]
    shown = chosen or compare.default_columns(table, metric)
    shown = _pinned_first(shown)
    rows, page, pages = compare.page_of(table, 1 if page is None else page)
    headers = compare.short_headers(shown)
    display = rows[shown].astype(object).where(rows[shown].notna(), None)
    return ResultsView(
        table=display.rename(columns=headers).reset_index(drop=True),
        columns=list(table.columns),
        shown=shown,
        metrics=compare.metric_columns(table),
        metric=metric,
        sweeps=sweeps,
        tags=ctx.store.all_tags(),
        page=page,
        pages=pages,
        total=len(table),
        legend=_legend(
            headers, page, pages, len(table), _order_text(sort_by, descending), filters.brushed
        ),
        hyperparameters=charts.hyperparameter_columns(table),
        sort_by=sort_by,
        descending=bool(descending),
        sort_choices=_sort_choices([*shown, *([sort_by] if sort_by not in shown else [])]),
        header_paths={head: column for column, head in headers.items()},
    )


# The columns pinned at the table's left edge (they stay in view when it scrolls sideways).
PINNED_COLUMNS = ("id", "name")


def _pinned_first(shown: Sequence[str]) -> list[str]:
    """`shown` with `id` first and then `name` if shown, the two pinned at the left edge.

    Columns picked without `name` keep their order after `id` (the second one is pinned).
    """
    pinned = [c for c in PINNED_COLUMNS if c == "id" or c in shown]
    return [*pinned, *[c for c in shown if c not in pinned]]


def _sort_choices(columns: Sequence[str | None]) -> list[tuple[str, str]]:
    """`(label, column)` per column: its short header, with the full path when shortened."""
    columns = [c for c in columns if c]
    headers = compare.short_headers(columns)
    return [(h if h == c else f"{h} ({c})", c) for c, h in headers.items()]


def _order_text(sort_by: str | None, descending: bool) -> str:
    """How the rows are ordered, for the legend: newest first, or by a column."""
    if not sort_by:
        return "newest first"
    direction = "descending" if descending else "ascending"
    return f"sorted by {sort_by}, {direction}, over every run (empty cells last)"


def _legend(
    headers: dict[str, str],
    page: int,
    pages: int,
    total: int,
    order: str = "newest first",
    brushed: Sequence[str] | None = None,
) -> str:
    """Markdown under the table: shortened headers in full, the other columns' meaning, paging,
    and the brush on the parallel coordinates, if any."""
    first = (page - 1) * compare.PAGE_SIZE + 1 if total else 0
    last = min(page * compare.PAGE_SIZE, total)
    lines = [f"Runs {first}–{last} of {total} (page {page} of {pages}), {order}."]
    if brushed is not None:
        kept = "the run whose line" if len(brushed) == 1 else f"the {len(brushed)} runs whose lines"
        lines.append(
            f"Brushed on the parallel coordinates: only {kept} the brushes keep (click an axis "
            "outside its brush, or draw the chart again, to clear)."
        )
    short = [f"`{head}` = {column}" for column, head in headers.items() if head != column]
    if short:
        lines.append("Columns: " + " · ".join(short) + ".")
    meanings = [
        f"`{column}`: {meaning}"
        for column, meaning in compare.COLUMN_MEANINGS.items()
        if column in headers
        or (column.endswith("*") and any(c.startswith(column[:-1]) for c in headers))
    ]
    if meanings:
        lines.append(" · ".join(meanings) + ".")
    return "\n\n".join(lines)


def parse_bound(text: str | None, field: str) -> float | None:
    """A metric bound typed in a box: None when empty, else a finite number.

    Raises:
        AppError: naming `field` and what was typed, when it is not a finite number.
    """
    if text is None or not str(text).strip():
        return None
    try:
        value = float(str(text).strip())
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise AppError(f"{field}: expected a number such as 0.9, got {str(text).strip()!r}.")
    return value


# A brush's message is the run ids of the lines drawn, at most one per run in the store; the
# bound keeps a forged one from costing more than reading it.
MAX_BRUSH_CHARACTERS = 4 * 2**20


def parse_brush(text: str | None) -> tuple[str, ...] | None:
    """What the parallel coordinates' brushes keep, as the page sends it: `{"run_ids": [...]}`.

    None when there is no brush (an empty message, or `run_ids` null).

    Raises:
        AppError: naming the brush and what came, when it is not such a message.
    """
    if text is None or not str(text).strip():
        return None
    text = str(text)
    try:
        if len(text) > MAX_BRUSH_CHARACTERS:
            raise ValueError(f"over {MAX_BRUSH_CHARACTERS:,} characters")
        run_ids = json.loads(text)["run_ids"]
        if run_ids is None:
            return None
        if not isinstance(run_ids, list) or not all(isinstance(i, str) for i in run_ids):
            raise ValueError("run_ids is not a list of run ids")
    except (ValueError, TypeError, KeyError) as error:
        raise AppError(
            f'Brush: expected {{"run_ids": [...]}} from the parallel coordinates, got '
            f"{text[:80]!r} ({error})."
        ) from None
    return tuple(run_ids)


# The last lines of a failed run's traceback shown under its row, read from at most this many
# bytes at the end of the file (a traceback of a deep recursion can be megabytes).
OUTCOME_LINES = 20
OUTCOME_BYTES = 64 * 1024


def run_outcome(ctx: AppContext, run_id: str) -> str:
    """Markdown: how the run ended, with its error and the last lines of its traceback.

    A run that ended otherwise than `done` says why (its recorded error: the exception of a
    failed run, the reason a run diverged, was interrupted or pruned); a failed run also shows
    the last `OUTCOME_LINES` lines of the traceback the engine kept (`traceback.txt`).
    """
    record = ctx.record(run_id)
    parts = [f"Run `{record.id}` ({record.name}): **{record.status}**."]
    if record.error:
        parts.append(_fenced(record.error))
    path = ctx.store.artifact_dir(record.id) / TRACEBACK_FILE
    if record.status == "failed" and path.is_file():
        parts.append(f"The last lines of its traceback (`{path}`):")
        parts.append(_fenced(_tail(path, OUTCOME_LINES, OUTCOME_BYTES), "python"))
    return "\n\n".join(parts)


def _tail(path: Path, lines: int, most: int) -> str:
    """The last `lines` lines of a text file, read from its last `most` bytes only."""
    with path.open("rb") as file:
        file.seek(0, 2)
        size = file.tell()
        file.seek(max(0, size - most))
        text = file.read().decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])


def _fenced(text: str, language: str = "text") -> str:
    """`text` as a Markdown code block whose fence no run of backticks in it can close."""
    fence = "`" * max(3, _longest_backticks(text) + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def _longest_backticks(text: str) -> int:
    longest = current = 0
    for character in text:
        current = current + 1 if character == "`" else 0
        longest = max(longest, current)
    return longest


def grouped(ctx: AppContext, filters: ResultsFilters | None, column: str | None):
    """The runs the filters keep, grouped by `column`: each metric's mean and std (rounded).

    Raises:
        AppError: no column chosen, or one the runs shown do not have (named).
    """
    if not column:
        raise AppError("Choose a column to group the runs by (a seed, a cell, a sweep…).")
    table = results_frame(ctx, filters=filters or ResultsFilters(), rounded=False)
    try:
        groups = compare.group_table(table, column)
    except ValueError as error:
        raise AppError(f"Group by: {column!r} is not a column of the runs shown.") from error
    groups = _readable(groups, rounded=True)
    return groups.astype(object).where(groups.notna(), None)


def differences(ctx: AppContext, run_ids: Sequence[str] | None):
    """`results.compare.differences` of the runs picked, the first the baseline (a DataFrame).

    Raises:
        AppError: fewer than two runs picked, or one that is not in the store (named).
    """
    try:
        return compare.differences(ctx.store, list(run_ids or []))
    except (KeyError, ValueError) as error:
        raise _app_error(error) from None


def run_spec_yaml(ctx: AppContext, run_id: str) -> str:
    """The whole spec a run was trained from, as YAML."""
    record = ctx.record(run_id)
    return yaml.safe_dump(record.spec, sort_keys=False, allow_unicode=True, width=100)


def _rounded(value: Any) -> Any:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return value
    if isinstance(value, float):
        return float(f"{value:.4g}")
    return value


def run_choices(ctx: AppContext, statuses: Sequence[str] | None = None) -> list[tuple[str, str]]:
    """`(label, run id)` of the store's runs, newest first (only `statuses` if given); kept
    while the store is unchanged (`ctx.memo`)."""

    def make() -> list[tuple[str, str]]:
        records = ctx.store.list_runs(status=list(statuses) if statuses else None)
        return [
            (f"{r.id} · {r.name} · {r.spec.get('model', {}).get('type', '?')} · {r.status}", r.id)
            for r in reversed(records)
        ]

    return list(ctx.memo.get(("run_choices", tuple(statuses or ())), make))


def metric_choices(ctx: AppContext, run_ids: Sequence[str]) -> list[str]:
    """The metrics the runs logged per epoch (val_ ones first)."""
    names: list[str] = []
    for run_id in run_ids or []:
        with contextlib.suppress(RunNotFoundError):
            for epoch in ctx.store.history(run_id):
                names += [n for n in epoch.metrics if n not in names]
    return sorted(names, key=lambda n: (not n.startswith("val_"), n))


def _app_error(error: Exception) -> AppError:
    """A store's refusal (`KeyError` or `ValueError`) as the message the tab shows."""
    return AppError(str(error.args[0]) if error.args else str(error))


def curves_chart(
    ctx: AppContext,
    run_ids: Sequence[str],
    metrics: Sequence[str] | str,
    *,
    smoothing: float = 0.0,
    x_axis: str = "epoch",
    log_y: bool = False,
    group_by: str | None = None,
):
    """Several metrics per epoch of several runs, interactive (`charts.learning_curves`),
    smoothed, against the epoch or the seconds of training, on a log scale if asked.

    With `group_by` (a column of the runs' table), one curve per group of the runs picked:
    the mean per epoch and a band of ± one std (`charts.group_curves`, on epochs).
    """
    run_ids = list(run_ids or [])
    if not run_ids:
        raise AppError("Select one or more runs to overlay their curves.")
    metrics = [metrics] if isinstance(metrics, str) else list(metrics or ["val_loss"])
    try:
        records = compare.select(ctx.store, run_ids, history=True)
        if group_by:
            cells = {record.id: compare.run_cell(record, group_by) for record in records}
            if all(cell is compare.MISSING for cell in cells.values()):
                raise AppError(f"Group by: {group_by!r} is not a column of the runs picked.")
            groups = {
                run_id: (compare.cell_text(None if cell is compare.MISSING else cell) or "(none)")
                for run_id, cell in cells.items()
            }
            figure = charts.group_curves(records, metrics, groups)
            if log_y:
                figure.update_yaxes(type="log")
            return figure
        return charts.learning_curves(
            records, metrics, smoothing=smoothing, x_axis=x_axis, log_y=bool(log_y)
        )
    except (KeyError, ValueError) as error:
        raise _app_error(error) from None


def hyperparameter_choices(ctx: AppContext, filters: ResultsFilters | None = None) -> list[str]:
    """The spec fields that differ among the runs the filters keep (for the scatter's menu)."""
    return charts.hyperparameter_columns(results_frame(ctx, filters=filters, rounded=False))


def hparams_chart(ctx: AppContext, filters: ResultsFilters | None, metric: str | None):
    """Parallel coordinates of the differing hyperparameters against `metric`, runs shown.

    The runs the other filters keep, a brush on an earlier chart aside: the new chart has no
    brush.
    """
    filters = replace(filters or ResultsFilters(), brushed=None)
    table = results_frame(ctx, filters=filters, rounded=False)
    metric = metric if metric in table.columns else compare.default_metric(table)
    try:
        return charts.parallel_coordinates(table, metric)
    except ValueError as error:
        raise _app_error(error) from None


def importance_chart(ctx: AppContext, sweep_id: str | None):
    """The importance of each parameter of the sweep the Sweep filter names, as bars."""
    if not sweep_id:
        raise AppError("Choose a sweep in the Sweep filter first: importance is per sweep.")
    try:
        found = importance.sweep_importance(ctx.store, sweep_id)
    except (importance.ImportanceError, ImportError) as error:
        raise AppError(str(error)) from None
    return charts.importance_figure(found.shares, found.metric, found.trials)


def scatter_chart(
    ctx: AppContext, filters: ResultsFilters | None, hyperparameter: str, metric: str | None
):
    """One hyperparameter against one metric, a point per run shown."""
    table = results_frame(ctx, filters=filters or ResultsFilters(), rounded=False)
    if not hyperparameter:
        raise AppError("Choose a hyperparameter for the scatter's x axis.")
    metric = metric if metric in table.columns else compare.default_metric(table)
    try:
        return charts.hyperparameter_scatter(table, hyperparameter, metric)
    except ValueError as error:
        raise _app_error(error) from None


@dataclass(frozen=True)
class RunNotes:
    """What a person has said about one run, as the Compare tab's fields show it."""

    run_id: str
    name: str
    tags: str  # comma-separated, as typed in the tags box
    note: str
    starred: bool
    archived: bool
    status: str


def run_notes(ctx: AppContext, run_id: str) -> RunNotes:
    """The name, tags, note, star and archive mark of a run.

    Raises:
        AppError: No run chosen, or no such run.
    """
    if not run_id:
        raise AppError("Click a row of the table to choose a run first.")
    try:
        record = ctx.store.get(run_id, history=False)
    except RunNotFoundError as error:
        raise _app_error(error) from None
    return RunNotes(
        record.id,
        record.name,
        ", ".join(record.tags),
        record.note,
        record.starred,
        record.archived,
        record.status,
    )


def parse_tags(text: str | None) -> list[str]:
    """Tags typed in one box, separated by commas or spaces: `"lstm, baseline"` → two tags.

    Raises:
        AppError: A tag that is not one (`check_tag`), naming it.
    """
    tags = [part for part in str(text or "").replace(",", " ").split() if part]
    try:
        return list(dict.fromkeys(check_tag(tag) for tag in tags))
    except ValueError as error:
        raise AppError(f"Tags: {error}") from None


def save_annotations(ctx: AppContext, run_id: str, name: str, tags: str, note: str) -> RunNotes:
    """Set a run's name, tags (exactly those typed) and note; all checked before any is written.

    Raises:
        AppError: No run chosen, an unknown run, or a name, tag or note refused (the
            field and the value named); then nothing is changed.
    """
    current = run_notes(ctx, run_id)
    try:
        new_name, new_note = check_name(name), check_note(note or "")
    except ValueError as error:
        raise _app_error(error) from None
    wanted, had = parse_tags(tags), parse_tags(current.tags)
    if len(wanted) > MAX_TAGS_PER_RUN:
        raise AppError(f"Tags: expected at most {MAX_TAGS_PER_RUN} tags, got {len(wanted)}.")
    try:
        if new_name != current.name:
            ctx.store.rename(run_id, new_name)
        ctx.store.add_tags(run_id, [tag for tag in wanted if tag not in had])
        ctx.store.remove_tags(run_id, [tag for tag in had if tag not in wanted])
        ctx.store.set_note(run_id, new_note)
    except (KeyError, ValueError) as error:
        raise _app_error(error) from None
    return run_notes(ctx, run_id)


def toggle_star(ctx: AppContext, run_id: str) -> RunNotes:
    """Star the run, or unstar it if it is starred."""
    notes = _chosen(ctx, run_id)
    ctx.store.set_starred(run_id, not notes.starred)
    return run_notes(ctx, run_id)


def toggle_archive(ctx: AppContext, run_id: str) -> RunNotes:
    """Archive the run (hidden from the table unless "show archived"), or restore it."""
    notes = _chosen(ctx, run_id)
    ctx.store.set_archived(run_id, not notes.archived)
    return run_notes(ctx, run_id)


def delete_run(ctx: AppContext, run_id: str, confirmed: bool) -> str:
    """Delete a run, its epochs and its folder, once `confirmed`; returns what was deleted.

    Raises:
        AppError: Not confirmed, no run chosen, or a queued or running run (why).
    """
    notes = _chosen(ctx, run_id)
    if not confirmed:
        raise AppError(
            f"Tick “Yes, delete run {run_id}” first: deleting removes its epochs and its files."
        )
    try:
        ctx.store.delete(run_id, allow_queued=False)
    except (KeyError, ValueError) as error:
        raise _app_error(error) from None
    return f"Deleted run {run_id} ({notes.name}) with its epochs and files."


def _chosen(ctx: AppContext, run_id: str) -> RunNotes:
    """The run a button acts on (the row clicked), or an AppError saying to click one."""
    return run_notes(ctx, run_id)


BLEU_ARTIFACT = "bleu_by_length.csv"


def bleu_table(ctx: AppContext, run_id: str):
    """BLEU per source-length bucket of a finished seq2seq run, computed once and kept."""
    record = ctx.record(run_id)
    if not translates(record.spec):
        raise AppError(f"Run {run_id} is not a seq2seq run; BLEU by length needs a translator.")
    if BLEU_ARTIFACT in record.artifacts:
        try:
            path = artifacts.artifact_path(ctx.store, run_id, BLEU_ARTIFACT)
        except artifacts.ArtifactError as error:
            raise AppError(str(error)) from None
        if path.is_file():
            return pd.read_csv(path)
    model, task = ctx.model(run_id), ctx.task(run_id)
    table = evaluate_by_length(translator(model, task), task)
    with ctx.store.atomic_artifact(run_id, BLEU_ARTIFACT) as path:
        table.to_csv(path, index=False)
    return table


def bleu_chart(ctx: AppContext, run_ids: Sequence[str]):
    """BLEU by source length, interactive: `(Plotly figure, table to 1–2 decimals)`.

    The ticks are the buckets' ranges; BLEU (0–100) has 1 decimal in the table and
    exact match and token accuracy (0–1) have 2. The unrounded table is kept with each
    run (`bleu_table`).
    """
    curves = []
    for run_id in run_ids or []:
        record = ctx.record(run_id)
        if record.status == "done" and translates(record.spec):
            curves.append((f"{record.name} ({run_id})", bleu_table(ctx, run_id)))
    if not curves:
        raise AppError("Select at least one finished seq2seq run to see BLEU by source length.")
    table = pd.concat([frame.assign(run=label) for label, frame in curves], ignore_index=True)
    columns = ["run", "bucket", "n", *charts.BLEU_DECIMALS]
    return charts.bleu_by_length_figure(curves), charts.bleu_table_rounded(table[columns])


def results_csv(
    ctx: AppContext,
    query: str = "",
    statuses: Sequence[str] | None = None,
    *,
    filters: ResultsFilters | None = None,
    sort_by: str | None = None,
    descending: bool = True,
) -> Path:
    """The (filtered) results table as a CSV file to download: every column, numbers unrounded.

    Its rows are in the table's order (`sort_by`, `descending`: as `results_frame`).
    """
    table = results_frame(
        ctx, query, statuses, filters=filters, rounded=False, sort_by=sort_by, descending=descending
    )
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return compare.to_csv(table, ctx.download_path(f"keras-seq-runs-{stamp}.csv"))


def results_report(
    ctx: AppContext,
    *,
    filters: ResultsFilters | None = None,
    sort_by: str | None = None,
    descending: bool = True,
) -> Path:
    """The runs the filters keep as one self-contained HTML report (`results.report`).

    In the table's order; the charts read the filters' metric; with the Sweep filter set,
    the sweep's parameter importance is in it too.

    Raises:
        AppError: no run is kept by the filters.
    """
    filters = filters or ResultsFilters()
    table = results_frame(
        ctx, filters=filters, rounded=False, sort_by=sort_by, descending=descending
    )
    if table.empty:
        raise AppError("No runs to report: the filters keep none.")
    text = report.report_html(
        ctx.store, list(table["id"]), metric=filters.metric, sweep_id=filters.sweep
    )
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return report.write_report(ctx.download_path(f"keras-seq-report-{stamp}.html"), text)


# --- The view in the page's URL -----------------------------------------------------------

# The Compare view's query parameters, in the order a link shows them. `open=compare` opens
# the tab; the others are the filters, the sort, the page and the columns picked. Not
# `page`: Gradio reads that one itself (a page of a multipage app).
VIEW_KEYS = ("open", "q", "status", "sweep", "metric", "min", "max", "tag", "archived")
VIEW_KEYS += ("sort", "order", "runs_page", "cols")
# What a link may hold, so that a long or odd one is cut down rather than acted on: the
# text of one field, the number of columns, the page.
MAX_VIEW_TEXT = 200
MAX_VIEW_COLUMNS = 100
MAX_VIEW_PAGE = 1_000_000
SORT_ORDERS = ("descending", "ascending")


@dataclass(frozen=True)
class CompareView:
    """The Compare tab's controls as a link gives them (every field checked; see `view_of`)."""

    text: str = ""
    statuses: tuple[str, ...] = ()
    sweep: str = ""
    metric: str | None = None
    low: str = ""
    high: str = ""
    tag: str = ""
    archived: bool = False
    sort_by: str = ""
    order: str = "descending"
    page: int = 1
    columns: tuple[str, ...] | None = None


def view_of(params: Any) -> CompareView | None:
    """The view a page's query parameters ask for, or None without `open=compare`.

    The parameters come from whoever wrote the link, so each is checked and what does not
    fit is dropped (a status that is not one, an order that is neither, a page out of range)
    or cut to `MAX_VIEW_TEXT` characters; the filters then act on it as on typed text (a
    metric bound that is not a number is named in the tab's message).
    """

    def text(key: str) -> str:
        value = params.get(key)
        return str(value)[:MAX_VIEW_TEXT].strip() if value is not None else ""

    if text("open") != "compare":
        return None
    listed = [part.strip() for part in text("status").split(",")]
    statuses = tuple(status for status in STATUSES if status in listed)
    metric = text("metric")
    order = text("order")
    try:
        page = min(max(int(text("runs_page") or 1), 1), MAX_VIEW_PAGE)
    except ValueError:
        page = 1
    raw_columns = params.get("cols")
    columns = None
    if raw_columns:
        named = [part.strip() for part in str(raw_columns).split(",") if part.strip()]
        columns = tuple(part[:MAX_VIEW_TEXT] for part in named[:MAX_VIEW_COLUMNS]) or None
    return CompareView(
        text=text("q"),
        statuses=statuses,
        sweep=text("sweep"),
        metric=metric if metric.startswith("val_") else None,
        low=text("min"),
        high=text("max"),
        tag=text("tag"),
        archived=text("archived") in ("1", "true"),
        sort_by=text("sort"),
        order=order if order in SORT_ORDERS else "descending",
        page=page,
        columns=columns,
    )


def view_query(view: CompareView) -> dict[str, str | None]:
    """The query parameters of `view`: each of `VIEW_KEYS`, None for one to leave out.

    What the page writes into its URL after each refresh (the defaults left out, so a link
    is as short as the view allows), and `view_of` reads back.
    """
    values = {
        "open": "compare",
        "q": view.text,
        "status": ",".join(view.statuses),
        "sweep": view.sweep,
        "metric": view.metric or "",
        "min": view.low,
        "max": view.high,
        "tag": view.tag,
        "archived": "1" if view.archived else "",
        "sort": view.sort_by,
        "order": view.order if view.order != "descending" else "",
        "runs_page": str(view.page) if view.page != 1 else "",
        "cols": ",".join(view.columns or ()),
    }
    return {key: values[key] or None for key in VIEW_KEYS}
