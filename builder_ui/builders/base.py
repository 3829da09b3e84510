"""The builder base classes: what a model or task type must provide to be trained.

A *model builder* turns a validated `model:` section and a task's data into a
Keras model; a *task builder* turns a `task:` section into a keras_seq
`TaskData`. Each is a class with a pydantic `params` model (its spec fields,
with `type: Literal["its_name"]`), registered by type name
(`builder_ui.builders.registry`):

    @register_model("my_classifier")
    class MyClassifier(ModelBuilder):
        params = MyClassifierParams
        input_kinds = ("numeric",)
        target_kinds = ("classification",)

        def build(self, params, task):
            ...  # an uncompiled keras.Model

Nothing here imports Keras.
"""

from __future__ import annotations

from typing import Any, ClassVar

from builder_ui.specs import ModelParams, TaskParams

INPUT_KINDS = ("tokens", "numeric", "image", "frames")
TARGET_KINDS = ("classification", "regression", "pointer", "sequence", "frames")


class BuilderError(TypeError):
    """A builder class that cannot be registered (no params model, unknown kinds, ...)."""


class ModelBuilder:
    """Base class of model builders: a spec's `model:` section and a task → a Keras model.

    Subclasses set the class attributes and implement `build`; the other
    methods have defaults that suit one-output classifiers and regressors.

    Class attributes:
        params: The pydantic model of the spec fields (subclass `ModelParams`
            with `type: Literal["<type name>"]`).
        input_kinds: The task inputs it reads: any of `"tokens"`,
            `"numeric"`, `"image"`, `"frames"` (a video).
        target_kinds: The task targets it predicts: any of
            `"classification"`, `"regression"`, `"pointer"`, `"sequence"`,
            `"frames"` (the next frames of a video).
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

    def estimate(self, params: ModelParams, task: Any) -> list[Any] | None:
        """The model `build` would make, as `builder_ui.builders.memory.Part`s, or None.

        Counted from `params` and the task's shapes, without building (a model
        too large for the machine must be refused before its weights exist):
        one `Part(name, field, parameters, activations)` per layer, whose
        parameters sum to `count_params()` of the built model and whose
        `field` (from the spec's root, `model.units`) is the one that sets
        the layer's size. `prepare`'s callers check the total against the
        memory budget (`memory.check_budget`). The default, None, means
        unknown: such a model gets no estimate and is not refused.
        """
        return None

    def fit_data(self, params: ModelParams, task: Any) -> tuple[Any, Any, Any, Any]:
        """`(x_train, y_train, x_val, y_val)` as `model.fit` takes them; default: the task's."""
        return task.x_train, task.y_train, task.x_val, task.y_val

    def compile_args(self, params: ModelParams, task: Any) -> dict[str, Any]:
        """`loss` and `metrics` for `model.compile`, from the task's target kind.

        Future frames are sigmoid pixels, read with per-pixel binary cross-entropy (Shi
        et al. 2015 used cross-entropy on Moving MNIST), the mean squared error beside it.
        """
        if task.targets.kind == "regression":
            return {"loss": "mean_squared_error", "metrics": ["mean_absolute_error"]}
        if task.targets.kind == "frames":
            return {"loss": "binary_crossentropy", "metrics": ["mean_squared_error"]}
        return {"loss": "sparse_categorical_crossentropy", "metrics": ["accuracy"]}

    def model_width(self, params: ModelParams) -> int | None:
        """The model's width `d_model`, for `train.schedule: inverse_sqrt`; None if it has none.

        A Transformer's is its `embedding_dim`. The default, None, makes the
        schedule's `d_model` a required field for this model type.
        """
        return None

    def monitor_metric(self, params: ModelParams, task: Any) -> str:
        """The main validation metric: `val_accuracy` for classes and pointers, else `val_loss`."""
        if task.targets.kind in ("classification", "pointer"):
            return "val_accuracy"
        return "val_loss"

    def evaluate(self, model: Any, params: ModelParams, prepared: Any) -> dict[str, float]:
        """Final metrics on the validation split; default: `prepared.keras_metrics(model)`.

        `prepared` is the run's `builder_ui.builders.prepared.Prepared`.
        """
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
