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
    Discriminator,
    Field,
    SerializeAsAny,
    Tag,
    field_validator,
    model_validator,
)

from builder_ui.specs.errors import shown
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


MAX_STEPS = 10**9  # far past any training run; bounds the step counts of a schedule


class ConstantSchedule(StrictModel):
    """The learning rate stays `train.learning_rate` for the whole run (no schedule)."""

    type: Literal["constant"] = "constant"


class CosineSchedule(StrictModel):
    """A linear warm-up, then a cosine decay over the rest of the run (Loshchilov & Hutter 2017).

        lr(s) = learning_rate · s / w                                          for s < w
        lr(s) = learning_rate · (α + (1 − α) · ½ (1 + cos(π · (s − w) / (S − w))))  after

    with `s` the update (from 0), `w = warmup_steps` and `S` the run's steps:
    `train.epochs` × the steps per epoch (the training examples over
    `train.batch_size`, rounded up), counted once the data is made. Keras'
    `CosineDecay`; `warmup_steps` must be fewer than `S`.

    Args:
        warmup_steps: Updates of linear warm-up from 0 to `learning_rate`
            (0: none, the decay starts at `learning_rate`).
        alpha: The final learning rate, as a fraction of `learning_rate`.
    """

    type: Literal["cosine"] = "cosine"
    warmup_steps: Annotated[int, Field(ge=0, le=MAX_STEPS)] = 0
    alpha: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = 0.0


class StepSchedule(StrictModel):
    """The learning rate times `factor` at set epochs: `lr = learning_rate · factor^n`.

    `n` is the number of decay points passed: one after every `every_epochs`
    epochs, or one after each epoch listed in `boundaries`. Give one of the
    two; each point must come before the last epoch (`train.epochs`).

    Args:
        every_epochs: Decay after every this many epochs (Keras'
            `ExponentialDecay` with `staircase=True`).
        boundaries: Decay after each of these epochs, increasing (Keras'
            `PiecewiseConstantDecay`), e.g. `[30, 60]`.
        factor: What each decay multiplies the learning rate by.
    """

    type: Literal["step"] = "step"
    every_epochs: Annotated[int, Field(ge=1, le=MAX_EPOCHS)] | None = None
    boundaries: (
        Annotated[list[Annotated[int, Field(ge=1, le=MAX_EPOCHS)]], Field(min_length=1)] | None
    ) = None
    factor: Annotated[float, Field(gt=0, lt=1, allow_inf_nan=False)] = 0.1

    @model_validator(mode="after")
    def _one_way_to_decay(self) -> StepSchedule:
        if self.every_epochs is not None and self.boundaries is not None:
            raise ValueError(
                f"boundaries: give every_epochs or boundaries, not both (every_epochs is "
                f"{self.every_epochs})"
            )
        if self.boundaries is not None:
            for before, after in zip(self.boundaries[:-1], self.boundaries[1:], strict=True):
                if after <= before:
                    raise ValueError(
                        f"boundaries: expected increasing epochs, got {after} after {before}"
                    )
        return self


class InverseSqrtSchedule(StrictModel):
    """The Transformer's schedule (Vaswani et al. 2017, eq. 3): warm up linearly, then 1/√step.

        lr = scale · d_model^-0.5 · min(step^-0.5, step · warmup_steps^-1.5),  step from 1

    The rate peaks at `scale · (d_model · warmup_steps)^-0.5` after
    `warmup_steps` updates. It is set by the formula, so `train.learning_rate`
    is not used (and a value other than its default is refused): change the
    peak with `scale`. `keras_seq.schedules.InverseSqrtWarmup`.

    Args:
        warmup_steps: Updates of warm-up (the paper's 4000); must be fewer
            than the run's steps, or training ends before the peak.
        d_model: The width in the formula; null: the model's own, for models
            with one (a Transformer's `embedding_dim`). Required for the
            others (recurrent models, graphs), whose units play no part in
            the formula's derivation.
        scale: Multiplies the whole schedule (the paper's is 1).
    """

    type: Literal["inverse_sqrt"] = "inverse_sqrt"
    warmup_steps: Annotated[int, Field(ge=1, le=MAX_STEPS)] = 4000
    d_model: Annotated[int, Field(ge=1, le=2**16)] | None = None
    scale: Annotated[float, Field(gt=0, le=1000, allow_inf_nan=False)] = 1.0


