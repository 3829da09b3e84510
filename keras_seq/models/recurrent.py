"""The smallest model that puts a recurrent layer on a task, and how to compile it.

    sequence ─▶ [token_embedding] ─▶ recurrent layer ─▶ classifier | regressor

The input layer comes from the task's `SequenceSpec` (an `Embedding` first
when the inputs are token ids), the head from its `TargetSpec`: a softmax over
the classes, or a linear layer for regression.
"""

from __future__ import annotations

import keras

from keras_seq import validation
from keras_seq.models.sequence_losses import (
    MaskedSparseCategoricalCrossentropy,
    MaskedTokenAccuracy,
)
from keras_seq.tasks.base import SequenceSpec, TargetSpec

# Each token id becomes a vector this long unless `embedding_dim` says otherwise.
DEFAULT_EMBEDDING_DIM = 16


def recurrent_model(layer, inputs, targets, *, embedding_dim=DEFAULT_EMBEDDING_DIM, name=None):
    """Builds `Input → (Embedding) → layer → Dense head` for a task.

    Args:
        layer: A recurrent layer that maps `(batch, time, features)` to one
            vector per sequence, `(batch, units)`, e.g. `CECLSTM(16)` or
            `keras.layers.SimpleRNN(16)` (so not `return_sequences=True`).
        inputs: The task's `SequenceSpec` (`task.inputs`).
        targets: The task's `TargetSpec` (`task.targets`).
        embedding_dim: Size of the token embedding; used only when
            `inputs.kind == "tokens"`.
        name: Name of the model; defaults to `"{layer.name}_model"`.

    Returns:
        An uncompiled functional `keras.Model` whose output is
        `(batch, num_classes)` class probabilities (layer `classifier`) or
        `(batch, output_dim)` real values (layer `regressor`).

    Example:

    >>> task = long_lag(50, 100)
    >>> model = recurrent_model(CECLSTM(8), task.inputs, task.targets)
    >>> model.output_shape
    (None, 2)
    """
    if not isinstance(inputs, SequenceSpec):
        raise ValueError(
            "Received an invalid value for argument `inputs`, expected a SequenceSpec, "
            f"got {inputs!r}."
        )
    if not isinstance(targets, TargetSpec):
        raise ValueError(
            "Received an invalid value for argument `targets`, expected a TargetSpec, "
            f"got {targets!r}."
        )
    _check_one_vector_target(targets)
    if inputs.kind == "tokens":
        embedding_dim = validation.positive_int(
            "embedding_dim", embedding_dim, validation.MAX_UNITS
        )

    sequence = keras.Input(shape=inputs.shape, dtype=inputs.dtype, name="sequence")
    hidden = sequence
    if inputs.kind == "tokens":
        embedding = keras.layers.Embedding(inputs.vocab_size, embedding_dim, name="token_embedding")
        hidden = embedding(hidden)  # (batch, time, embedding_dim)
    hidden = layer(hidden)
    if not isinstance(hidden, keras.KerasTensor) or len(hidden.shape) != 2:
        raise ValueError(
            f"recurrent_model needs a layer that returns one vector per sequence, "
            f"(batch, units); `{layer.name}` returned {hidden!r}. "
            "Use return_sequences=False and return_state=False."
        )
    if targets.kind == "classification":
        head = keras.layers.Dense(targets.num_classes, activation="softmax", name="classifier")
    else:
        head = keras.layers.Dense(targets.output_dim, name="regressor")
    return keras.Model(sequence, head(hidden), name=name or f"{layer.name}_model")


def compile_for(model, targets, *, learning_rate=1e-2, clipnorm=1.0):
    """Compiles `model` with Adam and the loss and metric that `targets` calls for.

    Classification: sparse categorical cross-entropy, metric `"accuracy"`.
    Regression: mean squared error as the loss (reported as `loss` and
    `val_loss`), no extra metric.
    Sequence (a `Seq2Seq`'s token targets): `MaskedSparseCategoricalCrossentropy`
    and `MaskedTokenAccuracy` (`token_accuracy`), which leave PAD out.

    Args:
        model: A model from `recurrent_model` (or `seq2seq` for sequence
            targets).
        targets: The task's `TargetSpec`.
        learning_rate: Adam's learning rate. Default 1e-2.
        clipnorm: Clip each gradient to this norm. Default 1.0; None turns
            clipping off.

    Returns:
        `model`, compiled.
    """
    if not isinstance(targets, TargetSpec):
        raise ValueError(
            "Received an invalid value for argument `targets`, expected a TargetSpec, "
            f"got {targets!r}."
        )
    if targets.kind != "sequence":
        _check_one_vector_target(targets)
    learning_rate = validation.positive_float("learning_rate", learning_rate)
    if clipnorm is not None:
        clipnorm = validation.positive_float("clipnorm", clipnorm)
    optimizer = keras.optimizers.Adam(learning_rate=learning_rate, clipnorm=clipnorm)
    if targets.kind == "classification":
        model.compile(optimizer, loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    elif targets.kind == "sequence":
        model.compile(
            optimizer, loss=MaskedSparseCategoricalCrossentropy(), metrics=[MaskedTokenAccuracy()]
        )
    else:
        model.compile(optimizer, loss="mean_squared_error")
    return model


def _check_one_vector_target(targets):
    """These helpers predict one class or vector per sequence; pointer targets need more."""
    if targets.kind not in ("classification", "regression"):
        raise ValueError(
            f"Received a `targets` of kind {targets.kind!r}; recurrent_model and compile_for "
            "predict one class or vector per sequence ('classification' or 'regression'). "
            "For pointer targets use keras_seq.models.pointer_network; for sequence targets "
            "keras_seq.models.seq2seq (which compile_for compiles)."
        )
