"""Greedy decoding, sampling and beam search for encoder–decoder models, as one compiled loop.

All three work on any model with the two-method inference contract of
`keras_seq.models.Seq2Seq`:

    state = model.encode(source)                      # source: int (batch, S)
    log_probs, state, attention = model.decode_step(tokens, state)
    # tokens: int32 (batch,), the previous output (START at step 0)
    # log_probs: (batch, V) log p(y_t | y_<t, x); attention: (batch, S)

where every entry of `state` (a dict of tensors) has the batch as its first
axis and keeps its shape from step to step. The source need not be token
ids: a model with a `check_source(source)` method (and a `source_signature`,
the shape and dtype a compiled decoder is traced for) takes what that method
accepts, as `ShowAttendTell` takes images, and a state's `"source_mask"`
(batch, S) says what the attention runs over (an image's regions).

The decoder then needs nothing but the previous token and that state, so one
step of decoding is one call of `decode_step`, and the whole output is a
`keras.ops.while_loop` over it. The
loop runs in the backend's graph (a `tf.while_loop` under `tf.function`, a
`jax.lax.while_loop` under `jax.jit`): Python runs the step once, to trace
it, and never per token. The loop stops as soon as every sequence (every
beam) has emitted the end token, or after `max_length` steps.

Greedy decoding picks the most probable token at each step,

    y_t = argmax_y log p(y | y_<t, x).

Sampling (`sample_decode`) draws it instead, from the model's distribution
sharpened or flattened by a temperature `T` and truncated to the `k` most
probable tokens (top-k, Fan et al. 2018) and/or to the nucleus, the smallest
set of most probable tokens whose probability reaches `p` (top-p, Holtzman et
al. 2020), with the semantics of keras-hub's `TopKSampler` and `TopPSampler`:

    q(y) ∝ exp(log p(y | y_<t, x) / T),   y_t ~ q restricted to top-k(q) ∩ nucleus_p(q).

Its randomness is stateless: step `t` draws with the key `(seed, t)`, a loop
carry like any other, so the same seed gives the same output in eager mode,
under `tf.function` and under `jax.jit`.

Beam search (Sutskever, Vinyals & Le 2014; Wu et al. 2016) keeps the `K`
best prefixes by their log-probability `log P(y_≤t | x) = Σ_i log p(y_i | y_<i, x)`.
At each step every live prefix is extended by every token (`K × V`
candidates per source) and the `K` best candidates survive; the decoder state
of each survivor is gathered from its parent beam (`keras.ops.take`). A beam
that has emitted END is finished: it keeps its score, competes for its place
in the beam like any other candidate, and emits PAD from then on. Candidates
are ranked by the score of Wu et al. (2016, GNMT, eq. 14),

    s(Y, X) = log P(Y | X) / lp(Y) + cp(X; Y),
    lp(Y) = ((5 + |Y|) / (5 + 1))^α,
    cp(X; Y) = β · Σ_{i=1}^{|X|} log(min(Σ_{j=1}^{|Y|} p_{i,j}, 1.0)),

with `α = length_penalty`, `β = coverage_penalty`, `|Y|` the number of tokens
including END, `|X|` the source tokens (padding excluded) and `p_{i,j}` the
attention weight of target step `j` on source position `i`. With α = β = 0
the ranking is by log-probability alone (β = 0 is the default: no coverage
term). At the end, the best of the `K` beams by `s` is returned.

Beam search with width 1 (and β = 0) is greedy decoding. A wider beam explores more
prefixes but is a heuristic, not an exact search: it usually finds a more
probable sequence than greedy decoding, but it can prune the greedy prefix early
and end below it (on random second-order Markov chains over 6 emittable
tokens, 6 steps, width 4: 5 of 2,000 cases). A beam wide enough to keep every
candidate (`V^max_length`) is an exhaustive search and finds the sequence of
highest `s`.

Outputs follow the task layout of keras_seq's sequence targets: token ids,
then one END, then PAD (0) to `max_length`. No decoder ever emits PAD or
START before END: they are reserved ids, not words.

`compile_decoder` wraps any of them for the current backend
(`tf.function` with a dynamic `(batch, time)` input signature, or `jax.jit`
over the model's weights), which is what `Translator` and the benchmark use.

References:
    - Sutskever, Vinyals & Le, "Sequence to Sequence Learning with Neural
      Networks", NeurIPS 2014.
    - Wu et al., "Google's Neural Machine Translation System: Bridging the
      Gap between Human and Machine Translation", arXiv:1609.08144, 2016.
    - Fan, Lewis & Dauphin, "Hierarchical Neural Story Generation", ACL 2018
      (top-k sampling).
    - Holtzman, Buys, Du, Forbes & Choi, "The Curious Case of Neural Text
      Degeneration", ICLR 2020 (nucleus, top-p, sampling).
"""

