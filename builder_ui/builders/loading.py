"""Specs validated with the registry: component types resolved, kinds matched, sweeps expanded.

The spec language (`builder_ui.specs`) validates a document's envelope and
knows nothing of which task and model types exist; here each `task:` and
`model:` mapping is validated against the params model of the registered type
it names, and a model is checked against what its task gives:

    load_spec(path | text | dict) ─▶ read_document ─▶ validate_spec ─▶ ExperimentSpec
                                                       └ resolve_component (registry)

`check_kinds(spec)` refuses a model that cannot read the task's inputs or
predict its targets, from what the task builder knows without making data.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from builder_ui.builders import registry
from builder_ui.specs import ExperimentSpec, SpecError, StrictModel, problems_from, read_document
from builder_ui.specs import schema as spec_schema
from builder_ui.specs.errors import choices
from builder_ui.specs.validation import validate_document


def resolve_component(kind: str, data: Mapping[str, Any]) -> StrictModel:
    """Validate a `task` or `model` mapping with the params model of its registered type.

    Args:
        kind: `"task"` or `"model"`.
        data: The mapping, with its `type`.

    Returns:
        An instance of the registered params model.

    Raises:
        SpecError: naming `task.type` / `model.type` for an unknown type
            (listing the registered ones), or each bad field by its path.
    """
    if "type" not in data:
        known = registry.task_types() if kind == "task" else registry.model_types()
        raise SpecError([(f"{kind}.type", f"missing; expected one of {choices(known)}")])
    params_cls = registry.params_model(kind, data.get("type"))  # SpecError when unknown
    try:
        return params_cls.model_validate(dict(data))
    except ValidationError as error:
        raise SpecError(problems_from(error, params_cls)).prefixed(kind) from None


def validate_spec(data: Any) -> ExperimentSpec:
    """Validate a spec document (a dict), upgrading older versions.

    Raises:
        SpecError: listing every problem found, one per line.
    """
    return validate_document(data, resolve_component)


def load_spec(source: str | Path | Mapping[str, Any] | ExperimentSpec) -> ExperimentSpec:
    """Read and validate a spec from a file path, YAML or JSON text, or a dict.

    Args:
        source: A `Path`, or a string naming an existing `.yaml`/`.yml`/`.json`
            file; otherwise a string is parsed as YAML (which JSON also is); a
            mapping is validated as it is; an `ExperimentSpec` is returned.

    Returns:
        The validated `ExperimentSpec` (upgraded to `SPEC_VERSION`).

    Raises:
        SpecError: for an unreadable file, malformed YAML/JSON (with the
            line), and every invalid field (with its path).
    """
    if isinstance(source, ExperimentSpec):
        return source
    return validate_spec(read_document(source))


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a spec, with every registered task and model type.

    `task` and `model` are each a `oneOf` over the registered types,
    discriminated by `type`. Plugins loaded so far are included.
    """
    tasks = [registry.params_model("task", name) for name in registry.task_types()]
    models = [registry.params_model("model", name) for name in registry.model_types()]
    return spec_schema.json_schema(tasks, models)


def check_kinds(spec: ExperimentSpec) -> None:
    """Refuse a model that cannot read the task's inputs or predict its targets.

    Uses what the task builder knows without making the data; `prepare` checks
    again on the data itself.

    Raises:
        SpecError: naming `model.type` and both kinds.
    """
    kinds = registry.task_builder(spec.task.type).kinds(spec.task)
    if kinds is not None:
        check_kinds_match(spec, *kinds)


def check_kinds_match(spec: ExperimentSpec, input_kind: str, target_kind: str) -> None:
    builder = registry.model_builder(spec.model.type)
    problems = []
    if input_kind not in builder.input_kinds:
        problems.append(
            (
                "model.type",
                f"{spec.model.type!r} reads {_or(builder.input_kinds)} inputs, but task "
                f"{spec.task.type!r} gives {input_kind} inputs",
            )
        )
    if target_kind not in builder.target_kinds:
        fitting = [
            name
            for name, other in registry.model_builders().items()
            if input_kind in other.input_kinds and target_kind in other.target_kinds
        ]
        hint = f"; model types that fit: {', '.join(fitting)}" if fitting else ""
        problems.append(
            (
                "model.type",
                f"{spec.model.type!r} predicts {_or(builder.target_kinds)} targets, but task "
                f"{spec.task.type!r} has {target_kind} targets{hint}",
            )
        )
    if problems:
        raise SpecError(problems)


def _or(kinds: tuple[str, ...]) -> str:
    kinds = list(kinds)
    return kinds[0] if len(kinds) == 1 else ", ".join(kinds[:-1]) + " or " + kinds[-1]
