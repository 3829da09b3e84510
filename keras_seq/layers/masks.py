"""Padding, causal and combined attention masks, and the masked softmax.

Every attention layer in keras_seq builds its masks here, so that they all
agree on what a mask means:

- A mask is boolean and True where attention is *allowed*: a padding mask is
  True at real steps, an attention mask is True where query `i` may read
  value `j`.
- Masked positions get exactly zero weight.
- A query that may read no value at all (every key masked, or the query step
  itself masked) gets all-zero weights, hence a zero context vector, never NaN
  and never a uniform average over padding.

Everything here uses `keras.ops` only, so it runs on TensorFlow, JAX and
PyTorch, and takes Python integers or scalar tensors for lengths.

Example:

>>> m = attention_mask(value_mask=padding_mask([2, 3], 3), causal=True, query_length=3)
>>> keras.ops.convert_to_numpy(m).astype(int)[0]
array([[1, 0, 0],
       [1, 1, 0],
       [1, 1, 0]])
>>> w = masked_softmax(np.zeros((1, 2, 3), "float32"), [[[True, True, False], [False] * 3]])
>>> keras.ops.convert_to_numpy(w).tolist()
[[[0.5, 0.5, 0.0], [0.0, 0.0, 0.0]]]
"""

from __future__ import annotations

import numpy as np
from keras import backend, ops

__all__ = [
    "attention_mask",
    "causal_mask",
    "masked_softmax",
    "padding_mask",
    "zero_unreadable_queries",
]

# Masked scores are replaced by this fraction of the compute dtype's lowest
# finite value (as `jax.nn` does): far below any real score, yet far enough
# from the limit that `score - max(score)` cannot overflow to -inf.
_FILL_FRACTION = 0.7


def padding_mask(lengths, max_length):
    """A `(batch, max_length)` mask, True at the first `lengths[b]` steps of row `b`.

    Args:
        lengths: Integers `(batch,)`, the number of real steps in each row.
        max_length: The padded length `T` (an integer or a scalar tensor).

    Returns:
        Boolean `(batch, max_length)`: `mask[b, t] = t < lengths[b]`.
    """
    steps = ops.arange(max_length, dtype="int32")
    lengths = ops.cast(ops.convert_to_tensor(lengths), "int32")
    return ops.less(ops.expand_dims(steps, 0), ops.expand_dims(lengths, -1))


def causal_mask(query_length, value_length=None):
    """A `(Tq, Tv)` mask letting query `i` see value `j` only if `j ≤ i + (Tv − Tq)`.

    With `Tq == Tv` (self-attention) this is the lower triangle, `j ≤ i`. With
    `Tq < Tv` the queries are the *last* `Tq` positions of the sequence, as in
    incremental decoding: one new query (`Tq = 1`) sees every cached value.

    Args:
        query_length: `Tq`, an integer or a scalar tensor.
        value_length: `Tv`; defaults to `Tq`.

    Returns:
        Boolean `(Tq, Tv)`.
    """
    if value_length is None:
        value_length = query_length
    i = ops.expand_dims(ops.arange(query_length, dtype="int32"), -1)  # (Tq, 1)
    j = ops.expand_dims(ops.arange(value_length, dtype="int32"), 0)  # (1, Tv)
    offset = ops.cast(value_length, "int32") - ops.cast(query_length, "int32")
    return ops.less_equal(j, i + offset)


