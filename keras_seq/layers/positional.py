"""Positional information for attention: the fixed sinusoids and a learned table.

Self-attention is permutation-equivariant: shuffling the input tokens shuffles
the outputs the same way, so on its own it cannot tell a sequence from any
reordering of it. Both layers here give each position a vector of its own and
*add* it to the input (they never return the encoding alone), so they stack
in a `keras.Sequential` model right after an embedding:

    x_t ← x_t + PE_t

Both carry a Keras mask through unchanged.
"""

from __future__ import annotations

import keras
import numpy as np
from keras import initializers, ops

from keras_seq import argument_checks

_REGISTER = keras.saving.register_keras_serializable(package="keras_seq")


def _sequence_shape_error(layer, input_shape):
    return ValueError(
        f"{type(layer).__name__} expects inputs of shape (batch, time, features) with a "
        f"known number of features, got shape {tuple(input_shape)}."
    )


@_REGISTER
class SinusoidalPositionalEncoding(keras.layers.Layer):
    """Adds the fixed sinusoidal encoding of Vaswani et al. (2017) to its input.

    For position `pos` and feature pair `(2i, 2i+1)` of a `d`-dimensional input:

        PE(pos, 2i)   = sin(pos / max_wavelength^(2i/d))
        PE(pos, 2i+1) = cos(pos / max_wavelength^(2i/d))

    and the layer returns `inputs + PE`. The wavelengths form a geometric
    progression from 2π to `max_wavelength · 2π`, so that for any offset `k`,
    `PE(pos + k)` is a linear function of `PE(pos)`. The encoding has no
    weights and is computed on the fly for whatever length arrives, in float32
    and then cast to the input's dtype (safe under `mixed_float16`). An odd
    `d` ends with a sine.

    Args:
        max_wavelength: The base of the wavelength progression, `10000` in
            the paper. A positive number.

    Call arguments:
        inputs: `(batch, time, d)`, e.g. token embeddings.
        mask: Optional boolean `(batch, time)`; passed on unchanged.

    Returns:
        `inputs + PE`, `(batch, time, d)`, in the dtype of `inputs`.

    Example:

    >>> x = np.zeros((2, 6, 4), "float32")
    >>> tuple(SinusoidalPositionalEncoding()(x).shape)
    (2, 6, 4)

    References:
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017,
          Section 3.5.
    """

    def __init__(self, max_wavelength=10000, **kwargs):
        super().__init__(**kwargs)
        self.max_wavelength = argument_checks.positive_float("max_wavelength", max_wavelength)
        self.supports_masking = True
        self.input_spec = keras.layers.InputSpec(ndim=3)

    def build(self, input_shape):
        if len(input_shape) != 3 or input_shape[-1] is None:
            raise _sequence_shape_error(self, input_shape)
        self.built = True

    def call(self, inputs, mask=None):
        d = inputs.shape[-1]
        pair = 2 * (np.arange(d) // 2)  # 2i for features 2i and 2i+1
        # Constants as tensors: PyTorch's operators do not take NumPy arrays on the right.
        inverse_wavelengths = ops.convert_to_tensor(
            np.power(self.max_wavelength, -pair / d).astype("float32")
        )  # (d,)
        positions = ops.cast(ops.arange(ops.shape(inputs)[1]), "float32")  # (time,)
        angles = ops.expand_dims(positions, -1) * inverse_wavelengths  # (time, d)
        is_sine = ops.convert_to_tensor(np.arange(d) % 2 == 0)
        encoding = ops.where(is_sine, ops.sin(angles), ops.cos(angles))  # (time, d)
        return inputs + ops.cast(encoding, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "max_wavelength": self.max_wavelength}


@_REGISTER
class LearnedPositionalEmbedding(keras.layers.Layer):
    """Adds a trained embedding of each position (BERT, ViT) to its input.

    A table `P` of shape `(max_length, d)` holds one trained vector per
    position; the layer returns

        outputs[b, t] = inputs[b, t] + P[t]

    A sequence longer than `max_length` has positions the table never saw, so
    it is an error, not a silent wrap-around or clamp: a `ValueError` naming
    both lengths, raised when the layer is built on a static time axis longer
    than `max_length`, and when it is called on one (in eager mode, and while
    tracing under `jit`, where shapes are known). Where the time axis is
    unknown even at trace time, no `ValueError` is possible: in a TensorFlow
    graph traced for a `None` time dimension, the slice of `P` fails at run
    time with TensorFlow's `InvalidArgumentError` ("Expected size[0] in
    [0, max_length]"); in a model exported from JAX with a variable length,
    the positions past `max_length` come out as NaN.

    Args:
        max_length: The longest sequence the layer accepts, a positive
            integer.
        embeddings_initializer: Initializer of the table `P`. Default
            `"glorot_uniform"` (ViT uses `RandomNormal(stddev=0.02)`).

    Call arguments:
        inputs: `(batch, time, d)` with `time ≤ max_length`.
        mask: Optional boolean `(batch, time)`; passed on unchanged.

    Returns:
        `inputs + P[:time]`, `(batch, time, d)`.

    Example:

    >>> x = np.zeros((2, 6, 4), "float32")
    >>> tuple(LearnedPositionalEmbedding(max_length=10)(x).shape)
    (2, 6, 4)

    References:
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017,
          Section 3.5 (learned and sinusoidal encodings compared, Table 3).
        - Dosovitskiy et al., "An Image is Worth 16x16 Words: Transformers for
          Image Recognition at Scale", ICLR 2021 (arXiv 2020), Section 3.1.
    """

    def __init__(self, max_length, embeddings_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.max_length = argument_checks.positive_int(
            "max_length", max_length, argument_checks.MAX_LAYER_PARAMS
        )
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.supports_masking = True
        self.input_spec = keras.layers.InputSpec(ndim=3)

    def _check_length(self, length):
        if isinstance(length, int) and length > self.max_length:
            raise ValueError(
                f"{type(self).__name__} `{self.name}` received a sequence of length {length}, "
                f"longer than its max_length={self.max_length}: positions from "
                f"{self.max_length} on have no learned embedding."
            )

    def build(self, input_shape):
        if len(input_shape) != 3 or input_shape[-1] is None:
            raise _sequence_shape_error(self, input_shape)
        self._check_length(input_shape[1])
        d = int(input_shape[-1])
        argument_checks.parameter_budget(self.name, self.max_length * d)
        self.embeddings = self.add_weight(
            shape=(self.max_length, d),
            name="embeddings",
            initializer=self.embeddings_initializer,
        )
        self.built = True

    def call(self, inputs, mask=None):
        static_length, d = inputs.shape[1], inputs.shape[-1]
        self._check_length(static_length)
        length = ops.shape(inputs)[1]
        table = ops.convert_to_tensor(self.embeddings)  # (max_length, d)
        if isinstance(static_length, int) or static_length is None:
            # Checked above, or unknown in a TensorFlow graph, where the slice
            # fails at run time if the sequence is longer than the table.
            table = ops.slice(table, (0, 0), (length, d))  # (time, d)
        else:
            # A symbolic length (a shape-polymorphic JAX export) cannot be
            # compared with max_length: gather rows, which past the table are NaN.
            table = ops.take(table, ops.arange(length), axis=0)  # (time, d)
        return inputs + ops.cast(table, inputs.dtype)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {
            **super().get_config(),
            "max_length": self.max_length,
            "embeddings_initializer": initializers.serialize(self.embeddings_initializer),
        }
