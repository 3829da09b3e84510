"""Additive attention of Bahdanau, Cho & Bengio (2015)."""

from __future__ import annotations

import keras
from keras import initializers

from keras_seq import argument_checks
from keras_seq.layers.attention_base import BaseAttention


@keras.saving.register_keras_serializable(package="keras_seq")
class BahdanauAttention(BaseAttention):
    """Additive attention: a small network scores each encoder state against the decoder state.

    Seq2seq squeezed the whole source sentence into one fixed vector; Bahdanau
    et al. let the decoder read a different mixture of the encoder states
    `h_j` at each step. With the previous decoder state `s_{t-1}` as the query:

        e_tj = v_aᵀ tanh(W_a s_{t-1} + U_a h_j)
        α_t  = softmax(e_t)
        c_t  = Σ_j α_tj h_j

    `W_a` is the weight `query_projection` `(d_q, units)`, `U_a` is
    `key_projection` `(d_k, units)` and `v_a` is `score_vector` `(units,)`; as
    in the paper there are no biases. The scores read `key` (default: `value`)
    and the context mixes `value`.

    Masked value steps get weight exactly 0; a query with every value masked
    gets all-zero weights and a zero context.

    Args:
        units: Positive integer, the size of the hidden layer of the score
            network (the paper's `n'`).
        kernel_initializer: Initializer of `W_a`, `U_a` and `v_a`.

    Call arguments:
        query: The decoder state: `(batch, d_q)` for one step, or
            `(batch, Tq, d_q)` for several (teacher forcing).
        value: The encoder states `h_j`, `(batch, Tv, d_v)`.
        key: Optional `(batch, Tv, d_k)`; defaults to `value`.
        query_mask: Optional boolean `(batch, Tq)` (or `(batch,)`); masked
            query steps get zero context. Defaults to `query`'s Keras mask.
        value_mask: Optional boolean `(batch, Tv)`, False at padding.
            Defaults to `value`'s Keras mask.
        return_attention_scores: Also return the weights `α`.
        training: Unused (the layer has no dropout).

    Returns:
        The context `c`, `(batch, d_v)` or `(batch, Tq, d_v)`, and with
        `return_attention_scores=True` also `α`, `(batch, Tv)` or
        `(batch, Tq, Tv)`.

    Example:

    >>> attention = BahdanauAttention(16)
    >>> s = np.random.rand(2, 8).astype("float32")  # decoder state s_{t-1}
    >>> h = np.random.rand(2, 5, 6).astype("float32")  # encoder states h_1 … h_5
    >>> context, weights = attention(s, h, return_attention_scores=True)
    >>> tuple(context.shape), tuple(weights.shape)
    ((2, 6), (2, 5))

    References:
        - Bahdanau, Cho & Bengio, "Neural Machine Translation by Jointly
          Learning to Align and Translate", ICLR 2015, Appendix A.1.2.
    """

    def __init__(self, units, kernel_initializer="glorot_uniform", **kwargs):
        super().__init__(**kwargs)
        self.units = argument_checks.positive_int("units", units, argument_checks.MAX_UNITS)
        self.kernel_initializer = initializers.get(kernel_initializer)

    def build_scores(self, query_dim, key_dim):
        self.build_additive(query_dim, key_dim, self.units)

    def scores(self, query, key):
        return self.additive_scores(query, key)

    def get_config(self):
        config = {
            "units": self.units,
            "kernel_initializer": initializers.serialize(self.kernel_initializer),
        }
        return {**super().get_config(), **config}
