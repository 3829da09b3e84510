"""Interactive charts of runs, as the HParams dashboard and W&B draw them: plain Plotly figures.

Each function takes run records or a `builder_ui.results.compare.compare` table and
returns a `plotly.graph_objects.Figure`, which zooms, shows values on hover and hides a
series when its legend entry is clicked; the app shows it in a `gr.Plot`, a notebook
shows it as it is. Values go into the traces as plain lists (not NumPy arrays, which
Plotly would encode as binary), so a figure's JSON reads the same in any plotly.js.

- `learning_curves`: several metrics per epoch of several runs, one panel per metric,
  one colour per run (clicking a run in the legend hides all its curves).
- `parallel_coordinates`: one axis per hyperparameter that differs, then the metric;
  one line per run, coloured by the metric.
- `hyperparameter_scatter`: any hyperparameter against any metric, one point per run.
- `bleu_by_length_figure` and `bleu_table_rounded`: BLEU per source-length bucket,
  the buckets' ranges as the ticks, the table to 1–2 decimals.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from builder_ui.engine.records import RunRecord
from builder_ui.results import compare

# Columns of a `compare` table that are not spec fields (hyperparameters).
NOT_HYPERPARAMETERS = frozenset(
    {
        *compare.LEADING_COLUMNS,
        *compare.EPOCH_COLUMNS,
        *compare.TRAILING_COLUMNS,
        *compare.ANNOTATION_COLUMNS,
    }
)

# Plotly's default colour cycle, named so each run keeps one colour in every panel.
COLOURS = (
    "#636efa",
    "#ef553b",
    "#00cc96",
    "#ab63fa",
    "#ffa15a",
    "#19d3f3",
    "#ff6692",
    "#b6e880",
    "#ff97ff",
    "#fecb52",
)

# One marker shape per run, as the colours: runs with the same curve (a seeded spec
# trained twice) draw one line on the other, and the shapes show both are there. They
# are hollow and shrink by run (`MARKER_SIZES`), so a run's marker drawn over another's
# sits inside it instead of hiding it.
SYMBOLS = tuple(
    f"{shape}-open"
    for shape in ("circle", "square", "diamond", "cross", "x", "triangle-up", "star", "hexagon")
)

MARKER_SIZES = (12, 9, 6)

# The most hyperparameter axes a parallel-coordinates chart draws by default.
MAX_AXES = 12

# Roughly the width of one character of Plotly's default 12 px font, for margins that
# hold text drawn outside the plot (the widest letters are about 0.6 of the size).
CHAR_PX = 7.5

# The longest category name a parallel-coordinates tick shows in full.
MAX_TICK_CHARS = 24

# Decimals of each score in the BLEU-by-length table: BLEU is 0-100, the others 0-1.
BLEU_DECIMALS = {"bleu": 1, "exact_match": 2, "token_accuracy": 2}


# Up to this many epochs, the epoch axis has a tick for each.
MAX_EPOCH_TICKS = 20


def _number(value: Any) -> float | None:
    """A finite float, or None (a gap in a line, no point): NaN, None and text are not numbers."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def run_label(record_id: str, name: Any) -> str:
    """How a run is named in a legend or on hover: `name (id)`."""
    return f"{name} ({record_id})"


# The x axes `learning_curves` draws against: the epoch, or the seconds of training.
X_AXES = ("epoch", "time")
MAX_SMOOTHING = 0.99


def smoothed(values: Sequence[float], weight: float) -> list[float]:
    """TensorBoard's smoothing: an exponential moving average, debiased at the start.

        m_t = w · m_{t−1} + (1 − w) · x_t,  m_0 = 0,   shown: m_t / (1 − w^n_t)

    where `n_t` counts the finite values so far (dividing by `1 − w^n` undoes the pull
    towards the zero start). A value that is not finite is kept as NaN and skipped.
    `weight` 0 returns the values themselves.
    """
    mean, count, out = 0.0, 0, []
    for value in values:
        number = _number(value)
        if number is None:
            out.append(math.nan)
            continue
        mean, count = weight * mean + (1 - weight) * number, count + 1
        out.append(mean / (1 - weight**count))
    return out


def _training_seconds(record: RunRecord) -> dict[int, float]:
    """Epoch -> seconds of training at its end: the sum of the epochs' `seconds` so far (for
    an epoch without them, the time since the first epoch ended, plus the first's)."""
    seconds, total = {}, 0.0
    first = record.history[0] if record.history else None
    for row in record.history:
        if row.seconds is not None:
            total += row.seconds
        elif first is not None:
            total = (first.seconds or 0.0) + row.time - first.time
        seconds[row.epoch] = total
    return seconds