from __future__ import annotations

import numbers
import typing

import keras
import numpy as np
from keras import ops

from keras_seq import argument_checks

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
    return_attention = argument_checks.boolean("return_attention", return_attention)

    def choose(log_probs, step):
        return ops.cast(ops.argmax(log_probs, axis=-1), "int32")

    return _decode_one_path(
        model, source, max_length, choose, end_token, start_token, return_attention
    )


def sample_decode(
    model,
    source,
    max_length,
    *,
    temperature=1.0,
    top_k=None,
    top_p=None,
    seed=None,
    end_token=END,
    start_token=START,
    return_attention=False,
):
    """Samples each token from the model's tempered, truncated distribution, as one `while_loop`.

    At step `t`, with `log p(y) = log p(y | y_<t, x)` over the tokens other
    than PAD and START (which are never drawn),

        q(y) = exp(log p(y) / T) / Σ_y' exp(log p(y') / T)          (temperature T)
        K_k  = the k tokens of highest q                          (top-k; all if None)
        N_p  = {y : Σ_{y' : q(y') > q(y)} q(y') < p}              (nucleus; all if None)
        y_t ~ q(y) / Σ_{y' ∈ K_k ∩ N_p} q(y')   for y ∈ K_k ∩ N_p

    `N_p` is the smallest set of most probable tokens whose probability
    reaches `p` (Holtzman et al. 2020): a token is in it when the tokens
    ranked above it hold less than `p`, so the most probable token always
    is. As in keras-hub's `TopPSampler(p, k)`, the nucleus is measured on
    the whole tempered distribution `q`, so the two filters commute, and
    the temperature applies before both (keras-hub's `Sampler`). `T → 0`
    gives greedy decoding; `T = 1` without `k` or `p` samples from the model
    itself (ancestral sampling). Ties at the top-k boundary are broken by
    `keras.ops.top_k`'s order.

    The randomness is stateless: step `t` draws with the key `(seed, t)`
    (TensorFlow's `tf.random.stateless_categorical`, `keras.random.categorical`
    with a JAX key; eager backends derive an integer seed from the key), so
    the same `seed`, backend, device and source batch give the same output,
    eagerly, under `tf.function` and under `jax.jit`. Rows of one batch are
    drawn independently, but a row's draws depend on the batch it is in.

    Args:
        model: An encoder–decoder with `encode` and `decode_step` (see the
            module docstring).
        source: int `(batch, S)` source token ids, right-padded with PAD (0).
        max_length: The most tokens to emit per row, END included.
        temperature: `T > 0`. Below 1 sharpens the distribution, above 1
            flattens it. Default 1.
        top_k: Draw only among the `k` most probable tokens (all of them if
            `k` is at least the vocabulary size), or None (default).
        top_p: Draw only from the nucleus of probability `p` in (0, 1], or
            None (default; 1 keeps every token too).
        seed: An integer in [0, 2^31 − 1], an int32 scalar tensor (so that a
            compiled function can take a new seed per call), or None to draw
            one now (at trace time inside a compiled function: then every call
            reuses it; `compile_decoder` passes a fresh seed per call).
        end_token: The id that ends a sequence, or None to decode exactly
            `max_length` tokens.
        start_token: The id fed at the first step.
        return_attention: Also return each step's attention weights.

    Returns:
        A `DecodeResult(ids, scores, lengths, attention)`; `scores` are the
        log-probabilities of the drawn sequences under the model,
        `Σ_t log p(y_t | y_<t, x)` (not under `q`: untempered, untruncated),
        comparable with greedy and beam scores.

    Example:

    >>> import numpy as np
    >>> from keras_seq.models import seq2seq
    >>> model = seq2seq(20, 30, units=16, attention="luong_dot")
    >>> source = np.array([[5, 6, 7, 0], [8, 9, 0, 0]])
    >>> first = sample_decode(model, source, 10, top_p=0.9, seed=7)
    >>> again = sample_decode(model, source, 10, top_p=0.9, seed=7)
    >>> bool((np.asarray(first.ids) == np.asarray(again.ids)).all())
    True

    References:
        - Fan, Lewis & Dauphin, "Hierarchical Neural Story Generation",
          ACL 2018 (top-k sampling).
        - Holtzman et al., "The Curious Case of Neural Text Degeneration",
          ICLR 2020 (nucleus sampling).
    """
    source, max_length, end_token, start_token = _check_common(
        model, source, max_length, end_token, start_token
    )
    temperature, top_k, top_p = _check_sampling(temperature, top_k, top_p)
    seed = _seed_tensor(seed)
    return_attention = argument_checks.boolean("return_attention", return_attention)

    def choose(log_probs, step):
        logits, candidates = _sampling_logits(log_probs, temperature, top_k, top_p)
        drawn = _draw(logits, ops.stack([seed, step]))  # (batch,): an index into candidates
        if candidates is None:
            return drawn
        return ops.take_along_axis(candidates, drawn[:, None], axis=-1)[:, 0]

    return _decode_one_path(
        model, source, max_length, choose, end_token, start_token, return_attention
    )


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


