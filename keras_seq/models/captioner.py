"""`ShowAttendTell`: Bahdanau's attention over the regions of an image, writing a caption.

    image ─▶ small CNN (or P×P patches) ─▶ regions a_1 … a_L ─┬─▶ mean ─▶ h_0, c_0
    caption ─▶ shift right (START first) ─▶ embedding ─▶ RecurrentDecoder ◀┘ ─▶ softmax
                                                        (attends over a_i from h_{t−1})

Xu et al. (2015), "soft" attention: the encoder is a convolutional network
whose last feature map, `g × g` positions of `D` channels, gives `L = g²`
region vectors `a_i ∈ R^D`, each looking at one part of the image. The
decoder is an LSTM; before each word it scores every region from its
previous state, exactly the additive score of Bahdanau et al. (2015):

    e_ti = v_aᵀ tanh(W_a h_{t−1} + U_a a_i),   α_t = softmax(e_t)   (over the L regions)
    ẑ_t = Σ_i α_ti a_i
    h_t = LSTM([E y_{t−1}; ẑ_t], h_{t−1})
    p(y_t | a, y_{<t}) = softmax(W_o [h_t; ẑ_t] + b_o)

with the initial state predicted from the mean region (the paper's eq. 5):

    h_0 = tanh(W_h ā + b_h),   c_0 = tanh(W_c ā + b_c),   ā = (1/L) Σ_i a_i

The weights α_t, drawn over the image for each word, are where the model
looked. The paper's doubly stochastic regularisation adds

    λ Σ_i (1 − Σ_t α_ti)²

to the loss (`attention_penalty = λ`): it asks every region to receive, over
the whole caption, about one unit of attention, so that the decoder does not
look at one place for every word. (With more regions than words the sum
cannot reach 1 everywhere; the penalty then spreads the attention.)

Where this departs from the paper, and why:

- The encoder is trained from scratch on the task: a small CNN of
  `conv_layers` blocks (3×3 convolution, ReLU, 2×2 max pooling), not
  VGG's conv5_4 features pretrained on ImageNet (a download), or the
  `PatchEmbedding` of a ViT (`encoder="patches"`).
- A learned embedding of each region's grid position is added to its vector
  (`region_positions=True`, as ViT does): VGG's deep receptive fields carry
  where a feature is, a two-block CNN barely does, and a caption that says
  which object is on top needs it.
- The readout is `W_o [h_t; ẑ_t]`, the `RecurrentDecoder`'s, instead of the
  paper's deep output `L_o(E y_{t−1} + L_h h_t + L_z ẑ_t)`, and there is no
  gating scalar β on `ẑ_t` (the paper's Section 4.2.1).
- One decoder layer, as in the paper.

Everything after the regions is `RNNSeq2Seq`'s decoder with Bahdanau
attention, so `encode` / `decode_step`, greedy decoding and beam search
(`keras_seq.models.decoding`) work unchanged: the "source" is a batch of
images, and the attention of each step is over the `L` regions, in
row-major order over the grid (`region_grid`).

Training input is `{"source": images, "target": captions}` with captions as
a task stores them (ids, END, PAD), as for every `Seq2Seq`.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_seq import argument_checks
from keras_seq.layers.cells import states_per_layer
from keras_seq.layers.patches import PatchEmbedding
from keras_seq.layers.positional import LearnedPositionalEmbedding
from keras_seq.models.rnn_seq2seq import RNNSeq2Seq
from keras_seq.models.seq2seq_base import PAD_ID, Seq2Seq

_REGISTER = keras.saving.register_keras_serializable(package="keras_seq")

ENCODERS = ("cnn", "patches")
# The most 2× poolings: past this a 256×256 image is a 1×1 grid.
MAX_CONV_LAYERS = 8
# The Seq2Seq base counts a source vocabulary; an image has none, so the smallest allowed.
_NO_SOURCE_VOCABULARY = 4


def check_attention_penalty(value):
    """`λ` of the doubly stochastic penalty as a float ≥ 0, else a `ValueError` naming it."""
    penalty = argument_checks.finite_float("attention_penalty", value)
    if penalty < 0:
        raise argument_checks.invalid("attention_penalty", "a number ≥ 0", value)
    return penalty


def _image_shape(value):
    """`value` as a `(height, width, channels)` tuple of positive ints, else raises."""
    if hasattr(value, "shape") and not isinstance(value, (list, tuple)):
        value = value.shape  # an ImageSpec
    if not isinstance(value, (list, tuple)) or len(value) != 3:
        raise argument_checks.invalid("image_shape", "(height, width, channels)", value)
    return tuple(
        argument_checks.positive_int(f"image_shape[{i}]", v, argument_checks.MAX_UNITS)
        for i, v in enumerate(value)
    )


@_REGISTER
class ShowAttendTell(RNNSeq2Seq):
    """An image captioner: an LSTM that attends over the regions of a CNN feature map.

    The equations are the module docstring's (Xu et al. 2015, soft attention).

    Args:
        target_vocab_size: Caption token ids, the 4 reserved ids included.
        image_shape: `(height, width, channels)` of the images (or an
            `ImageSpec`).
        encoder: `"cnn"` (default): `conv_layers` blocks of a 3×3
            convolution with `filters` channels, ReLU and 2×2 max pooling, so
            the grid is `(H / 2^k) × (W / 2^k)`; or `"patches"`: a
            `PatchEmbedding` of `patch_size` patches to `filters` features.
        filters: `D`, the features of each region. Default 32.
        conv_layers: `k`, the CNN's blocks (`encoder="cnn"`). Default 2.
            `H` and `W` must be multiples of `2^k`.
        patch_size: `P`, the patch side (`encoder="patches"`). Default 4.
            `H` and `W` must be multiples of `P`.
        region_positions: Add a learned embedding of each region's grid
            position to its vector. Default True.
        cell: `"lstm"` (default, the paper's), `"gru"`, `"simple"` or
            `"cec_lstm"`: the decoder's cell.
        units: The decoder's state size. Default 64.
        attention_units: Hidden size of the additive scores. Default None:
            `units`.
        embedding_dim: Size of the word embeddings `E`. Default 64.
        attention_penalty: `λ` of the doubly stochastic regularisation, ≥ 0.
            Default 0 (off).
        dropout: Dropout rate on the word embeddings and the decoder outputs.
            Default 0.
        **kwargs: Model keywords (`name`, `trainable`, `dtype`).

    Call arguments:
        inputs: `{"source": (batch, H, W, C) float images, "target": (batch,
            T) int caption ids}`.
        training: Whether dropout is applied.

    Returns:
        `(batch, T, target_vocab_size)` float32 probabilities of each caption
        word given the image and the words before it.

    Example:

    >>> model = ShowAttendTell(20, (16, 16, 3), filters=8, units=16, embedding_dim=8)
    >>> images = np.random.rand(2, 16, 16, 3).astype("float32")
    >>> captions = np.array([[5, 6, 2], [7, 2, 0]])
    >>> tuple(model({"source": images, "target": captions}).shape)
    (2, 3, 20)
    >>> model.region_grid
    (4, 4)

    References:
        - Xu et al., "Show, Attend and Tell: Neural Image Caption Generation
          with Visual Attention", ICML 2015, Sections 3.1 and 4.2.
        - Bahdanau, Cho & Bengio, "Neural Machine Translation by Jointly
          Learning to Align and Translate", ICLR 2015.
    """

    architecture = "show_attend_tell"

    def __init__(
        self,
        target_vocab_size,
        image_shape,
        encoder="cnn",
        filters=32,
        conv_layers=2,
        patch_size=4,
        region_positions=True,
        cell="lstm",
        units=64,
        attention_units=None,
        embedding_dim=64,
        attention_penalty=0.0,
        dropout=0.0,
        **kwargs,
    ):
        self.image_shape = _image_shape(image_shape)
        self.encoder = argument_checks.one_of("encoder", encoder, ENCODERS)
        self.filters = argument_checks.positive_int("filters", filters, argument_checks.MAX_UNITS)
        self.conv_layers = argument_checks.positive_int("conv_layers", conv_layers, MAX_CONV_LAYERS)
        self.patch_size = argument_checks.positive_int(
            "patch_size", patch_size, argument_checks.MAX_UNITS
        )
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

    def _set_captioner_arguments(
        self,
        target_vocab_size,
        region_positions,
        cell,
        units,
        attention_units,
        embedding_dim,
        attention_penalty,
        dropout,
        **kwargs,
    ):
        """Checks and keeps the arguments of everything after the regions, then makes the
        model (shared with `AssembledShowAttendTell`)."""
        self.region_positions = argument_checks.boolean("region_positions", region_positions)
        self.attention_penalty = check_attention_penalty(attention_penalty)
        self._set_decoder_arguments(
            cell, units, 1, "bahdanau", attention_units, False, embedding_dim
        )
        self.bidirectional = False  # RNNSeq2Seq's field; there is no recurrent encoder
        Seq2Seq.__init__(self, _NO_SOURCE_VOCABULARY, target_vocab_size, dropout=dropout, **kwargs)

    # Validation and layers ---------------------------------------------------------

    @property
    def _step(self):
        """How many pixels one region's cell spans on each side."""
        return 2**self.conv_layers if self.encoder == "cnn" else self.patch_size

    @property
    def region_grid(self):
        """`(rows, columns)` of the region grid; region `i` is cell `divmod(i, columns)`."""
        height, width, _ = self.image_shape
        return height // self._step, width // self._step

    @property
    def num_regions(self):
        """`L`, the regions the decoder attends over."""
        rows, columns = self.region_grid
        return rows * columns

    def _check_arguments(self):
        height, width, _ = self.image_shape
        step = self._step
        if height % step or width % step:
            field = "conv_layers" if self.encoder == "cnn" else "patch_size"
            what = f"2^conv_layers = {step}" if self.encoder == "cnn" else f"patch_size = {step}"
            raise argument_checks.invalid(
                field,
                f"a value for which {what} divides the image height {height} and width {width}",
                getattr(self, field),
            )
        self._check_budgets(self.units)

    def _embedding(self, role, vocab):
        """The caption's embedding; an image has no source embedding."""
        return None if role == "source" else super()._embedding(role, vocab)

    def _make_region_layers(self):
        """The layers from the images to the regions (before their positions), in order."""
        policy = self.dtype_policy
        self.region_layers = []
        if self.encoder == "cnn":
            for index in range(self.conv_layers):
                self.region_layers += [
                    keras.layers.Conv2D(
                        self.filters,
                        3,
                        padding="same",
                        activation="relu",
                        name=f"conv_{index}",
                        dtype=policy,
                    ),
                    keras.layers.MaxPooling2D(2, name=f"pool_{index}", dtype=policy),
                ]
        else:
            self.region_layers.append(
                PatchEmbedding(self.patch_size, self.filters, name="patches", dtype=policy)
            )

    def _make_layers(self):
        policy = self.dtype_policy
        self._make_region_layers()
        self.position_embedding = None
        if self.region_positions:
            self.position_embedding = LearnedPositionalEmbedding(
                self.num_regions, name="region_positions", dtype=policy
            )
        self.initial_h = keras.layers.Dense(
            self.units, activation="tanh", name="initial_h", dtype=policy
        )
        self.initial_c = None
        if states_per_layer(self.cell) == 2:
            self.initial_c = keras.layers.Dense(
                self.units, activation="tanh", name="initial_c", dtype=policy
            )
        self.embedding_dropout = keras.layers.Dropout(
            self.dropout, name="embedding_dropout", dtype=policy
        )
        self.output_dropout = keras.layers.Dropout(
            self.dropout, name="output_dropout", dtype=policy
        )
        self.decoder = self._make_decoder()

    def _build_layers(self):
        shape = (None, *self.image_shape)
        for layer in self.region_layers:
            if not layer.built:  # an encoder model of one's own is built already
                layer.build(shape)
            shape = layer.compute_output_shape(shape)
        regions = (None, self.num_regions, self.filters)
        if self.position_embedding is not None:
            self.position_embedding.build(regions)
        for layer in (self.initial_h, self.initial_c):
            if layer is not None:
                layer.build((None, self.filters))
        self.target_embedding.build((None, None))
        self.decoder.build((None, None, self.embedding_dim), regions)
        self.output_projection.build((None, None, self.decoder.output_dim))

    # The regions and the pass ------------------------------------------------------

    def check_source(self, source):
        """`source` as float images of `image_shape`, or a `ValueError` naming the shape.

        The decoding functions call this instead of their check for token ids.
        """
        dtype = keras.backend.standardize_dtype(source.dtype)
        shape = tuple(source.shape)
        if len(shape) != 4 or tuple(shape[1:]) != self.image_shape:
            raise argument_checks.invalid(
                "source", f"images of shape (batch, {', '.join(map(str, self.image_shape))})", shape
            )
        if "float" not in dtype and "int" not in dtype:
            raise argument_checks.invalid("source", "images of real pixel values", f"dtype {dtype}")
        return ops.cast(source, "float32")

    @property
    def source_signature(self):
        """The shape and dtype of a batch of sources, for a compiled decoder."""
        return (None, *self.image_shape), "float32"

    def regions(self, images, training=False):
        """The region vectors `a_1 … a_L`, `(batch, L, filters)`, row-major over the grid."""
        x = ops.cast(images, self.compute_dtype)
        for layer in self.region_layers:
            x = layer(x, training=training)
        if len(x.shape) == 4:  # a feature map (batch, rows, columns, D) ─▶ (batch, L, D)
            x = ops.reshape(x, (ops.shape(x)[0], self.num_regions, self.filters))
        if self.position_embedding is not None:
            x = self.position_embedding(x)
        return x

    def _encode(self, source, training):
        """The regions, an all-true mask over them, and the initial states from their mean."""
        memory = self.regions(source, training)
        mask = ops.ones(ops.shape(memory)[:2], dtype="bool")
        mean = ops.mean(memory, axis=1)  # ā
        initial_states = [self.initial_h(mean)]
        if self.initial_c is not None:
            initial_states.append(self.initial_c(mean))
        return memory, mask, initial_states

    def _decode(self, source, target, training):
        """The teacher-forced decoder pass: outputs `(batch, T, output_dim)` and `α`.

        The weights `(batch, T, L)` are zero at padded steps.
        """
        memory, mask, initial_states = self._encode(source, training)
        target_mask = ops.not_equal(ops.cast(target, "int32"), PAD_ID)
        y = self.target_embedding(self.shift_right(target))
        y = self.embedding_dropout(y, training=training)
        return self.decoder(
            y,
            memory,
            initial_state=initial_states,
            decoder_sequence_mask=target_mask,
            encoder_sequence_mask=mask,
            return_attention_scores=True,
            training=training,
        )

    def teacher_forced(self, source, target, training):
        outputs, weights = self._decode(source, target, training)
        if self.attention_penalty:
            self.add_loss(self.attention_penalty * doubly_stochastic_penalty(weights))
        return self._probabilities(self.output_dropout(outputs, training=training))

    def attention_weights(self, images, captions):
        """The weights `α_t` of the teacher-forced pass: where the model looks for each word.

        Args:
            images: `(batch, H, W, C)`.
            captions: `(batch, T)` int caption ids (ids, END, PAD), as a task
                stores them; the weights of step `t` are those read to write
                `captions[:, t]`.

        Returns:
            float32 `(batch, T, L)` weights over the regions (row-major over
            `region_grid`), zero at padded steps.
        """
        _, weights = self._decode(self.check_source(images), captions, False)
        return ops.cast(weights, "float32")

    def get_config(self):
        return {
            "image_shape": list(self.image_shape),
            "encoder": self.encoder,
            "filters": self.filters,
            "conv_layers": self.conv_layers,
            "patch_size": self.patch_size,
            **self._captioner_config(),
        }

    def _captioner_config(self):
        """The config of everything after the regions (shared with `AssembledShowAttendTell`)."""
        base = Seq2Seq.get_config(self)
        for key in ("source_vocab_size", "reverse_source"):
            del base[key]  # an image has no vocabulary and is not reversed
        return {
            **base,
            "region_positions": self.region_positions,
            "cell": self.cell,
            "units": self.units,
            "attention_units": self.attention_units,
            "embedding_dim": self.embedding_dim,
            "attention_penalty": self.attention_penalty,
        }


def doubly_stochastic_penalty(weights):
    """`Σ_i (1 − Σ_t α_ti)²`, averaged over the batch (Xu et al. 2015, eq. 14).

    Args:
        weights: `(batch, T, L)` attention weights, zero at padded steps.

    Returns:
        A float32 scalar.
    """
    coverage = ops.sum(ops.cast(weights, "float32"), axis=1)  # (batch, L)
    return ops.mean(ops.sum(ops.square(1.0 - coverage), axis=-1))