def learning_curves(
    records: Iterable[RunRecord],
    metrics: Sequence[str],
    *,
    smoothing: float = 0.0,
    x_axis: str = "epoch",
    log_y: bool = False,
):
    """Each metric per epoch of each run (records loaded with their history), overlaid.

    One panel per metric, stacked, sharing the x axis; a run has one colour and
    one marker shape in every panel and one legend entry, so clicking it hides all its
    curves. Hovering an epoch lists every run's value there, so runs whose curves
    coincide (drawn one on the other) are still told apart.

    Args:
        records: The runs, loaded with their history.
        metrics: The logged metrics, a panel each.
        smoothing: `w` of `smoothed`, 0 to 0.99: above 0 the smoothed curve is drawn over
            the logged one, which stays, faint.
        x_axis: "epoch", or "time": the seconds of training at each epoch's end.
        log_y: A log scale on the y axes.

    Raises:
        ValueError: No metric given, or no run logged any of them (the message lists
            what they logged); a smoothing or an x axis out of range (named).
    """
    if not isinstance(smoothing, (int, float)) or not 0 <= smoothing <= MAX_SMOOTHING:
        raise ValueError(
            "Received an invalid value for argument `smoothing`, expected a number from 0 "
            f"to {MAX_SMOOTHING}, got {smoothing!r}."
        )
    if x_axis not in X_AXES:
        raise ValueError(
            "Received an invalid value for argument `x_axis`, expected one of "
            f"{', '.join(X_AXES)}, got {x_axis!r}."
        )
    records, metrics = list(records), list(dict.fromkeys(metrics or ()))
    logged = sorted({name for record in records for row in record.history for name in row.metrics})
    if not metrics or not any(record.curve(m)[0] for record in records for m in metrics):
        raise ValueError(
            "Received an invalid value for argument `metrics`, expected metrics the runs "
            f"logged ({logged or 'none yet'}), got {metrics!r}."
        )
    figure = make_subplots(
        rows=len(metrics), cols=1, shared_xaxes=True, subplot_titles=metrics, vertical_spacing=0.08
    )
    for index, record in enumerate(records):
        colour = COLOURS[index % len(COLOURS)]
        marker = {
            "symbol": SYMBOLS[index % len(SYMBOLS)],
            "size": MARKER_SIZES[index % len(MARKER_SIZES)],
            "line": {"width": 2},
        }
        shown_in_legend = False
        at = _training_seconds(record) if x_axis == "time" else None
        for row, metric in enumerate(metrics, start=1):
            epochs, values = record.curve(metric)
            if not epochs:
                continue
            xs = list(epochs) if at is None else [at[epoch] for epoch in epochs]
            logged = [_number(value) for value in values]
            if smoothing:
                faint = go.Scatter(
                    x=xs,
                    y=logged,
                    mode="lines",
                    legendgroup=record.id,
                    showlegend=False,
                    opacity=0.25,
                    line={"color": colour},
                    hoverinfo="skip",
                )
                figure.add_trace(faint, row=row, col=1)
                logged = [_number(value) for value in smoothed(values, smoothing)]
            trace = go.Scatter(
                x=xs,
                y=logged,
                mode="lines+markers",
                name=run_label(record.id, record.name),
                legendgroup=record.id,
                showlegend=not shown_in_legend,
                line={"color": colour},
                marker=marker,
                hovertemplate="%{fullData.name}: %{y:.4g}<extra></extra>",
            )
            figure.add_trace(trace, row=row, col=1)
            figure.update_yaxes(title_text=metric, row=row, col=1)
            shown_in_legend = True
    if log_y:
        figure.update_yaxes(type="log")
    if x_axis == "time":
        figure.update_xaxes(title_text="seconds of training", row=len(metrics), col=1)
        figure.update_xaxes(unifiedhovertitle={"text": "%{x:.1f} s"})
    else:
        figure.update_xaxes(title_text="epoch", row=len(metrics), col=1)
        figure.update_xaxes(unifiedhovertitle={"text": "epoch %{x}"})  # the hover's first line
        # Epochs are whole numbers: a short run gets a tick per epoch, not 1.5 between two
        # (a long one gets Plotly's round steps: 5, 10, ...).
        longest = max((len(record.history) for record in records), default=0)
        if longest <= MAX_EPOCH_TICKS:
            figure.update_xaxes(tick0=1, dtick=1)
    figure.update_layout(
        height=max(320, 260 * len(metrics)), hovermode="x unified", legend={"title": "run"}
    )
    return figure


