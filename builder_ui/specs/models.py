"""The spec language's models: a validated experiment as frozen pydantic data.

An experiment spec is a small document, written in YAML or JSON::

    version: 2
    name: lstm-long-lag
    task: {type: long_lag, lag: 50, n: 1000}
    model: {type: sequence_classifier, encoder: {type: rnn, cell: lstm, units: 32}}
    train: {epochs: 5, batch_size: 32, learning_rate: 0.01}

`task` and `model` are open: each is a `{type, ...}` mapping whose fields belong
to the builder its `type` names (`TaskParams` and `ModelParams` are the bases
of those builders' models). The rest — `version`, `name`, `train`, `sweep` — is
fixed here. So validation has two steps (`builder_ui.specs.validation`): the
`Envelope` (everything, with `task`/`model` as plain mappings), then each
component against the model its type resolves to. Nothing here knows which
types exist: that is the builders' registry, one layer up.

Nothing here imports Keras.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializeAsAny,
    field_validator,
    model_validator,
)

from builder_ui.specs.versions import SPEC_VERSION

# Experiment names become parts of file names and run labels.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"

OPTIMIZERS = ("adam", "sgd", "rmsprop", "adamw")
PRECISIONS = ("auto", "float32", "mixed_float16", "mixed_bfloat16")
MAX_EPOCHS = 100_000
MAX_BATCH_SIZE = 2**20
MAX_SEED = 2**32 - 1


class StrictModel(BaseModel):
    """Base of every spec model: unknown fields refused, no silent type coercion, immutable."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def section_by_type(value: Any) -> Any:
    """A tagged section given by its type alone: `"transformer"` is `{type: transformer}`.

    So `--set model.encoder=transformer` and a sweep over `[rnn, transformer]`
    switch a section to another type with that type's defaults.
    """
    return {"type": value} if isinstance(value, str) else value


# Put in the `Annotated[...]` of a field that is a union discriminated by `type`.
TypeShorthand = BeforeValidator(section_by_type)


class TaskParams(StrictModel):
    """Base of a task type's fields; subclasses declare `type: Literal["their_name"]`."""

    type: str


class ModelParams(StrictModel):
    """Base of a model type's fields; subclasses declare `type: Literal["their_name"]`."""

    type: str


PositiveInt = Annotated[int, Field(ge=1)]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class EarlyStoppingSpec(StrictModel):
    """Stop when the monitored metric has not improved for `patience` epochs.

    Args:
        monitor: Metric name (e.g. `"val_loss"`); default: the model's main
            validation metric (`Prepared.monitor_metric`).
        patience: Epochs without improvement before stopping.
        min_delta: Smallest change that counts as an improvement.
    """

    monitor: str | None = None
    patience: Annotated[int, Field(ge=0, le=MAX_EPOCHS)] = 5
    min_delta: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.0


class TrainSpec(StrictModel):
    """How to train: optimiser, schedule, seed, precision and devices.

    Args:
        epochs: Passes over the training split.
        batch_size: Examples per gradient step.
        optimizer: `adam`, `sgd`, `rmsprop` or `adamw`.
        learning_rate: Step size of the optimiser.
        clipnorm: Clip each gradient to this norm; null for no clipping.
        seed: Seeds Python, NumPy and the backend before the model is built.
        mixed_precision: `auto` (mixed float16 on a GPU, float32 on a CPU),
            `float32`, `mixed_float16` or `mixed_bfloat16`.
        early_stopping: Stop early (see `EarlyStoppingSpec`), or null.
        distribution: null (one device) or `mirrored` (data-parallel over
            all local devices).
        tensorboard: Write TensorBoard logs beside the run's artifacts.
    """

    epochs: Annotated[int, Field(ge=1, le=MAX_EPOCHS)] = 10
    batch_size: Annotated[int, Field(ge=1, le=MAX_BATCH_SIZE)] = 32
    optimizer: Literal["adam", "sgd", "rmsprop", "adamw"] = "adam"
    learning_rate: Annotated[float, Field(gt=0, le=10, allow_inf_nan=False)] = 1e-3
    clipnorm: PositiveFloat | None = None
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)] = 0
    mixed_precision: Literal["auto", "float32", "mixed_float16", "mixed_bfloat16"] = "auto"
    early_stopping: EarlyStoppingSpec | None = None
    distribution: Literal["mirrored"] | None = None
    tensorboard: bool = False


MAX_SWEEP_TRIALS = 10_000


class SweepSpec(StrictModel):
    """A family of experiments: values to try for some fields of the spec.

    Args:
        method: `grid` (every combination) or `random` (`num_trials`
            distinct combinations drawn with `seed`).
        num_trials: Trials to draw; required for `random`, not allowed for
            `grid`.
        seed: Seed of the random draw.
        parameters: Field path (`model.encoder.units`, `train.learning_rate`)
            to the list of values to try.
    """

    method: Literal["grid", "random"] = "grid"
    num_trials: Annotated[int, Field(ge=1, le=MAX_SWEEP_TRIALS)] | None = None
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)] = 0
    parameters: Annotated[dict[str, Annotated[list[Any], Field(min_length=1)]], Field(min_length=1)]

    @model_validator(mode="after")
    def _trials_match_method(self) -> SweepSpec:
        if self.method == "random" and self.num_trials is None:
            raise ValueError("num_trials: required when method is 'random'")
        if self.method == "grid" and self.num_trials is not None:
            raise ValueError(
                f"num_trials: only used when method is 'random' (grid tries every "
                f"combination), got {self.num_trials}"
            )
        return self


class ExperimentSpec(StrictModel):
    """A validated experiment: a task, a model, how to train it and an optional sweep.

    Make one with `builder_ui.builders.load_spec` (from a file, text or dict),
    which reports every problem as a `SpecError`. `task` and `model` are
    instances of the params models of the registered types their `type` names.
    """

    version: Literal[2] = SPEC_VERSION
    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    task: SerializeAsAny[TaskParams]
    model: SerializeAsAny[ModelParams]
    train: TrainSpec = Field(default_factory=TrainSpec)
    sweep: SweepSpec | None = None

    @model_validator(mode="before")
    @classmethod
    def _components_are_validated(cls, data: Any) -> Any:
        # Which task and model types exist is the registry's business, one layer up.
        if isinstance(data, Mapping):
            for key in ("task", "model"):
                if isinstance(data.get(key), Mapping):
                    raise ValueError(
                        f"{key}: a mapping must first be validated by its registered type; "
                        "load the document with builder_ui.builders.load_spec"
                    )
        return data

    @field_validator("task", "model", mode="after")
    @classmethod
    def _registered_instance(cls, value: StrictModel) -> StrictModel:
        if type(value) in (TaskParams, ModelParams):
            raise ValueError(
                f"type {value.type!r} must be validated by its registered builder "
                "(builder_ui.builders.load_spec)"
            )
        return value

    def to_dict(self) -> dict[str, Any]:
        """The spec as plain JSON-compatible data (every field, defaults included)."""
        return self.model_dump(mode="json")


class Envelope(StrictModel):
    """Step one of validation: everything but the fields of `task` and `model`."""

    version: Literal[2]
    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    task: dict[str, Any]
    model: dict[str, Any]
    train: TrainSpec = Field(default_factory=TrainSpec)
    sweep: SweepSpec | None = None


def is_finite_number(value: Any) -> bool:
    """True for an int or float (not a bool) that is finite."""
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )
