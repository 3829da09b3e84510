"""The attention of pointer networks (Vinyals, Fortunato & Jaitly 2015)."""

from __future__ import annotations

import keras

from keras_seq.layers import masks
from keras_seq.layers.bahdanau_attention import BahdanauAttention


@keras.saving.register_keras_serializable(package="keras_seq")
class PointerAttention(BahdanauAttention):
    """Attention whose weights are the output: a distribution over input positions.

    A pointer network's output vocabulary is the set of positions of its
    input, so it cannot be a fixed softmax layer. Vinyals et al. use the
    attention weights themselves as the output distribution, with encoder
    states `e_j` and decoder state `d_i`:

        u_ij = vᵀ tanh(W_1 e_j + W_2 d_i)
        p(C_i | C_1, …, C_{i-1}, P) = softmax(u_i)

    and, unlike other attention, do not blend the `e_j` into a context vector.
    `W_1` is the weight `key_projection` `(d_k, units)`, `W_2` is
    `query_projection` `(d_q, units)` and `v` is `score_vector` `(units,)`.

    Masked positions — padding, or positions already chosen, passed as
    `value_mask` — get probability exactly 0; a decoder step with every
    position masked gets all zeros (not a distribution, and never NaN).

    Args:
        units: Positive integer, the hidden size of the score network.
        kernel_initializer: Initializer of `W_1`, `W_2` and `v`.

    Call arguments:
        query: The decoder state `d_i`, `(batch, d_q)` for one step or
            `(batch, Tq, d_q)`.
        value: The encoder states `e_j`, `(batch, Tv, d_v)`: the positions to
            point at.
        key: Optional `(batch, Tv, d_k)` the scores read instead of `value`.
        query_mask: Optional boolean `(batch, Tq)` (or `(batch,)`); masked
            decoder steps get all-zero output. Defaults to `query`'s Keras mask.
        value_mask: Optional boolean `(batch, Tv)`, False at positions that
            may not be chosen, or `(batch, Tq, Tv)` with a query sequence for
            a different mask at each decoder step (the positions already
            chosen). Defaults to `value`'s Keras mask.
        return_attention_scores: Accepted for the shared calling convention;
            the output already is the distribution, so the layer then returns
            it twice.
        training: Unused (the layer has no dropout).

    Returns:
        The distribution `p`, `(batch, Tv)` or `(batch, Tq, Tv)`; with
        `return_attention_scores=True`, the pair `(p, p)`.

    Example:

    >>> e = np.random.rand(2, 5, 3).astype("float32")  # 5 input points
    >>> d = np.random.rand(2, 8).astype("float32")  # one decoder step
    >>> chosen = np.array([[True, True, False, True, True]] * 2)  # point 3 is taken
    >>> p = PointerAttention(16)(d, e, value_mask=chosen)
    >>> tuple(p.shape), float(keras.ops.convert_to_numpy(p)[0, 2])
    ((2, 5), 0.0)

    References:
        - Vinyals, Fortunato & Jaitly, "Pointer Networks", NeurIPS 2015,
          Section 2.3.
    """

    # The score network is Bahdanau's, vᵀ tanh(W_1 e_j + W_2 d_i), with the same
    # arguments and weights; only what is returned differs.

    def attend(self, query, key, value, query_mask, value_mask, training, return_weights):
        mask = self.attention_mask(query, key, query_mask, value_mask)
        pointer = masks.masked_softmax(self.scores(query, key), mask)  # (batch, Tq, Tv)
        return pointer, pointer
