"""Greedy decoding and beam search for encoder–decoder models, as one compiled loop.

Both work on any model with the two-method inference contract of
`keras_seq.models.Seq2Seq`:

    state = model.encode(source)                      # source: int (batch, S)
    log_probs, state, attention = model.decode_step(tokens, state)
    # tokens: int32 (batch,), the previous output (START at step 0)
    # log_probs: (batch, V) log p(y_t | y_<t, x); attention: (batch, S)

where every entry of `state` (a dict of tensors) has the batch as its first
axis and keeps its shape from step to step. The decoder then needs nothing
but the previous token and that state, so one step of decoding is one call of
`decode_step`, and the whole output is a `keras.ops.while_loop` over it. The
loop runs in the backend's graph (a `tf.while_loop` under `tf.function`, a
`jax.lax.while_loop` under `jax.jit`): Python runs the step once, to trace
it, and never per token. The loop stops as soon as every sequence (every
beam) has emitted the end token, or after `max_length` steps.

Greedy decoding picks the most probable token at each step,

    y_t = argmax_y log p(y | y_<t, x),

and beam search (Sutskever, Vinyals & Le 2014; Wu et al. 2016) keeps the `K`
best prefixes by their log-probability `log P(y_≤t | x) = Σ_i log p(y_i | y_<i, x)`.
At each step every live prefix is extended by every token (`K × V`
candidates per source) and the `K` best candidates survive; the decoder state
of each survivor is gathered from its parent beam (`keras.ops.take`). A beam
that has emitted END is finished: it keeps its score, competes for its place
in the beam like any other candidate, and emits PAD from then on. Candidates
are ranked by the length-normalised score of Wu et al. (2016, GNMT),

    s(Y, X) = log P(Y | X) / lp(Y),   lp(Y) = ((5 + |Y|) / (5 + 1))^α,

with `α = length_penalty` and `|Y|` the number of tokens including END; with
α = 0 the ranking is by log-probability alone. GNMT's coverage penalty is not
applied. At the end, the best of the `K` beams by `s` is returned.

Beam search with width 1 is greedy decoding. A wider beam explores more
prefixes but is a heuristic, not an exact search: it usually finds a more
probable sequence than greedy decoding, but it can prune the greedy prefix early
and end below it (on random second-order Markov chains over 6 emittable
tokens, 6 steps, width 4: 5 of 2,000 cases). A beam wide enough to keep every
candidate (`V^max_length`) is an exhaustive search and finds the most
probable sequence.

Outputs follow the task layout of keras_seq's sequence targets: token ids,
then one END, then PAD (0) to `max_length`. The decoder never emits PAD or
START before END: they are reserved ids, not words.

`compile_decoder` wraps either function for the current backend
(`tf.function` with a dynamic `(batch, time)` input signature, or `jax.jit`
over the model's weights), which is what `Translator` and the benchmark use.
"""

from __future__ import annotations

import typing

import keras
import numpy as np
from keras import ops

from keras_seq import validation

# The reserved ids, the same in every keras_seq vocabulary
# (`keras_seq.tasks.vocabulary.Vocabulary.PAD`, `.START`, `.END`).
PAD, START, END = 0, 1, 2

# The most steps and beams a decode may ask for; far past anything useful (the
# attention buffer alone is batch × beams × steps × source length floats).
MAX_DECODE_LENGTH = 2**16
MAX_BEAM_WIDTH = 2**12


class DecodeResult(typing.NamedTuple):
    """What `greedy_decode` and `beam_search` return (a tuple, so it passes through
    `tf.function` and `jax.jit` as it is).

    Attributes:
        ids: int32 `(batch, max_length)`: the tokens, then END, then PAD (0).
            A sequence that reaches `max_length` without END has no END.
        scores: float32 `(batch,)`: the sequence's log-probability under the
            model, `Σ_t log p(y_t | y_<t, x)` over its tokens up to and
            including END (never length-normalised).
        lengths: int32 `(batch,)`: the number of tokens, END included.
        attention: float32 `(batch, max_length, S)`: the attention weights of
            the step that emitted each token over the positions of `source`
            as given (zeros after END), or None when not asked for. A model
            that reads its source reversed (`reverse_source=True`) reports
            weights in reading order; they are put back in source order.
    """

    ids: typing.Any
    scores: typing.Any
    lengths: typing.Any
    attention: typing.Any = None


