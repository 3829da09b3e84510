"""The Transformer encoder–decoder of Vaswani et al. (2017).

    source ─▶ [reverse within length] ─▶ embedding·√d + positions ─▶ encoder block × N ─▶ memory
    target ─▶ shift right ─▶ embedding·√d + positions ─▶ decoder block × N ─▶ softmax

Design choices, each a documented departure or a choice the paper leaves open:

- The embeddings are multiplied by `√d_model` (Vaswani et al. 2017, Section
  3.4), and each stack ends with a `LayerNormalization` when
  `norm_first=True` (pre-LN).
- Dropout (`dropout`) acts after the positions are added and inside every
  block (the paper's residual dropout).
- `decode_step` runs each decoder block on the new position only
  (`TransformerDecoderBlock.decode_step`): the self-attention keys and
  values of earlier positions come from a per-block cache of `max_length`
  positions, and the encoder output's cross-attention keys and values are
  projected once, in `encode`. A step then costs the same at every
  position, apart from attention over the cache. `max_length` bounds the
  target length that `decode_step` can produce (`max_decode_length`).
"""

from __future__ import annotations

import math

import keras
from keras import ops

from keras_seq import argument_checks
from keras_seq.layers import (
    LearnedPositionalEmbedding,
    SinusoidalPositionalEncoding,
    TransformerDecoderBlock,
    TransformerEncoderBlock,
)
from keras_seq.models.seq2seq_base import MAX_LAYERS, PAD_ID, Seq2Seq

_REGISTER = keras.saving.register_keras_serializable(package="keras_seq")

POSITIONS = ("sinusoidal", "learned")


def decoder_arguments(
    num_layers, embedding_dim, num_heads, ff_dim, norm_first, max_length, positions
):
    """The Transformer's own arguments, each checked (`ValueError` naming it), by name."""
    return {
        "num_layers": argument_checks.positive_int("num_layers", num_layers, MAX_LAYERS),
        "embedding_dim": argument_checks.positive_int(
            "embedding_dim", embedding_dim, argument_checks.MAX_UNITS
        ),
        "num_heads": argument_checks.positive_int(
            "num_heads", num_heads, argument_checks.MAX_UNITS
        ),
        "ff_dim": argument_checks.positive_int("ff_dim", ff_dim, argument_checks.MAX_UNITS),
        "norm_first": argument_checks.boolean("norm_first", norm_first),
        "max_length": argument_checks.positive_int("max_length", max_length, 2**20),
        "positions": argument_checks.one_of("positions", positions, POSITIONS),
    }


