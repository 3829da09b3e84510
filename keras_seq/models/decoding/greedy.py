"""Greedy decoding: the most probable token at each step,

    y_t = argmax_{y ∉ {PAD, START}} log p(y | y_<t, x),

until every sequence has emitted END or after `max_length` steps, in one compiled loop
(`keras_seq.models.decoding`).

References:
    - Sutskever, Vinyals & Le, "Sequence to Sequence Learning with Neural
      Networks", NeurIPS 2014.
"""

from __future__ import annotations

from keras import ops

from keras_seq import argument_checks
from keras_seq.models.decoding.common import (
    END,
    START,
    _check_common,
    _decode_one_path,
)


def greedy_decode(
    model,
    source,
    max_length,
    *,
    end_token=END,
    start_token=START,
    return_attention=False,
):
    """Decodes the most probable token at each step, as one `while_loop`, for a batch.

        y_0 = START,   y_t = argmax_{y ∉ {PAD, START}} log p(y | y_<t, x)

    until y_t = END or `max_length` tokens. Each row stops on its own END and
    emits PAD after it; the loop ends when every row has ended. Traceable:
    call it inside `tf.function` or `jax.jit` (or use `compile_decoder`) to
    run the loop in the backend's graph.

    Args:
        model: An encoder–decoder with `encode(source) -> state` and
            `decode_step(tokens, state) -> (log_probs, state, attention)`
            (see the module docstring), e.g. a `keras_seq.models.Seq2Seq`.
        source: int `(batch, S)` source token ids, right-padded with PAD (0).
        max_length: The most tokens to emit per row, END included.
        end_token: The id that ends a sequence (`Vocabulary.END`, 2), or None
            to decode exactly `max_length` tokens.
        start_token: The id fed at the first step (`Vocabulary.START`, 1).
        return_attention: Also return each step's attention weights.

    Returns:
        A `DecodeResult(ids, scores, lengths, attention)`.

    Example:

    >>> import numpy as np
    >>> from keras_seq.models import seq2seq
    >>> model = seq2seq(20, 30, units=16, attention="luong_dot")
    >>> result = greedy_decode(model, np.array([[5, 6, 7, 0], [8, 9, 0, 0]]), 10)
    >>> tuple(result.ids.shape), tuple(result.scores.shape), tuple(result.lengths.shape)
    ((2, 10), (2,), (2,))
    """
    source, max_length, end_token, start_token = _check_common(
        model, source, max_length, end_token, start_token
    )
    return_attention = argument_checks.boolean("return_attention", return_attention)

    def choose(log_probs, step):
        return ops.cast(ops.argmax(log_probs, axis=-1), "int32")

    return _decode_one_path(
        model, source, max_length, choose, end_token, start_token, return_attention
    )
