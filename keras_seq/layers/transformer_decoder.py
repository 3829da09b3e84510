"""One Transformer decoder block (Vaswani et al. 2017), post-LN or pre-LN."""

from __future__ import annotations

import keras
from keras import ops

from keras_seq import argument_checks
from keras_seq.layers import masks
from keras_seq.layers.transformer_block import (
    TransformerBlockBase,
    attention_weight_count,
    check_block_input,
    check_heads,
    feedforward_weight_count,
)

_REGISTER = keras.saving.register_keras_serializable(package="keras_seq")


@_REGISTER
class TransformerDecoderBlock(TransformerBlockBase):
    """Causal self-attention, cross-attention to the encoder, and a feed-forward network.

    Each of the three sublayers is wrapped in a residual connection and layer
    normalisation. With `norm_first=False` (the paper, "post-LN"), for the
    decoder sequence `x` and the encoder output `m` ("memory"):

        x = LayerNorm(x + Dropout(MaskedMultiHead(x, x, x)))
        x = LayerNorm(x + Dropout(MultiHead(x, m, m)))
        y = LayerNorm(x + Dropout(FFN(x)))

    and with `norm_first=True` ("pre-LN"), the norm is first, as opposed to
    last:

        x = x + Dropout(MaskedMultiHead(LayerNorm(x)))
        x = x + Dropout(MultiHead(LayerNorm(x), m, m))
        y = x + Dropout(FFN(LayerNorm(x)))

    `MultiHead` and `FFN` are as in `TransformerEncoderBlock`. In the
    cross-attention the queries come from the decoder and the keys and values
    from the encoder output. The self-attention is always causal: position
    `t` attends only to positions `≤ t`, so the output up to `t` never depends
    on decoder tokens after `t` (the paper's "masking out ... all values in
    the input of the softmax which correspond to illegal connections").

    Masks, all built by `keras_seq.layers.masks.attention_mask`: the causal
    mask, and padding masks that stop attention to padded decoder steps
    (self-attention) and padded encoder steps (cross-attention). Each padding
    mask defaults to the Keras mask of its input (`Layer.__call__` fills in
    `<argument>_mask` from that argument's Keras mask, as it does for
    `MultiHeadAttention`'s `query_mask`), so an `Embedding(mask_zero=True)`
    upstream is enough; the output carries the decoder sequence's Keras mask.
    A query that may read nothing (a padded decoder step, or a row whose
    encoder sequence is all padding) gets zero attention weights and a zero
    context vector, as in every keras_seq attention layer. As in the encoder
    block, `dropout` is the paper's residual dropout only.

    Sublayers, named by role: `self_attention`, `self_attention_layer_norm`,
    `self_attention_dropout`, `cross_attention`,
    `cross_attention_layer_norm`, `cross_attention_dropout`,
    `feedforward_intermediate_dense`, `feedforward_output_dense`,
    `feedforward_layer_norm`, `feedforward_dropout`.

    Args:
        num_heads: `h`, the number of heads of both attentions; must divide
            the decoder's feature size `d_model`.
        ff_dim: The inner size `d_ff` of the feed-forward network.
        dropout: Residual dropout rate, `P_drop` (0.1 in the paper).
        norm_first: False for the paper's post-LN order, True for pre-LN.
        activation: The feed-forward activation (`"relu"` in the paper).
        layer_norm_epsilon: The epsilon of the three layer normalisations.
        seed: Optional seed of the dropout layers.

    Call arguments:
        decoder_sequence: `(batch, T_dec, d_model)`, the (shifted) target
            sequence.
        encoder_sequence: `(batch, T_enc, d_enc)`, the encoder output; `d_enc`
            may differ from `d_model`.
        decoder_sequence_mask: Optional boolean `(batch, T_dec)`, True at
            real decoder steps; defaults to the Keras mask of
            `decoder_sequence`.
        encoder_sequence_mask: Optional boolean `(batch, T_enc)`, True at
            real encoder steps; defaults to the Keras mask of
            `encoder_sequence`.
        training: Whether dropout is applied.
        return_attention_scores: Also return both attentions' weights.

    Returns:
        `(batch, T_dec, d_model)`; with `return_attention_scores=True`, the
        tuple `(outputs, self_attention_scores, cross_attention_scores)`,
        the weights of shapes `(batch, num_heads, T_dec, T_dec)` and
        `(batch, num_heads, T_dec, T_enc)`.

    Incremental decoding: `decode_step` computes one position `t` of the
    output from the input at `t` alone, reading positions `< t` from a cache of
    the self-attention's keys and values (`empty_self_attention_cache`), and
    the encoder output from its projected keys and values
    (`cross_attention_cache`, computed once per source sentence). Its output is
    `call`'s output at `t` for the same inputs at positions `≤ t` (the
    self-attention is causal), at a cost per step that does not grow with the
    positions already decoded, except for attention over them.

    Example:

    >>> target = np.random.rand(2, 4, 16).astype("float32")
    >>> memory = np.random.rand(2, 7, 16).astype("float32")
    >>> block = TransformerDecoderBlock(num_heads=4, ff_dim=32)
    >>> tuple(block(target, memory).shape)
    (2, 4, 16)
    >>> y, self_w, cross_w = block(target, memory, return_attention_scores=True)
    >>> tuple(self_w.shape), tuple(cross_w.shape)
    ((2, 4, 4, 4), (2, 4, 4, 7))

    References:
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017,
          Sections 3.1-3.3 and 5.4.
        - Xiong et al., "On Layer Normalization in the Transformer
          Architecture", ICML 2020.
    """

    def build(self, decoder_sequence_shape, encoder_sequence_shape):
        d_model = check_block_input(self, decoder_sequence_shape, "decoder_sequence")
        d_enc = check_block_input(self, encoder_sequence_shape, "encoder_sequence")
        d_k = check_heads(self, d_model)
        argument_checks.parameter_budget(
            self.name,
            attention_weight_count(d_model)
            + attention_weight_count(max(d_model, d_enc))
            + feedforward_weight_count(d_model, self.ff_dim)
            + 6 * d_model,  # three layer norms
        )
        self.self_attention = self._attention("self_attention", d_k)
        self.self_attention_layer_norm = self._layer_norm("self_attention_layer_norm")
        self.self_attention_dropout = self._dropout("self_attention_dropout", 1)
        self.cross_attention = self._attention("cross_attention", d_k)
        self.cross_attention_layer_norm = self._layer_norm("cross_attention_layer_norm")
        self.cross_attention_dropout = self._dropout("cross_attention_dropout", 3)
        decoder_shape, encoder_shape = (None, None, d_model), (None, None, d_enc)
        self.self_attention.build(decoder_shape, decoder_shape)
        self.self_attention_layer_norm.build(decoder_shape)
        self.cross_attention.build(decoder_shape, encoder_shape)
        self.cross_attention_layer_norm.build(decoder_shape)
        self._build_feedforward(d_model)
        self.built = True

    def call(
        self,
        decoder_sequence,
        encoder_sequence,
        decoder_sequence_mask=None,
        encoder_sequence_mask=None,
        training=None,
        return_attention_scores=False,
    ):
        length = ops.shape(decoder_sequence)[1]
        self_mask = masks.attention_mask(  # padding and causal, (batch, T_dec, T_dec)
            decoder_sequence_mask,
            decoder_sequence_mask,
            causal=True,
            query_length=length,
            value_length=length,
        )
        cross_mask = masks.attention_mask(  # padding, (batch, T_dec, T_enc)
            decoder_sequence_mask, encoder_sequence_mask
        )

        # Causal self-attention sublayer.
        residual = decoder_sequence
        x = self.self_attention_layer_norm(residual) if self.norm_first else residual
        x, self_scores = self._multi_head(
            self.self_attention, x, x, self_mask, training, return_attention_scores
        )
        x = self.self_attention_dropout(x, training=training)
        x = residual + x
        if not self.norm_first:
            x = self.self_attention_layer_norm(x)

        # Cross-attention sublayer: queries from the decoder, keys and values
        # from the encoder.
        residual = x
        if self.norm_first:
            x = self.cross_attention_layer_norm(x)
        x, cross_scores = self._multi_head(
            self.cross_attention, x, encoder_sequence, cross_mask, training, return_attention_scores
        )
        x = self.cross_attention_dropout(x, training=training)
        x = residual + x
        if not self.norm_first:
            x = self.cross_attention_layer_norm(x)

        # Feed-forward sublayer.
        x = self._feedforward_sublayer(x, training)
        if return_attention_scores:
            return x, self_scores, cross_scores
        return x

    def compute_output_spec(
        self,
        decoder_sequence,
        encoder_sequence,
        decoder_sequence_mask=None,
        encoder_sequence_mask=None,
        training=None,
        return_attention_scores=False,
    ):
        # From the shapes, without tracing `call` (see TransformerEncoderBlock).
        batch, target_length, d_model = decoder_sequence.shape
        source_length = encoder_sequence.shape[1]
        dtype = self.compute_dtype
        outputs = keras.KerasTensor((batch, target_length, d_model), dtype=dtype)
        if not return_attention_scores:
            return outputs
        heads = self.num_heads
        return (
            outputs,
            keras.KerasTensor((batch, heads, target_length, target_length), dtype=dtype),
            keras.KerasTensor((batch, heads, target_length, source_length), dtype=dtype),
        )

    # Incremental decoding ----------------------------------------------------------

    def cross_attention_cache(self, encoder_sequence):
        """The cross-attention's keys and values of the encoder output, for `decode_step`.

        Args:
            encoder_sequence: `(batch, T_enc, d_enc)`.

        Returns:
            `(keys, values)`, each `(batch, T_enc, num_heads, d_model / num_heads)`.
        """
        return self.cross_attention.project_key_value(ops.convert_to_tensor(encoder_sequence))

    def empty_self_attention_cache(self, batch_size, max_length):
        """Zero self-attention keys and values for `max_length` positions, for `decode_step`.

        Returns:
            `(keys, values)`, each `(batch_size, max_length, num_heads,
            d_model / num_heads)` in the block's compute dtype.
        """
        shape = (batch_size, max_length, self.num_heads, self.self_attention.key_dim)
        zeros = ops.zeros(shape, dtype=self.compute_dtype)
        return zeros, ops.zeros_like(zeros)

    def decode_step(
        self,
        decoder_step,
        position,
        self_attention_cache,
        cross_attention_cache,
        encoder_sequence_mask=None,
    ):
        """One decoder position `t` at inference, the earlier ones read from a cache.

        The three sublayers of `call` for the single query `x_t`: its
        self-attention keys and values `x_t W_K`, `x_t W_V` are written into
        the cache at `t`, and it attends to the cached positions `0 … t`
        (causal); it attends to the whole (unpadded) encoder output through
        `cross_attention_cache`. Dropout is not applied (inference).

        Args:
            decoder_step: `(batch, d_model)`, the block's input at position `t`.
            position: int `t` (0-based), a scalar or `(batch,)`; must be less
                than the cache's `max_length`.
            self_attention_cache: `(keys, values)` from
                `empty_self_attention_cache` or the previous `decode_step`,
                holding positions `0 … t − 1`.
            cross_attention_cache: `(keys, values)` from `cross_attention_cache`.
            encoder_sequence_mask: Optional boolean `(batch, T_enc)`, True at
                real encoder steps.

        Returns:
            `(outputs, self_attention_cache, cross_attention_scores)`: the
            block's output at `t` `(batch, d_model)`, the cache with position
            `t` written, and the cross-attention weights of `t`
            `(batch, num_heads, T_enc)`.
        """
        x = ops.expand_dims(ops.convert_to_tensor(decoder_step), 1)  # (batch, 1, d_model)
        keys, values = self_attention_cache
        batch = ops.shape(x)[0]
        position = ops.broadcast_to(ops.reshape(ops.cast(position, "int32"), (-1, 1)), (batch, 1))
        positions = ops.expand_dims(ops.arange(ops.shape(keys)[1], dtype="int32"), 0)
        here = ops.equal(positions, position)[:, :, None, None]  # (batch, L, 1, 1)
        seen = ops.expand_dims(ops.less_equal(positions, position), 1)  # (batch, 1, L): ≤ t

        # Causal self-attention sublayer, one query.
        residual = x
        h = self.self_attention_layer_norm(residual) if self.norm_first else residual
        new_keys, new_values = self.self_attention.project_key_value(h)
        keys = ops.where(here, ops.cast(new_keys, keys.dtype), keys)
        values = ops.where(here, ops.cast(new_values, values.dtype), values)
        h, _ = self.self_attention.attend(h, keys, values, seen)
        x = residual + h
        if not self.norm_first:
            x = self.self_attention_layer_norm(x)

        # Cross-attention sublayer.
        residual = x
        h = self.cross_attention_layer_norm(x) if self.norm_first else x
        cross_mask = None
        if encoder_sequence_mask is not None:
            cross_mask = ops.expand_dims(ops.cast(encoder_sequence_mask, "bool"), 1)
        h, cross_scores = self.cross_attention.attend(
            h, *cross_attention_cache, cross_mask, return_attention_scores=True
        )
        x = residual + h
        if not self.norm_first:
            x = self.cross_attention_layer_norm(x)

        x = self._feedforward_sublayer(x, False)
        return x[:, 0, :], (keys, values), cross_scores[:, :, 0, :]