def beam_search(
    model,
    source,
    max_length,
    *,
    beam_width=4,
    length_penalty=0.6,
    coverage_penalty=0.0,
    end_token=END,
    start_token=START,
    return_attention=False,
):
    """Beam search with GNMT's length and coverage penalties, as one `while_loop`, for a batch.

    Each source keeps `K = beam_width` hypotheses. At step `t` every live
    hypothesis `y_<t` with log-probability `S(y_<t)` is extended by every
    token `y` (PAD and START excluded),

        S(y_<t y) = S(y_<t) + log p(y | y_<t, x),

    a finished hypothesis is carried on unchanged (emitting PAD), and the `K`
    candidates of highest `s = S / lp + cp` survive (Wu et al. 2016, eq. 14):

        lp = ((5 + |Y|) / 6)^α,
        cp = β · Σ_{i : x_i ≠ PAD} log(max(min(c_i, 1), 10⁻¹²)),   c_i = Σ_{j ≤ |Y|} p_{i,j},

    where `|Y|` counts tokens up to the candidate's END or up to step `t`
    and `c_i` is the attention the hypothesis has paid to source position
    `i`, summed over its steps (the step that emits `y_t` included: its
    attention does not depend on the token). Each hypothesis carries its
    coverage `c` in the loop; a finished one's stops growing. The floor
    10⁻¹² departs from the paper only where a real source position got no
    attention at all (there `log 0 = −∞`). The decoder states and coverages
    are gathered from each survivor's parent beam. The loop stops when all
    `K` hypotheses of every source are finished (or dead: at step 0, when
    `K` exceeds the tokens there are) or after `max_length` steps; the
    hypothesis with the highest `s` is returned.

    Args:
        model: An encoder–decoder with `encode` and `decode_step` (see the
            module docstring).
        source: int `(batch, S)` source token ids, right-padded with PAD (0).
        max_length: The most tokens per hypothesis, END included.
        beam_width: `K`, hypotheses kept per source; 1 gives greedy decoding.
        length_penalty: α of the length penalty, ≥ 0 (0.6 to 0.7 in GNMT; 0
            ranks by log-probability alone).
        coverage_penalty: β of the coverage penalty, ≥ 0 (0.2 in GNMT).
            Default 0: no coverage term, and the attention is not read. A
            model that declares no attention (`model.attention is None`, as
            an `RNNSeq2Seq` without attention) refuses β > 0: its zero
            weights would give every hypothesis the same penalty.
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
          2016 (length and coverage penalties, section 7, eq. 14).
    """
    source, max_length, end_token, start_token = _check_common(
        model, source, max_length, end_token, start_token
    )
    k = _check_beam_width(beam_width)
    alpha, beta = _check_beam_penalties(model, length_penalty, coverage_penalty)
    return_attention = argument_checks.boolean("return_attention", return_attention)
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
    source_length = _source_length(state, source)
    if return_attention:
        loop_vars["attention"] = ops.zeros((batch * k, max_length, source_length), dtype="float32")
    if beta:
        # c_i of each hypothesis, and the real (non-PAD) source positions i it sums over.
        loop_vars["coverage"] = ops.zeros((batch * k, source_length), dtype="float32")
        source_mask = _source_mask(state, source, k)  # (batch * K, S)

    def coverage_term(coverage):
        """cp per hypothesis `(batch, K)` for coverages `(batch * K, S)`."""
        capped = ops.maximum(ops.minimum(coverage, 1.0), COVERAGE_FLOOR)
        per_position = ops.where(source_mask, ops.log(capped), 0.0)
        return beta * ops.reshape(ops.sum(per_position, axis=-1), (-1, k))

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
        if beta:
            if weights is None:
                raise _no_attention(model, coverage_penalty)
            # The coverage of each beam's candidates: a live beam adds this step's
            # attention (the same for every token it may emit), a finished one does not.
            flat_finished = ops.reshape(finished, (-1, 1))  # (batch * K, 1)
            step_weights = ops.where(flat_finished, 0.0, ops.cast(weights, "float32"))
            coverage = v["coverage"] + step_weights  # (batch * K, S)
            ranking = ranking + coverage_term(coverage)[:, :, None]
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
        if beta:
            new["coverage"] = ops.take(coverage, flat_parent, axis=0)
        if return_attention:
            weights = ops.take(ops.cast(weights, "float32"), flat_parent, axis=0)
            weights = ops.where(ops.reshape(parent_finished, (-1, 1)), 0.0, weights)
            history = ops.take(v["attention"], flat_parent, axis=0)
            new["attention"] = ops.where(here[:, :, None], weights[:, None, :], history)
        return (new,)

    (final,) = ops.while_loop(cond, body, (loop_vars,), maximum_iterations=max_length)

    # The best hypothesis of each source by s(Y, X).
    ranking = final["scores"] / length_penalty_factor(final["lengths"], alpha)  # (batch, K)
    if beta:
        ranking = ranking + coverage_term(final["coverage"])
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
    method=None,
    beam_width=1,
    length_penalty=0.6,
    coverage_penalty=0.0,
    temperature=1.0,
    top_k=None,
    top_p=None,
    seed=None,
    end_token=END,
    start_token=START,
    return_attention=False,
):
    """`greedy_decode`, `beam_search` or `sample_decode` as one compiled function of the source.

    On TensorFlow the function is a `tf.function` with the input signature
    int32 `(None, None)` (and an int32 scalar seed when sampling), so any
    batch size and source length reuse one graph. On JAX it is `jax.jit` of
    a stateless call, the model's weights passed in as arguments (as
    `Model.predict` does), compiled once per input shape. On other backends
    it runs eagerly. The first call runs one encoder and decoder step
    eagerly, so that a model whose layers create their weights on first use
    has them before tracing.

    Args:
        model: An encoder–decoder with `encode` and `decode_step`.
        max_length: The most tokens per output, END included.
        method: "greedy", "beam" or "sample"; default None: "greedy" at
            `beam_width=1`, else "beam" (what this function did before it
            took a method).
        beam_width: The beam's `K` (method "beam"); must be 1 otherwise.
        length_penalty: α of beam search's length penalty (unused by the
            other methods).
        coverage_penalty: β of beam search's coverage penalty; must be 0
            unless the method is "beam".
        temperature: Sampling's `T > 0` (see `sample_decode`); must be 1
            unless the method is "sample". The same holds for `top_k`,
            `top_p` and `seed`, which must be None unless sampling.
        top_k: Sampling's top-k cutoff, or None.
        top_p: Sampling's nucleus probability in (0, 1], or None.
        seed: Sampling only: the seed of the first call. Call `n` (from 0)
            samples with seed `seed + n` (mod 2^31) unless it is given its own
            (`decode(source, seed=s)`, which equals
            `sample_decode(model, source, max_length, seed=s, ...)`). None: a
            random first seed.
        end_token: The id that ends a sequence, or None.
        start_token: The id fed at the first step.
        return_attention: Also return the attention weights.

    Returns:
        A function `decode(source, seed=None) -> DecodeResult`, taking int
        `(batch, S)` source ids (NumPy or a backend tensor) and returning
        backend tensors; `seed` is for method "sample" only.

    Example:

    >>> import numpy as np
    >>> from keras_seq.models import seq2seq
    >>> model = seq2seq(20, 30, units=16)
    >>> decode = compile_decoder(model, 12, beam_width=4, length_penalty=0.6)
    >>> ids = decode(np.array([[5, 6, 7], [8, 9, 10]])).ids  # one graph, any shape
    >>> tuple(ids.shape)
    (2, 12)
    >>> sample = compile_decoder(model, 12, method="sample", top_k=5, seed=0)
    >>> tuple(sample(np.array([[5, 6, 7]])).ids.shape)
    (1, 12)
    """
    _check_model(model)
    max_length = argument_checks.positive_int("max_length", max_length, MAX_DECODE_LENGTH)
    beam_width = _check_beam_width(beam_width)
    if method is None:
        method = "greedy" if beam_width == 1 else "beam"
    method = argument_checks.one_of("method", method, METHODS)
    _check_options_of(method, beam_width, coverage_penalty, temperature, top_k, top_p, seed)
    # Check the options now rather than at the first call.
    _check_tokens(model, max_length, end_token, start_token)
    argument_checks.boolean("return_attention", return_attention)
    options = {
        "end_token": end_token,
        "start_token": start_token,
        "return_attention": return_attention,
    }
    if method == "greedy":

        def decode(source):
            return greedy_decode(model, source, max_length, **options)

    elif method == "beam":
        _check_beam_penalties(model, length_penalty, coverage_penalty)

        def decode(source):
            return beam_search(
                model,
                source,
                max_length,
                beam_width=beam_width,
                length_penalty=length_penalty,
                coverage_penalty=coverage_penalty,
                **options,
            )

    else:
        _check_sampling(temperature, top_k, top_p)
        next_seed = [_seed_value(seed)]

        def decode(source, seed):
            return sample_decode(
                model,
                source,
                max_length,
                temperature=temperature,
                top_k=top_k,
                top_p=top_p,
                seed=seed,
                **options,
            )

    sampling = method == "sample"
    backend = keras.backend.backend()
    if backend == "tensorflow":
        compiled = _tensorflow_function(model, decode, sampling)
    elif backend == "jax":
        compiled = _jax_function(model, decode)
    else:
        compiled = decode
    warmed = []

    def run(source, seed=None):
        source = _as_source(model, source)
        if sampling:
            if seed is None:
                seed, next_seed[0] = next_seed[0], (next_seed[0] + 1) % (MAX_SEED + 1)
            seed = argument_checks.int_in_range("seed", seed, 0, MAX_SEED)
        elif seed is not None:
            raise argument_checks.invalid(
                "seed", f"None for method {method!r} (not sampling)", seed
            )
        if not warmed:
            _warm_up(model, source, start_token)
            warmed.append(True)
        if sampling:
            return compiled(source, ops.convert_to_tensor(seed, dtype="int32"))
        return compiled(source)

    return run


