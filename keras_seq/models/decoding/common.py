"""What every decoder shares: the reserved ids, the result, the argument checks and the loop.

`DecodeResult` is what each decoder returns. `_decode_one_path` is the one-path loop of greedy
decoding and sampling, a `keras.ops.while_loop` over `model.decode_step` that stops when every
sequence has emitted END or after `max_length` steps; `choose(log_probs, step)` picks each
token. The `_check_*` functions refuse bad arguments with Keras's message, naming the
argument, before anything is traced.
"""

from __future__ import annotations

import numbers
import typing

import keras
import numpy as np
from keras import ops

from keras_seq import argument_checks
from keras_seq.layers import ReverseWithinLength

# The reserved ids, the same in every keras_seq vocabulary
# (`keras_seq.tasks.vocabulary.Vocabulary.PAD`, `.START`, `.END`).
PAD, START, END = 0, 1, 2

# The most steps and beams a decode may ask for; far past anything useful (the
# attention buffer alone is batch × beams × steps × source length floats).
MAX_DECODE_LENGTH = 2**16
MAX_BEAM_WIDTH = 2**12

# The decoding methods of `compile_decoder` (and `Translator.translate`).
METHODS = ("greedy", "beam", "sample")

# Seeds are int32 key words of the backends' stateless generators.
MAX_SEED = 2**31 - 1

# The coverage Σ_j p_{i,j} is floored here before its log, so that a source position
# with no attention at all (exactly 0) costs β·log(1e-12) ≈ −27.6β instead of −inf; GNMT
# does not say what to do there, and with softmax attention the floor is never reached.
COVERAGE_FLOOR = 1e-12


class DecodeResult(typing.NamedTuple):
    """What `greedy_decode`, `sample_decode` and `beam_search` return (a tuple, so it passes through
    `tf.function` and `jax.jit` as it is).

    Attributes:
        ids: int32 `(batch, max_length)`: the tokens, then END, then PAD (0).
            A sequence that reaches `max_length` without END has no END.
        scores: float32 `(batch,)`: the sequence's log-probability under the
            model, `Σ_t log p(y_t | y_<t, x)` over its tokens up to and
            including END (never length-normalised, never tempered or
            truncated: a sampled sequence is scored under the model's own
            distribution, as greedy and beam outputs are).
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


def _decode_one_path(model, source, max_length, choose, end_token, start_token, return_attention):
    """The loop of greedy decoding and sampling: one output per row, token `choose(log_probs, t)`.

    `choose` gets float32 `(batch, V)` log-probabilities with PAD and START
    at −inf and the step (int32 scalar) and returns int32 `(batch,)` tokens.
    """
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
        source_length = _source_length(state, source)
        loop_vars["attention"] = ops.zeros((batch, max_length, source_length), dtype="float32")

    def cond(v):
        return ops.logical_and(
            ops.less(v["step"], max_length), ops.logical_not(ops.all(v["finished"]))
        )

    def body(v):
        step, finished = v["step"], v["finished"]
        log_probs, state, weights = model.decode_step(v["tokens"], v["state"])
        log_probs = _forbid_reserved(ops.cast(log_probs, "float32"), start_token)  # (batch, V)
        choice = choose(log_probs, step)  # (batch,)
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


def check_model(model):
    if not (
        callable(getattr(model, "encode", None)) and callable(getattr(model, "decode_step", None))
    ):
        raise argument_checks.invalid(
            "model",
            "a model with `encode(source)` and `decode_step(tokens, state)` methods",
            type(model).__name__,
        )


def _as_source(model, source):
    """`source` checked: the model's own check if it has one (images), else token ids."""
    if isinstance(source, (list, tuple)):
        source = np.asarray(source)
    check = getattr(model, "check_source", None)
    if callable(check):
        return check(ops.convert_to_tensor(source))
    if isinstance(source, np.ndarray):
        if not np.issubdtype(source.dtype, np.integer):
            raise argument_checks.invalid(
                "source", "integer token ids", f"an array of dtype {source.dtype}"
            )
        source = source.astype("int32")
    dtype = keras.backend.standardize_dtype(source.dtype)
    if "int" not in dtype:
        raise argument_checks.invalid("source", "integer token ids", f"a tensor of dtype {dtype}")
    shape = tuple(source.shape)
    if len(shape) != 2 or shape[1] == 0:
        raise ValueError(
            "Received an invalid value for argument `source`, expected token ids of shape "
            f"(batch, S) with S ≥ 1, got shape {shape}."
        )
    return ops.cast(source, "int32")


def check_max_length(model, max_length):
    """`max_length` checked: a positive int, at most the model's `max_decode_length` if any."""
    max_length = argument_checks.positive_int("max_length", max_length, MAX_DECODE_LENGTH)
    model_limit = getattr(model, "max_decode_length", None)
    if model_limit is not None and max_length > model_limit:
        raise argument_checks.invalid(
            "max_length",
            f"at most the model's max_decode_length ({model_limit}), the most steps its "
            "`decode_step` can take",
            max_length,
        )
    return max_length


def _check_common(model, source, max_length, end_token, start_token):
    check_model(model)
    source = _as_source(model, source)
    max_length, end_token, start_token = _check_tokens(model, max_length, end_token, start_token)
    return source, max_length, end_token, start_token


