"""Beam search: the `K` best prefixes at each step, ranked by GNMT's score,

    s(Y, X) = log P(Y | X) / lp(Y) + cp(X; Y),
    lp(Y) = ((5 + |Y|) / (5 + 1))^α,
    cp(X; Y) = β · Σ_{i=1}^{|X|} log(min(Σ_{j=1}^{|Y|} p_{i,j}, 1.0)),

(Wu et al. 2016, eq. 14; see `keras_seq.models.decoding` for the whole search). Every live
prefix is extended by every token (`K × V` candidates per source) and the `K` best survive;
the decoder state of each survivor is gathered from its parent beam.

References:
    - Sutskever, Vinyals & Le, "Sequence to Sequence Learning with Neural
      Networks", NeurIPS 2014.
    - Wu et al., "Google's Neural Machine Translation System: Bridging the
      Gap between Human and Machine Translation", arXiv:1609.08144, 2016.
"""

from __future__ import annotations

import numpy as np
from keras import ops

from keras_seq import argument_checks
from keras_seq.models.decoding.common import (
    COVERAGE_FLOOR,
    END,
    PAD,
    START,
    DecodeResult,
    _check_common,
    _ended,
    _forbid_reserved,
    _in_source_order,
    _map_state,
    _no_attention,
    _source_length,
    _source_mask,
    check_beam_penalties,
    check_beam_width,
)


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
    k = check_beam_width(beam_width)
    alpha, beta = check_beam_penalties(model, length_penalty, coverage_penalty)
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
