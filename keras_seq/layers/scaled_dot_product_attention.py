"""Scaled dot-product attention of Vaswani et al. (2017), on the backends' fused kernels."""

from __future__ import annotations

import math

import keras
from keras import ops

from keras_seq import argument_checks
from keras_seq.layers import masks
from keras_seq.layers.attention_base import BaseAttention


@keras.saving.register_keras_serializable(package="keras_seq")
class ScaledDotProductAttention(BaseAttention):
    """softmax(QKᵀ/√d_k)V, computed by `keras.ops.dot_product_attention` where it can be.

    The attention of the Transformer, without projections:

        Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V

    Dividing by `√d_k` keeps the dot products of `d_k`-dimensional vectors
    from growing with `d_k` and pushing the softmax into saturation.

    Two paths compute the same function:

    - Fused: `keras.ops.dot_product_attention`, which JAX and PyTorch run on
      a flash/fused kernel on GPU. Used unless one of the next cases holds.
    - Explicit: the weights are materialised, then `masked_softmax`. Used when
      `return_attention_scores=True` (a fused kernel never forms the
      weights), when dropout is active (`training=True`, `dropout > 0`), and
      when `d_v != d_k` (JAX's kernel needs equal sizes).

    Masks follow the rest of keras_seq on both paths: masked positions get
    weight exactly 0 and a query that can read no value gets a zero context
    (the fused output is multiplied by "this row has a valid key"). With
    `causal=True` and no padding mask, on equal static lengths, the fused path
    passes `is_causal=True` instead of a mask, which lets PyTorch use its
    causal flash kernel.

    Heads: `query`, `key` and `value` may carry a heads axis,
    `(batch, T, heads, d)` — the layout of `keras.ops.dot_product_attention` —
    so a multi-head layer can project, reshape and call this layer; the
    weights are then `(batch, heads, Tq, Tv)`. Masks stay `(batch, T)`.

    Args:
        causal: Let query `i` see only values `j ≤ i + (Tv − Tq)` (the lower
            triangle for self-attention; with `Tq < Tv`, the queries are the
            last `Tq` positions, as in incremental decoding).
        dropout: Fraction of the attention weights to drop in training.
        seed: Seed of the dropout.

    Call arguments:
        query: `Q`, `(batch, Tq, d_k)`, `(batch, d_k)` for one step, or
            `(batch, Tq, heads, d_k)`.
        value: `V`, `(batch, Tv, d_v)` or `(batch, Tv, heads, d_v)`.
        key: `K`, `(batch, Tv, d_k)` or `(batch, Tv, heads, d_k)`; defaults
            to `value`.
        query_mask: Optional boolean `(batch, Tq)`; masked query steps get
            zero output. Defaults to `query`'s Keras mask.
        value_mask: Optional boolean `(batch, Tv)`, False at padding.
            Defaults to `value`'s Keras mask.
        return_attention_scores: Also return the weights (before dropout).
        training: Whether dropout is applied.

    Returns:
        The output, `(batch, Tq, d_v)` (`(batch, d_v)` for one step,
        `(batch, Tq, heads, d_v)` with heads) and with
        `return_attention_scores=True` the weights `(batch, Tq, Tv)`
        (`(batch, Tv)`; `(batch, heads, Tq, Tv)` with heads).

    Example:

    >>> x = np.random.rand(2, 5, 8).astype("float32")
    >>> tuple(ScaledDotProductAttention(causal=True)(x, x).shape)  # self-attention
    (2, 5, 8)
    >>> q = np.random.rand(2, 3, 4, 16).astype("float32")  # (batch, Tq, heads, d_k)
    >>> kv = np.random.rand(2, 6, 4, 16).astype("float32")
    >>> out, w = ScaledDotProductAttention()(q, kv, return_attention_scores=True)
    >>> tuple(out.shape), tuple(w.shape)
    ((2, 3, 4, 16), (2, 4, 3, 6))

    References:
        - Vaswani et al., "Attention Is All You Need", NeurIPS 2017,
          Section 3.2.1.
    """

    value_ranks = (3, 4)

    def __init__(self, causal=False, dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.causal = argument_checks.boolean("causal", causal)
        self.dropout = argument_checks.rate("dropout", dropout)
        self.seed = None if seed is None else argument_checks.seed("seed", seed)
        self.seed_generator = keras.random.SeedGenerator(seed=seed)

    def check_dims(self, query_shape, value_shape, key_shape):
        if query_shape[-1] != key_shape[-1]:
            raise self.shape_error(
                "query and key must have the same feature size d_k",
                query_shape,
                value_shape,
                key_shape,
            )

    def attend(self, query, key, value, query_mask, value_mask, training, return_weights):
        heads = len(value.shape) == 4
        if not heads:  # one head: (batch, T, 1, d)
            query, key, value = (ops.expand_dims(t, 2) for t in (query, key, value))
        scale = 1.0 / math.sqrt(query.shape[-1])
        explicit = (
            return_weights
            or (training and self.dropout > 0.0)
            or value.shape[-1] != key.shape[-1]  # JAX's kernel needs d_v == d_k
        )

        native_causal = (
            self.causal
            and not explicit
            and query_mask is None
            and value_mask is None
            and isinstance(query.shape[1], int)
            and query.shape[1] == key.shape[1]
        )
        query_value_mask = None  # (batch, Tq, Tv)
        mask = None  # (batch, 1, Tq, Tv): one mask for every head
        if not native_causal:
            query_value_mask = self.attention_mask(query, key, query_mask, value_mask)
        if query_value_mask is not None:
            batch, q_len, v_len = ops.shape(query)[0], ops.shape(query)[1], ops.shape(key)[1]
            query_value_mask = ops.broadcast_to(query_value_mask, (batch, q_len, v_len))
            mask = ops.expand_dims(query_value_mask, 1)

        weights = None
        if explicit:
            query = query * ops.cast(scale, query.dtype)
            scores = ops.einsum("bqhd,bvhd->bhqv", query, key)  # (batch, heads, Tq, Tv)
            weights = masks.masked_softmax(scores, mask)
            dropped = weights
            if training and self.dropout > 0.0:
                dropped = keras.random.dropout(weights, self.dropout, seed=self.seed_generator)
            output = ops.einsum("bhqv,bvhd->bqhd", dropped, ops.cast(value, dropped.dtype))
        else:
            output = ops.dot_product_attention(
                query, key, value, mask=mask, scale=scale, is_causal=native_causal
            )  # (batch, Tq, heads, d_v)
            if mask is not None:
                # A query with no valid key gets zero output, as on the explicit path
                # (where `masked_softmax` gives it zero weights).
                output = masks.zero_unreadable_queries(output, query_value_mask)

        if not heads:
            output = ops.squeeze(output, 2)  # (batch, Tq, d_v)
            if weights is not None:
                weights = ops.squeeze(weights, 1)  # (batch, Tq, Tv)
        return output, weights

    def get_config(self):
        config = {"causal": self.causal, "dropout": self.dropout, "seed": self.seed}
        return {**super().get_config(), **config}