# --- Helpers -------------------------------------------------------------------------------


def _check_model(model):
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


def _check_max_length(model, max_length):
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
    _check_model(model)
    source = _as_source(model, source)
    max_length, end_token, start_token = _check_tokens(model, max_length, end_token, start_token)
    return source, max_length, end_token, start_token


def _check_tokens(model, max_length, end_token, start_token):
    """`max_length`, `end_token` and `start_token` checked, for `model`."""
    max_length = _check_max_length(model, max_length)
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


def _check_beam_width(beam_width, name="beam_width"):
    """`K`, a positive int no larger than `MAX_BEAM_WIDTH` (`name`: the argument to name)."""
    return argument_checks.positive_int(name, beam_width, MAX_BEAM_WIDTH)


def _check_penalties(length_penalty, coverage_penalty):
    """(α, β), both finite and ≥ 0: the rules of any model (`keras_seq.models.Beam` too)."""
    alpha = argument_checks.finite_float("length_penalty", length_penalty)
    if alpha < 0:
        raise argument_checks.invalid("length_penalty", "a number ≥ 0", length_penalty)
    beta = argument_checks.finite_float("coverage_penalty", coverage_penalty)
    if beta < 0:
        raise argument_checks.invalid("coverage_penalty", "a number ≥ 0", coverage_penalty)
    return alpha, beta