def length_penalty_factor(length, alpha):
    """GNMT's length penalty `lp(Y) = ((5 + |Y|) / 6)^α` (Wu et al. 2016, eq. 14).

    Args:
        length: Tensor of sequence lengths `|Y|` (END included), any shape.
        alpha: α ≥ 0; 0 gives 1 for every length (no normalisation).

    Returns:
        float32 tensor of the shape of `length`.
    """
    length = ops.cast(length, "float32")
    return ops.power((5.0 + length) / 6.0, alpha)


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
    return_attention = validation.boolean("return_attention", return_attention)
    batch = ops.shape(source)[0]
    positions = ops.arange(max_length, dtype="int32")  # (L,)

    state = model.encode(source)
    loop_vars = {
        "step": ops.convert_to_tensor(0, dtype="int32"),
        "tokens": ops.full((batch,), start_token, dtype="int32"),
        "state": state,
        "finished": ops.zeros((batch,), dtype="bool"),
        "ids": ops.zeros((batch, max_length), dtype="int32"),
        "scores": ops.zeros((batch,), dtype="float32"),
        "lengths": ops.zeros((batch,), dtype="int32"),
    }
    if return_attention:
        source_length = ops.shape(source)[1]
        loop_vars["attention"] = ops.zeros((batch, max_length, source_length), dtype="float32")

    def cond(v):
        return ops.logical_and(
            ops.less(v["step"], max_length), ops.logical_not(ops.all(v["finished"]))
        )

    def body(v):
        step, finished = v["step"], v["finished"]
        log_probs, state, weights = model.decode_step(v["tokens"], v["state"])
        log_probs = _forbid_reserved(ops.cast(log_probs, "float32"), start_token)  # (batch, V)
        choice = ops.cast(ops.argmax(log_probs, axis=-1), "int32")  # (batch,)
        chosen = ops.take_along_axis(log_probs, choice[:, None], axis=-1)[:, 0]  # (batch,)
        token = ops.where(finished, PAD, choice)
        here = ops.equal(positions, step)[None, :]  # (1, L): the column of this step
        new = {
            "step": step + 1,
            "tokens": token,
            "state": state,
            "finished": _ended(finished, token, end_token),
            "ids": ops.where(here, token[:, None], v["ids"]),
            "scores": v["scores"] + ops.where(finished, 0.0, chosen),
            "lengths": v["lengths"] + ops.cast(ops.logical_not(finished), "int32"),
        }
        if return_attention:
            weights = ops.where(finished[:, None], 0.0, ops.cast(weights, "float32"))
            new["attention"] = ops.where(here[:, :, None], weights[:, None, :], v["attention"])
        return (new,)

    (final,) = ops.while_loop(cond, body, (loop_vars,), maximum_iterations=max_length)
    attention = None
    if return_attention:
        attention = _in_source_order(model, final["attention"], source)
    return DecodeResult(final["ids"], final["scores"], final["lengths"], attention)


