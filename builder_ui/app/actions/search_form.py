"""The Train tab's search form: a spec's `sweep:` section as a form, and the form back as YAML.

A search (`builder_ui.specs.sweep_space`) trains one run per combination of the values it tries:
`grid` every combination, `random` `num_trials` of them drawn with `seed`, `bayes` `num_trials`
chosen one after another by Optuna's TPE sampler; ASHA (`scheduler: {type: asha, …}`) stops
weak trials early. The form holds the method, the trials, the seed, ASHA's two settings and
up to `MAX_ROWS` parameters. Each parameter is a field path (any field of the spec, a graph
block's `model.nodes.<id>.params.<name>` too) and either its values (`16, 32, 64`, each read
as YAML: `null`, `true`, `lstm`) or a range from `low` to `high`, `linear range` or `log range`
(uniform in the logarithm, as a learning rate from 1e-4 to 1e-1 is searched):

- with `random` or `bayes` a range goes into the spec as a range, `{low, high, log}`, which
  the search draws each trial's value from (`builder_ui.specs.experiment.ParameterRange`; no count):
  whole numbers (an `int` range) when both ends are whole and the field is not a float
  field (its kind in the form, else its value in the spec), floats otherwise; a `type` the
  spec's range gave is kept;
- with `grid`, which tries every value, a range becomes the list of `count` values from `low`
  to `high`, evenly spaced (in their logarithm for a log range), whole numbers when both ends
  are, so the spec says exactly what will train.

A spec read back gives a range as a range row and a list as its values (a grid's range as
the values it became).

The form and the YAML follow each other: `read_search(text, form)` reads the spec's search
into the form (and says whether the form shows it already), `with_search(text, form)` writes
the form into the spec (the other sections untouched; the sweep's `metric` and `mode`, which
the form does not show, kept, and so are parameters past the form's rows). Values are read as
the spec reads them (`1e-3` is a number). Nothing here imports Gradio.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from builder_ui.app import forms
from builder_ui.app.actions.build import dump
from builder_ui.app.context import AppError
from builder_ui.specs import SpecError, parse_yaml
from builder_ui.specs.experiment import MAX_SWEEP_TRIALS, is_finite_number
from builder_ui.specs.sweep_space import SWEEPABLE_SECTIONS

METHODS = ("grid", "random", "bayes")
KINDS = ("values", "linear range", "log range")
MAX_ROWS = 4
ROW_FIELDS = 6  # a row's controls: path, kind, values, low, high, count (`ParameterRow`'s order)
# Field kinds a search can vary (a block turned on or off is a `toggle`: not a value).
SWEEPABLE_KINDS = ("int", "float", "bool", "choice", "text")


@dataclass(frozen=True)
class ParameterRow:
    """One parameter of the search: its field, and its values or a range of them.

    Attributes:
        path: The field (`train.learning_rate`); empty for an unused row.
        kind: One of `KINDS`.
        values: For `values`: the values, comma-separated, each read as YAML.
        low, high: For a range: its ends, both included.
        count: For a range in a grid: how many values from `low` to `high` it tries (a
            random or bayes search draws from the range and needs none).
    """

    path: str = ""
    kind: str = "values"
    values: str = ""
    low: float | None = None
    high: float | None = None
    count: int | None = None


@dataclass(frozen=True)
class SearchForm:
    """The spec's search as the form shows it.

    Attributes:
        enabled: Whether the spec searches (has a `sweep:` section).
        method, num_trials, seed: As `SweepSpec`'s (`num_trials` only for random, bayes).
        asha, grace_period, reduction_factor: Whether ASHA stops weak trials, and its settings.
        rows: The parameters, in the spec's order.
    """

    enabled: bool = False
    method: str = "grid"
    num_trials: int | None = None
    seed: int = 0
    asha: bool = False
    grace_period: int = 1
    reduction_factor: int = 3
    rows: tuple[ParameterRow, ...] = ()


def _scalar_text(value: Any) -> str:
    """A value as one would type it in the form's values box (YAML, on one line)."""
    return yaml.safe_dump(value, default_flow_style=True, width=10**6).strip().removesuffix("...")


