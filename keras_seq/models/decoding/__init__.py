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

from keras_seq.models.decoding.beam import beam_search, length_penalty_factor
from keras_seq.models.decoding.common import (
    COVERAGE_FLOOR,
    END,
    MAX_BEAM_WIDTH,
    MAX_DECODE_LENGTH,
    MAX_SEED,
    METHODS,
    PAD,
    START,
    DecodeResult,
)
from keras_seq.models.decoding.compiled import compile_decoder
from keras_seq.models.decoding.greedy import greedy_decode
from keras_seq.models.decoding.sampling import sample_decode

__all__ = [
    "COVERAGE_FLOOR",
    "END",
    "MAX_BEAM_WIDTH",
    "MAX_DECODE_LENGTH",
    "MAX_SEED",
    "METHODS",
    "PAD",
    "START",
    "DecodeResult",
    "beam_search",
    "compile_decoder",
    "greedy_decode",
    "length_penalty_factor",
    "sample_decode",
]
