"""Registered task and model builders, plugins, and `prepare(spec)`: a spec made trainable.

A *model builder* turns a validated `model:` section and a task's data into a
Keras model; a *task builder* turns a `task:` section into a keras_seq
`TaskData`. Each is a class with a pydantic `params` model (its spec fields,
with `type: Literal["its_name"]`) and is registered by type name:

    @register_model("my_classifier")
    class MyClassifier(ModelBuilder):
        params = MyClassifierParams
        input_kinds = ("numeric",)
        target_kinds = ("classification",)

        def build(self, params, task):
            ...  # an uncompiled keras.Model

Other packages add builders without touching keras_seq, through the entry-point
group `keras_seq.builders` (in their `pyproject.toml`):

    [project.entry-points."keras_seq.builders"]
    my_classifier = "my_package.builders:MyClassifier"

Entry points are loaded once, the first time a type is looked up. A plugin
that fails to import or is not a valid builder does not break the others: it
is left out and the error, naming the entry point, is shown when a spec uses
its type (and by `plugin_errors()`).

`prepare(spec)` runs every check (the spec's fields, model against task, the
task's data) before anything trains and returns a `Prepared`: the data splits,
`build()` for a compiled model, the metric to monitor and `evaluate(model)`.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, get_args

from pydantic import BaseModel

from builder_ui.spec import (
    ExperimentSpec,
    ModelParams,
    SpecError,
    TaskParams,
    TrainSpec,
    load_spec,
    shown,
)

ENTRY_POINT_GROUP = "keras_seq.builders"
INPUT_KINDS = ("tokens", "numeric", "image")
TARGET_KINDS = ("classification", "regression", "pointer", "sequence")
TYPE_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"

# The built-in builders live in these modules; importing them registers them.
BUILTIN_MODULES = (
    "builder_ui.task_specs",
    "builder_ui.builders.sequence",
    "builder_ui.builders.vision",
    "builder_ui.builders.pointer",
    "builder_ui.builders.seq2seq",
)

_logger = logging.getLogger(__name__)


class BuilderError(TypeError):
    """A builder class that cannot be registered (no params model, unknown kinds, ...)."""


# ---------------------------------------------------------------------------
# Builder base classes


class ModelBuilder:
    """Base class of model builders: a spec's `model:` section and a task → a Keras model.

    Subclasses set the class attributes and implement `build`; the other
    methods have defaults that suit one-output classifiers and regressors.

    Class attributes:
        params: The pydantic model of the spec fields (subclass `ModelParams`
            with `type: Literal["<type name>"]`).
        input_kinds: The task inputs it reads: any of `"tokens"`,
            `"numeric"`, `"image"`.
        target_kinds: The task targets it predicts: any of
            `"classification"`, `"regression"`, `"pointer"`, `"sequence"`.
        description: One line for people (the app and `keras-seq schema`).
    """

    type: ClassVar[str] = ""
    params: ClassVar[type[ModelParams]]
    input_kinds: ClassVar[tuple[str, ...]] = ()
    target_kinds: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""

    def check(self, params: ModelParams, task: Any) -> list[tuple[str, str]]:
        """Problems that make `params` unfit for this task's data, as `(field, message)`.

        `field` is relative to `model` (e.g. `"patch_size"`). Called by
        `prepare` after the input and target kinds matched, before building.
        """
        return []

    def build(self, params: ModelParams, task: Any) -> Any:
        """Return an uncompiled `keras.Model` for the task (see `fit_data` for its inputs)."""
        raise NotImplementedError

    def fit_data(self, params: ModelParams, task: Any) -> tuple[Any, Any, Any, Any]:
        """`(x_train, y_train, x_val, y_val)` as `model.fit` takes them; default: the task's."""
        return task.x_train, task.y_train, task.x_val, task.y_val

    def compile_args(self, params: ModelParams, task: Any) -> dict[str, Any]:
        """`loss` and `metrics` for `model.compile`, from the task's target kind."""
        if task.targets.kind == "regression":
            return {"loss": "mean_squared_error", "metrics": ["mean_absolute_error"]}
        return {"loss": "sparse_categorical_crossentropy", "metrics": ["accuracy"]}

    def monitor_metric(self, params: ModelParams, task: Any) -> str:
        """The main validation metric: `val_accuracy` for classes and pointers, else `val_loss`."""
        if task.targets.kind in ("classification", "pointer"):
            return "val_accuracy"
        return "val_loss"

    def evaluate(self, model: Any, params: ModelParams, prepared: Prepared) -> dict[str, float]:
        """Final metrics on the validation split; default: `prepared.keras_metrics(model)`."""
        return prepared.keras_metrics(model)