def beam_search(
    model,
    source,
    max_length,
    *,
    beam_width=4,
    length_penalty=0.6,
    end_token=END,
    start_token=START,
    return_attention=False,
):
    """Beam search with GNMT's length penalty, as one `while_loop`, for a batch.

    Each source keeps `K = beam_width` hypotheses. At step `t` every live
    hypothesis `y_<t` with log-probability `S(y_<t)` is extended by every
    token `y` (PAD and START excluded),

        S(y_<t y) = S(y_<t) + log p(y | y_<t, x),

    a finished hypothesis is carried on unchanged (emitting PAD), and the `K`
    candidates of highest `S / lp` survive, where `lp = ((5 + |Y|) / 6)^α`
    and `|Y|` counts tokens up to the candidate's END or up to step `t`. The
    decoder states are gathered from each survivor's parent beam. The loop
    stops when all `K` hypotheses of every source are finished (or dead: at
    step 0, when `K` exceeds the tokens there are) or after `max_length`
    steps; the hypothesis with the highest `S / lp` is returned.

    Args:
        model: An encoder–decoder with `encode` and `decode_step` (see the
            module docstring).
        source: int `(batch, S)` source token ids, right-padded with PAD (0).
        max_length: The most tokens per hypothesis, END included.
        beam_width: `K`, hypotheses kept per source; 1 gives greedy decoding.
        length_penalty: α of the length penalty, ≥ 0 (0.6 to 0.7 in GNMT; 0
            ranks by log-probability alone).
        end_token: The id that ends a hypothesis, or None for no end.
        start_token: The id fed at the first step.
        return_attention: Also return the attention weights of the returned
            hypothesis, step by step.

    Returns:
        A `DecodeResult(ids, scores, lengths, attention)` of the best
        hypothesis per source; `scores` are its log-probabilities, not
        length-normalised.

    Example:

    >>> import numpy as np
    >>> from keras_seq.models import seq2seq
    >>> model = seq2seq(20, 30, units=16, attention="bahdanau")
    >>> result = beam_search(model, np.array([[5, 6, 7, 0]]), 10, beam_width=3,
    ...                      return_attention=True)
    >>> tuple(result.attention.shape)
    (1, 10, 4)

    References:
        - Sutskever, Vinyals & Le, "Sequence to Sequence Learning with
          Neural Networks", NeurIPS 2014 (left-to-right beam search).
        - Wu et al., "Google's Neural Machine Translation System: Bridging
          the Gap between Human and Machine Translation", arXiv:1609.08144,
          2016 (length penalty, section 7).
    """
    source, max_length, end_token, start_token = _check_common(
        model, source, max_length, end_token, start_token
    )
    k = validation.positive_int("beam_width", beam_width, MAX_BEAM_WIDTH)
    alpha = validation.finite_float("length_penalty", length_penalty)
    if alpha < 0:
        raise validation.invalid("length_penalty", "a number ≥ 0", length_penalty)
    return_attention = validation.boolean("return_attention", return_attention)
    batch = ops.shape(source)[0]
    positions = ops.arange(max_length, dtype="int32")  # (L,)
    # Row b's beam j lives at b * K + j of every (batch * K, ...) tensor.
    row_offsets = ops.arange(batch, dtype="int32")[:, None] * k  # (batch, 1)

    state = model.encode(source)
    state = _map_state(lambda x: ops.repeat(x, k, axis=0), state)  # (batch * K, ...)
    # Only beam 0 is alive at first, so that step 0 does not pick one token K times.
    first_beam = ops.equal(ops.arange(k, dtype="int32"), 0)[None, :]  # (1, K)
    loop_vars = {
        "step": ops.convert_to_tensor(0, dtype="int32"),
        "tokens": ops.full((batch * k,), start_token, dtype="int32"),
        "state": state,
        "scores": ops.where(
            first_beam, ops.zeros((batch, k), "float32"), ops.full((batch, k), -np.inf, "float32")
        ),
        "lengths": ops.zeros((batch, k), dtype="int32"),
        "finished": ops.zeros((batch, k), dtype="bool"),
        "ids": ops.zeros((batch * k, max_length), dtype="int32"),
    }
    if return_attention:
        source_length = ops.shape(source)[1]
        loop_vars["attention"] = ops.zeros((batch * k, max_length, source_length), dtype="float32")

    def cond(v):
        # A beam whose score is -inf can never be chosen: it counts as ended.
        ended = ops.logical_or(v["finished"], ops.logical_not(ops.isfinite(v["scores"])))
        return ops.logical_and(ops.less(v["step"], max_length), ops.logical_not(ops.all(ended)))

    def body(v):
        step, scores, finished = v["step"], v["scores"], v["finished"]
        log_probs, state, weights = model.decode_step(v["tokens"], v["state"])
        log_probs = _forbid_reserved(ops.cast(log_probs, "float32"), start_token)
        vocab_size = ops.shape(log_probs)[-1]
        log_probs = ops.reshape(log_probs, (-1, k, vocab_size))  # (batch, K, V)

        # Candidate scores: a live beam extended by each token; a finished beam only
        # by PAD, with its score unchanged.
        is_pad = ops.equal(ops.arange(vocab_size, dtype="int32"), PAD)[None, None, :]
        carried = ops.where(is_pad, scores[:, :, None], -np.inf)
        candidates = ops.where(
            finished[:, :, None], carried, scores[:, :, None] + log_probs
        )  # (batch, K, V)
        lengths = ops.where(finished, v["lengths"], step + 1)  # (batch, K)
        ranking = candidates / length_penalty_factor(lengths, alpha)[:, :, None]
        _, best = ops.top_k(ops.reshape(ranking, (-1, k * vocab_size)), k)  # (batch, K)
        best = ops.cast(best, "int32")
        parent = best // vocab_size  # (batch, K): the beam each survivor extends
        token = best % vocab_size
        new_scores = ops.take_along_axis(
            ops.reshape(candidates, (-1, k * vocab_size)), best, axis=1
        )
        parent_finished = ops.take_along_axis(finished, parent, axis=1)
        token = ops.where(parent_finished, PAD, token)
        flat_parent = ops.reshape(row_offsets + parent, (-1,))  # (batch * K,)
        here = ops.equal(positions, step)[None, :]  # (1, L)
        flat_token = ops.reshape(token, (-1,))
        new = {
            "step": step + 1,
            "tokens": flat_token,
            "state": _map_state(lambda x: ops.take(x, flat_parent, axis=0), state),
            "scores": new_scores,
            "lengths": ops.take_along_axis(lengths, parent, axis=1),
            "finished": _ended(parent_finished, token, end_token),
            "ids": ops.where(here, flat_token[:, None], ops.take(v["ids"], flat_parent, axis=0)),
        }
        if return_attention:
            weights = ops.take(ops.cast(weights, "float32"), flat_parent, axis=0)
            weights = ops.where(ops.reshape(parent_finished, (-1, 1)), 0.0, weights)
            history = ops.take(v["attention"], flat_parent, axis=0)
            new["attention"] = ops.where(here[:, :, None], weights[:, None, :], history)
        return (new,)

    (final,) = ops.while_loop(cond, body, (loop_vars,), maximum_iterations=max_length)

    # The best hypothesis of each source by the length-normalised score.
    ranking = final["scores"] / length_penalty_factor(final["lengths"], alpha)  # (batch, K)
    chosen = ops.cast(ops.argmax(ranking, axis=-1), "int32")[:, None]  # (batch, 1)
    flat_chosen = ops.reshape(row_offsets + chosen, (-1,))  # (batch,)
    attention = None
    if return_attention:
        attention = ops.take(final["attention"], flat_chosen, axis=0)
        attention = _in_source_order(model, attention, source)
    return DecodeResult(
        ops.take(final["ids"], flat_chosen, axis=0),
        ops.take_along_axis(final["scores"], chosen, axis=1)[:, 0],
        ops.take_along_axis(final["lengths"], chosen, axis=1)[:, 0],
        attention,
    )


