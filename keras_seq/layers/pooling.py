"""Layers that pool a sequence into one vector: the class token, or the mean over real steps.

    (batch, time, d) ─▶ ClassTokenPooling ─▶ (batch, d)      outputs[b] = x[b, 0]
    (batch, time, d) ─▶ MaskedMeanPooling ─▶ (batch, d)      mean over unmasked steps

Both consume the Keras mask: their output is one vector per sequence.
"""

from __future__ import annotations

import keras

_REGISTER = keras.saving.register_keras_serializable(package="keras_seq")


@_REGISTER
class ClassTokenPooling(keras.layers.Layer):
    """Keeps the first token of each sequence, the class token, and drops the others.

    `outputs[b] = inputs[b, 0]`: the representation a ViT or BERT classifies,
    `z_L^0` in Dosovitskiy et al. (2020), Eq. 4. A Keras mask on the input is
    consumed (the output is one vector per sequence).

    Args:
        **kwargs: Layer keywords (`name`, `dtype`, ...); the layer has no weights.

    Call arguments:
        inputs: `(batch, time, d)`, the class token first.

    Returns:
        `(batch, d)`.

    Example:

    >>> x = np.arange(12, dtype="float32").reshape(1, 3, 4)
    >>> keras.ops.convert_to_numpy(ClassTokenPooling()(x)).tolist()
    [[0.0, 1.0, 2.0, 3.0]]

    References:
        - Devlin et al., "BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding", NAACL 2019.
        - Dosovitskiy et al., "An Image is Worth 16x16 Words: Transformers for
          Image Recognition at Scale", ICLR 2021 (arXiv:2010.11929, 2020).
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.input_spec = keras.layers.InputSpec(ndim=3)

    def call(self, inputs, mask=None):
        return inputs[:, 0, :]  # (batch, d)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[2])


@_REGISTER
class MaskedMeanPooling(keras.layers.Layer):
    """The mean of each sequence over its real (unmasked) steps; zeros for an empty one.

        outputs[b] = Σ_t m[b, t] x[b, t] / max(1, Σ_t m[b, t])

    with `m` the Keras mask (all ones without one). Like
    `keras.layers.GlobalAveragePooling1D`, except that a sequence with no real
    step (all padding) gives a zero vector instead of `0 / 0 = NaN`, which
    would poison a whole batch's loss.

    Args:
        **kwargs: Layer keywords (`name`, `dtype`, ...); the layer has no weights.

    Call arguments:
        inputs: `(batch, time, d)`.
        mask: Optional boolean `(batch, time)`, True at real steps; defaults
            to the Keras mask of `inputs`.

    Returns:
        `(batch, d)`, in the dtype of `inputs`.

    Example:

    >>> x = np.array([[[1.0], [3.0], [100.0]]], "float32")
    >>> keras.ops.convert_to_numpy(MaskedMeanPooling()(x, mask=np.array([[1, 1, 0]], bool)))
    array([[2.]], dtype=float32)

    References:
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True
        self.input_spec = keras.layers.InputSpec(ndim=3)

    def call(self, inputs, mask=None):
        if mask is None:
            return keras.ops.mean(inputs, axis=1)
        weights = keras.ops.expand_dims(keras.ops.cast(mask, inputs.dtype), -1)  # (batch, time, 1)
        total = keras.ops.sum(inputs * weights, axis=1)  # (batch, d)
        count = keras.ops.maximum(keras.ops.sum(weights, axis=1), 1.0)  # (batch, 1)
        return total / count

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[2])