class TaskBuilder:
    """Base class of task builders: a spec's `task:` section → a keras_seq `TaskData`.

    Class attributes:
        params: The pydantic model of the spec fields (subclass `TaskParams`
            with `type: Literal["<type name>"]`).
        description: One line for people.
    """

    type: ClassVar[str] = ""
    params: ClassVar[type[TaskParams]]
    description: ClassVar[str] = ""

    def kinds(self, params: TaskParams) -> tuple[str, str] | None:
        """`(input kind, target kind)` known without making the data, or None if unknown.

        Lets `prepare` refuse a model that cannot read the task before any
        data is generated or read.
        """
        return None

    def load(self, params: TaskParams) -> Any:
        """Make or read the data: a `keras_seq.tasks.TaskData`."""
        raise NotImplementedError


# ---------------------------------------------------------------------------
# The registry


@dataclass
class _Registry:
    models: dict[str, ModelBuilder] = field(default_factory=dict)
    tasks: dict[str, TaskBuilder] = field(default_factory=dict)
    # Entry-point type name → why it could not be loaded.
    plugin_errors: dict[str, str] = field(default_factory=dict)
    builtins_loaded: bool = False
    plugins_loaded: bool = False
    lock: threading.RLock = field(default_factory=threading.RLock)


_REGISTRY = _Registry()


def _check_builder(cls: Any, type_name: str, base: type) -> None:
    """Refuse anything that is not a complete builder of kind `base`, naming what is wrong."""
    what = "model" if base is ModelBuilder else "task"
    if not isinstance(type_name, str) or not re.fullmatch(TYPE_NAME_PATTERN, type_name):
        raise BuilderError(
            f"A {what} type name must match {TYPE_NAME_PATTERN} (lower case, digits, _), "
            f"got {type_name!r}."
        )
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise BuilderError(
            f"{what} type {type_name!r}: expected a subclass of builder_ui.registry."
            f"{base.__name__}, got {cls!r}."
        )
    params = getattr(cls, "params", None)
    params_base = ModelParams if base is ModelBuilder else TaskParams
    if not (isinstance(params, type) and issubclass(params, BaseModel)):
        raise BuilderError(
            f"{what} type {type_name!r}: `{cls.__name__}.params` must be a pydantic model "
            f"(a subclass of builder_ui.spec.{params_base.__name__}), got {params!r}."
        )
    if not issubclass(params, params_base):
        raise BuilderError(
            f"{what} type {type_name!r}: `{cls.__name__}.params` must subclass "
            f"builder_ui.spec.{params_base.__name__}, got {params.__name__}."
        )
    type_field = params.model_fields.get("type")
    tags = get_args(type_field.annotation) if type_field is not None else ()
    if tags != (type_name,):
        raise BuilderError(
            f"{what} type {type_name!r}: `{params.__name__}` must declare "
            f'`type: Literal["{type_name}"] = "{type_name}"`, got {tags or "no literal"}.'
        )
    if base is ModelBuilder:
        if cls.build is ModelBuilder.build:
            raise BuilderError(f"model type {type_name!r}: `{cls.__name__}` must define build().")
        for attr, allowed in (("input_kinds", INPUT_KINDS), ("target_kinds", TARGET_KINDS)):
            kinds = getattr(cls, attr, ())
            if (
                not isinstance(kinds, (tuple, list, frozenset, set))
                or not kinds
                or not set(kinds) <= set(allowed)
            ):
                raise BuilderError(
                    f"model type {type_name!r}: `{cls.__name__}.{attr}` must be a non-empty "
                    f"tuple of {', '.join(repr(k) for k in allowed)}, got {kinds!r}."
                )
    elif cls.load is TaskBuilder.load:
        raise BuilderError(f"task type {type_name!r}: `{cls.__name__}` must define load().")


