"""The sweep space: a spec's `sweep:` section as combinations of values, each a document.

    name: attention
    sweep:
      method: grid                       # or random / bayes, with num_trials and seed
      parameters:
        model.attention: [null, bahdanau, luong_general]
        train.learning_rate: [0.001, 0.01]
      scheduler: {type: asha, grace_period: 1, reduction_factor: 3}   # optional

A parameter is a list of values, or (`random` and `bayes` only) a range to draw them from
(`ParameterRange`: `{low: 1.0e-4, high: 1.0e-1, log: true}`, `{low: 8, high: 64}`); `grid`
refuses a range, as it tries every value and needs them listed.

`trial_documents(spec)` gives each trial's document, named `"{name}-{i}"` (`i`
from 0), without its `sweep` section: `grid` takes every combination, the first
parameter varying slowest; `random` draws `num_trials` distinct combinations
with `seed` (a range's values by `draw_value`: uniformly in `[low, high]`, or in
the logarithm with `log`; whole numbers for an `int` range, both ends included);
`bayes` chooses its `num_trials` one after another while the sweep runs
(`builder_ui.engine.search`), so here its documents are every combination it may
choose from, each checked before the first trial trains, a range standing at its
ends: each combination of the lists with every range at its `low`, then at its
`high` (a field's bounds are checked at both; a value between passes where both
ends do). `trial_document` makes the document of the combination chosen.
`num_trials` may not exceed the distinct combinations (`grid_size`) when every
parameter is a list or an `int` range. A parameter must name a field that the spec has
(`model.encoder.units`, not `model.units` when the units live in the encoder;
in a list of items with ids, an item by its id: `model.nodes.encoder.params.units`);
`check_paths` refuses an unknown path when the spec is validated. The trials'
documents are validated by the builders (`builder_ui.builders.sweeps`), which
know the task and model types.

`sweep_id(spec)` is a stable id for the sweep (a hash of the whole spec), so
that the trials' runs can be grouped; the engine records it.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import random
from dataclasses import dataclass
from typing import Any

from builder_ui.specs.errors import SpecError, shown
from builder_ui.specs.experiment import MAX_SWEEP_TRIALS, ExperimentSpec, ParameterRange

SWEEPABLE_SECTIONS = ("task", "model", "train")
# How many repeats in a row `random_combinations` draws from the distributions before it
# draws an untried combination uniformly instead (a log range's rare values come seldom).
MAX_REDRAWS = 100


@dataclass(frozen=True)
class TrialDocument:
    """One combination of a sweep, not yet validated: its index, the values it sets, its data."""

    index: int
    values: dict[str, Any]
    data: dict[str, Any]


def _key_path(key: str) -> str:
    return f"sweep.parameters[{json.dumps(key)}]"


def check_paths(spec: ExperimentSpec) -> None:
    """Refuse sweep parameters that name no field of the spec, a range in a grid, too many
    combinations, or more trials than distinct combinations.

    Raises:
        SpecError: at `sweep.parameters["<path>"]`, listing the fields there (or saying
            why a grid needs a list); at `sweep.parameters` or `sweep.num_trials`.
    """
    if spec.sweep is None:
        return
    data = spec.to_dict()
    problems = []
    for key in spec.sweep.parameters:
        parts = key.split(".")
        if parts[0] not in SWEEPABLE_SECTIONS:
            problems.append(
                (
                    _key_path(key),
                    f"expected a field path under {', '.join(SWEEPABLE_SECTIONS)} (e.g. "
                    f"train.learning_rate), got {key!r}",
                )
            )
            continue
        node: Any = data
        for depth, part in enumerate(parts):
            child = _child(node, part)
            if child is _MISSING:
                parent = ".".join(parts[:depth])
                problems.append(
                    (_key_path(key), f"unknown field path {key!r}{_hint(parent, node)}")
                )
                break
            node = child
    parameters = spec.sweep.parameters
    if spec.sweep.method == "grid":
        problems += [
            (_key_path(key), _grid_range_message(values))
            for key, values in parameters.items()
            if is_range(values)
        ]
    listed = math.prod(len(values) for values in parameters.values() if not is_range(values))
    size = grid_size(spec)
    if listed > MAX_SWEEP_TRIALS:
        problems.append(
            (
                "sweep.parameters",
                f"{listed:,} combinations, more than {MAX_SWEEP_TRIALS:,}; sweep fewer values "
                "or use method: random",
            )
        )
    elif spec.sweep.method in ("random", "bayes") and spec.sweep.num_trials > size:
        problems.append(
            (
                "sweep.num_trials",
                f"expected at most {size} (the number of distinct combinations), "
                f"got {spec.sweep.num_trials}",
            )
        )
    if problems:
        raise SpecError(problems)


def _grid_range_message(values: ParameterRange) -> str:
    low, high = shown(values.low), shown(values.high)
    return (
        f"method grid tries every value, so it needs a list of values, got a range from {low} "
        f"to {high}; use method random or bayes (with num_trials) to draw from the range, or "
        f"list the values to try (e.g. [{low}, {high}])"
    )


def is_range(values: Any) -> bool:
    """Whether a sweep parameter is a range (`ParameterRange`), not a list of values."""
    return isinstance(values, ParameterRange)


def _size(values: list[Any] | ParameterRange) -> int | float:
    """The distinct values of one parameter: a list's length, a range's `size()`."""
    return values.size() if is_range(values) else len(values)


def grid_size(spec: ExperimentSpec) -> int | float:
    """The number of distinct combinations of the sweep's values (1 without a sweep).

    A list counts its values, an `int` range its whole numbers from `low` to `high`; a
    `float` range has endlessly many, and the size is then `math.inf`.
    """
    if spec.sweep is None:
        return 1
    return combinations_count(spec.sweep.parameters)


def combinations_count(parameters: dict[str, Any]) -> int | float:
    """The distinct combinations of `parameters` (`math.inf` with a `float` range)."""
    return math.prod(_size(values) for values in parameters.values())


def combination_at(parameters: dict[str, Any], index: int) -> dict[str, Any]:
    """The `index`-th of the distinct combinations, the last parameter varying fastest.

    Lists and `int` ranges only (a range's whole numbers in order from `low`).
    """
    values = {}
    for key in reversed(list(parameters)):
        options = parameters[key]
        index, position = divmod(index, _size(options))
        values[key] = options.low + position if is_range(options) else options[position]
    return {key: values[key] for key in parameters}


def draw_value(rng: random.Random, values: ParameterRange) -> int | float:
    """One value of a range drawn with `rng`, always within `[low, high]`.

    A `float` range: `uniform(low, high)`, or with `log` `exp(uniform(ln low, ln high))`.
    An `int` range: `randint(low, high)`, both ends included; with `log`, a number drawn
    log-uniformly in `[low - 0.5, high + 0.5]` and rounded, so each whole number gets the
    share of the logarithm around it (as Optuna's `IntDistribution(log=True)` does).
    Clamped to `[low, high]` against float rounding.
    """
    low, high = values.low, values.high
    if values.type == "int":
        if not values.log:
            return rng.randint(low, high)
        drawn = round(math.exp(rng.uniform(math.log(low - 0.5), math.log(high + 0.5))))
        return int(min(max(drawn, low), high))
    if values.log:
        drawn = math.exp(rng.uniform(math.log(low), math.log(high)))
    else:
        drawn = rng.uniform(low, high)
    return float(min(max(drawn, low), high))


def draw_combination(rng: random.Random, parameters: dict[str, Any]) -> dict[str, Any]:
    """One combination drawn with `rng`: a list's value uniformly, a range's by `draw_value`."""
    return {
        key: draw_value(rng, options) if is_range(options) else options[rng.randrange(len(options))]
        for key, options in parameters.items()
    }


def random_combinations(parameters: dict[str, Any], count: int, seed: int) -> list[dict[str, Any]]:
    """`count` distinct combinations drawn with `seed` (`draw_combination`), in draw order.

    A combination drawn before is drawn again; after `MAX_REDRAWS` repeats in a row (a
    list or an `int` range with few values repeats; `float` values practically never do),
    an untried one is drawn uniformly among the distinct combinations (`combination_at`).
    The caller keeps `count` within `combinations_count(parameters)` (`check_paths` does).
    """
    rng = random.Random(seed)
    size = combinations_count(parameters)
    seen: set[str] = set()
    chosen: list[dict[str, Any]] = []
    while len(chosen) < count:
        for _ in range(MAX_REDRAWS):
            values = draw_combination(rng, parameters)
            if _identity(parameters, values) not in seen:
                break
        else:
            while _identity(parameters, values) in seen:
                if math.isfinite(size):
                    values = combination_at(parameters, rng.randrange(size))
                else:
                    values = draw_combination(rng, parameters)
        seen.add(_identity(parameters, values))
        chosen.append(values)
    return chosen


def _identity(parameters: dict[str, Any], values: dict[str, Any]) -> str:
    """What tells combinations apart: a list's value by its position, a range's value."""
    return repr(
        [
            values[key] if is_range(options) else _position(options, values[key])
            for key, options in parameters.items()
        ]
    )


def _position(options: list[Any], value: Any) -> int:
    return next(i for i, option in enumerate(options) if option is value or option == value)


_MISSING = object()


def _child(node: Any, part: str) -> Any:
    """`node[part]` for a mapping; in a list of mappings with ids, the item whose `id` is `part`.

    So `model.nodes.encoder.params.units` reaches the units of the graph node
    `encoder`, wherever it stands in the list. `_MISSING` when there is none.
    """
    if isinstance(node, dict):
        return node.get(part, _MISSING)
    if isinstance(node, list):
        return next(
            (item for item in node if isinstance(item, dict) and item.get("id") == part), _MISSING
        )
    return _MISSING


def _hint(parent: str, node: Any) -> str:
    """What `parent` holds, for a path that went astray there."""
    if isinstance(node, dict) and node:
        return f"; {parent} has fields: {', '.join(sorted(node))}"
    if not isinstance(node, list):
        return ""
    ids = [str(item["id"]) for item in node if isinstance(item, dict) and "id" in item]
    return f"; {parent} has ids: {', '.join(ids)}" if ids else ""


def value_at(data: Any, path: str, default: Any = None) -> Any:
    """The value at a sweep parameter's field path in a spec document, `default` if none."""
    node = data
    for part in path.split("."):
        node = _child(node, part)
        if node is _MISSING:
            return default
    return node


def _set(data: dict[str, Any], path: str, value: Any) -> None:
    parts = path.split(".")
    node = data
    for part in parts[:-1]:
        node = _child(node, part)
    node[parts[-1]] = copy.deepcopy(value)


def trial_documents(spec: ExperimentSpec) -> list[TrialDocument]:
    """The documents of a sweep's trials (see the module docstring); `[]` without a sweep."""
    if spec.sweep is None:
        return []
    check_paths(spec)
    sweep = spec.sweep
    parameters = sweep.parameters
    ranges = {key: values for key, values in parameters.items() if is_range(values)}
    if sweep.method == "random" and ranges:
        combinations = random_combinations(parameters, sweep.num_trials, sweep.seed)
    elif sweep.method == "random":
        indices = random.Random(sweep.seed).sample(range(grid_size(spec)), sweep.num_trials)
        combinations = [combination_at(parameters, index) for index in indices]
    else:  # grid: every combination; bayes: every combination it may choose, ranges at ends
        listed = {key: values for key, values in parameters.items() if key not in ranges}
        combinations = [
            {key: ends[key] if key in ranges else chosen[key] for key in parameters}
            for index in range(combinations_count(listed))
            for chosen in [combination_at(listed, index)]
            for ends in _range_ends(ranges)
        ]
    return [trial_document(spec, number, values) for number, values in enumerate(combinations)]


def _range_ends(ranges: dict[str, ParameterRange]) -> list[dict[str, Any]]:
    """Every range at its `low`, then every range at its `high` (`[{}]` without ranges)."""
    if not ranges:
        return [{}]
    return [
        {key: values.low for key, values in ranges.items()},
        {key: values.high for key, values in ranges.items()},
    ]


def trial_document(spec: ExperimentSpec, number: int, values: dict[str, Any]) -> TrialDocument:
    """The document of trial `number`: the spec with `values` set, named `"{name}-{number}"`."""
    data = spec.to_dict()
    data["sweep"] = None
    data["name"] = f"{spec.name}-{number}"
    for key, value in values.items():
        _set(data, key, value)
    return TrialDocument(number, dict(values), data)


def metric_mode(metric: str, mode: str = "auto") -> str:
    """`"min"` or `"max"`: `mode` itself, or for `auto` `min` when `metric` is a loss or error."""
    if mode != "auto":
        return mode
    return "min" if metric.endswith(("loss", "error")) else "max"


def sweep_id(spec: ExperimentSpec) -> str:
    """A stable 12-hex-digit id of a sweep: the same spec always gives the same id."""
    canonical = json.dumps(spec.to_dict(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:12]