def compile_decoder(
    model,
    max_length,
    *,
    beam_width=1,
    length_penalty=0.6,
    end_token=END,
    start_token=START,
    return_attention=False,
):
    """`greedy_decode` (width 1) or `beam_search` as one compiled function of the source.

    On TensorFlow the function is a `tf.function` with the input signature
    int32 `(None, None)`, so any batch size and source length reuse one
    graph. On JAX it is `jax.jit` of a stateless call, the model's weights
    passed in as arguments (as `Model.predict` does), compiled once per input
    shape. On other backends it runs eagerly. The first call runs one
    encoder and decoder step eagerly, so that a model whose layers create
    their weights on first use has them before tracing.

    Args:
        model: An encoder–decoder with `encode` and `decode_step`.
        max_length: The most tokens per output, END included.
        beam_width: 1 for greedy decoding, more for beam search.
        length_penalty: α of beam search's length penalty (unused at width 1).
        end_token: The id that ends a sequence, or None.
        start_token: The id fed at the first step.
        return_attention: Also return the attention weights.

    Returns:
        A function `decode(source) -> DecodeResult`, taking int `(batch, S)`
        source ids (NumPy or a backend tensor) and returning backend tensors.

    Example:

    >>> import numpy as np
    >>> from keras_seq.models import seq2seq
    >>> model = seq2seq(20, 30, units=16)
    >>> decode = compile_decoder(model, 12, beam_width=4, length_penalty=0.6)
    >>> ids = decode(np.array([[5, 6, 7], [8, 9, 10]])).ids  # one graph, any shape
    >>> tuple(ids.shape)
    (2, 12)
    """
    _check_model(model)
    max_length = validation.positive_int("max_length", max_length, MAX_DECODE_LENGTH)
    beam_width = validation.positive_int("beam_width", beam_width, MAX_BEAM_WIDTH)
    options = {
        "end_token": end_token,
        "start_token": start_token,
        "return_attention": return_attention,
    }
    if beam_width == 1:

        def decode(source):
            return greedy_decode(model, source, max_length, **options)

    else:

        def decode(source):
            return beam_search(
                model,
                source,
                max_length,
                beam_width=beam_width,
                length_penalty=length_penalty,
                **options,
            )

    # Check the options now, on a tiny source, rather than at the first call.
    _check_common(model, np.zeros((1, 1), "int32"), max_length, end_token, start_token)
    validation.boolean("return_attention", return_attention)
    if beam_width > 1:
        alpha = validation.finite_float("length_penalty", length_penalty)
        if alpha < 0:
            raise validation.invalid("length_penalty", "a number ≥ 0", length_penalty)

    backend = keras.backend.backend()
    if backend == "tensorflow":
        compiled = _tensorflow_function(decode)
    elif backend == "jax":
        compiled = _jax_function(model, decode)
    else:
        compiled = decode
    warmed = []

    def run(source):
        source = _as_source(source)
        if not warmed:
            _warm_up(model, source, start_token)
            warmed.append(True)
        return compiled(source)

    return run