@_REGISTER
class TransformerSeq2Seq(Seq2Seq):
    """`num_layers` Transformer encoder and decoder blocks, with self- and cross-attention.

        p(y_t | y_{<t}, x) = softmax(W_o o_t + b_o)

    where `o_t` is the output of the last decoder block at step `t` (see
    `TransformerEncoderBlock` and `TransformerDecoderBlock` for the blocks'
    equations, and the module docstring for the design choices).

    Args:
        source_vocab_size: Source token ids, the 4 reserved ids included.
        target_vocab_size: Target token ids, the 4 reserved ids included.
        num_layers: Encoder blocks, and decoder blocks. Default 1.
        embedding_dim: `d_model`, the width of the token embeddings and of
            every block. Default 64.
        num_heads: Attention heads; must divide `embedding_dim`. Default 4.
        ff_dim: Inner size of the feed-forward networks. Default 128.
        norm_first: Pre-LN blocks. Default False (post-LN).
        max_length: The longest target `decode_step` can produce, and, with
            learned positions, the longest source and target. Default 128.
        positions: `"sinusoidal"` (default) or `"learned"`.
        reverse_source: Reverse each source within its length before
            encoding (Sutskever et al. 2014). Default False.
        dropout: Dropout rate after the positions and inside every block.
            Default 0.
        **kwargs: Model keywords (`name`, `trainable`, `dtype`), see `Seq2Seq`.

    Call arguments:
        inputs: A dict with `"source"` `(batch, S)` and `"target"` `(batch, T)`
            int ids, right-padded with PAD = 0.
        training: Whether dropout is applied.

    Returns:
        `(batch, T, target_vocab_size)` float32 probabilities.

    `encode(source)` returns `"source_mask"` bool `(batch, S)`, `"step"`
    int32 `(batch,)` and, for each decoder block `i`, its cross-attention
    keys and values of the encoder output, `"cross_keys_i"` and
    `"cross_values_i"` `(batch, S, num_heads, d_k)`, and its self-attention
    cache (`TransformerDecoderBlock.decode_step`), `"self_keys_i"` and
    `"self_values_i"` `(batch, max_length, num_heads, d_k)`.
    `decode_step`'s attention is the last decoder block's cross-attention,
    averaged over heads.

    Example:

    >>> model = TransformerSeq2Seq(20, 30, num_layers=2, embedding_dim=16, max_length=10)
    >>> source = np.array([[5, 6, 7, 0]]); target = np.array([[8, 9, 2]])
    >>> tuple(model({"source": source, "target": target}).shape)
    (1, 3, 30)
    >>> log_probs, state, attention = model.decode_step(np.array([1]), model.encode(source))
    >>> tuple(log_probs.shape), tuple(attention.shape), model.max_decode_length
    ((1, 30), (1, 4), 10)

    References:
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017.
    """

    architecture = "transformer"

    def __init__(
        self,
        source_vocab_size,
        target_vocab_size,
        num_layers=1,
        embedding_dim=64,
        num_heads=4,
        ff_dim=128,
        norm_first=False,
        max_length=128,
        positions="sinusoidal",
        reverse_source=False,
        dropout=0.0,
        **kwargs,
    ):
        arguments = decoder_arguments(
            num_layers, embedding_dim, num_heads, ff_dim, norm_first, max_length, positions
        )
        for name, value in arguments.items():
            setattr(self, name, value)
        super().__init__(
            source_vocab_size,
            target_vocab_size,
            reverse_source=reverse_source,
            dropout=dropout,
            **kwargs,
        )

    @property
    def max_decode_length(self):
        """The most steps `decode_step` can take: `max_length`."""
        return self.max_length

    # Validation and layers ---------------------------------------------------------

    def _check_arguments(self):
        if self.embedding_dim % self.num_heads:
            raise ValueError(
                f"Received an invalid value for argument `num_heads`, expected a divisor of "
                f"embedding_dim={self.embedding_dim} (each head gets embedding_dim / num_heads "
                f"features), got {self.num_heads!r}."
            )
        self._check_budgets(self.embedding_dim)
        if self.positions == "learned":
            argument_checks.parameter_budget(
                "position_embedding", self.max_length * self.embedding_dim
            )

    def _make_layers(self):
        self._make_encoder_layers()
        self._make_decoder_layers()

    def _block_arguments(self):
        return {
            "num_heads": self.num_heads,
            "ff_dim": self.ff_dim,
            "dropout": self.dropout,
            "norm_first": self.norm_first,
            "dtype": self.dtype_policy,
        }

    def _make_encoder_layers(self):
        """The source's positions (shared when sinusoidal), the encoder blocks and norm."""
        if self.positions == "learned":
            self.source_position_embedding = LearnedPositionalEmbedding(
                self.max_length, name="source_position_embedding", dtype=self.dtype_policy
            )
        self.encoder_blocks = [
            TransformerEncoderBlock(**self._block_arguments(), name=f"encoder_block_{i}")
            for i in range(self.num_layers)
        ]
        if self.norm_first:
            self.encoder_layer_norm = keras.layers.LayerNormalization(
                epsilon=1e-5, name="encoder_layer_norm", dtype=self.dtype_policy
            )

    def _make_decoder_layers(self):
        """The target's positions, the dropout after them, the decoder blocks and norm."""
        if self.positions == "sinusoidal":  # no weights: one layer serves both sides
            self.position_encoding = SinusoidalPositionalEncoding(
                name="position_encoding", dtype=self.dtype_policy
            )
        else:
            self.target_position_embedding = LearnedPositionalEmbedding(
                self.max_length, name="target_position_embedding", dtype=self.dtype_policy
            )
        self.embedding_dropout = keras.layers.Dropout(
            self.dropout, name="embedding_dropout", dtype=self.dtype_policy
        )
        self.decoder_blocks = [
            TransformerDecoderBlock(**self._block_arguments(), name=f"decoder_block_{i}")
            for i in range(self.num_layers)
        ]
        if self.norm_first:
            self.decoder_layer_norm = keras.layers.LayerNormalization(
                epsilon=1e-5, name="decoder_layer_norm", dtype=self.dtype_policy
            )

    def _build_layers(self):
        features = (None, None, self.embedding_dim)
        self.source_embedding.build((None, None))
        self._positions("source").build(features)
        for block in self.encoder_blocks:
            block.build(features)
        if self.norm_first:
            self.encoder_layer_norm.build(features)
        self._build_decoder_layers(features)

    def _build_decoder_layers(self, memory_shape):
        """The target side's weights, its cross-attention reading `memory_shape`."""
        features = (None, None, self.embedding_dim)
        self.target_embedding.build((None, None))
        self._positions("target").build(features)
        for block in self.decoder_blocks:
            block.build(features, memory_shape)
        if self.norm_first:
            self.decoder_layer_norm.build(features)
        self.output_projection.build(features)

    # The pass and the steps --------------------------------------------------------

    def _positions(self, side):
        if self.positions == "sinusoidal":
            return self.position_encoding
        return getattr(self, f"{side}_position_embedding")

    def _embed(self, tokens, side, training):
        """`embedding(tokens) · √d_model + positions`, then dropout."""
        embedding = getattr(self, f"{side}_embedding")
        x = embedding(tokens) * ops.cast(math.sqrt(self.embedding_dim), embedding.compute_dtype)
        return self.embedding_dropout(self._positions(side)(x), training=training)

    def _encode(self, source, training):
        source, source_mask = self._prepare_source(source)
        x = self._embed(source, "source", training)
        for block in self.encoder_blocks:
            x = block(x, mask=source_mask, training=training)
        if self.norm_first:
            x = self.encoder_layer_norm(x)
        return x, source_mask

    def _decode(self, tokens, mask, memory, source_mask, training):
        """The decoder stack over `tokens` `(batch, T)`: `(batch, T, d_model)`."""
        y = self._embed(tokens, "target", training)
        for block in self.decoder_blocks:
            y = block(
                y,
                memory,
                decoder_sequence_mask=mask,
                encoder_sequence_mask=source_mask,
                training=training,
            )
        if self.norm_first:
            y = self.decoder_layer_norm(y)
        return y

    def teacher_forced(self, source, target, training):
        memory, source_mask = self._encode(source, training)
        target_mask = ops.not_equal(ops.cast(target, "int32"), PAD_ID)
        y = self._decode(self.shift_right(target), target_mask, memory, source_mask, training)
        return self._probabilities(y)

    def initial_state(self, source):
        memory, source_mask = self._encode(source, False)
        batch = ops.shape(source_mask)[0]
        state = {"source_mask": source_mask, "step": ops.zeros((batch,), dtype="int32")}
        for index, block in enumerate(self.decoder_blocks):
            # The encoder output enters each block only through its cross-attention keys and
            # values: projected once here, not at every step.
            state[f"cross_keys_{index}"], state[f"cross_values_{index}"] = (
                block.cross_attention_cache(memory)
            )
            state[f"self_keys_{index}"], state[f"self_values_{index}"] = (
                block.empty_self_attention_cache(batch, self.max_length)
            )
        return state

    def step(self, tokens, state):
        """One position through the decoder stack, with each block's key/value cache."""
        step = ops.minimum(state["step"], self.max_length - 1)  # (batch,)
        embedding = self.target_embedding
        x = embedding(ops.cast(tokens, "int32"))  # (batch, d_model)
        x = x * ops.cast(math.sqrt(self.embedding_dim), embedding.compute_dtype)
        # What the positions layer adds at each position: its output for zeros.
        table = self._positions("target")(
            ops.zeros((1, self.max_length, self.embedding_dim), dtype=embedding.compute_dtype)
        )[0]
        x = x + ops.take(table, step, axis=0)
        new_state = dict(state)
        cross = None
        for index, block in enumerate(self.decoder_blocks):
            x, (keys, values), cross = block.decode_step(
                x,
                step,
                (state[f"self_keys_{index}"], state[f"self_values_{index}"]),
                (state[f"cross_keys_{index}"], state[f"cross_values_{index}"]),
                state["source_mask"],
            )
            new_state[f"self_keys_{index}"], new_state[f"self_values_{index}"] = keys, values
        if self.norm_first:
            x = self.decoder_layer_norm(x)
        weights = ops.mean(ops.cast(cross, "float32"), axis=1)  # (batch, S), heads averaged
        new_state["step"] = state["step"] + 1
        return self._log_probabilities(x), new_state, weights

    def get_config(self):
        return {
            **super().get_config(),
            "num_layers": self.num_layers,
            "embedding_dim": self.embedding_dim,
            "num_heads": self.num_heads,
            "ff_dim": self.ff_dim,
            "norm_first": self.norm_first,
            "max_length": self.max_length,
            "positions": self.positions,
        }
