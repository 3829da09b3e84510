"""Validating a spec document in two steps: the envelope, then each component by its type.

    document ──upgrade──▶ current version ──Envelope──▶ version, name, train, sweep
                                          └─resolve(kind, mapping)─▶ task, model

The spec language does not know which task and model types exist: the caller
passes `resolve`, which validates one `task` or `model` mapping against the
params model of the type it names (the builders' registry does,
`builder_ui.builders.loading.resolve_component`). Every problem of both
steps is collected and raised at once, in document order (task before model
before train), in one `SpecError`. A sweep's parameter paths are checked
against the validated spec (`builder_ui.specs.sweep_space.check_paths`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from builder_ui.specs.errors import SpecError, problems_from, shown
from builder_ui.specs.experiment import Envelope, ExperimentSpec, StrictModel
from builder_ui.specs.sweep_space import check_paths
from builder_ui.specs.versions import upgrade

# resolve("task" | "model", mapping) -> the validated params, or SpecError.
Resolver = Callable[[str, Mapping[str, Any]], StrictModel]


def validate_document(data: Any, resolve: Resolver) -> ExperimentSpec:
    """Validate a spec document (a dict), upgrading older versions; see the module docstring.

    Args:
        data: The document, as read from YAML or JSON.
        resolve: Validates a `task` or `model` mapping by its `type`.

    Raises:
        SpecError: listing every problem found, one per line.
    """
    if not isinstance(data, Mapping):
        raise SpecError(
            f"expected a mapping of spec fields (version, name, task, model, ...), got "
            f"{type(data).__name__} {shown(data)}"
        )
    data = upgrade(data)
    problems: list[tuple[str, str]] = []
    try:
        envelope = Envelope.model_validate(data)
    except ValidationError as error:
        problems.extend(problems_from(error, Envelope))
        envelope = None
    components = {}
    for kind in ("task", "model"):
        if isinstance(data.get(kind), Mapping):
            try:
                components[kind] = resolve(kind, data[kind])
            except SpecError as error:
                problems.extend(error.problems)
    if problems:
        raise SpecError(_in_document_order(_unique(problems)))
    spec = ExperimentSpec.model_validate({**envelope.model_dump(), **components})
    check_paths(spec)
    return spec


def _unique(problems: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return list(dict.fromkeys(problems))


_SECTIONS = ("version", "name", "task", "model", "train", "sweep")


def _in_document_order(problems: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Sort problems by section (task before model before train), stable within one."""

    def section(problem: tuple[str, str]) -> int:
        head = re.split(r"[.\[]", problem[0], maxsplit=1)[0]
        return _SECTIONS.index(head) if head in _SECTIONS else len(_SECTIONS)

    return sorted(problems, key=section)
