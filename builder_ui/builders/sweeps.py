"""A sweep's trials as validated specs: the sweep space (`builder_ui.specs.sweep_space`) checked.

`trials(spec)` validates each trial's document like any spec and checks its
model against its task's kinds; the combinations that fail are all reported
with their values in one `SpecError` (for `bayes`, every combination it may choose,
a range at its ends: `builder_ui.specs.sweep_space`). `expand(spec)` gives just the specs;
`trial(spec, number, values)` validates the one combination a `bayes` search
chose.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from builder_ui.builders.loading import check_kinds, validate_spec
from builder_ui.specs import ExperimentSpec, SpecError, shown
from builder_ui.specs.sweep_space import (
    grid_size,
    is_range,
    metric_mode,
    sweep_id,
    trial_document,
    trial_documents,
)

__all__ = [
    "Trial",
    "describe_space",
    "expand",
    "grid_size",
    "is_range",
    "metric_mode",
    "sweep_id",
    "trial",
    "trials",
]


@dataclass(frozen=True)
class Trial:
    """One combination of a sweep: its index, the values it sets and its spec."""

    index: int
    values: dict[str, Any]
    spec: ExperimentSpec


def trials(spec: ExperimentSpec) -> list[Trial]:
    """Expand a spec's sweep into its trials, each validated; see the module docstring.

    A spec without a sweep gives one trial, the spec itself.

    Raises:
        SpecError: listing every invalid trial with its values.
    """
    if spec.sweep is None:
        return [Trial(0, {}, spec)]
    results, problems = [], []
    for document in trial_documents(spec):
        label = ", ".join(f"{key}={shown(value)}" for key, value in document.values.items())
        try:
            trial = validate_spec(document.data)
            check_kinds(trial)
        except SpecError as error:
            problems.extend(
                (path, f"{message} (trial {document.index}: {label})")
                for path, message in error.problems
            )
            continue
        results.append(Trial(document.index, document.values, trial))
    if problems:
        raise SpecError(problems)
    return results


def expand(spec: ExperimentSpec) -> list[ExperimentSpec]:
    """The specs of a sweep's trials, named `"{name}-{i}"`, each validated."""
    return [trial.spec for trial in trials(spec)]


def trial(spec: ExperimentSpec, number: int, values: dict[str, Any]) -> Trial:
    """Trial `number` of `spec`'s sweep with `values` set, validated (a `SpecError` if not)."""
    document = trial_document(spec, number, values)
    result = validate_spec(document.data)
    check_kinds(result)
    return Trial(number, document.values, result)


def describe_space(spec: ExperimentSpec) -> str:
    """What a `bayes` search chooses from, in words: `8 combinations`; with a range, also how
    many combinations `trials` checks (`a continuous space (2 checked: each range at its
    ends)`)."""
    size = grid_size(spec)
    text = f"{size:,} combinations" if math.isfinite(size) else "a continuous space"
    if spec.sweep is not None and any(map(is_range, spec.sweep.parameters.values())):
        text += f" ({len(trial_documents(spec))} checked: each range at its ends)"
    return text