def _check_tokens(model, max_length, end_token, start_token):
    """`max_length`, `end_token` and `start_token` checked, for `model`."""
    max_length = check_max_length(model, max_length)
    if end_token is not None:
        end_token = argument_checks.int_in_range("end_token", end_token, 0)
        if end_token == PAD:
            raise argument_checks.invalid(
                "end_token", "an id other than PAD (0), or None", end_token
            )
    start_token = argument_checks.int_in_range("start_token", start_token, 0)
    if end_token is not None and end_token == start_token:
        raise argument_checks.invalid(
            "end_token", f"an id other than `start_token` ({start_token})", end_token
        )
    return max_length, end_token, start_token


def check_beam_width(beam_width, name="beam_width"):
    """`K`, a positive int no larger than `MAX_BEAM_WIDTH` (`name`: the argument to name)."""
    return argument_checks.positive_int(name, beam_width, MAX_BEAM_WIDTH)


def check_penalties(length_penalty, coverage_penalty):
    """(α, β), both finite and ≥ 0: the rules of any model (`keras_seq.models.Beam` too)."""
    alpha = argument_checks.finite_float("length_penalty", length_penalty)
    if alpha < 0:
        raise argument_checks.invalid("length_penalty", "a number ≥ 0", length_penalty)
    beta = argument_checks.finite_float("coverage_penalty", coverage_penalty)
    if beta < 0:
        raise argument_checks.invalid("coverage_penalty", "a number ≥ 0", coverage_penalty)
    return alpha, beta


def check_beam_penalties(model, length_penalty, coverage_penalty):
    """(α, β), both finite and ≥ 0; β > 0 refused for a model that declares no attention."""
    alpha, beta = check_penalties(length_penalty, coverage_penalty)
    if beta and hasattr(model, "attention") and model.attention is None:
        raise _no_attention(model, coverage_penalty)
    return alpha, beta


def _no_attention(model, coverage_penalty):
    return argument_checks.invalid(
        "coverage_penalty",
        f"0 for a model without attention ({type(model).__name__} has no attention weights "
        "to measure coverage with)",
        coverage_penalty,
    )


def check_sampling(temperature, top_k, top_p):
    """(T, k, p) checked: T > 0 finite, k a positive int or None, p in (0, 1] or None."""
    temperature = argument_checks.positive_float("temperature", temperature)
    if top_k is not None:
        top_k = argument_checks.positive_int("top_k", top_k)
    if top_p is not None:
        if (
            isinstance(top_p, bool)
            or not isinstance(top_p, numbers.Real)
            or not 0.0 < float(top_p) <= 1.0
        ):
            raise argument_checks.invalid("top_p", "a number in (0, 1], or None", top_p)
        top_p = float(top_p)
        if top_p == 1.0:
            top_p = None  # the nucleus of probability 1 is every token
    return temperature, top_k, top_p


def _check_options_of(method, beam_width, coverage_penalty, temperature, top_k, top_p, seed):
    """Options of one method given with another are refused, not silently ignored."""
    if method != "beam" and beam_width != 1:
        raise argument_checks.invalid("beam_width", f"1 for method {method!r}", beam_width)
    if method != "beam" and coverage_penalty != 0:
        raise argument_checks.invalid(
            "coverage_penalty", f"0 for method {method!r}", coverage_penalty
        )
    if method != "sample":
        defaults = {"temperature": (temperature, 1.0), "top_k": (top_k, None)}
        defaults.update({"top_p": (top_p, None), "seed": (seed, None)})
        for name, (value, default) in defaults.items():
            if value != default or isinstance(value, bool):
                shown = "None" if default is None else str(default)
                raise argument_checks.invalid(name, f"{shown} unless method='sample'", value)


def seed_value(seed):
    """A Python seed in [0, MAX_SEED]: `seed` checked, or a random one for None."""
    if seed is None:
        return int(np.random.default_rng().integers(MAX_SEED + 1))
    return argument_checks.int_in_range("seed", seed, 0, MAX_SEED)


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


def _source_mask(state, source, repeats=1):
    """Where the attention can fall: the state's `source_mask` (images: every region).

    A model whose state has none attends over the source's real tokens; `repeats`
    repeats each row as the state's rows were (beam search's `K` beams per source).
    """
    if isinstance(state, dict) and "source_mask" in state:
        return ops.cast(state["source_mask"], "bool")
    return ops.repeat(ops.not_equal(source, PAD), repeats, axis=0)


def _source_length(state, source):
    """`S`, the positions each step attends over (regions, for an image)."""
    return ops.shape(_source_mask(state, source))[1]


def _in_source_order(model, attention, source):
    """Attention `(batch, L, S)` over the positions of `source` as given.

    A model with `reverse_source=True` reads each source reversed within its
    length and reports attention in that reading order; the reversal is its
    own inverse, so reversing the weights the same way puts them back.
    """
    if not getattr(model, "reverse_source", False):
        return attention

    by_position = ops.transpose(attention, (0, 2, 1))  # (batch, S, L)
    by_position = ReverseWithinLength()(by_position, mask=ops.not_equal(source, PAD))
    return ops.transpose(by_position, (0, 2, 1))
