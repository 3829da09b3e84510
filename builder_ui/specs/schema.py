"""The JSON Schema (draft 2020-12) of a spec, for editors and other tools.

`task` and `model` are each a `oneOf` over the params models given (the
builders pass every registered type), discriminated by `type`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field, create_model

from builder_ui.specs.experiment import (
    NAME_PATTERN,
    ExperimentSpec,
    StrictModel,
    SweepSpec,
    TrainSpec,
)
from builder_ui.specs.versions import SPEC_VERSION


def _union(classes: Sequence[type[BaseModel]]) -> Any:
    classes = tuple(classes)
    if len(classes) == 1:
        return classes[0]
    return Annotated[Union[classes], Field(discriminator="type")]  # noqa: UP007


def json_schema(
    task_models: Sequence[type[BaseModel]], model_models: Sequence[type[BaseModel]]
) -> dict[str, Any]:
    """The JSON Schema of a spec whose `task` and `model` are one of the models given."""
    document = create_model(
        "ExperimentSpec",
        __base__=StrictModel,
        __doc__=ExperimentSpec.__doc__,
        version=(Literal[2], Field(description=f"Spec format version, {SPEC_VERSION}.")),
        name=(Annotated[str, Field(pattern=NAME_PATTERN)], ...),
        task=(_union(task_models), ...),
        model=(_union(model_models), ...),
        train=(TrainSpec, Field(default_factory=TrainSpec)),
        sweep=(SweepSpec | None, None),
    )
    schema = document.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "keras_seq experiment spec"
    return schema
