"""The plugin's builders: the `sine_frequency` task and the `conv_classifier` model.

A builder is a class with a pydantic `params` model (the spec fields, with
`type: Literal["<type name>"]`); the registry checks it when the entry point loads. Nothing
here imports Keras at import time, so validating a spec stays fast: Keras loads when a model
is built or data is made.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from builder_ui.builders import ModelBuilder, TaskBuilder
from builder_ui.specs import ModelParams, TaskParams


class SineFrequencyParams(TaskParams):
    """Which of `num_classes` frequencies is this noisy sine wave?

    Args:
        n: Sequences, both splits.
        length: Steps per sequence.
        num_classes: Frequencies to tell apart (1 … num_classes cycles per sequence).
        noise: Standard deviation of the Gaussian noise added to each step.
        validation_split: Fraction kept for validation.
        seed: NumPy seed of the data.
    """

    type: Literal["sine_frequency"] = "sine_frequency"
    n: Annotated[int, Field(ge=10, le=1_000_000)] = 1000
    length: Annotated[int, Field(ge=4, le=10_000)] = 64
    num_classes: Annotated[int, Field(ge=2, le=16)] = 4
    noise: Annotated[float, Field(ge=0, le=10)] = 0.2
    validation_split: Annotated[float, Field(gt=0, lt=1)] = 0.2
    seed: Annotated[int, Field(ge=0, le=2**32 - 1)] = 0


class SineFrequency(TaskBuilder):
    """Noisy sine waves of random phase, labelled by their frequency."""

    params = SineFrequencyParams
    description = "Tell noisy sine waves apart by frequency (example plugin)."

    def kinds(self, params):
        """Known without making data, so a model that cannot read it is refused early."""
        return "numeric", "classification"

    def load(self, params):
        """Make the waves: `(n, length, 1)` float32 and one class id per wave."""
        # Keras (through keras_seq) loads when data is made, not when a spec is validated.
        from keras_seq.tasks import SequenceSpec, TargetSpec, TaskData

        rng = np.random.default_rng(params.seed)
        y = rng.integers(0, params.num_classes, size=params.n).astype("int32")
        phase = rng.uniform(0, 2 * np.pi, size=(params.n, 1))
        t = np.linspace(0, 2 * np.pi, params.length)[None, :]
        waves = np.sin((y[:, None] + 1) * t + phase)
        waves += rng.normal(scale=params.noise, size=waves.shape)
        x = waves[..., None].astype("float32")  # (n, length, 1)
        split = params.n - max(1, round(params.n * params.validation_split))
        return TaskData(
            x_train=x[:split],
            y_train=y[:split],
            x_val=x[split:],
            y_val=y[split:],
            name="sine_frequency",
            description=f"{params.num_classes} frequencies, {params.length} steps.",
            params=params.model_dump(),
            inputs=SequenceSpec("numeric", length=params.length, features=1),
            targets=TargetSpec("classification", num_classes=params.num_classes),
        )


class ConvClassifierParams(ModelParams):
    """A stack of 1D convolutions, a global max pool and a softmax.

    Args:
        filters: Channels of each convolution.
        kernel_size: Steps each convolution sees.
        num_layers: Convolutions in the stack.
    """

    type: Literal["conv_classifier"] = "conv_classifier"
    filters: Annotated[int, Field(ge=1, le=4096)] = 16
    kernel_size: Annotated[int, Field(ge=1, le=256)] = 5
    num_layers: Annotated[int, Field(ge=1, le=16)] = 2


class ConvClassifier(ModelBuilder):
    """Numeric sequences to classes with convolutions instead of recurrence."""

    params = ConvClassifierParams
    input_kinds = ("numeric",)
    target_kinds = ("classification",)
    description = "1D convolutions and a max pool over time, softmax classes (example plugin)."

    def check(self, params, task):
        """Refuse a kernel longer than the sequences, naming the field (relative to `model`)."""
        if params.kernel_size > task.inputs.length:
            return [
                (
                    "kernel_size",
                    f"expected at most the sequence length {task.inputs.length}, "
                    f"got {params.kernel_size}",
                )
            ]
        return []

    def build(self, params, task):
        """An uncompiled `keras.Model`; the engine compiles it from the spec's `train`."""
        # Keras loads when a model is built, not when the plugin is imported.
        import keras

        inputs = keras.Input((task.inputs.length, task.inputs.features), name="sequence")
        x = inputs
        for index in range(params.num_layers):
            x = keras.layers.Conv1D(
                params.filters,
                params.kernel_size,
                padding="same",
                activation="relu",
                name=f"conv_{index}",
            )(x)
        pooled = keras.layers.GlobalMaxPooling1D(name="max_over_time")(x)
        outputs = keras.layers.Dense(
            task.targets.num_classes, activation="softmax", name="classes"
        )(pooled)
        return keras.Model(inputs, outputs, name="conv_classifier")