def attention_mask(
    query_mask=None, value_mask=None, causal=False, query_length=None, value_length=None
):
    """Combines padding masks and the causal mask into one `(batch, Tq, Tv)` mask.

    Query `i` of row `b` may read value `j` when the query step is real, the
    value step is real and, with `causal=True`, `j ≤ i + (Tv − Tq)`:

        mask[b, i, j] = query_mask[b, i] ∧ value_mask[b, j] ∧ causal[i, j]

    Args:
        query_mask: Optional boolean `(batch, Tq)`, True at real query steps.
        value_mask: Optional boolean `(batch, Tv)`, True at real value steps,
            or `(batch, Tq, Tv)` for a different mask at each query step (a
            pointer network's decoder excluding the positions already chosen).
        causal: Whether to add the causal mask (see `causal_mask`).
        query_length, value_length: `Tq` and `Tv`, needed with `causal=True`
            when the corresponding padding mask is not given (a given mask's
            length is used otherwise).

    Returns:
        None when there is nothing to mask; otherwise a boolean tensor of rank
        3 that broadcasts to `(batch, Tq, Tv)`: an axis that no argument
        determines has size 1 (a value mask alone gives `(batch, 1, Tv)`, the
        causal mask alone `(1, Tq, Tv)`).
    """
    mask = None
    if query_mask is not None:
        query_mask = ops.cast(query_mask, "bool")
        if len(query_mask.shape) != 2:
            raise ValueError(
                "attention_mask expects `query_mask` of shape (batch, Tq), "
                f"got shape {tuple(query_mask.shape)}."
            )
        mask = ops.expand_dims(query_mask, -1)  # (batch, Tq, 1)
        if query_length is None:
            query_length = ops.shape(query_mask)[-1]
    if value_mask is not None:
        value_mask = ops.cast(value_mask, "bool")
        if len(value_mask.shape) == 3:
            expanded = value_mask  # (batch, Tq, Tv): a different mask for each query step
        elif len(value_mask.shape) == 2:
            expanded = ops.expand_dims(value_mask, -2)  # (batch, 1, Tv)
        else:
            raise ValueError(
                "attention_mask expects `value_mask` of shape (batch, Tv) or (batch, Tq, Tv), "
                f"got shape {tuple(value_mask.shape)}."
            )
        mask = expanded if mask is None else ops.logical_and(mask, expanded)
        if value_length is None:
            value_length = ops.shape(value_mask)[-1]
    if causal:
        if query_length is None or value_length is None:
            raise ValueError(
                "attention_mask(causal=True) needs the query and value lengths: pass "
                "`query_length` and `value_length`, or the padding masks, got "
                f"query_length={query_length!r} and value_length={value_length!r}."
            )
        expanded = ops.expand_dims(causal_mask(query_length, value_length), 0)  # (1, Tq, Tv)
        mask = expanded if mask is None else ops.logical_and(mask, expanded)
    return mask


def masked_softmax(scores, mask=None, axis=-1):
    """Softmax of `scores` along `axis` in which masked positions get exactly zero.

    Rows with no unmasked position give all zeros (not a uniform distribution,
    not NaN). The softmax is computed in at least float32 and cast back, so it
    is safe under `mixed_float16`: the fill for masked scores is a fraction of
    float32's lowest value, never a number float16 cannot hold.

    Args:
        scores: Float tensor, e.g. `(batch, Tq, Tv)`.
        mask: Optional boolean tensor broadcastable to `scores`, True where a
            position may receive weight.
        axis: The axis to normalise over.

    Returns:
        A tensor of the shape and dtype of `scores`; rows sum to 1, or to 0
        where every position is masked.
    """
    scores = ops.convert_to_tensor(scores)
    dtype = backend.standardize_dtype(scores.dtype)
    compute_dtype = "float32" if dtype in ("float16", "bfloat16") else dtype
    logits = ops.cast(scores, compute_dtype)
    if mask is None:
        return ops.cast(ops.softmax(logits, axis=axis), dtype)
    mask = ops.cast(mask, "bool")
    fill = _FILL_FRACTION * float(np.finfo(compute_dtype).min)
    logits = ops.where(mask, logits, ops.cast(fill, compute_dtype))
    weights = ops.softmax(logits, axis=axis)
    # A fully masked row is uniform after the softmax; zero it with the rest.
    weights = ops.where(mask, weights, ops.zeros_like(weights))
    return ops.cast(weights, dtype)


def zero_unreadable_queries(outputs, mask, query_axis=1):
    """`outputs` with zeros for every query that may read no value, the rest unchanged.

    The rule of the module docstring for attention computed without
    `masked_softmax` (a fused kernel, or `keras.layers.MultiHeadAttention`,
    which give such a query uniform weights over every key):

        outputs[b, …, i, …] = 0   where   ¬ ∃ j: mask[b, i, j]

    Args:
        outputs: A tensor with the batch on axis 0 and the queries on
            `query_axis`, e.g. a context `(batch, Tq, heads, d)` or weights
            `(batch, heads, Tq, Tv)` (`query_axis=2`).
        mask: Boolean `(batch, Tq, Tv)` attention mask (axes of size 1
            broadcast), True where query `i` may read value `j`; None for no
            mask.
        query_axis: The axis of `outputs` that runs over the queries.

    Returns:
        A tensor of the shape and dtype of `outputs`.
    """
    if mask is None:
        return outputs
    readable = ops.any(ops.cast(mask, "bool"), axis=-1)  # (batch, Tq)
    for axis in range(1, len(outputs.shape)):
        if axis != query_axis:
            readable = ops.expand_dims(readable, axis)
    return ops.where(readable, outputs, ops.zeros_like(outputs))
