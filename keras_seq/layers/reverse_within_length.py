"""Reversing each sequence within its true length, the trick of Sutskever, Vinyals & Le (2014)."""

from __future__ import annotations

import numbers

import keras
from keras import ops

from keras_seq import argument_checks


@keras.saving.register_keras_serializable(package="keras_seq")
class ReverseWithinLength(keras.layers.Layer):
    """Reverses the real steps of each sequence and leaves its padding where it is.

    Sutskever et al. fed the source sentence to the encoder backwards: the
    first source words then sit next to the first target words they
    predict, which "introduced many short term dependencies" and made the
    optimisation easier. With right padding, reversing the whole padded row
    would put the padding first; this layer reverses only the real steps:

        a b c d <pad> <pad>  ─▶  d c b a <pad> <pad>

    More generally, with `n` real steps (mask True) in a row, the `k`-th real
    step and the `(n − 1 − k)`-th real step trade places and masked steps stay
    put, so left padding and gaps are handled too, and applying the layer
    twice gives back the input. The mask is unchanged and is passed on.

    Which steps are real: the `mask` if one is given (e.g. the Keras mask of
    an `Embedding(mask_zero=True)`), otherwise every step that differs from
    `pad_value` somewhere (token id 0 by default, the PAD of
    `keras_seq.tasks.Vocabulary`). The layer has no weights.

    Args:
        pad_value: The value of a padding step when no mask is given. Default
            0.

    Call arguments:
        inputs: `(batch, time)` token ids, or `(batch, time, ...)` features.
        mask: Optional boolean `(batch, time)`, True at real steps.

    Returns:
        A tensor of the shape and dtype of `inputs`, each row's real steps in
        reverse order.

    Example:

    >>> ids = np.array([[5, 6, 7, 0, 0], [4, 9, 0, 0, 0]])
    >>> keras.ops.convert_to_numpy(ReverseWithinLength()(ids))
    array([[7, 6, 5, 0, 0],
           [9, 4, 0, 0, 0]])

    References:
        - Sutskever, Vinyals & Le, "Sequence to Sequence Learning with Neural
          Networks", NeurIPS 2014, Section 3.3.
    """

    def __init__(self, pad_value=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(pad_value, numbers.Integral) and not isinstance(pad_value, bool):
            pad_value = int(pad_value)
        else:
            pad_value = argument_checks.finite_float("pad_value", pad_value)
        self.pad_value = pad_value
        self.supports_masking = True

    def build(self, input_shape):
        if len(input_shape) < 2:
            raise ValueError(
                f"{type(self).__name__} expects inputs of shape (batch, time) or "
                f"(batch, time, ...), got shape {tuple(input_shape)}."
            )
        self.built = True

    def call(self, inputs, mask=None):
        inputs = ops.convert_to_tensor(inputs)
        rank = len(inputs.shape)
        if mask is None:
            real = ops.not_equal(inputs, ops.cast(self.pad_value, inputs.dtype))
            if rank > 2:
                real = ops.any(real, axis=tuple(range(2, rank)))  # (batch, time)
        else:
            real = ops.cast(mask, "bool")
        time = ops.shape(inputs)[1]
        steps = ops.expand_dims(ops.arange(time, dtype="int32"), 0)  # (1, time)
        real_int = ops.cast(real, "int32")
        rank_among_real = ops.cumsum(real_int, axis=1) - 1  # k for the k-th real step
        num_real = ops.sum(real_int, axis=1, keepdims=True)  # n, (batch, 1)
        # Positions of the real steps in order, then the masked ones.
        order = ops.cast(ops.argsort(ops.where(real, steps, steps + time), axis=1), "int32")
        partner_rank = ops.clip(num_real - 1 - rank_among_real, 0, time - 1)
        partner = ops.take_along_axis(order, partner_rank, axis=1)  # (batch, time)
        source = ops.where(real, partner, steps)  # masked steps stay put
        if rank > 2:
            source = ops.reshape(source, ops.shape(source) + (1,) * (rank - 2))
            source = ops.broadcast_to(source, ops.shape(inputs))
        return ops.take_along_axis(inputs, source, axis=1)

    def compute_output_shape(self, input_shape):
        return input_shape

    def compute_mask(self, inputs, mask=None):
        return mask

    def get_config(self):
        return {**super().get_config(), "pad_value": self.pad_value}
