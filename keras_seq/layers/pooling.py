"""Layers that pool a sequence into one vector: the class token, the mean, the final state.

    (batch, time, d) ─▶ ClassTokenPooling ─▶ (batch, d)      outputs[b] = x[b, 0]
    (batch, time, d) ─▶ MaskedMeanPooling ─▶ (batch, d)      mean over unmasked steps
    (batch, time, d) ─▶ FinalStatePooling ─▶ (batch, d)      the last real step (per direction)

All consume the Keras mask: their output is one vector per sequence.
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
        self.input_spec = keras.layers.InputSpec(min_ndim=3)

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
        self.input_spec = keras.layers.InputSpec(min_ndim=3)

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


@_REGISTER
class FinalStatePooling(keras.layers.Layer):
    """The state a recurrent layer ends in, read from its output sequence at the real steps.

    A recurrent layer's output at step `t` is its state `h_t`, so its final
    state is its output at the last real step (a right-padded sequence ends
    early). With `bidirectional=True` the input is a `Bidirectional` layer's
    concatenated outputs `[h→_t; h←_t]`, and the final state is that of each
    direction, the forward one at the last real step and the backward one at
    the first:

        l_b = max{t : m[b, t]},   f_b = min{t : m[b, t]}
        outputs[b] = x[b, l_b]                                (one direction)
        outputs[b] = [x[b, l_b, :d/2]; x[b, f_b, d/2:]]       (bidirectional)

    with `m` the Keras mask (all ones without one); a sequence with no real
    step gives zeros. This is the encoder summary of Sutskever et al. (2014)
    and Cho et al. (2014), `[h→_S; h←_1]` for a bidirectional encoder as
    `keras_seq.models.RNNSeq2Seq` starts its decoder from: as a block of its
    own, it lets an assembled graph hand an encoder's final state to a decoder
    (an LSTM's memory cell `c` is not in its outputs, so it is not read). The
    steps may be vectors or maps: a `ConvLSTM2D`'s `(batch, time, rows, cols,
    filters)` outputs give its final hidden state `H_T`, `(batch, rows, cols,
    filters)`, as Shi et al. (2015) hand it to their forecaster (`bidirectional`
    halves the last axis).

    Args:
        bidirectional: The input holds both directions, forward half first.
            Default False.
        **kwargs: Layer keywords (`name`, `dtype`, ...); the layer has no weights.

    Call arguments:
        inputs: `(batch, time, ..., d)` recurrent outputs (`d` even if
            bidirectional).
        mask: Optional boolean `(batch, time)`, True at real steps; defaults
            to the Keras mask of `inputs`.

    Returns:
        `(batch, ..., d)`, one step of `inputs`, in its dtype.

    Example:

    >>> x = np.arange(12, dtype="float32").reshape(1, 3, 4)
    >>> mask = np.array([[True, True, False]])
    >>> keras.ops.convert_to_numpy(FinalStatePooling()(x, mask=mask)).tolist()
    [[4.0, 5.0, 6.0, 7.0]]
    >>> layer = FinalStatePooling(bidirectional=True)
    >>> keras.ops.convert_to_numpy(layer(x, mask=mask)).tolist()
    [[4.0, 5.0, 2.0, 3.0]]

    References:
        - Sutskever, Vinyals & Le, "Sequence to Sequence Learning with Neural
          Networks", NeurIPS 2014.
        - Bahdanau, Cho & Bengio, "Neural Machine Translation by Jointly
          Learning to Align and Translate", ICLR 2015.
        - Shi et al., "Convolutional LSTM Network: A Machine Learning
          Approach for Precipitation Nowcasting", NeurIPS 2015.
    """

    def __init__(self, bidirectional=False, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(bidirectional, bool):
            raise ValueError(
                f"Argument `bidirectional` must be True or False, got {bidirectional!r}."
            )
        self.bidirectional = bidirectional
        self.supports_masking = True
        self.input_spec = keras.layers.InputSpec(min_ndim=3)

    def build(self, input_shape):
        features = input_shape[-1]
        if self.bidirectional and features is not None and features % 2:
            raise ValueError(
                "FinalStatePooling(bidirectional=True) expects both directions' outputs "
                f"joined, an even number of features, got {features} (input shape "
                f"{tuple(input_shape)})."
            )

    @staticmethod
    def _at(inputs, index, real):
        """`inputs[b, index[b]]` where `real[b]`, zeros elsewhere, as a one-hot weighting."""
        ops = keras.ops
        steps = ops.shape(inputs)[1]
        pick = ops.one_hot(index, steps, dtype=inputs.dtype)  # (batch, time)
        pick = pick * ops.expand_dims(ops.cast(real, inputs.dtype), -1)
        pick = ops.reshape(pick, (-1, steps) + (1,) * (len(inputs.shape) - 2))
        return ops.sum(inputs * pick, axis=1)  # (batch, ..., d)

    def call(self, inputs, mask=None):
        ops = keras.ops
        batch, steps = ops.shape(inputs)[0], ops.shape(inputs)[1]
        if mask is None:
            mask = ops.ones((batch, steps), dtype="bool")
        mask = ops.cast(mask, "bool")
        positions = ops.expand_dims(ops.arange(steps, dtype="int32"), 0)  # (1, time)
        last = ops.max(ops.where(mask, positions, -1), axis=1)  # (batch,)
        real = last >= 0
        final = self._at(inputs, ops.maximum(last, 0), real)
        if not self.bidirectional:
            return final
        first = ops.min(ops.where(mask, positions, steps), axis=1)
        start = self._at(inputs, ops.minimum(first, steps - 1), real)
        half = inputs.shape[-1] // 2
        return ops.concatenate([final[:, :half], start[:, half:]], axis=-1)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], *input_shape[2:])

    def get_config(self):
        return {**super().get_config(), "bidirectional": self.bidirectional}