def _check_beam_penalties(model, length_penalty, coverage_penalty):
    """(α, β), both finite and ≥ 0; β > 0 refused for a model that declares no attention."""
    alpha, beta = _check_penalties(length_penalty, coverage_penalty)
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


def _check_sampling(temperature, top_k, top_p):
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


def _seed_value(seed):
    """A Python seed in [0, MAX_SEED]: `seed` checked, or a random one for None."""
    if seed is None:
        return int(np.random.default_rng().integers(MAX_SEED + 1))
    return argument_checks.int_in_range("seed", seed, 0, MAX_SEED)


def _seed_tensor(seed):
    """An int32 scalar seed tensor from an int, None (random) or an integer scalar tensor."""
    if seed is None or isinstance(seed, numbers.Integral):
        return ops.convert_to_tensor(_seed_value(seed), dtype="int32")
    if isinstance(seed, np.ndarray) or ops.is_tensor(seed):
        dtype = keras.backend.standardize_dtype(seed.dtype)
        if "int" in dtype and tuple(seed.shape) == ():
            return ops.cast(seed, "int32")
    raise argument_checks.invalid(
        "seed", f"an integer in [0, {MAX_SEED}], an integer scalar tensor, or None", seed
    )


def _sampling_logits(log_probs, temperature, top_k, top_p):
    """The logits of the sampling distribution, and the token id of each of their columns.

    Returns `(logits, None)`, logits `(batch, V)` over the vocabulary, when
    nothing is truncated; else `(logits, ids)`, both `(batch, C)` with `C =
    min(k, V)` (or `V`), the candidates in descending order of `q` and −inf
    on those outside the nucleus.
    """
    # Shifted by the row maximum first (softmax does not change), so that a tiny T sends
    # every other token to −inf, or far below, but never the most probable one.
    shifted = log_probs - ops.max(log_probs, axis=-1, keepdims=True)
    logits = shifted / temperature  # log q + const; PAD and START stay −inf
    if top_k is None and top_p is None:
        return logits, None
    vocab_size = log_probs.shape[-1]
    if vocab_size is None:
        vocab_size = ops.shape(log_probs)[-1]
    cutoff = vocab_size if top_k is None else min(top_k, vocab_size)
    values, ids = ops.top_k(logits, cutoff, sorted=True)  # (batch, C), most probable first
    if top_p is not None:
        q = ops.exp(values - ops.logsumexp(logits, axis=-1, keepdims=True))  # q of the whole V
        above = ops.cumsum(q, axis=-1) - q  # Σ q of the tokens ranked above each one
        values = ops.where(above < top_p, values, -np.inf)
    return values, ops.cast(ids, "int32")