def hyperparameter_columns(table) -> list[str]:
    """The spec fields of a `compare` table (the hyperparameters that differ), in table order."""
    metrics = set(compare.metric_columns(table))
    return [c for c in table.columns if c not in NOT_HYPERPARAMETERS and c not in metrics]


def _informative_hyperparameters(rows) -> list[str]:
    """The hyperparameters worth an axis: differing among `rows`, mostly filled, `MAX_AXES`."""
    worth = set(compare.default_columns(rows))
    return [column for column in hyperparameter_columns(rows) if column in worth][:MAX_AXES]


# A numeric axis whose positive values span this ratio or more is drawn on a log scale.
LOG_AXIS_RATIO = 100.0
# Up to this many distinct values, a numeric axis has a tick at each, labelled with it.
MAX_VALUE_TICKS = 8


def _axis(values: list[Any], label: str) -> dict[str, Any]:
    """One parallel-coordinates dimension: numbers, or anything else as categories.

    Numbers with few distinct values (a search's grid) get a tick at each value, so every
    trial's value can be read. Positive numbers spanning two decades or more (a learning
    rate from 1e-4 to 1e-1) are drawn as log10 of the value, ticked with the values
    themselves, and the axis says "(log)": Plotly's parallel coordinates have no log axis.
    """
    numbers = [_number(value) for value in values]
    if all(number is not None for number in numbers):
        distinct = sorted(set(numbers))
        logarithmic = (
            len(distinct) > 1 and distinct[0] > 0 and distinct[-1] / distinct[0] >= LOG_AXIS_RATIO
        )
        if logarithmic:
            ticks = distinct if len(distinct) <= MAX_VALUE_TICKS else _decades(distinct)
            return {
                "label": f"{label} (log)",
                "values": [math.log10(number) for number in numbers],
                "tickvals": [math.log10(tick) for tick in ticks],
                "ticktext": [f"{tick:.3g}" for tick in ticks],
            }
        if len(distinct) <= MAX_VALUE_TICKS:
            ticks = {"tickvals": distinct, "ticktext": [f"{tick:.4g}" for tick in distinct]}
            return {"label": label, "values": numbers, **ticks}
        return {"label": label, "values": numbers}
    categories = sorted({compare.cell_text(value) for value in values})
    codes = [categories.index(compare.cell_text(value)) for value in values]
    return {
        "label": label,
        "values": codes,
        "tickvals": list(range(len(categories))),
        "ticktext": [_shortened(text or "(none)") for text in categories],
    }


def _decades(values: list[float]) -> list[float]:
    """The powers of ten from below the smallest of `values` to above the largest."""
    low, high = math.floor(math.log10(values[0])), math.ceil(math.log10(values[-1]))
    return [10.0**power for power in range(low, high + 1)]


def _shortened(text: str) -> str:
    """`text`, or its first `MAX_TICK_CHARS - 1` characters and "…" (a file path, a long name)."""
    return text if len(text) <= MAX_TICK_CHARS else text[: MAX_TICK_CHARS - 1] + "…"


def _outer_margins(dimensions: list[dict[str, Any]]) -> dict[str, int]:
    """Left and right margins (px) that hold the outer axes' tick texts and names.

    Every axis writes its tick texts to its left and its name centred above it, so
    the first axis needs its widest tick text (or half its name) left of the plot and
    the last half its name right of it; the colour bar makes its own room.
    """
    first, last = dimensions[0], dimensions[-1]
    ticks = first.get("ticktext") or [f"{v:.4g}" for v in first["values"] if v is not None]
    left = max([len(text) for text in ticks] + [len(first["label"]) / 2]) * CHAR_PX
    right = len(last["label"]) / 2 * CHAR_PX
    return {"l": max(60, math.ceil(left) + 12), "r": max(60, math.ceil(right) + 12)}