# --- Helpers -------------------------------------------------------------------------------


def _check_model(model):
    if not (
        callable(getattr(model, "encode", None)) and callable(getattr(model, "decode_step", None))
    ):
        raise validation.invalid(
            "model",
            "a model with `encode(source)` and `decode_step(tokens, state)` methods",
            type(model).__name__,
        )


def _as_source(source):
    if isinstance(source, (list, tuple)):
        source = np.asarray(source)
    if isinstance(source, np.ndarray):
        if not np.issubdtype(source.dtype, np.integer):
            raise validation.invalid(
                "source", "integer token ids", f"an array of dtype {source.dtype}"
            )
        source = source.astype("int32")
    dtype = keras.backend.standardize_dtype(source.dtype)
    if "int" not in dtype:
        raise validation.invalid("source", "integer token ids", f"a tensor of dtype {dtype}")
    shape = tuple(source.shape)
    if len(shape) != 2 or shape[1] == 0:
        raise ValueError(
            "Received an invalid value for argument `source`, expected token ids of shape "
            f"(batch, S) with S ≥ 1, got shape {shape}."
        )
    return ops.cast(source, "int32")


def _check_max_length(model, max_length):
    """`max_length` checked: a positive int, at most the model's `max_decode_length` if any."""
    max_length = validation.positive_int("max_length", max_length, MAX_DECODE_LENGTH)
    model_limit = getattr(model, "max_decode_length", None)
    if model_limit is not None and max_length > model_limit:
        raise validation.invalid(
            "max_length",
            f"at most the model's max_decode_length ({model_limit}), the most steps its "
            "`decode_step` can take",
            max_length,
        )
    return max_length


def _check_common(model, source, max_length, end_token, start_token):
    _check_model(model)
    source = _as_source(source)
    max_length = _check_max_length(model, max_length)
    if end_token is not None:
        end_token = validation.int_in_range("end_token", end_token, 0)
        if end_token == PAD:
            raise validation.invalid("end_token", "an id other than PAD (0), or None", end_token)
    start_token = validation.int_in_range("start_token", start_token, 0)
    if end_token is not None and end_token == start_token:
        raise validation.invalid(
            "end_token", f"an id other than `start_token` ({start_token})", end_token
        )
    return source, max_length, end_token, start_token


def _forbid_reserved(log_probs, start_token):
    """Sets log p of PAD and START to -inf: the decoder never emits them as words."""
    ids = ops.arange(ops.shape(log_probs)[-1], dtype="int32")
    reserved = ops.logical_or(ops.equal(ids, PAD), ops.equal(ids, start_token))
    return ops.where(reserved[None, :], -np.inf, log_probs)


def _ended(finished, token, end_token):
    if end_token is None:
        return finished
    return ops.logical_or(finished, ops.equal(token, end_token))


def _map_state(function, state):
    return keras.tree.map_structure(function, state)


def _warm_up(model, source, start_token):
    """One eager encoder and decoder step, so that lazily built layers have their weights."""
    first = source[:1]
    state = model.encode(first)
    model.decode_step(ops.full((1,), start_token, dtype="int32"), state)


def _in_source_order(model, attention, source):
    """Attention `(batch, L, S)` over the positions of `source` as given.

    A model with `reverse_source=True` reads each source reversed within its
    length and reports attention in that reading order; the reversal is its
    own inverse, so reversing the weights the same way puts them back.
    """
    if not getattr(model, "reverse_source", False):
        return attention
    from keras_seq.layers import ReverseWithinLength

    by_position = ops.transpose(attention, (0, 2, 1))  # (batch, S, L)
    by_position = ReverseWithinLength()(by_position, mask=ops.not_equal(source, PAD))
    return ops.transpose(by_position, (0, 2, 1))


def _tensorflow_function(decode):
    import tensorflow as tf

    return tf.function(decode, input_signature=[tf.TensorSpec((None, None), tf.int32)])


def _jax_function(model, decode):
    import jax

    compiled = []

    def run(source):
        if not compiled:  # after the warm-up step, when every weight exists
            variables = list(model.variables)

            def stateless(values, source):
                mapping = list(zip(variables, values, strict=True))
                with keras.StatelessScope(state_mapping=mapping):
                    return decode(source)

            compiled.append((variables, jax.jit(stateless)))
        variables, jitted = compiled[0]
        return jitted([variable.value for variable in variables], source)

    return run