# `schedule: cosine` is `schedule: {type: cosine}` with its defaults.
Schedule = Annotated[
    ConstantSchedule | CosineSchedule | StepSchedule | InverseSqrtSchedule,
    Field(discriminator="type"),
    TypeShorthand,
]
SCHEDULES = ("constant", "cosine", "step", "inverse_sqrt")


class TrainSpec(StrictModel):
    """How to train: optimiser, schedule, seed, precision and devices.

    Args:
        epochs: Passes over the training split.
        batch_size: Examples per gradient step.
        optimizer: `adam`, `sgd`, `rmsprop` or `adamw`.
        learning_rate: Step size of the optimiser (the peak of a `cosine`
            schedule, the start of a `step` one; not used by `inverse_sqrt`).
        schedule: How the learning rate changes during training: `constant`,
            `cosine`, `step` or `inverse_sqrt` (see each).
        label_smoothing: ε: train against `(1 − ε)·onehot + ε/K` instead of
            the one-hot target (Szegedy et al. 2016; the Transformer's is
            0.1). For class and token targets. The loss reported includes
            it; accuracy and BLEU do not change with it.
        clipnorm: Clip each gradient to this norm; null for no clipping.
        seed: Seeds Python, NumPy and the backend before the model is built.
        backend: The Keras backend the run trains on: `auto` (the process's,
            `KERAS_BACKEND`, TensorFlow by default), `tensorflow`, `jax` or
            `torch`. `keras-seq train`, the app and sweeps start the run's
            process on it. Which is fastest depends on the model and the CPU
            (docs/benchmarks.md, "Which Keras backend on a CPU").
        jit_compile: Compile the training step with XLA: `auto` (Keras's
            rule: on with JAX, and with TensorFlow on a GPU), `true` or
            `false`. On a CPU under TensorFlow, `true` was measured a little
            faster for short Transformer blocks and slower for the rest
            (docs/benchmarks.md); a model XLA cannot compile fails its first step.
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
    schedule: Schedule = Field(default_factory=ConstantSchedule)
    label_smoothing: Annotated[float, Field(ge=0, lt=1, allow_inf_nan=False)] = 0.0
    clipnorm: PositiveFloat | None = None
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)] = 0
    backend: Literal["auto", "tensorflow", "jax", "torch"] = "auto"
    jit_compile: Literal["auto", True, False] = "auto"
    mixed_precision: Literal["auto", "float32", "mixed_float16", "mixed_bfloat16"] = "auto"
    early_stopping: EarlyStoppingSpec | None = None
    distribution: Literal["mirrored"] | None = None
    tensorboard: bool = False

    @model_validator(mode="after")
    def _schedule_fits_the_run(self) -> TrainSpec:
        schedule = self.schedule
        default_rate = type(self).model_fields["learning_rate"].default
        if schedule.type == "inverse_sqrt" and self.learning_rate != default_rate:
            raise ValueError(
                f"learning_rate: not used with schedule inverse_sqrt, whose rate is scale · "
                f"d_model^-0.5 · min(step^-0.5, step · warmup_steps^-1.5); leave it at "
                f"{default_rate} and set train.schedule.scale instead, got {self.learning_rate}"
            )
        if schedule.type == "step":
            if schedule.every_epochs is None and schedule.boundaries is None:
                raise ValueError(
                    "schedule.every_epochs: required, or give schedule.boundaries instead: when "
                    "the learning rate decays (every N epochs, or after the epochs listed)"
                )
            last = schedule.every_epochs or schedule.boundaries[-1]
            if last >= self.epochs:
                field = "every_epochs" if schedule.every_epochs else "boundaries"
                raise ValueError(
                    f"schedule.{field}: expected epochs before the last one (train.epochs is "
                    f"{self.epochs}; a decay after it never happens), got {last}"
                )
        return self


MAX_SWEEP_TRIALS = 10_000


class AshaSchedulerSpec(StrictModel):
    """Asynchronous successive halving (ASHA): stop a sweep's weak trials at epoch boundaries.

    Rung k is at epoch `grace_period · reduction_factorᵏ`; a trial reaching a rung
    goes on only if its `sweep.metric` there is in the best `1 / reduction_factor`
    of the trials that reached it so far (while fewer than `reduction_factor`
    trials have, only the best goes on). Locally this is Optuna's
    `SuccessiveHalvingPruner(min_resource=grace_period, reduction_factor=...)`.

    References: Li et al. 2020, "A System for Massively Parallel Hyperparameter Tuning"
    (MLSys); Jamieson & Talwalkar 2016, "Non-stochastic Best Arm Identification and
    Hyperparameter Optimization" (successive halving).

    Args:
        grace_period: Epochs every trial trains before it can be stopped.
        reduction_factor: η: the fraction `1/η` of trials kept at each rung.
    """

    type: Literal["asha"] = "asha"
    grace_period: Annotated[int, Field(ge=1, le=MAX_EPOCHS)] = 1
    reduction_factor: Annotated[int, Field(ge=2, le=100)] = 3


class ParameterRange(StrictModel):
    """A sweep parameter's range: `random` draws from it, `bayes` searches it (not `grid`).

        train.learning_rate: {low: 1.0e-4, high: 1.0e-1, log: true}
        model.encoder.units: {low: 8, high: 64}

    `random` draws each value uniformly in `[low, high]`, or log-uniformly with `log`
    (uniform in the logarithm, as a learning rate from 1e-4 to 1e-1 is searched); `bayes`
    asks Optuna's TPE sampler for it (`suggest_float` / `suggest_int` with `log`). An `int`
    range gives whole numbers from `low` to `high`, both included, and a `float` range
    floats within `[low, high]`, in every engine (local, the app's queue, Ray). A
    grid needs a list of values instead.

    Args:
        low: The smallest value (a finite number; above 0 with `log`).
        high: The largest value, above `low`.
        log: Draw uniformly in the logarithm of the value (`low` must be above 0).
        type: `int` (whole numbers) or `float`; left out (null), `int` when `low` and
            `high` are both integers (`8`, not `8.0`), else `float`. An `int` range needs
            whole ends.
    """

    low: int | float
    high: int | float
    log: bool = False
    type: Literal["float", "int"] | None = None

    @model_validator(mode="before")
    @classmethod
    def _numbers_and_type(cls, data: Any) -> Any:
        # One clear message per end, not one per member of `int | float`; the type's
        # default follows the ends as written, and an int range's ends become ints.
        if not isinstance(data, Mapping):
            return data
        data = dict(data)
        for end in ("low", "high"):
            if end in data and not is_finite_number(data[end]):
                raise ValueError(f"{end}: expected a finite number, got {shown(data[end])}")
        if "low" not in data or "high" not in data:
            return data
        if data.get("type") is None:
            whole = all(isinstance(data[end], int) for end in ("low", "high"))
            data["type"] = "int" if whole else "float"
        if data["type"] == "int":
            for end in ("low", "high"):
                if not float(data[end]).is_integer():
                    raise ValueError(
                        f"{end}: expected a whole number for a range of type 'int', "
                        f"got {shown(data[end])}"
                    )
                data[end] = int(data[end])
        elif data["type"] == "float":
            data.update(low=float(data["low"]), high=float(data["high"]))
        return data

    @model_validator(mode="after")
    def _ordered(self) -> ParameterRange:
        if not self.low < self.high:
            raise ValueError(
                f"high: expected a number above low ({shown(self.low)}), got {shown(self.high)}"
            )
        if self.log and self.low <= 0:
            raise ValueError(
                f"low: a log range needs low above 0, got {shown(self.low)}; use log: false "
                "or a positive low"
            )
        return self

    def size(self) -> int | float:
        """How many distinct values it holds: `high - low + 1` for `int`, else infinity."""
        return self.high - self.low + 1 if self.type == "int" else math.inf

    def contains(self, value: Any) -> bool:
        """Whether `value` is one of its values: a number in `[low, high]`, whole for `int`."""
        if not is_finite_number(value) or not self.low <= value <= self.high:
            return False
        return self.type == "float" or float(value).is_integer()


def _parameter_kind(value: Any) -> str | None:
    """Which kind of sweep parameter a value is: a list of values, a range, or neither."""
    if isinstance(value, list):
        return "list"
    if isinstance(value, (Mapping, ParameterRange)):
        return "ParameterRange"  # the class's name: `problems_from` then skips the tag
    return None


# A sweep parameter: the list of values to try, or a range (`random`, `bayes`).
SweepValues = Annotated[
    Annotated[list[Any], Field(min_length=1), Tag("list")]
    | Annotated[ParameterRange, Tag("ParameterRange")],
    Discriminator(
        _parameter_kind,
        custom_error_type="sweep_values",
        custom_error_message=(
            "Expected a list of values ([0.001, 0.01]) or a range ({low: 0.001, high: 0.1, "
            "log: true})"
        ),
    ),
]


class SweepSpec(StrictModel):
    """A family of experiments: values to try for some fields of the spec.

    Args:
        method: `grid` (every combination), `random` (`num_trials` distinct
            combinations drawn with `seed`) or `bayes` (`num_trials`
            distinct combinations chosen one after another by Optuna's TPE
            sampler, seeded with `seed`, from the results so far).
        num_trials: Trials to run; required for `random` and `bayes`, not
            allowed for `grid`; at most the number of distinct combinations
            when every parameter is a list or an `int` range.
        seed: Seed of the random draw or of the sampler.
        parameters: Field path (`model.encoder.units`, `train.learning_rate`)
            to the list of values to try, or (`random` and `bayes` only) to a
            range `{low, high, log, type}` to draw them from (`ParameterRange`).
        metric: The validation metric `bayes` optimises and the scheduler
            compares (`val_loss`, `val_accuracy`); default: the model's main
            validation metric (`Prepared.monitor_metric`).
        mode: `min` or `max` the metric; `auto`: `min` for a name that ends in
            `loss` or `error`, else `max`.
        scheduler: `{type: asha, grace_period, reduction_factor}` to stop weak
            trials early (recorded `pruned`, their epochs kept); any method.
    """

    method: Literal["grid", "random", "bayes"] = "grid"
    num_trials: Annotated[int, Field(ge=1, le=MAX_SWEEP_TRIALS)] | None = None
    seed: Annotated[int, Field(ge=0, le=MAX_SEED)] = 0
    parameters: Annotated[dict[str, SweepValues], Field(min_length=1)]
    metric: Annotated[str, Field(pattern=r"^val_[A-Za-z0-9_]+$")] | None = None
    mode: Literal["auto", "min", "max"] = "auto"
    scheduler: AshaSchedulerSpec | None = None

    @model_validator(mode="after")
    def _trials_match_method(self) -> SweepSpec:
        if self.method in ("random", "bayes") and self.num_trials is None:
            raise ValueError(f"num_trials: required when method is {self.method!r}")
        if self.method == "grid" and self.num_trials is not None:
            raise ValueError(
                f"num_trials: only used when method is 'random' or 'bayes' (grid tries every "
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