def parallel_coordinates(table, metric: str, hyperparameters: Sequence[str] | None = None):
    """One axis per hyperparameter, then `metric`; one line per run, coloured by `metric`.

    Runs without a value of `metric` are left out (a line needs every axis). The trace's
    `meta["run_ids"]` holds each line's run id, in the order of the dimensions' values: what
    the Compare tab reads back to filter its table to the lines a brush on an axis keeps.

    Args:
        table: A `compare` table (or filtered rows of one).
        metric: A `val_*` column.
        hyperparameters: The columns to draw (default: those of
            `hyperparameter_columns` that differ among the runs drawn and that
            most of them fill, as `compare.default_columns` picks, at most
            `MAX_AXES`: runs of several model types have a field for every field
            of every type, mostly empty, which would make the chart unreadable).

    Raises:
        ValueError: `metric` is not a metric column, no run has it, or no
            hyperparameter differs among the runs.
    """
    _check_metric(table, metric)
    rows = table[[_number(value) is not None for value in table[metric]]]
    if rows.empty:
        raise ValueError(f"No run shown has a value of `{metric}` to draw.")
    columns = list(hyperparameters or _informative_hyperparameters(rows.reset_index(drop=True)))
    if not columns:
        raise ValueError("The runs shown differ in no hyperparameter: nothing to draw against.")
    headers = compare.short_headers(columns)
    dimensions = [_axis(list(rows[column]), headers[column]) for column in columns]
    scores = [_number(value) for value in rows[metric]]
    dimensions.append({"label": metric, "values": scores})
    line = {"color": scores, "colorscale": "Viridis", "showscale": True}
    line["colorbar"] = {"title": {"text": metric}}
    meta = {"run_ids": [str(run_id) for run_id in rows["id"]]}
    figure = go.Figure(go.Parcoords(line=line, dimensions=dimensions, meta=meta))
    margin = {**_outer_margins(dimensions), "t": 80, "b": 30}  # t: the names above the axes
    figure.update_layout(height=420, margin=margin)
    return figure


def hyperparameter_scatter(table, hyperparameter: str, metric: str):
    """`metric` against `hyperparameter`, one point per run (its name and id on hover).

    A hyperparameter of numbers gets a number axis; one of text (a cell type, an
    optimizer) gets a category axis. Runs without the metric are left out.

    Raises:
        ValueError: Either column is not in the table, or no run has the metric.
    """
    _check_metric(table, metric)
    if hyperparameter not in table.columns:
        raise ValueError(
            f"Received an invalid value for argument `hyperparameter`, expected one of "
            f"{hyperparameter_columns(table)}, got {hyperparameter!r}."
        )
    rows = table[[_number(value) is not None for value in table[metric]]]
    if rows.empty:
        raise ValueError(f"No run shown has a value of `{metric}` to draw.")
    values = list(rows[hyperparameter])
    numeric = all(_number(value) is not None for value in values)
    x = [_number(v) for v in values] if numeric else [compare.cell_text(v) for v in values]
    names = [run_label(i, n) for i, n in zip(rows["id"], rows["name"], strict=True)]
    figure = go.Figure(
        go.Scatter(
            x=x,
            y=[_number(value) for value in rows[metric]],
            mode="markers",
            marker={"size": 10},
            text=names,
            hovertemplate=f"%{{text}}<br>{hyperparameter}: %{{x}}<br>{metric}: %{{y:.4g}}"
            "<extra></extra>",
        )
    )
    figure.update_xaxes(title_text=hyperparameter, type=None if numeric else "category")
    figure.update_yaxes(title_text=metric)
    figure.update_layout(height=380, margin={"t": 30})
    return figure


def importance_figure(shares: dict[str, float], metric: str, trials: int):
    """A sweep's parameter importance (`results.importance`): one bar per parameter, the
    largest on top, its share of the variance of `metric` as a percentage."""
    paths = list(shares)[::-1]  # Plotly draws a horizontal bar chart from the bottom up
    figure = go.Figure(
        go.Bar(
            x=[100 * shares[path] for path in paths],
            y=paths,
            orientation="h",
            text=[f"{shares[path]:.1%}" for path in paths],
            textposition="auto",
            hovertemplate="%{y}: %{x:.1f}% of the variance<extra></extra>",
        )
    )
    figure.update_xaxes(title_text=f"share of the variance of {metric} (%)", range=[0, 100])
    figure.update_yaxes(automargin=True)  # room for the longest path
    figure.update_layout(
        title_text=f"Parameter importance (fANOVA over {trials} finished trials)",
        height=200 + 50 * len(paths),
        margin={"t": 60},
    )
    return figure


def _check_metric(table, metric: str) -> None:
    if metric not in compare.metric_columns(table):
        raise ValueError(
            f"Received an invalid value for argument `metric`, expected one of "
            f"{compare.metric_columns(table)}, got {metric!r}."
        )


