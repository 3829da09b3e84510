"""The sweep space: a spec's `sweep:` section as combinations of values, each a document.

    name: attention
    sweep:
      method: grid                       # or random / bayes, with num_trials and seed
      parameters:
        model.attention: [null, bahdanau, luong_general]
        train.learning_rate: [0.001, 0.01]
      scheduler: {type: asha, grace_period: 1, reduction_factor: 3}   # optional

`trial_documents(spec)` gives each trial's document, named `"{name}-{i}"` (`i`
from 0), without its `sweep` section: `grid` takes every combination, the first
parameter varying slowest; `random` draws `num_trials` distinct combinations
with `seed`; `bayes` chooses its `num_trials` one after another while the
sweep runs (`builder_ui.engine.search`), so here its documents are every
combination it may choose from, each checked before the first trial trains
(`trial_document` makes the document of the combination chosen). A parameter
must name a field that the spec has
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

from builder_ui.specs.errors import SpecError
from builder_ui.specs.models import MAX_SWEEP_TRIALS, ExperimentSpec

SWEEPABLE_SECTIONS = ("task", "model", "train")


@dataclass(frozen=True)
class TrialDocument:
    """One combination of a sweep, not yet validated: its index, the values it sets, its data."""

    index: int
    values: dict[str, Any]
    data: dict[str, Any]


def _key_path(key: str) -> str:
    return f"sweep.parameters[{json.dumps(key)}]"


def check_paths(spec: ExperimentSpec) -> None:
    """Refuse sweep parameters that name no field of the spec, or too many combinations.

    Raises:
        SpecError: at `sweep.parameters["<path>"]`, listing the fields there.
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
    size = grid_size(spec)
    if size > MAX_SWEEP_TRIALS:
        problems.append(
            (
                "sweep.parameters",
                f"{size:,} combinations, more than {MAX_SWEEP_TRIALS:,}; sweep fewer values "
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


def grid_size(spec: ExperimentSpec) -> int:
    """The number of combinations of the sweep's values (1 without a sweep)."""
    if spec.sweep is None:
        return 1
    return math.prod(len(values) for values in spec.sweep.parameters.values())


def _combination(parameters: dict[str, list[Any]], index: int) -> dict[str, Any]:
    """The `index`-th combination of the grid, the last parameter varying fastest."""
    values = {}
    for key in reversed(list(parameters)):
        options = parameters[key]
        index, position = divmod(index, len(options))
        values[key] = options[position]
    return {key: values[key] for key in parameters}


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
    size = grid_size(spec)
    if sweep.method == "random":
        indices = random.Random(sweep.seed).sample(range(size), sweep.num_trials)
    else:  # grid: every combination; bayes: every combination it may choose
        indices = list(range(size))
    return [
        trial_document(spec, number, _combination(sweep.parameters, index))
        for number, index in enumerate(indices)
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
