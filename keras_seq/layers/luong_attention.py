"""Global attention of Luong, Pham & Manning (2015), with its three score functions."""

from __future__ import annotations

import keras
from keras import initializers, ops

from keras_seq import argument_checks
from keras_seq.layers.attention_base import BaseAttention

SCORES = ("dot", "general", "concat")


@keras.saving.register_keras_serializable(package="keras_seq")
class LuongAttention(BaseAttention):
    """Global attention with the dot, general or concat score of Luong et al. (2015).

    The current decoder state `h_t` (the query) scores every source state
    `h̄_s` (the keys); the context is the weighted sum of the values:

        dot:      score(h_t, h̄_s) = h_tᵀ h̄_s
        general:  score(h_t, h̄_s) = h_tᵀ W_a h̄_s
        concat:   score(h_t, h̄_s) = v_aᵀ tanh(W_a [h_t; h̄_s])
        a_t = softmax(score(h_t, h̄_·)),   c_t = Σ_s a_ts h̄_s

    `dot` has no weights and needs `d_q == d_k`. `general` holds `W_a` as
    `key_projection` `(d_k, d_q)`, applied to the key. `concat` holds the two
    column blocks of `W_a` (`W_a [h_t; h̄_s] = W_q h_t + W_k h̄_s`) as
    `query_projection` `(d_q, units)` and `key_projection` `(d_k, units)`, and
    `v_a` as `score_vector` `(units,)`: the same function as
    `BahdanauAttention`, applied to the current rather than the previous
    decoder state. As in the paper, the scores are not scaled and no weight
    has a bias.

    The layer returns the context `c_t`; the paper's attentional state
    `h̃_t = tanh(W_c [c_t; h_t])` is a `Dense` layer of the model around it.

    Args:
        score: `"dot"`, `"general"` or `"concat"`.
        units: The hidden size of the concat score (required for, and only
            accepted with, `score="concat"`).
        kernel_initializer: Initializer of the weights.

    Call arguments:
        query: The decoder state `h_t`, `(batch, d_q)` for one step or
            `(batch, Tq, d_q)`.
        value: The source states `h̄_s`, `(batch, Tv, d_v)`.
        key: Optional `(batch, Tv, d_k)`; defaults to `value`.
        query_mask: Optional boolean `(batch, Tq)` (or `(batch,)`); masked
            query steps get zero context. Defaults to `query`'s Keras mask.
        value_mask: Optional boolean `(batch, Tv)`, False at padding.
            Defaults to `value`'s Keras mask.
        return_attention_scores: Also return the alignment weights `a_t`.
        training: Unused (the layer has no dropout).

    Returns:
        The context `c_t`, `(batch, d_v)` or `(batch, Tq, d_v)`, and with
        `return_attention_scores=True` also `a_t`, `(batch, Tv)` or
        `(batch, Tq, Tv)`.

    Example:

    >>> h_t = np.array([[0.5, 0.3, -0.1, 0.7]], "float32")
    >>> h_s = np.array([[[0.2, -0.1, 0.5, 0.3], [0.8, 0.4, -0.2, 0.1]]], "float32")
    >>> context, a = LuongAttention("dot")(h_t, h_s, return_attention_scores=True)
    >>> np.round(keras.ops.convert_to_numpy(a), 2)  # softmax([0.23, 0.61])
    array([[0.41, 0.59]], dtype=float32)
    >>> tuple(LuongAttention("concat", units=8)(h_t, h_s).shape)
    (1, 4)

    References:
        - Luong, Pham & Manning, "Effective Approaches to Attention-based
          Neural Machine Translation", EMNLP 2015, Section 3.1.
    """

    def __init__(self, score="dot", units=None, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.score = argument_checks.one_of("score", score, SCORES)
        if score == "concat":
            if units is None:
                raise argument_checks.invalid(
                    "units",
                    "a positive integer, the hidden size of W_a, which score='concat' needs",
                    units,
                )
            units = argument_checks.positive_int("units", units, argument_checks.MAX_UNITS)
        elif units is not None:
            raise argument_checks.invalid(
                "units", f"None with score={score!r} (only 'concat' has a hidden layer)", units
            )
        self.units = units
        self.kernel_initializer = initializers.get(kernel_initializer)

    def check_dims(self, query_shape, value_shape, key_shape):
        if self.score == "dot" and query_shape[-1] != key_shape[-1]:
            raise self.shape_error(
                "score='dot' needs query and key of the same feature size "
                "(use score='general' or 'concat' for different sizes)",
                query_shape,
                value_shape,
                key_shape,
            )

    def build_scores(self, query_dim, key_dim):
        if self.score == "general":
            argument_checks.parameter_budget(self.name, key_dim * query_dim)
            self.key_projection = self.add_kernel("key_projection", (key_dim, query_dim))
        elif self.score == "concat":
            self.build_additive(query_dim, key_dim, self.units)

    def scores(self, query, key):
        if self.score == "concat":
            return self.additive_scores(query, key)
        if self.score == "general":
            key = ops.matmul(key, self.key_projection)  # W_a h̄_s: (batch, Tv, d_q)
        return ops.matmul(query, ops.swapaxes(key, -1, -2))  # (batch, Tq, Tv)

    def get_config(self):
        config = {
            "score": self.score,
            "units": self.units,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
        }
        return {**super().get_config(), **config}