def bleu_by_length_figure(curves: Sequence[tuple[str, Any]], metric: str = "bleu"):
    """`metric` per source-length bucket, one line per `(label, evaluate_by_length table)`.

    Each bucket is drawn at the middle of its length range and the tick there reads
    the range (`"1-10"`), so the x axis shows the buckets, not fractional lengths.
    """
    figure = go.Figure()
    for label, frame in curves:
        middles = _middles(frame)
        figure.add_trace(
            go.Scatter(
                x=middles,
                y=[_number(value) for value in frame[metric]],
                mode="lines+markers",
                name=label,
                text=list(frame["bucket"]),
                customdata=list(frame["n"]),
                hovertemplate=f"length %{{text}}<br>{metric}: %{{y:.1f}}<br>%{{customdata}} "
                "sentences<extra>%{fullData.name}</extra>",
            )
        )
    reference = curves[0][1] if curves else None
    if reference is not None:
        figure.update_xaxes(tickvals=_middles(reference), ticktext=list(reference["bucket"]))
    top = 100 if metric == "bleu" else 1
    figure.update_xaxes(title_text="source sentence length (tokens)")
    figure.update_yaxes(title_text=metric, range=[0, top])
    figure.update_layout(height=380, title="BLEU by source sentence length", margin={"t": 50})
    return figure


def _middles(frame) -> list[float]:
    """The middle of each bucket's length range, where its point and its tick go."""
    pairs = zip(frame["min_length"], frame["max_length"], strict=True)
    return [(float(low) + float(high)) / 2 for low, high in pairs]


def bleu_table_rounded(table):
    """A BLEU-by-length table for reading: BLEU to 1 decimal, the 0–1 scores to 2."""
    table = table.copy()
    for column, decimals in BLEU_DECIMALS.items():
        if column in table.columns:
            table[column] = table[column].round(decimals)
    return table


def group_curves(records: Iterable[RunRecord], metrics: Sequence[str], groups: dict[str, str]):
    """Each metric per epoch, one curve per group of runs: the mean, and a band of ± one std.

    `groups` maps each run's id to its group's name (a run not in it is left out). At each
    epoch the group's finite values give the mean and the sample standard deviation (n − 1);
    with one value there is no band. One panel per metric, as `learning_curves` draws them;
    a group has one colour and one legend entry, its band beneath its line.

    Raises:
        ValueError: No metric given, or no run of a group logged any of them.
    """
    records = [record for record in records if record.id in groups]
    metrics = list(dict.fromkeys(metrics or ()))
    if not metrics or not any(record.curve(m)[0] for record in records for m in metrics):
        raise ValueError(
            "Received an invalid value for argument `metrics`, expected metrics the runs "
            f"of the groups logged, got {metrics!r}."
        )
    names = list(dict.fromkeys(groups[record.id] for record in records))
    figure = make_subplots(
        rows=len(metrics), cols=1, shared_xaxes=True, subplot_titles=metrics, vertical_spacing=0.08
    )
    for index, name in enumerate(names):
        colour = COLOURS[index % len(COLOURS)]
        members = [record for record in records if groups[record.id] == name]
        shown_in_legend = False
        for row, metric in enumerate(metrics, start=1):
            by_epoch: dict[int, list[float]] = {}
            for record in members:
                for epoch, value in zip(*record.curve(metric), strict=True):
                    if _number(value) is not None:
                        by_epoch.setdefault(epoch, []).append(float(value))
            if not by_epoch:
                continue
            epochs = sorted(by_epoch)
            means = [sum(by_epoch[e]) / len(by_epoch[e]) for e in epochs]
            spreads = [compare.sample_std(by_epoch[e]) for e in epochs]
            banded = [
                (e, m, s) for e, m, s in zip(epochs, means, spreads, strict=True) if s == s
            ]  # NaN (one value) has no band
            if banded:
                xs = [e for e, _, _ in banded]
                upper = [m + s for _, m, s in banded]
                lower = [m - s for _, m, s in banded]
                band = go.Scatter(
                    x=xs + xs[::-1],
                    y=upper + lower[::-1],
                    fill="toself",
                    fillcolor=colour,
                    opacity=0.2,
                    line={"width": 0},
                    legendgroup=name,
                    showlegend=False,
                    hoverinfo="skip",
                )
                figure.add_trace(band, row=row, col=1)
            line = go.Scatter(
                x=epochs,
                y=means,
                mode="lines+markers",
                name=f"{name} ({len(members)} run{'' if len(members) == 1 else 's'})",
                legendgroup=name,
                showlegend=not shown_in_legend,
                line={"color": colour},
                customdata=[s if s == s else 0.0 for s in spreads],
                hovertemplate="%{fullData.name}: %{y:.4g} ± %{customdata:.2g}<extra></extra>",
            )
            figure.add_trace(line, row=row, col=1)
            figure.update_yaxes(title_text=metric, row=row, col=1)
            shown_in_legend = True
    figure.update_xaxes(title_text="epoch", row=len(metrics), col=1)
    figure.update_layout(
        height=max(320, 260 * len(metrics)), hovermode="x unified", legend={"title": "group"}
    )
    return figure
