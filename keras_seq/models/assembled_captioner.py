"""`AssembledShowAttendTell`: Show, Attend and Tell's decoder over an image encoder of one's own.

    image (batch, H, W, C) ─▶ encoder (any keras.Model) ─▶ feature map (batch, rows, columns, D)
          ─▶ regions a_1 … a_L (row-major, L = rows · columns) [+ their learned positions]
          ─┬─▶ mean ─▶ h_0, c_0
    caption ─▶ shift right ─▶ embedding ─▶ RecurrentDecoder (Bahdanau over a_i) ◀┘ ─▶ softmax

Everything after the regions is `ShowAttendTell`'s (Xu et al. 2015, soft
attention), with its equations: the initial state from the mean region,

    h_0 = tanh(W_h ā + b_h),   c_0 = tanh(W_c ā + b_c),   ā = (1/L) Σ_i a_i,

the additive score from the previous state, `e_ti = v_aᵀ tanh(W_a h_{t−1} +
U_a a_i)`, the doubly stochastic penalty `λ Σ_i (1 − Σ_t α_ti)²`, greedy
decoding and beam search, `attention_weights` and `region_grid`. Only the
encoder is the user's: the Build tab's graph from the image `Input` to the
decoder block (convolutions and poolings, a `PatchEmbedding` reshaped to its
grid, …), or any functional model whose output is a feature map. Region `i`
is cell `divmod(i, columns)` of that map, so where the model looked can be
drawn over the image as for the built-in encoders.
"""

from __future__ import annotations

import keras

from keras_seq import argument_checks
from keras_seq.models.captioner import ShowAttendTell, _image_shape
from keras_seq.models.own_encoder import encoder_model

_REGISTER = keras.saving.register_keras_serializable(package="keras_seq")


def _check_encoder(encoder):
    """The encoder's `(image_shape, (rows, columns, D))`, or a `ValueError` naming `encoder`."""
    try:
        inputs = encoder.inputs
    except AttributeError:  # a Sequential model never built has none
        inputs = []
    if len(inputs) != 1 or len(inputs[0].shape) != 4 or None in inputs[0].shape[1:]:
        raise argument_checks.invalid(
            "encoder",
            "a model with one input of images (batch, H, W, C) of a known size",
            [tuple(tensor.shape) for tensor in inputs],
        )
    output = encoder.output
    if not hasattr(output, "shape") or len(output.shape) != 4 or None in output.shape[1:]:
        got = tuple(output.shape) if hasattr(output, "shape") else type(output).__name__
        raise argument_checks.invalid(
            "encoder",
            "a model whose output is one feature map (batch, rows, columns, D) of a known size",
            got,
        )
    return _image_shape(tuple(inputs[0].shape[1:])), tuple(int(d) for d in output.shape[1:])


@_REGISTER
class AssembledShowAttendTell(ShowAttendTell):
    """`ShowAttendTell` whose regions come from an encoder model given to the constructor.

    Args:
        target_vocab_size: Caption token ids, the 4 reserved ids included.
        encoder: A `keras.Model` from `(batch, H, W, C)` images to a feature
            map `(batch, rows, columns, D)`; its `D` features at each cell are
            one region. (From a config: its serialized form.)
        region_positions: Add a learned embedding of each region's place.
            Default True.
        cell: The decoder's cell: `"lstm"` (default), `"gru"`, `"simple"`
            or `"cec_lstm"`.
        units: The decoder's state size. Default 64.
        attention_units: Hidden size of the additive scores. Default None:
            `units`.
        embedding_dim: Size of the word embeddings. Default 64.
        attention_penalty: `λ` of the doubly stochastic regularisation, ≥ 0.
            Default 0 (off).
        dropout: Dropout rate on the word embeddings and the decoder outputs.
            Default 0.
        **kwargs: Model keywords (`name`, `trainable`, `dtype`).

    Call arguments and outputs are `ShowAttendTell`'s.

    Example:

    >>> images = keras.Input((16, 16, 3))
    >>> grid = keras.layers.Conv2D(8, 4, strides=4)(images)
    >>> model = AssembledShowAttendTell(20, keras.Model(images, grid), units=16)
    >>> model.region_grid
    (4, 4)
    >>> pixels = np.random.rand(2, 16, 16, 3).astype("float32")
    >>> tuple(model({"source": pixels, "target": np.array([[5, 6, 2], [7, 2, 0]])}).shape)
    (2, 3, 20)

    References:
        - Xu et al., "Show, Attend and Tell: Neural Image Caption Generation
          with Visual Attention", ICML 2015, Sections 3.1 and 4.2.
    """

    def __init__(
        self,
        target_vocab_size,
        encoder,
        region_positions=True,
        cell="lstm",
        units=64,
        attention_units=None,
        embedding_dim=64,
        attention_penalty=0.0,
        dropout=0.0,
        **kwargs,
    ):
        encoder = encoder_model(encoder, "a keras.Model from images to a feature map")
        self.image_shape, (rows, columns, self.filters) = _check_encoder(encoder)
        self._grid = (rows, columns)
        # On PyTorch a module may not be assigned before keras.Model.__init__ has run.
        self._given_encoder = (encoder,)
        self._set_captioner_arguments(
            target_vocab_size,
            region_positions,
            cell,
            units,
            attention_units,
            embedding_dim,
            attention_penalty,
            dropout,
            **kwargs,
        )

    @property
    def region_grid(self):
        """`(rows, columns)` of the encoder's feature map; region `i` is `divmod(i, columns)`."""
        return self._grid

    def _check_arguments(self):
        self._check_budgets(self.units)

    def _make_region_layers(self):
        self.image_encoder = self._given_encoder[0]
        self.region_layers = [self.image_encoder]

    def get_config(self):
        return {
            "encoder": keras.saving.serialize_keras_object(self.image_encoder),
            **self._captioner_config(),
        }
