"""`prepare(spec)`: a spec made trainable, every check done before anything trains.

    spec ─▶ load_spec ─▶ check_kinds ─▶ load_task ─▶ kinds on the data ─▶ builder.check
         ─▶ early-stopping metric ─▶ Prepared(data splits, build(), monitor, evaluate())

`Prepared.build()` seeds and compiles the model; `Prepared.evaluate(model)`
gives the final metrics of the model's type (loss and accuracy, BLEU, ...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from builder_ui.builders import registry
from builder_ui.builders.base import ModelBuilder
from builder_ui.builders.validation import check_kinds, check_kinds_match, load_spec
from builder_ui.specs import ExperimentSpec, SpecError, TrainSpec, shown


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
        policy, when those are wanted. The optimiser, learning rate and
        clipnorm come from `spec.train`.
        """
        import keras  # not at module level: validating a spec must not load Keras

        keras.utils.set_random_seed(self.spec.train.seed)
        model = self.builder.build(self.spec.model, self.task)
        model.compile(
            optimizer=make_optimizer(self.spec.train),
            **self.builder.compile_args(self.spec.model, self.task),
        )
        return model

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


def make_optimizer(train: TrainSpec) -> Any:
    """The Keras optimiser that `train` names, with its learning rate and clipnorm."""
    import keras  # not at module level: validating a spec must not load Keras

    classes = {
        "adam": keras.optimizers.Adam,
        "sgd": keras.optimizers.SGD,
        "rmsprop": keras.optimizers.RMSprop,
        "adamw": keras.optimizers.AdamW,
    }
    return classes[train.optimizer](learning_rate=train.learning_rate, clipnorm=train.clipnorm)


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


def prepare(spec: ExperimentSpec | Any) -> Prepared:
    """Check everything about a spec, make its data and return what training needs.

    Order: the spec's fields (`load_spec` if given a path, text or dict), the
    model's input and target kinds against the task's, the task's data, the
    builder's own checks on that data (sizes, divisibility, ...), and the
    early-stopping metric. Nothing is built or trained here.

    Args:
        spec: An `ExperimentSpec`, or anything `load_spec` reads.

    Returns:
        A `Prepared`.

    Raises:
        SpecError: every problem, with its field path.
    """
    spec = load_spec(spec)
    check_kinds(spec)
    builder = registry.model_builder(spec.model.type)
    task = load_task(spec)
    check_kinds_match(spec, task.inputs.kind, task.targets.kind)
    problems = [
        (f"model.{path}" if path else "model", message)
        for path, message in builder.check(spec.model, task)
    ]
    if problems:
        raise SpecError(problems)
    x_train, y_train, x_val, y_val = builder.fit_data(spec.model, task)
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
