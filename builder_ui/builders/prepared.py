"""`prepare(spec)`: a spec made trainable, every check done before anything trains.

    spec ─▶ load_spec ─▶ check_kinds ─▶ load_task ─▶ kinds on the data ─▶ builder.check
         ─▶ schedule and label smoothing on the data ─▶ early-stopping metric
         ─▶ Prepared(data splits, build(), monitor, evaluate())

`Prepared.build()` seeds and compiles the model; `Prepared.evaluate(model)`
gives the final metrics of the model's type (loss and accuracy, BLEU, ...).

The training recipe of `spec.train` is applied in `build()`, the one place
every model type is compiled: the optimiser with the learning rate or the
schedule of `train.schedule` (`make_learning_rate`: the schedule's steps are
counted from the data, `train.epochs` × `steps_per_epoch`), and the builder's
loss with `train.label_smoothing` (`keras_seq.losses.with_label_smoothing`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import keras

from builder_ui.builders import registry
from builder_ui.builders.base import ModelBuilder
from builder_ui.builders.loading import check_kinds, check_kinds_match, load_spec
from builder_ui.specs import ExperimentSpec, SpecError, TrainSpec, shown
from keras_seq.losses import with_label_smoothing
from keras_seq.schedules import InverseSqrtWarmup


@dataclass(eq=False)
class Prepared:
    """A validated spec with its data, ready to build and train.

    Attributes:
        spec: The `ExperimentSpec`.
        task: The keras_seq `TaskData`.
        x_train, y_train, x_val, y_val: What `model.fit` takes (arrays, or
            dicts of arrays for models with several inputs).
        monitor_metric: The main validation metric (`val_accuracy`,
            `val_loss`, ...), for early stopping and comparison.
        builder: The `ModelBuilder` of `spec.model.type`.
        validation_logs: Set by `evaluate(model, validation_logs=...)` while it
            runs: the validation metrics `model.fit` computed after its last
            epoch, which `keras_metrics` returns instead of evaluating again.
    """

    spec: ExperimentSpec
    task: Any
    x_train: Any
    y_train: Any
    x_val: Any
    y_val: Any
    monitor_metric: str
    builder: ModelBuilder
    validation_logs: dict[str, float] | None = None

    def build(self) -> Any:
        """Seed everything with `spec.train.seed`, build the model and compile it.

        Call inside a distribution strategy scope, after setting the dtype
        policy, when those are wanted. The optimiser, learning rate,
        clipnorm and XLA compilation (`jit_compile`) come from `spec.train`.
        """
        keras.utils.set_random_seed(self.spec.train.seed)
        model = self.builder.build(self.spec.model, self.task)
        args = self.builder.compile_args(self.spec.model, self.task)
        args["loss"] = with_label_smoothing(args["loss"], self.spec.train.label_smoothing)
        model.compile(
            optimizer=make_optimizer(self.spec.train, self.learning_rate()),
            jit_compile=self.spec.train.jit_compile,
            **args,
        )
        return model

    @property
    def steps_per_epoch(self) -> int:
        """Updates per epoch: the training examples over `train.batch_size`, rounded up."""
        return steps_per_epoch(self.x_train, self.spec.train.batch_size)

    def learning_rate(self) -> Any:
        """`train.learning_rate`, or the Keras schedule of `train.schedule` for this data."""
        return make_learning_rate(
            self.spec.train,
            steps_per_epoch=self.steps_per_epoch,
            model_width=self.builder.model_width(self.spec.model),
        )

    def evaluate(
        self, model: Any, *, validation_logs: dict[str, Any] | None = None
    ) -> dict[str, float]:
        """Final metrics on the validation split (loss, accuracy, BLEU, ... by model type).

        Args:
            model: The trained model.
            validation_logs: The logs of `model.fit`'s last epoch (with
                `val_*` entries), when `model` still holds the weights of that
                epoch: its Keras metrics are then taken from them rather than
                computed again (`model.fit` evaluated the same weights on the
                same split with the same batch size).
        """
        self.validation_logs = _validation_metrics(validation_logs)
        try:
            metrics = self.builder.evaluate(model, self.spec.model, self)
        finally:
            self.validation_logs = None
        return {name: float(value) for name, value in metrics.items()}

    def keras_metrics(self, model: Any) -> dict[str, float]:
        """The compiled loss and metrics on the validation split, as `model.evaluate` gives them.

        Inside `evaluate(model, validation_logs=...)`, the last epoch's values.
        """
        if self.validation_logs is not None:
            return dict(self.validation_logs)
        results = model.evaluate(
            self.x_val,
            self.y_val,
            batch_size=self.spec.train.batch_size,
            verbose=0,
            return_dict=True,
        )
        return {name: float(value) for name, value in results.items()}

    @property
    def num_train(self) -> int:
        return int(self.task.num_train)

    @property
    def num_val(self) -> int:
        return int(self.task.num_val)


def make_optimizer(train: TrainSpec, learning_rate: Any = None) -> Any:
    """The Keras optimiser that `train` names, with its clipnorm.

    Args:
        train: The spec's `train` section.
        learning_rate: A number or a Keras `LearningRateSchedule`
            (`make_learning_rate`); default `train.learning_rate`.
    """
    classes = {
        "adam": keras.optimizers.Adam,
        "sgd": keras.optimizers.SGD,
        "rmsprop": keras.optimizers.RMSprop,
        "adamw": keras.optimizers.AdamW,
    }
    if learning_rate is None:
        learning_rate = train.learning_rate
    return classes[train.optimizer](learning_rate=learning_rate, clipnorm=train.clipnorm)


def steps_per_epoch(x_train: Any, batch_size: int) -> int:
    """The updates of one epoch over `x_train` (an array, or a dict or list of arrays)."""
    if isinstance(x_train, dict):
        x_train = next(iter(x_train.values()))
    elif isinstance(x_train, (list, tuple)):
        x_train = x_train[0]
    return max(1, math.ceil(len(x_train) / batch_size))


def make_learning_rate(
    train: TrainSpec, *, steps_per_epoch: int | None = None, model_width: int | None = None
) -> Any:
    """`train.learning_rate` (schedule `constant`), or the Keras schedule `train.schedule` names.

    Steps are the optimiser's updates, counted from 0 (`optimizer.iterations`);
    the run has `S = train.epochs × steps_per_epoch` of them, and epoch `e`
    (from 1) holds updates `(e − 1)·spe` to `e·spe − 1`:

    - `cosine`: Keras' `CosineDecay`, with `w = warmup_steps`:
      `CosineDecay(0, S − w, alpha, warmup_target=learning_rate, warmup_steps=w)`
      (without warm-up, `CosineDecay(learning_rate, S, alpha)`).
    - `step` with `every_epochs: k`: `ExponentialDecay(learning_rate, k·spe,
      factor, staircase=True)`, so the first update of epoch `k + 1` has the
      rate times `factor`; with `boundaries: [b1, b2, ...]`:
      `PiecewiseConstantDecay([b1·spe − 1, ...], [lr, lr·factor, ...])`
      (Keras keeps `values[i]` up to and including boundary `i`).
    - `inverse_sqrt`: `keras_seq.schedules.InverseSqrtWarmup(d_model,
      warmup_steps, scale)`, `d_model` the schedule's or else `model_width`.

    Args:
        train: The spec's `train` section.
        steps_per_epoch: Updates per epoch (needed by `cosine` and `step`).
        model_width: The model's `d_model` (`ModelBuilder.model_width`), for
            `inverse_sqrt` without its own `d_model`.

    Raises:
        ValueError: a schedule that needs `steps_per_epoch` or a width
            without it (`prepare` refuses such specs first, by field).
    """
    schedule = train.schedule
    rate = train.learning_rate
    if schedule.type == "constant":
        return rate

    if schedule.type == "inverse_sqrt":
        d_model = schedule.d_model or model_width
        if d_model is None:
            raise ValueError("train.schedule.d_model: required for a model without a width")
        return InverseSqrtWarmup(d_model, schedule.warmup_steps, schedule.scale)
    if steps_per_epoch is None:
        raise ValueError(f"schedule {schedule.type!r} needs `steps_per_epoch`, got None")
    schedules = keras.optimizers.schedules
    if schedule.type == "cosine":
        total, warmup = train.epochs * steps_per_epoch, schedule.warmup_steps
        if warmup:
            return schedules.CosineDecay(
                0.0, total - warmup, schedule.alpha, warmup_target=rate, warmup_steps=warmup
            )
        return schedules.CosineDecay(rate, total, schedule.alpha)
    if schedule.every_epochs is not None:
        return schedules.ExponentialDecay(
            rate, schedule.every_epochs * steps_per_epoch, schedule.factor, staircase=True
        )
    boundaries = [epoch * steps_per_epoch - 1 for epoch in schedule.boundaries]
    values = [rate * schedule.factor**i for i in range(len(boundaries) + 1)]
    return schedules.PiecewiseConstantDecay(boundaries, values)


def _recipe_problems(
    spec: ExperimentSpec, builder: ModelBuilder, task: Any, steps: int
) -> list[tuple[str, str]]:
    """What in `train.schedule` and `train.label_smoothing` does not fit this model and data."""
    train, problems = spec.train, []
    schedule = train.schedule
    total = train.epochs * steps
    warmup = getattr(schedule, "warmup_steps", 0)
    if warmup and warmup >= total:
        problems.append(
            (
                "train.schedule.warmup_steps",
                f"expected fewer than the run's {total} updates (train.epochs={train.epochs} × "
                f"{steps} per epoch, {task.num_train} examples in batches of "
                f"{train.batch_size}), so that the warm-up ends before training does; got "
                f"{warmup}",
            )
        )
    if schedule.type == "inverse_sqrt" and schedule.d_model is None:
        if builder.model_width(spec.model) is None:
            problems.append(
                (
                    "train.schedule.d_model",
                    f"required: model type {spec.model.type!r} (as configured) has no Transformer "
                    "width to take it from; give the d_model the formula should use",
                )
            )
    if train.label_smoothing:
        kind = task.targets.kind
        if kind not in ("classification", "sequence"):
            problems.append(
                (
                    "train.label_smoothing",
                    f"only for class or token targets (a one-hot target to smooth); task "
                    f"{task.name!r} has {kind} targets, so expected 0, got {train.label_smoothing}",
                )
            )
        else:
            loss = builder.compile_args(spec.model, task).get("loss")
            try:
                with_label_smoothing(loss, train.label_smoothing)
            except ValueError as error:
                problems.append(("train.label_smoothing", str(error)))
    return problems


def _validation_metrics(logs: dict[str, Any] | None) -> dict[str, float] | None:
    """`{"val_loss": 0.1, "loss": 0.2}` → `{"loss": 0.1}`; None without `val_*` entries."""
    if not logs:
        return None
    metrics = {name[4:]: float(value) for name, value in logs.items() if name.startswith("val_")}
    return metrics or None


def _argument_path(message: str) -> str:
    match = re.search(r"argument `(\w+)`", message)
    return f"task.{match.group(1)}" if match else "task"


def load_task(spec: ExperimentSpec) -> Any:
    """Make or read the task data of `spec`; a refusal becomes a `SpecError` at `task.…`."""
    builder = registry.task_builder(spec.task.type)
    try:
        return builder.load(spec.task)
    except SpecError:
        raise
    except (ValueError, OSError) as error:
        raise SpecError([(_argument_path(str(error)), str(error))]) from error


def prepare(spec: ExperimentSpec | Any, *, task: Any = None) -> Prepared:
    """Check everything about a spec, make its data and return what training needs.

    Order: the spec's fields (`load_spec` if given a path, text or dict), the
    model's input and target kinds against the task's, the task's data, the
    builder's own checks on that data (sizes, divisibility, ...; for a `graph`, what
    `model.fit` would refuse on one batch, run symbolically: `graph_fit`), and the
    early-stopping metric, and the schedule and label smoothing against the
    model and the data (a warm-up longer than the run, a width to take, a
    target to smooth). Nothing is built or trained here.

    Args:
        spec: An `ExperimentSpec`, or anything `load_spec` reads.
        task: The data `load_task(spec)` gives, when the caller has it already (the app's
            live check keeps the last one it made); nothing in it is changed.

    Returns:
        A `Prepared`.

    Raises:
        SpecError: every problem, with its field path.
    """
    spec = load_spec(spec)
    check_kinds(spec)
    builder = registry.model_builder(spec.model.type)
    task = load_task(spec) if task is None else task
    check_kinds_match(spec, task.inputs.kind, task.targets.kind)
    problems = [
        (f"model.{path}" if path else "model", message)
        for path, message in builder.check(spec.model, task)
    ]
    if problems:
        raise SpecError(problems)
    x_train, y_train, x_val, y_val = builder.fit_data(spec.model, task)
    problems = _recipe_problems(
        spec, builder, task, steps_per_epoch(x_train, spec.train.batch_size)
    )
    if problems:
        raise SpecError(problems)
    monitor = builder.monitor_metric(spec.model, task)
    stopping = spec.train.early_stopping
    if stopping is not None and stopping.monitor is not None:
        allowed = _metric_names(builder, spec, task)
        if stopping.monitor not in allowed:
            raise SpecError(
                [
                    (
                        "train.early_stopping.monitor",
                        f"expected one of {', '.join(repr(m) for m in allowed)}, got "
                        f"{shown(stopping.monitor)}",
                    )
                ]
            )
    return Prepared(
        spec=spec,
        task=task,
        x_train=x_train,
        y_train=y_train,
        x_val=x_val,
        y_val=y_val,
        monitor_metric=monitor,
        builder=builder,
    )


def _metric_names(builder: ModelBuilder, spec: ExperimentSpec, task: Any) -> list[str]:
    """The names `model.fit` logs for this builder: loss and the compiled metrics, val_ too."""
    metrics = builder.compile_args(spec.model, task).get("metrics") or []
    names = ["loss"]
    for metric in metrics:
        names.append(metric if isinstance(metric, str) else getattr(metric, "name", str(metric)))
    return names + [f"val_{name}" for name in names]
