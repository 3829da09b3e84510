"""Images to token sequences for the Vision Transformer: patches and the class token."""

from __future__ import annotations

import keras
from keras import initializers, ops

from keras_seq import argument_checks

_REGISTER = keras.saving.register_keras_serializable(package="keras_seq")


@_REGISTER
class PatchEmbedding(keras.layers.Layer):
    """Cuts images into non-overlapping `P × P` patches and projects each to `D` features.

    For an image of shape `(H, W, C)` and patch size `P`, the `N = (H/P)·(W/P)`
    patches `x_p^n` (each flattened to `P²·C` values, rows, then columns, then
    channels) are mapped by one shared linear projection `E` of shape
    `(P²·C, D)`:

        z^n = x_p^n E + b,   n = 1 … N   (row-major over the patch grid)

    This is computed as a `Conv2D` (sublayer `projection`) whose kernel and
    stride are both `P`, which is the same linear map applied to every patch
    at once, then reshaped from `(batch, H/P, W/P, D)` to `(batch, N, D)`. Its
    kernel `(P, P, C, D)` reshaped to `(P²·C, D)` is `E`.

    `H` and `W` must be multiples of `P` (a convolution would silently drop
    the remainder): otherwise a `ValueError` names the size and `patch_size`,
    when the layer is built and when it is called on a static shape (eager,
    or traced under `jit`). Only a TensorFlow graph traced for unknown `H` or
    `W` cannot check, and would drop the remainder. Inputs are channels-last
    whatever `keras.config.image_data_format()` says. A model exported from
    JAX needs a fixed image size: jax2tf cannot differentiate a strided
    convolution over a symbolic size.

    Args:
        patch_size: `P`, the side of each square patch, a positive integer.
        embedding_dim: `D`, the size of each token, a positive integer.

    Call arguments:
        images: `(batch, H, W, C)`.

    Returns:
        Tokens `(batch, N, D)` with `N = (H/P)·(W/P)`.

    Example:

    >>> images = np.random.rand(2, 32, 48, 3).astype("float32")
    >>> tuple(PatchEmbedding(patch_size=16, embedding_dim=64)(images).shape)
    (2, 6, 64)

    References:
        - Dosovitskiy et al., "An Image is Worth 16x16 Words: Transformers for
          Image Recognition at Scale", ICLR 2021 (arXiv 2020), Section 3.1,
          Equation 1.
    """

    def __init__(self, patch_size, embedding_dim, **kwargs):
        super().__init__(**kwargs)
        self.patch_size = argument_checks.positive_int(
            "patch_size", patch_size, argument_checks.MAX_UNITS
        )
        self.embedding_dim = argument_checks.positive_int(
            "embedding_dim", embedding_dim, argument_checks.MAX_UNITS
        )

    def _check_image_shape(self, shape):
        shape = tuple(shape)
        if len(shape) != 4:
            raise ValueError(
                f"{type(self).__name__} expects images of shape (batch, H, W, C), "
                f"got shape {shape}."
            )
        for axis, size in (("H", shape[1]), ("W", shape[2])):
            if isinstance(size, int) and size % self.patch_size:
                raise ValueError(
                    f"{type(self).__name__}: image {axis}={size} is not divisible by "
                    f"patch_size={self.patch_size}; got images of shape {shape}. Resize or "
                    "pad the images to a multiple of the patch size."
                )

    def build(self, images_shape):
        self._check_image_shape(images_shape)
        channels = images_shape[-1]
        if channels is None:
            raise ValueError(
                f"{type(self).__name__} needs a known number of channels C, got images of "
                f"shape {tuple(images_shape)}."
            )
        argument_checks.parameter_budget(
            self.name, self.patch_size**2 * int(channels) * self.embedding_dim + self.embedding_dim
        )
        self.projection = keras.layers.Conv2D(
            self.embedding_dim,
            kernel_size=self.patch_size,
            strides=self.patch_size,
            padding="valid",
            data_format="channels_last",
            name="projection",
            dtype=self.dtype_policy,
        )
        self.projection.build(images_shape)
        self.built = True

    def _num_patches(self, shape):
        if not (isinstance(shape[1], int) and isinstance(shape[2], int)):
            return None  # unknown (None) or symbolic while tracing
        return (shape[1] // self.patch_size) * (shape[2] // self.patch_size)

    def call(self, images):
        self._check_image_shape(images.shape)
        tokens = self.projection(images)  # (batch, H/P, W/P, D)
        num_patches = self._num_patches(images.shape)
        if num_patches is None:  # a size unknown while tracing
            return ops.reshape(tokens, (ops.shape(tokens)[0], -1, self.embedding_dim))
        return ops.reshape(tokens, (-1, num_patches, self.embedding_dim))  # (batch, N, D)

    def compute_output_shape(self, images_shape):
        return (images_shape[0], self._num_patches(images_shape), self.embedding_dim)

    def get_config(self):
        return {
            **super().get_config(),
            "patch_size": self.patch_size,
            "embedding_dim": self.embedding_dim,
        }


@_REGISTER
class ClassToken(keras.layers.Layer):
    """Prepends one learned token, `x_class`, to every sequence (BERT's [CLS], ViT).

        z_0 = [x_class; x^1; …; x^N]

    The token is a weight `token` of shape `(1, 1, D)`, broadcast over the
    batch. After the encoder, its output `z_L^0` summarises the sequence (ViT
    classifies from it). A Keras mask gains a True in front, so padding stays
    masked and the token is always attended to.

    Args:
        initializer: Initializer of the token. Default `"zeros"`, as in ViT.

    Call arguments:
        inputs: `(batch, N, D)`.
        mask: Optional boolean `(batch, N)`.

    Returns:
        `(batch, N + 1, D)`, the token first.

    Example:

    >>> tokens = np.random.rand(2, 6, 64).astype("float32")
    >>> tuple(ClassToken()(tokens).shape)
    (2, 7, 64)

    References:
        - Dosovitskiy et al., "An Image is Worth 16x16 Words: Transformers for
          Image Recognition at Scale", ICLR 2021 (arXiv 2020), Section 3.1.
        - Devlin et al., "BERT: Pre-training of Deep Bidirectional
          Transformers for Language Understanding", NAACL 2019.
    """

    def __init__(self, initializer="zeros", **kwargs):
        super().__init__(**kwargs)
        self.initializer = initializers.get(initializer)
        self.supports_masking = True
        self.input_spec = keras.layers.InputSpec(ndim=3)

    def build(self, input_shape):
        if len(input_shape) != 3 or input_shape[-1] is None:
            raise ValueError(
                f"{type(self).__name__} expects inputs of shape (batch, N, D) with a known "
                f"D, got shape {tuple(input_shape)}."
            )
        d = int(input_shape[-1])
        argument_checks.parameter_budget(self.name, d)
        self.token = self.add_weight(shape=(1, 1, d), name="token", initializer=self.initializer)
        self.built = True

    def call(self, inputs, mask=None):
        batch = ops.shape(inputs)[0]
        token = ops.cast(self.token, inputs.dtype)
        token = ops.broadcast_to(token, (batch, 1, inputs.shape[-1]))  # (batch, 1, D)
        return ops.concatenate([token, inputs], axis=1)  # (batch, N + 1, D)

    def compute_mask(self, inputs, mask=None):
        if mask is None:
            return None
        real = ops.ones_like(mask[:, :1], dtype="bool")  # the token is always real
        return ops.concatenate([real, ops.cast(mask, "bool")], axis=1)

    def compute_output_shape(self, input_shape):
        steps = None if input_shape[1] is None else input_shape[1] + 1
        return (input_shape[0], steps, input_shape[-1])

    def get_config(self):
        return {**super().get_config(), "initializer": initializers.serialize(self.initializer)}