def _document(text: str) -> dict[str, Any]:
    """The spec text parsed (bounded, as every spec is), not validated: the form needs only
    its sections, and reads it at each keystroke in the editor.

    Raises:
        AppError: the YAML does not parse, or is not a mapping.
    """
    try:
        document = parse_yaml(text or "")
    except SpecError as error:
        raise AppError(f"The YAML spec has an error; fix it in the editor first: {error}") from None
    if not isinstance(document, dict):
        raise AppError("The YAML spec has an error; fix it in the editor first: not a mapping.")
    return document


@dataclass(frozen=True)
class SpecSearch:
    """What the form shows of a spec.

    Attributes:
        form: The spec's search as the form.
        paths: The fields a search of it may vary: the form's fields, and each graph block's
            parameters (`model.nodes.<id>.params.<name>`).
        shown: Whether the form as it is already says the same (then it is left as it is,
            so a range typed in it stays a range).
    """

    form: SearchForm
    paths: list[str]
    shown: bool


def read_search(text: str, current: SearchForm | None = None) -> SpecSearch:
    """The spec's search for the form, and whether `current` (the form now) already shows it.

    Raises:
        AppError: the YAML does not parse.
    """
    document = _document(text)
    form = _form_of(document)
    shown = False
    if current is not None:
        try:
            shown = _form_of(_searched(dict(document), current)) == form
        except AppError:  # the form is not a search yet: the spec's is shown
            shown = False
    return SpecSearch(form, _paths(document), shown)


def _parameters(sweep: Any) -> dict[str, Any]:
    """A sweep section's parameters (empty when it has none, or none that can be read)."""
    parameters = sweep.get("parameters") if isinstance(sweep, Mapping) else None
    return dict(parameters) if isinstance(parameters, Mapping) else {}


def _form_of(document: Mapping[str, Any]) -> SearchForm:
    """The form of a parsed spec. Only the first `MAX_ROWS` parameters have rows; the others
    stay in the YAML (`_searched` keeps them)."""
    sweep = document.get("sweep")
    if not isinstance(sweep, Mapping):
        return SearchForm()
    rows = []
    for path, values in list(_parameters(sweep).items())[:MAX_ROWS]:
        if isinstance(values, Mapping):  # a range
            kind = "log range" if values.get("log") is True else "linear range"
            low, high = (_number_or_none(values.get(end)) for end in ("low", "high"))
            rows.append(ParameterRow(path=str(path), kind=kind, low=low, high=high))
            continue
        listed = values if isinstance(values, list) else [values]
        text_values = ", ".join(_scalar_text(value).strip() for value in listed)
        rows.append(ParameterRow(path=str(path), values=text_values))
    scheduler = sweep.get("scheduler")
    asha = isinstance(scheduler, Mapping) and scheduler.get("type", "asha") == "asha"
    scheduler = scheduler if asha else {}
    return SearchForm(
        enabled=True,
        method=str(sweep.get("method", "grid")),
        num_trials=sweep.get("num_trials"),
        seed=sweep.get("seed", 0),
        asha=asha,
        grace_period=scheduler.get("grace_period", 1),
        reduction_factor=scheduler.get("reduction_factor", 3),
        rows=tuple(rows),
    )


def _number_or_none(value: Any) -> float | None:
    """A range's end for a number box: the number, or None for anything else."""
    return value if is_finite_number(value) else None


def _paths(document: Mapping[str, Any]) -> list[str]:
    paths = [
        f.path
        for f in forms.form_fields(document)
        if f.kind in SWEEPABLE_KINDS and f.path.split(".")[0] in SWEEPABLE_SECTIONS
    ]
    model = document.get("model")
    nodes = model.get("nodes") if isinstance(model, Mapping) else None
    for node in nodes if isinstance(nodes, list) else []:
        params = node.get("params") if isinstance(node, Mapping) else None
        if isinstance(params, Mapping):
            paths += [f"model.nodes.{node.get('id')}.params.{name}" for name in params]
    return paths


