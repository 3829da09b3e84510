"""The smallest model that puts a recurrent layer on a task.

    sequence ─▶ [token_embedding] ─▶ recurrent layer ─▶ classifier | regressor

The input layer comes from the task's `SequenceSpec` (an `Embedding` first
when the inputs are token ids), the head from its `TargetSpec`: a softmax over
the classes, or a linear layer for regression.
"""

from __future__ import annotations

import keras

from keras_seq import argument_checks
from keras_seq.models.compiling import check_one_vector_target
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
    check_one_vector_target(targets)
    if inputs.kind == "tokens":
        embedding_dim = argument_checks.positive_int(
            "embedding_dim", embedding_dim, argument_checks.MAX_UNITS
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