def _register(table: str, base: type, type_name: str, cls: type, replace: bool) -> None:
    _check_builder(cls, type_name, base)
    with _REGISTRY.lock:
        registered = getattr(_REGISTRY, table)
        current = registered.get(type_name)
        if current is not None and type(current) is not cls and not replace:
            raise BuilderError(
                f"{'model' if base is ModelBuilder else 'task'} type {type_name!r} is already "
                f"registered by {type(current).__module__}.{type(current).__qualname__}; "
                "pass replace=True to replace it."
            )
        if current is None or type(current) is not cls:
            cls.type = type_name
            registered[type_name] = cls()


def register_model(type_name: str, *, replace: bool = False) -> Callable[[type], type]:
    """Class decorator: register a `ModelBuilder` subclass as model type `type_name`.

    Raises:
        BuilderError: when the class is not a complete builder, or the name
            is taken by another class (unless `replace=True`).
    """

    def decorate(cls: type) -> type:
        _register("models", ModelBuilder, type_name, cls, replace)
        return cls

    return decorate


def register_task(type_name: str, *, replace: bool = False) -> Callable[[type], type]:
    """Class decorator: register a `TaskBuilder` subclass as task type `type_name`."""

    def decorate(cls: type) -> type:
        _register("tasks", TaskBuilder, type_name, cls, replace)
        return cls

    return decorate


def unregister(kind: str, type_name: str) -> None:
    """Remove a registered type (`kind` is `"model"` or `"task"`); for tests and plugins."""
    with _REGISTRY.lock:
        (_REGISTRY.models if kind == "model" else _REGISTRY.tasks).pop(type_name, None)


def _load_builtins() -> None:
    with _REGISTRY.lock:
        if _REGISTRY.builtins_loaded:
            return
        _REGISTRY.builtins_loaded = True
        for module in BUILTIN_MODULES:
            importlib.import_module(module)


def _entry_point_label(entry_point: importlib.metadata.EntryPoint) -> str:
    dist = getattr(entry_point, "dist", None)
    origin = f" (from {dist.name} {dist.version})" if dist is not None else ""
    return f"entry point {entry_point.name!r} = {entry_point.value!r}{origin}"


def _load_plugins() -> None:
    with _REGISTRY.lock:
        if _REGISTRY.plugins_loaded:
            return
        _REGISTRY.plugins_loaded = True
        for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            load_entry_point(entry_point)


def load_entry_point(entry_point: importlib.metadata.EntryPoint) -> str | None:
    """Load and register one entry point of `keras_seq.builders`; never raises.

    Returns:
        None when registered, else the error (also kept for `plugin_errors()`).
    """
    label = _entry_point_label(entry_point)
    name = entry_point.name
    try:
        obj = entry_point.load()
    except Exception as error:  # a broken plugin must not break the others
        message = f"{label} failed to import: {type(error).__name__}: {error}"
    else:
        if isinstance(obj, type) and issubclass(obj, TaskBuilder):
            table, base = "tasks", TaskBuilder
        else:
            table, base = "models", ModelBuilder
        builtin = name in getattr(_REGISTRY, table) and (
            type(getattr(_REGISTRY, table)[name]).__module__.startswith("builder_ui.")
            and not (isinstance(obj, type) and obj.__module__.startswith("builder_ui."))
        )
        try:
            if builtin:
                raise BuilderError(f"type {name!r} is built in and cannot be replaced by a plugin")
            _register(table, base, name, obj, replace=False)
        except BuilderError as error:
            message = f"{label} is not a valid builder: {error}"
        else:
            _REGISTRY.plugin_errors.pop(name, None)
            return None
    _REGISTRY.plugin_errors[name] = message
    _logger.warning("keras_seq plugin not loaded: %s", message)
    return message


def _ensure_loaded() -> None:
    _load_builtins()
    _load_plugins()