def range_values(low: float, high: float, count: int, *, log: bool = False) -> list[Any]:
    """`count` values from `low` to `high`, both included, evenly spaced (in log10 if `log`).

    Whole numbers (rounded, repeats dropped) when both ends are whole.

    Raises:
        ValueError: `count` below 2 or over `MAX_SWEEP_TRIALS`, `low` not below `high`, an
            end that is not finite, or an end not above 0 for a log range.
    """
    if not 2 <= count <= MAX_SWEEP_TRIALS:
        raise ValueError(f"count: expected 2 to {MAX_SWEEP_TRIALS:,} values, got {count!r}")
    _check_ends(low, high, log)
    ends = (math.log10(low), math.log10(high)) if log else (low, high)
    steps = [ends[0] + (ends[1] - ends[0]) * i / (count - 1) for i in range(count)]
    values = [10.0**step if log else step for step in steps]
    values[0], values[-1] = low, high  # exactly the ends typed
    if float(low).is_integer() and float(high).is_integer():
        return list(dict.fromkeys(round(value) for value in values))
    return [float(f"{value:.6g}") for value in values]


def _check_ends(low: float, high: float, log: bool) -> None:
    """Refuse a range's ends (a `ValueError` saying why): not finite, not ordered, or not
    above 0 for a log range."""
    if not (math.isfinite(low) and math.isfinite(high)):
        raise ValueError(f"low and high must be numbers, got {low!r} and {high!r}")
    if low >= high:
        raise ValueError(f"low must be below high, got {low!r} and {high!r}")
    if log and low <= 0:
        raise ValueError(f"a log range needs low above 0, got {low!r}")


def _range_mapping(
    low: float, high: float, *, log: bool = False, field_kind: str | None = None, type_: Any = None
) -> dict[str, Any]:
    """A range as the spec writes it for `random` and `bayes`: `{low, high, log}`.

    The ends are whole numbers (an `int` range) when both are whole and `field_kind` is not
    `float`, else floats; `type_` (`int` or `float`, the spec's range's own) decides instead
    when given, and is written.

    Raises:
        ValueError: as `range_values` for the ends, or an `int` range with an end not whole.
    """
    low, high = float(low), float(high)
    _check_ends(low, high, log)
    whole = low.is_integer() and high.is_integer()
    if type_ == "int" and not whole:
        raise ValueError(f"an int range needs whole ends, got {low!r} and {high!r}")
    as_int = type_ == "int" or (type_ is None and whole and field_kind != "float")
    mapping: dict[str, Any] = {
        "low": int(low) if as_int else low,
        "high": int(high) if as_int else high,
        "log": log,
    }
    if type_ in ("int", "float"):
        mapping["type"] = type_
    return mapping


def _row_values(
    row: ParameterRow, number: int, method: str, field_kind: str | None, old: Any
) -> list[Any] | dict[str, Any]:
    """The spec's value of one row: its list of values, or (random, bayes) its range."""
    where = f"Search parameter {number} (`{row.path}`)"
    try:
        if row.kind == "values":
            if not str(row.values or "").strip():
                raise ValueError("give its values, comma-separated (e.g. 16, 32, 64)")
            values = parse_yaml(f"[{row.values}]")  # as the spec reads them: 1e-3 a number
            if len(values) > MAX_SWEEP_TRIALS:
                raise ValueError(f"more than {MAX_SWEEP_TRIALS:,} values")
            if any(isinstance(value, (list, dict)) for value in values):
                raise ValueError("each value must be one value, not a list or a mapping")
            return values
        if row.kind not in KINDS:
            raise ValueError(f"expected one of {', '.join(KINDS)}, got {row.kind!r}")
        if method != "grid":  # drawn from the range: no count
            if row.low is None or row.high is None:
                raise ValueError("a range needs low and high")
            type_ = old.get("type") if isinstance(old, Mapping) else None
            return _range_mapping(
                row.low, row.high, log=row.kind == "log range", field_kind=field_kind, type_=type_
            )
        if row.low is None or row.high is None or row.count is None:
            raise ValueError("a range needs low, high and count (a grid tries count values)")
        count = float(row.count)
        if not count.is_integer():
            raise ValueError(f"count: expected a whole number, got {row.count!r}")
        return range_values(
            float(row.low), float(row.high), int(count), log=row.kind == "log range"
        )
    except (ValueError, TypeError, SpecError) as error:
        raise AppError(f"{where}: {str(error).splitlines()[0]}") from None


def with_search(text: str, form: SearchForm) -> str:
    """The spec text with the form as its `sweep:` section (none when the form is off or names
    no parameter); the other sections as they were.

    Raises:
        AppError: the YAML does not parse, or a row's values or range is not one (naming the
            row and its field), or a setting is out of its bounds.
    """
    return dump(_searched(_document(text), form))


