"""The calling convention every keras_seq attention layer shares.

`BaseAttention` is not in `keras_seq.layers.__all__`: it computes nothing by
itself. Subclass it to write a new score function; the subclass then takes
the same arguments, masks and shapes as the layers here.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_seq import argument_checks
from keras_seq.layers import masks


class BaseAttention(keras.layers.Layer):
    """Attention over `value` for each step of `query`: the shared calling convention.

    A subclass supplies the score `e_ij` of query `i` against key `j` by
    implementing `build_scores(query_dim, key_dim)` (create weights) and
    `scores(query, key)` (return `(batch, Tq, Tv)`). The base class then computes

        α_i = masked_softmax(e_i),   c_i = Σ_j α_ij v_j

    with masks built by `keras_seq.layers.masks`: masked value steps get weight
    exactly 0, and a query that can read no value (all keys masked, or the
    query step masked) gets all-zero weights, hence a zero context vector.
    Subclasses may override `attend` to compute the weights differently.

    Masks: if `query_mask` or `value_mask` is not given, the Keras mask of
    `query` or `value` (e.g. from `Embedding(mask_zero=True)`) is used, as in
    `keras.layers.MultiHeadAttention` (`Layer.__call__` fills in each
    `<argument>_mask` from that argument's Keras mask). The context carries the
    query's Keras mask on to later layers.

    Call arguments:
        query: `(batch, Tq, d_q)`, or `(batch, d_q)` for one decoder step.
        value: `(batch, Tv, d_v)`.
        key: Optional `(batch, Tv, d_k)`; defaults to `value`.
        query_mask: Optional boolean `(batch, Tq)` (`(batch,)` for one step),
            True at real query steps.
        value_mask: Optional boolean `(batch, Tv)`, True at value steps that
            may be attended to; it masks `key` too.
        return_attention_scores: Also return the attention weights α.
        training: Whether dropout (where a layer has it) is applied.

    Returns:
        The context `(batch, Tq, d_v)` (`(batch, d_v)` for one step) and, with
        `return_attention_scores=True`, the weights `(batch, Tq, Tv)`
        (`(batch, Tv)` for one step).
    """

    # The ranks `value` may have; a subclass that accepts a heads axis widens it.
    value_ranks = (3,)
    # Whether `attention_mask` adds the causal mask; a layer that offers it sets it.
    causal = False

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    # Subclass hooks ---------------------------------------------------------

    def build_scores(self, query_dim, key_dim):
        """Creates the score function's weights (none by default)."""

    def scores(self, query, key):
        """Returns the scores `e`, `(batch, Tq, Tv)`, of `query` `(batch, Tq, d_q)`
        against `key` `(batch, Tv, d_k)`."""
        raise NotImplementedError(f"{type(self).__name__} must implement `scores`.")

    def check_dims(self, query_shape, value_shape, key_shape):
        """Raises if the feature sizes do not fit the score (any fit by default)."""

    def attend(self, query, key, value, query_mask, value_mask, training, return_weights):
        """Returns `(context, weights)` for a query sequence `(batch, Tq, ...)`."""
        mask = self.attention_mask(query, key, query_mask, value_mask)
        weights = masks.masked_softmax(self.scores(query, key), mask)  # (batch, Tq, Tv)
        context = ops.matmul(weights, ops.cast(value, weights.dtype))  # (batch, Tq, d_v)
        return context, weights

    # Shared machinery -------------------------------------------------------

    def attention_mask(self, query, key, query_mask, value_mask):
        """The combined `(batch, Tq, Tv)` mask (broadcastable), or None."""
        return masks.attention_mask(
            query_mask,
            value_mask,
            causal=self.causal,
            query_length=ops.shape(query)[1],
            value_length=ops.shape(key)[1],
        )

    def shape_error(self, problem, query_shape, value_shape, key_shape=None):
        """A ValueError that names the problem and every input shape."""
        shapes = f"query shape {_shape(query_shape)}, value shape {_shape(value_shape)}"
        if key_shape is not None:
            shapes += f", key shape {_shape(key_shape)}"
        return ValueError(f"{type(self).__name__}: {problem}; got {shapes}.")

    def check_shapes(self, query_shape, value_shape, key_shape=None):
        """Checks ranks, time and head axes, then the subclass's `check_dims`."""
        key_given = key_shape is not None
        key_shape = tuple(value_shape) if key_shape is None else tuple(key_shape)
        query_shape, value_shape = tuple(query_shape), tuple(value_shape)
        shown_key = key_shape if key_given else None

        def error(problem):
            return self.shape_error(problem, query_shape, value_shape, shown_key)

        rank = len(value_shape)
        if rank not in self.value_ranks:
            expected = " or ".join(_RANK_NAMES[r] for r in self.value_ranks)
            raise error(f"value must have shape {expected}")
        if len(key_shape) != rank:
            raise error("key and value must have the same rank")
        if len(query_shape) not in (rank, rank - 1):
            raise error(
                "query must have the rank of value (a query sequence) or one less "
                "(a single decoder step)"
            )
        if not _compatible(key_shape[1], value_shape[1]):
            raise error("key and value must have the same number of time steps")
        if rank == 4:
            heads = [query_shape[-2], key_shape[-2], value_shape[-2]]
            if not (_compatible(heads[0], heads[1]) and _compatible(heads[1], heads[2])):
                raise error("query, key and value must have the same number of heads")
        batches = [query_shape[0], key_shape[0], value_shape[0]]
        if not (_compatible(batches[0], batches[1]) and _compatible(batches[1], batches[2])):
            raise error("query, key and value must have the same batch size")
        if query_shape[-1] is None or key_shape[-1] is None or value_shape[-1] is None:
            raise error("the feature (last) axes must have known sizes")
        self.check_dims(query_shape, value_shape, key_shape)

    def build(self, query_shape, value_shape, key_shape=None):
        self.check_shapes(query_shape, value_shape, key_shape)
        key_dim = (value_shape if key_shape is None else key_shape)[-1]
        self.build_scores(int(query_shape[-1]), int(key_dim))
        self.built = True

    def add_kernel(self, name, shape):
        """Adds a weight initialised by the layer's `kernel_initializer`."""
        return self.add_weight(name=name, shape=shape, initializer=self.kernel_initializer)

    def build_additive(self, query_dim, key_dim, units):
        """Creates W (`query_projection`), U (`key_projection`), v (`score_vector`)
        of the additive score `vᵀ tanh(W q + U k)`."""
        argument_checks.parameter_budget(self.name, (query_dim + key_dim + 1) * units)
        self.query_projection = self.add_kernel("query_projection", (query_dim, units))
        self.key_projection = self.add_kernel("key_projection", (key_dim, units))
        self.score_vector = self.add_kernel("score_vector", (units,))

    def additive_scores(self, query, key):
        """`e_ij = vᵀ tanh(W q_i + U k_j)`, from the weights of `build_additive`."""
        projected_query = ops.matmul(query, self.query_projection)  # (batch, Tq, units)
        projected_key = ops.matmul(key, self.key_projection)  # (batch, Tv, units)
        return additive_score(projected_query, projected_key, self.score_vector)

    def call(
        self,
        query,
        value,
        key=None,
        query_mask=None,
        value_mask=None,
        return_attention_scores=False,
        training=None,
    ):
        # Keras has already filled in `query_mask` and `value_mask` from the
        # Keras masks of `query` and `value` where they were not given.
        if key is None:
            key = value
        self.check_shapes(query.shape, value.shape, key.shape)

        single_step = len(query.shape) == len(value.shape) - 1
        if single_step:  # one decoder step: a query sequence of length 1
            query = ops.expand_dims(query, 1)
            if query_mask is not None:
                query_mask = ops.expand_dims(query_mask, 1)

        context, weights = self.attend(
            query, key, value, query_mask, value_mask, bool(training), return_attention_scores
        )
        if single_step:
            context = ops.squeeze(context, 1)
            if weights is not None:
                weights = ops.squeeze(weights, -2)
        if return_attention_scores:
            return context, weights
        return context

    def compute_mask(self, query, previous_mask=None):
        # Keras passes the query's mask as `previous_mask`: the context has
        # one step per query step, so it keeps that mask.
        return previous_mask


def additive_score(projected_query, projected_key, score_vector, in_loop=False):
    """The additive score `e_ij = vᵀ tanh(W q_i + U k_j)` of projected queries and keys.

    The one implementation of Bahdanau et al.'s score (and Luong's concat):
    `BaseAttention.additive_scores` calls it, and so does `RecurrentDecoder`
    inside its loop over time, with keys projected once per sentence.

    The product with `v` is one batched matrix product over the
    `(batch, Tq, Tv, units)` hidden tensor (on a CPU under TensorFlow about a
    quarter faster per training step than a multiply and a sum,
    `benchmarks/peers.py`). Inside a TensorFlow while loop (`in_loop=True`)
    it is an elementwise product and a sum instead, since XLA cannot
    differentiate the rank-4 product there.

    Args:
        projected_query: `W q`, `(batch, Tq, units)`.
        projected_key: `U k`, `(batch, Tv, units)`.
        score_vector: `v`, `(units,)`.
        in_loop: Called inside a loop over time (`RecurrentDecoder`).

    Returns:
        The scores `(batch, Tq, Tv)`.
    """
    hidden = ops.tanh(
        ops.expand_dims(projected_query, 2) + ops.expand_dims(projected_key, 1)
    )  # (batch, Tq, Tv, units)
    score_vector = ops.cast(score_vector, hidden.dtype)
    if in_loop:
        return ops.sum(hidden * score_vector, axis=-1)
    return ops.squeeze(ops.matmul(hidden, ops.expand_dims(score_vector, -1)), -1)


_RANK_NAMES = {3: "(batch, Tv, d_v)", 4: "(batch, Tv, heads, d_v)"}


def _shape(shape):
    return tuple(None if d is None else int(d) for d in shape)


def _compatible(a, b):
    return a is None or b is None or a == b