def reload_plugins() -> None:
    """Look for entry points again (e.g. after installing a plugin in this process)."""
    with _REGISTRY.lock:
        _REGISTRY.plugins_loaded = False
        _REGISTRY.plugin_errors.clear()
    importlib.invalidate_caches()
    _ensure_loaded()


def plugin_errors() -> dict[str, str]:
    """Entry points that could not be loaded: type name → the error, naming the entry point."""
    _ensure_loaded()
    return dict(_REGISTRY.plugin_errors)


def model_types() -> list[str]:
    """Names of the registered model types (built-in and plugins), sorted."""
    _ensure_loaded()
    return sorted(_REGISTRY.models)


def task_types() -> list[str]:
    """Names of the registered task types (built-in and plugins), sorted."""
    _ensure_loaded()
    return sorted(_REGISTRY.tasks)


def model_builder(type_name: str) -> ModelBuilder:
    """The registered builder of model type `type_name`; `SpecError` at `model.type` if none."""
    return _lookup("model", type_name)


def task_builder(type_name: str) -> TaskBuilder:
    """The registered builder of task type `type_name`; `SpecError` at `task.type` if none."""
    return _lookup("task", type_name)


def params_model(kind: str, type_name: Any) -> type[BaseModel]:
    """The pydantic params model of a registered `"task"` or `"model"` type."""
    return _lookup(kind, type_name).params


def _lookup(kind: str, type_name: Any) -> Any:
    _ensure_loaded()
    table = _REGISTRY.models if kind == "model" else _REGISTRY.tasks
    if isinstance(type_name, str) and type_name in table:
        return table[type_name]
    if isinstance(type_name, str) and type_name in _REGISTRY.plugin_errors:
        raise SpecError([(f"{kind}.type", _REGISTRY.plugin_errors[type_name])])
    known = ", ".join(repr(name) for name in sorted(table))
    if not isinstance(type_name, str):
        raise SpecError([(f"{kind}.type", f"expected a string, got {shown(type_name)}")])
    raise SpecError(
        [(f"{kind}.type", f"unknown {kind} type {type_name!r}; expected one of {known}")]
    )


def describe_types() -> dict[str, dict[str, Any]]:
    """For the app and CLI: each model type's description, input and target kinds."""
    _ensure_loaded()
    return {
        name: {
            "description": builder.description,
            "input_kinds": list(builder.input_kinds),
            "target_kinds": list(builder.target_kinds),
            "module": type(builder).__module__,
        }
        for name, builder in sorted(_REGISTRY.models.items())
    }


def describe_tasks() -> dict[str, dict[str, Any]]:
    """For the app and CLI: each task type's description and module."""
    _ensure_loaded()
    return {
        name: {"description": builder.description, "module": type(builder).__module__}
        for name, builder in sorted(_REGISTRY.tasks.items())
    }


# ---------------------------------------------------------------------------
# prepare


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
        import keras

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
    import keras

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


def check_kinds(spec: ExperimentSpec) -> None:
    """Refuse a model that cannot read the task's inputs or predict its targets.

    Uses what the task builder knows without making the data; `prepare` checks
    again on the data itself.

    Raises:
        SpecError: naming `model.type` and both kinds.
    """
    kinds = task_builder(spec.task.type).kinds(spec.task)
    if kinds is not None:
        _check_kinds_match(spec, *kinds)


def _check_kinds_match(spec: ExperimentSpec, input_kind: str, target_kind: str) -> None:
    builder = model_builder(spec.model.type)
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
            for name, other in sorted(_REGISTRY.models.items())
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


def _argument_path(message: str) -> str:
    match = re.search(r"argument `(\w+)`", message)
    return f"task.{match.group(1)}" if match else "task"


def load_task(spec: ExperimentSpec) -> Any:
    """Make or read the task data of `spec`; a refusal becomes a `SpecError` at `task.…`."""
    builder = task_builder(spec.task.type)
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
    builder = model_builder(spec.model.type)
    task = load_task(spec)
    _check_kinds_match(spec, task.inputs.kind, task.targets.kind)
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