def _draw(logits, key):
    """One column per row drawn from softmax(logits), with the stateless int32 key `(2,)`.

    `keras.random` takes a tensor seed only on JAX (a raw key); TensorFlow's own
    stateless op takes it there. Backends that run the loop eagerly turn the
    key into an integer seed.
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        drawn = tf.random.stateless_categorical(logits, 1, seed=key, dtype=tf.int32)
    elif backend == "jax":
        drawn = keras.random.categorical(logits, 1, seed=ops.cast(key, "uint32"))
    else:
        seed, step = (int(x) for x in ops.convert_to_numpy(key))
        drawn = keras.random.categorical(logits, 1, seed=(seed * 1_000_003 + step) % 2**31)
    return ops.cast(drawn[:, 0], "int32")


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
    from keras_seq.layers import ReverseWithinLength

    by_position = ops.transpose(attention, (0, 2, 1))  # (batch, S, L)
    by_position = ReverseWithinLength()(by_position, mask=ops.not_equal(source, PAD))
    return ops.transpose(by_position, (0, 2, 1))


def _tensorflow_function(model, decode, sampling):
    import tensorflow as tf

    shape, dtype = getattr(model, "source_signature", ((None, None), "int32"))
    signature = [tf.TensorSpec(shape, dtype)]
    if sampling:
        signature.append(tf.TensorSpec((), tf.int32))  # the seed
    return tf.function(decode, input_signature=signature)


def _jax_function(model, decode):
    import jax

    compiled = []

    def run(*arguments):  # (source,) or (source, seed)
        if not compiled:  # after the warm-up step, when every weight exists
            variables = list(model.variables)

            def stateless(values, *arguments):
                mapping = list(zip(variables, values, strict=True))
                with keras.StatelessScope(state_mapping=mapping):
                    return decode(*arguments)

            compiled.append((variables, jax.jit(stateless)))
        variables, jitted = compiled[0]
        return jitted([variable.value for variable in variables], *arguments)

    return run