def _searched(document: dict[str, Any], form: SearchForm) -> dict[str, Any]:
    """`document` with the form as its `sweep:` section (changed in place, and returned)."""
    old = document.get("sweep") if isinstance(document.get("sweep"), Mapping) else {}
    rows = [row for row in form.rows if row.path and row.path.strip()]
    if not form.enabled or not rows:
        document.pop("sweep", None)
        return document
    if form.method not in METHODS:
        raise AppError(f"Search method: expected one of {', '.join(METHODS)}, got {form.method!r}")
    parameters: dict[str, Any] = {}
    old_parameters = _parameters(old)
    drawn = form.method != "grid" and any(row.kind != "values" for row in rows)
    kinds = _field_kinds(document) if drawn else {}  # read only when a range needs them
    for number, row in enumerate(form.rows, start=1):
        if row.path and row.path.strip():
            path = row.path.strip()
            parameters[path] = _row_values(
                row, number, form.method, kinds.get(path), old_parameters.get(path)
            )
    # Parameters past the form's rows (a search typed in the YAML may have more) stay.
    for path, values in list(_parameters(old).items())[MAX_ROWS:]:
        parameters.setdefault(path, values)
    sweep: dict[str, Any] = {"method": form.method}
    if form.method != "grid":
        sweep["num_trials"] = _whole(form.num_trials, "Search trials", 1, MAX_SWEEP_TRIALS)
    sweep["seed"] = _whole(form.seed, "Search seed", 0, None)
    sweep.update({key: old[key] for key in ("metric", "mode") if key in old})
    sweep["parameters"] = parameters
    if form.asha:
        sweep["scheduler"] = {
            "type": "asha",
            "grace_period": _whole(form.grace_period, "ASHA grace period", 1, None),
            "reduction_factor": _whole(form.reduction_factor, "ASHA reduction factor", 2, 100),
        }
    document["sweep"] = sweep
    return document


def _field_kinds(document: Mapping[str, Any]) -> dict[str, str]:
    """Each field's kind (`int`, `float`, ...): the form's, else for a graph block's
    parameter the kind of its value in the spec (`float` for 0.1, `int` for 8)."""
    kinds = {f.path: f.kind for f in forms.form_fields(document)}
    model = document.get("model")
    nodes = model.get("nodes") if isinstance(model, Mapping) else None
    for node in nodes if isinstance(nodes, list) else []:
        params = node.get("params") if isinstance(node, Mapping) else None
        for name, value in params.items() if isinstance(params, Mapping) else ():
            if is_finite_number(value):
                kind = "float" if isinstance(value, float) else "int"
                kinds[f"model.nodes.{node.get('id')}.params.{name}"] = kind
    return kinds


def _whole(value: Any, field: str, low: int, high: int | None) -> int:
    """A whole number the form holds, within `[low, high]`; else an error naming the field."""
    try:
        number = float(value)
        if not number.is_integer():
            raise ValueError
    except (TypeError, ValueError):
        raise AppError(f"{field}: expected a whole number, got {value!r}") from None
    if number < low or (high is not None and number > high):
        upper = f" to {high:,}" if high is not None else " or more"
        raise AppError(f"{field}: expected {low}{upper}, got {value!r}")
    return int(number)


def rows_of(form: SearchForm) -> list[ParameterRow]:
    """The form's rows padded with empty ones to `MAX_ROWS` (what the tab lays out)."""
    rows = list(form.rows)
    return rows + [ParameterRow()] * (MAX_ROWS - len(rows))


def form_from_fields(
    enabled: bool,
    method: str,
    num_trials: Any,
    seed: Any,
    asha: bool,
    grace_period: Any,
    reduction_factor: Any,
    row_fields: Sequence[Any],
) -> SearchForm:
    """The form from the tab's controls: the settings, then each row's `ROW_FIELDS` fields in
    order (path, kind, values, low, high, count)."""
    rows = tuple(
        ParameterRow(*row_fields[i : i + ROW_FIELDS]) for i in range(0, len(row_fields), ROW_FIELDS)
    )
    return SearchForm(
        bool(enabled),
        method or "grid",
        num_trials,
        seed if seed is not None else 0,
        bool(asha),
        grace_period,
        reduction_factor,
        rows,
    )
