"""Greedy decoding and beam search against independent NumPy searches.

The decoders are tested on a small, real, deterministic encoder–decoder
defined here (`SecondOrderChain`): its next-token distribution is a
second-order Markov chain over the target tokens, shifted by the source,

    log p(y_t | y_{t−1}, y_{t−2}, x) = log_softmax(A[y_{t−1}] + B[y_{t−2}] + c(x) + β t e_END),
    c(x) = mean of C[x_j] over the source tokens (PAD excluded),

with random tables `A`, `B`, `C` per seed, plus `β·t` on END's logit so that sequences end
after a few steps, and its attention at step `t` is
`softmax_j(D[y_{t−1}, x_j])` over the source tokens (or, with `attend_to_padding`, over
every position, PAD included, to test that the coverage penalty leaves padding out). Its
state carries
`y_{t−2}`, so a beam search that gathered the wrong parent's state would
score the wrong sequences. Every expected value comes from NumPy: a
step-by-step argmax (greedy), a plain-Python beam search over lists of
hypotheses following the documented rules (GNMT's coverage penalty included), and
brute-force enumeration of every output sequence (the exact best).

About "a wider beam never scores lower than greedy": beam search is a
heuristic and this is not a theorem. With the reference search below, on
random second-order chains over 8 tokens, 6 steps, width 4, beam search ends
below greedy in 5 of 2,000 cases (it prunes the greedy prefix early). What is
guaranteed, and tested exactly, is that the search does what its rules say
(it equals the reference search), that a beam wide enough to keep every
candidate finds the best sequence (brute force), and that width 1 is greedy.
The "never lower" property is also checked on the fixed test batches here and
on random-weight `Seq2Seq` models (tests/keras_seq/models/test_translator.py).
"""

from __future__ import annotations

import itertools

import keras
import numpy as np
import pytest
from keras import ops

from keras_seq.models.decoding import (
    END,
    PAD,
    START,
    beam_search,
    compile_decoder,
    greedy_decode,
    length_penalty_factor,
)

# Under JAX each test compiles its models with XLA: 5-20 s each, so the file is large there.
pytestmark = pytest.mark.large_on("jax")

# The exactness tests also run under JAX; the broader ones on TensorFlow only (JAX compiles
# every eager while loop anew, several seconds each).
agnostic = pytest.mark.backend_agnostic


@keras.saving.register_keras_serializable(package="keras_seq_tests")
class SecondOrderChain(keras.Model):
    """A deterministic encoder–decoder with the `encode` / `decode_step` contract.

    Args:
        source_vocab_size: Source ids are in [0, source_vocab_size); 0 is PAD.
        target_vocab_size: `V`, the number of target tokens.
        seed: Seeds the random tables.
        scale: Standard deviation of the tables (sharper distributions when larger).
        end_bias: `β`: END's logit grows by `β` per token emitted, so that sequences end.
        reverse_source: Read each (right-padded) source backwards within its length,
            and report attention in that reading order, as `Seq2Seq` does.
        attend_to_padding: Spread the attention over the PAD positions too (it is a
            test model: real ones give padding no weight).
    """

    def __init__(
        self,
        source_vocab_size,
        target_vocab_size,
        seed=0,
        scale=1.5,
        end_bias=1.0,
        reverse_source=False,
        attend_to_padding=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.reverse_source = reverse_source
        self.attend_to_padding = attend_to_padding
        self.source_vocab_size = source_vocab_size
        self.target_vocab_size = target_vocab_size
        self.seed = seed
        self.scale = scale
        self.end_bias = end_bias
        rng = np.random.default_rng(seed)
        v, w = target_vocab_size, source_vocab_size
        shapes = {"first": (v, v), "second": (v, v), "source_table": (w, v), "alignment": (v, w)}
        for name, shape in shapes.items():
            weight = self.add_weight(name=name, shape=shape, initializer="zeros", trainable=False)
            weight.assign((scale * rng.standard_normal(shape)).astype("float32"))
            setattr(self, name, weight)
        self.end_column = np.eye(target_vocab_size, dtype="float32")[END]
        self.decode_step_calls = 0  # Python calls: traces, not tokens, in a compiled loop

    def tables(self):
        return {
            name: keras.ops.convert_to_numpy(getattr(self, name)).astype("float64")
            for name in ("first", "second", "source_table", "alignment")
        }

    def encode(self, source):
        source = ops.cast(source, "int32")
        if self.reverse_source:  # position j < n reads token n − 1 − j
            steps = ops.arange(ops.shape(source)[1], dtype="int32")[None, :]
            n = ops.sum(ops.cast(ops.not_equal(source, PAD), "int32"), axis=1, keepdims=True)
            source = ops.take_along_axis(source, ops.where(steps < n, n - 1 - steps, steps), 1)
        present = ops.cast(ops.not_equal(source, PAD), "float32")[:, :, None]  # (b, S, 1)
        rows = ops.take(self.source_table, source, axis=0)  # (b, S, V)
        count = ops.maximum(ops.sum(present, axis=1), 1.0)  # (b, 1)
        bias = ops.sum(rows * present, axis=1) / count  # (b, V)
        batch = ops.shape(source)[0]
        return {
            "bias": bias,
            "previous": ops.full((batch,), START, dtype="int32"),
            "emitted": ops.zeros((batch,), dtype="float32"),
            "source": source,
        }

    def decode_step(self, tokens, state):
        self.decode_step_calls += 1
        tokens = ops.cast(tokens, "int32")
        logits = (
            ops.take(self.first, tokens, axis=0)
            + ops.take(self.second, state["previous"], axis=0)
            + state["bias"]
            + self.end_bias * state["emitted"][:, None] * self.end_column
        )
        log_probs = ops.log_softmax(logits, axis=-1)
        source = state["source"]
        scores = ops.take_along_axis(ops.take(self.alignment, tokens, axis=0), source, axis=1)
        real = ops.logical_or(ops.not_equal(source, PAD), self.attend_to_padding)
        scores = ops.where(real, scores, -1e9)
        weights = ops.exp(scores - ops.max(scores, axis=-1, keepdims=True))
        weights = weights * ops.cast(real, "float32")
        attention = weights / ops.sum(weights, axis=-1, keepdims=True)
        new_state = {
            "bias": state["bias"],
            "previous": tokens,
            "emitted": state["emitted"] + 1.0,
            "source": source,
        }
        return log_probs, new_state, attention

    def get_config(self):
        return {
            "source_vocab_size": self.source_vocab_size,
            "target_vocab_size": self.target_vocab_size,
            "seed": self.seed,
            "scale": self.scale,
            "end_bias": self.end_bias,
            "reverse_source": self.reverse_source,
            "attend_to_padding": self.attend_to_padding,
            "name": self.name,
        }


# --- NumPy references ------------------------------------------------------------------------


def _log_softmax(x):
    x = x - x.max()
    return x - np.log(np.exp(x).sum())


class Reference:
    """The chain's equations in NumPy, for one source row (without its padding)."""

    def __init__(self, model, source_row, coverage_of_padding=False):
        self.t = model.tables()
        self.end_bias = model.end_bias
        self.source = np.asarray([x for x in source_row if x != PAD])
        self.bias = self.t["source_table"][self.source].mean(axis=0)
        # What attention is spread over, and which positions the coverage penalty sums
        # over: the source tokens (padding only for a model that attends to it, or for a
        # deliberately wrong reference that counts it).
        self.row = np.asarray(source_row) if model.attend_to_padding else self.source
        self.covered = len(self.row) if coverage_of_padding else len(self.source)

    def log_probs(self, prefix):
        """log p(· | prefix, x), with PAD and START excluded (as the decoders do)."""
        previous = prefix[-1] if len(prefix) >= 1 else START
        before = prefix[-2] if len(prefix) >= 2 else START
        logits = self.t["first"][previous] + self.t["second"][before] + self.bias
        logits[END] += self.end_bias * len(prefix)
        out = _log_softmax(logits)
        out[[PAD, START]] = -np.inf
        return out

    def attention(self, prefix, everywhere=False):
        """The step's attention over the source tokens (over `self.row` if `everywhere`)."""
        previous = prefix[-1] if prefix else START
        scores = self.t["alignment"][previous][self.row]
        weights = np.exp(scores - scores.max())
        weights = weights / weights.sum()
        return weights if everywhere else weights[: len(self.source)]

    def coverage_penalty(self, sequence, beta):
        """GNMT's cp = β Σ_i log(min(Σ_j p_ij, 1)) over the covered positions i."""
        if beta == 0:
            return 0.0
        steps = [self.attention(sequence[:t], everywhere=True) for t in range(len(sequence))]
        coverage = np.sum(steps, axis=0)[: self.covered]
        return beta * np.log(np.minimum(coverage, 1.0)).sum()

    def ranking(self, sequence, score, alpha, beta):
        """GNMT's s(Y, X) = log P(Y | X) / lp(Y) + cp(X; Y) (eq. 14)."""
        return score / ((5 + len(sequence)) / 6) ** alpha + self.coverage_penalty(sequence, beta)

    def score(self, sequence):
        return sum(self.log_probs(sequence[:t])[y] for t, y in enumerate(sequence))

    def greedy(self, max_length, end=END):
        out = []
        for _ in range(max_length):
            y = int(np.argmax(self.log_probs(out)))
            out.append(y)
            if y == end:
                break
        return out

    def beam(self, max_length, width, alpha, end=END, beta=0.0):
        """Beam search over Python lists: finished hypotheses stay in the beam."""

        def ranking(hypothesis):
            tokens, score, _ = hypothesis
            return self.ranking(tokens, score, alpha, beta)

        beams = [((), 0.0, False)]
        for _ in range(max_length):
            candidates = []
            for tokens, score, finished in beams:
                if finished:
                    candidates.append((tokens, score, True))
                    continue
                log_probs = self.log_probs(tokens)
                for y in np.flatnonzero(np.isfinite(log_probs)):
                    candidates.append(((*tokens, int(y)), score + log_probs[y], y == end))
            candidates.sort(key=ranking, reverse=True)
            beams = candidates[:width]
            if all(finished for _, _, finished in beams):
                break
        tokens, score, _ = max(beams, key=ranking)
        return list(tokens), score

    def best_by_enumeration(self, max_length, alpha, end=END, beta=0.0):
        """The exact best sequence: every output up to `max_length` tokens, ranked by s."""
        words = [y for y in range(len(self.t["first"])) if y not in (PAD, START, end)]
        best = None
        for length in range(1, max_length + 1):
            for body in itertools.product(words, repeat=length - 1):
                for last in [*words, end] if length == max_length else [end]:
                    sequence = (*body, last)
                    value = self.ranking(sequence, self.score(sequence), alpha, beta)
                    if best is None or value > best[0]:
                        best = (value, list(sequence))
        return best[1]


def _padded(sequence, max_length):
    return np.asarray(sequence + [PAD] * (max_length - len(sequence)), dtype=np.int32)


def _numpy(result):
    return [None if x is None else keras.ops.convert_to_numpy(x) for x in result]


def _sources(seed, batch, source_vocab, max_source):
    """Source rows of different lengths (1 … max_source), right-padded with PAD."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, max_source + 1, size=batch)
    lengths[0] = max_source
    source = np.zeros((batch, max_source), dtype=np.int32)
    for row, length in enumerate(lengths):
        source[row, :length] = rng.integers(1, source_vocab, size=length)
    return source


@pytest.fixture(scope="module")
def chain():
    return SecondOrderChain(source_vocab_size=9, target_vocab_size=8, seed=3)


@pytest.fixture(scope="module")
def sources():
    return _sources(seed=11, batch=16, source_vocab=9, max_source=6)


# --- Greedy ----------------------------------------------------------------------------------


@agnostic
def test_greedy_equals_numpy_argmax_step_by_step(chain, sources):
    max_length = 7
    ids, scores, lengths, attention = _numpy(
        greedy_decode(chain, sources, max_length, return_attention=True)
    )
    assert ids.shape == (16, max_length) and ids.dtype == np.int32
    assert attention.shape == (16, max_length, sources.shape[1])
    for row, source_row in enumerate(sources):
        reference = Reference(chain, source_row)
        expected = reference.greedy(max_length)
        np.testing.assert_array_equal(ids[row], _padded(expected, max_length))
        np.testing.assert_allclose(scores[row], reference.score(expected), atol=1e-4)
        assert lengths[row] == len(expected)
        n = len(reference.source)
        for t in range(max_length):
            if t < len(expected):
                np.testing.assert_allclose(
                    attention[row, t, :n], reference.attention(expected[:t]), atol=1e-5
                )
            else:
                assert not attention[row, t].any(), "attention after END must be zero"
        assert not attention[row, :, n:].any(), "padded source positions got attention"


@agnostic
def test_attention_of_a_reversed_source_is_reported_in_source_order(chain, sources):
    # The chain's distribution does not depend on source order, its attention
    # follows the tokens: reading backwards must give the same weights once
    # they are put back in source order.
    backwards = SecondOrderChain(
        source_vocab_size=9, target_vocab_size=8, seed=3, reverse_source=True
    )
    for decode in (greedy_decode, beam_search):
        forward = _numpy(decode(chain, sources, 6, return_attention=True))
        reverse = _numpy(decode(backwards, sources, 6, return_attention=True))
        np.testing.assert_array_equal(reverse[0], forward[0])
        np.testing.assert_allclose(reverse[3], forward[3], atol=1e-6)
    # and the reversed model itself reports them backwards
    state = backwards.encode(sources)
    _, _, read_order = backwards.decode_step(ops.full((16,), START, "int32"), state)
    n = int((sources[2] != PAD).sum())
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(read_order)[2, :n][::-1], forward[3][2, 0, :n], atol=1e-6
    )


def test_greedy_emits_end_then_pad_and_never_reserved_ids(chain, sources):
    ids, _, lengths, _ = _numpy(greedy_decode(chain, sources, 12))
    ended = 0
    for row, length in zip(ids, lengths, strict=True):
        words = row[:length]
        assert not np.isin(words, [PAD, START]).any()
        assert not (row[length:] != PAD).any()
        if END in words:
            ended += 1
            assert words[-1] == END and list(words).count(END) == 1
    assert ended >= 8, "the test chain should end most sequences within 12 steps"


def test_greedy_without_end_token_decodes_max_length_tokens(chain, sources):
    ids, _, lengths, _ = _numpy(greedy_decode(chain, sources, 9, end_token=None))
    assert (lengths == 9).all()
    assert not np.isin(ids, [PAD, START]).any()
    reference = Reference(chain, sources[0])
    expected = []
    for _ in range(9):
        expected.append(int(np.argmax(reference.log_probs(expected))))
    np.testing.assert_array_equal(ids[0], expected)


def test_decoding_a_batch_equals_decoding_each_row_alone(chain, sources):
    batch = _numpy(beam_search(chain, sources, 6, beam_width=3, return_attention=True))
    for row in (0, 3, 9):
        length = int((sources[row] != PAD).sum())
        alone = _numpy(
            beam_search(
                chain, sources[row : row + 1, :length], 6, beam_width=3, return_attention=True
            )
        )
        np.testing.assert_array_equal(batch[0][row], alone[0][0])
        np.testing.assert_allclose(batch[1][row], alone[1][0], atol=1e-5)
        np.testing.assert_allclose(batch[3][row, :, :length], alone[3][0], atol=1e-6)


# --- Beam search -----------------------------------------------------------------------------


@agnostic
def test_beam_width_one_equals_greedy(chain, sources):
    greedy = _numpy(greedy_decode(chain, sources, 8, return_attention=True))
    for alpha in (0.0, 0.6):
        beam = _numpy(
            beam_search(
                chain, sources, 8, beam_width=1, length_penalty=alpha, return_attention=True
            )
        )
        np.testing.assert_array_equal(beam[0], greedy[0])
        np.testing.assert_allclose(beam[1], greedy[1], atol=1e-5)
        np.testing.assert_array_equal(beam[2], greedy[2])
        np.testing.assert_allclose(beam[3], greedy[3], atol=1e-6)


@pytest.mark.parametrize(
    "width,alpha", [pytest.param(2, 0.0), pytest.param(3, 0.6, marks=agnostic), (5, 1.0)]
)
def test_beam_search_equals_a_python_beam_search(chain, sources, width, alpha):
    max_length = 6
    ids, scores, lengths, attention = _numpy(
        beam_search(
            chain,
            sources,
            max_length,
            beam_width=width,
            length_penalty=alpha,
            return_attention=True,
        )
    )
    for row, source_row in enumerate(sources):
        reference = Reference(chain, source_row)
        expected, expected_score = reference.beam(max_length, width, alpha)
        np.testing.assert_array_equal(ids[row], _padded(expected, max_length), err_msg=f"row {row}")
        np.testing.assert_allclose(scores[row], expected_score, atol=1e-4)
        np.testing.assert_allclose(scores[row], reference.score(expected), atol=1e-4)
        assert lengths[row] == len(expected)
        # The attention history follows the returned hypothesis through every gather.
        n = len(reference.source)
        for t in range(len(expected)):
            np.testing.assert_allclose(
                attention[row, t, :n], reference.attention(expected[:t]), atol=1e-5
            )
        assert not attention[row, len(expected) :].any()


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_exhaustive_beam_finds_the_best_sequence_by_enumeration(alpha):
    # 6 target tokens: PAD, START, END and 3 words. A beam of 4^4 = 256 keeps every
    # candidate of up to 4 tokens (at most 3^4 live + 40 finished), so it is exact.
    model = SecondOrderChain(source_vocab_size=7, target_vocab_size=6, seed=5, scale=1.0)
    source = _sources(seed=2, batch=6, source_vocab=7, max_source=4)
    max_length = 4
    ids, scores, _, _ = _numpy(
        beam_search(model, source, max_length, beam_width=4**max_length, length_penalty=alpha)
    )
    greedy_scores = _numpy(greedy_decode(model, source, max_length))[1]
    for row, source_row in enumerate(source):
        reference = Reference(model, source_row)
        best = reference.best_by_enumeration(max_length, alpha)
        np.testing.assert_array_equal(ids[row], _padded(best, max_length), err_msg=f"row {row}")
        np.testing.assert_allclose(scores[row], reference.score(best), atol=1e-4)
        if alpha == 0.0:
            assert scores[row] >= greedy_scores[row] - 1e-5


def test_wider_beams_do_not_score_below_narrower_ones_on_the_test_chains():
    """Not a theorem (see the module docstring); checked on 3 chains × 16 sources."""
    improved = 0
    for seed in (0, 1, 2):
        model = SecondOrderChain(source_vocab_size=9, target_vocab_size=10, seed=seed)
        source = _sources(seed=100 + seed, batch=16, source_vocab=9, max_source=6)
        greedy = narrower = _numpy(greedy_decode(model, source, 8))[1]
        for width in (2, 4, 8):
            scores = _numpy(beam_search(model, source, 8, beam_width=width, length_penalty=0.0))[1]
            assert (scores >= narrower - 1e-5).all(), (seed, width, scores - narrower)
            narrower = scores
        improved += int((narrower > greedy + 1e-3).sum())
    # Width 8 found a more probable sequence than greedy for 22 of the 48 sources.
    assert improved >= 10, improved


def test_finished_beams_keep_their_score_and_emit_pad(chain, sources):
    ids, scores, lengths, _ = _numpy(beam_search(chain, sources, 10, beam_width=4))
    for row, length in enumerate(lengths):
        words = ids[row, :length]
        assert not (ids[row, length:] != PAD).any()
        assert not np.isin(words, [PAD, START]).any()
        if END in words:
            assert words[-1] == END and list(words).count(END) == 1
        np.testing.assert_allclose(
            scores[row], Reference(chain, sources[row]).score(list(words)), atol=1e-4
        )


@agnostic
def test_length_penalty_is_gnmt():
    lengths = np.array([1, 2, 7, 30])
    for alpha in (0.0, 0.6, 1.0):
        actual = keras.ops.convert_to_numpy(length_penalty_factor(lengths, alpha))
        np.testing.assert_allclose(actual, ((5 + lengths) / 6.0) ** alpha, rtol=1e-6)


def test_a_larger_length_penalty_favours_longer_outputs(sources):
    model = SecondOrderChain(source_vocab_size=9, target_vocab_size=8, seed=7, scale=1.0)
    short = _numpy(beam_search(model, sources, 12, beam_width=6, length_penalty=0.0))[2]
    long = _numpy(beam_search(model, sources, 12, beam_width=6, length_penalty=2.0))[2]
    assert (long >= short).all() and (long > short).any()


# --- Coverage penalty ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "width,alpha,beta",
    [pytest.param(3, 0.6, 1.0, marks=agnostic), (2, 0.0, 0.5), (4, 0.6, 0.2), (4, 0.6, 3.0)],
)
def test_beam_search_with_coverage_penalty_equals_a_python_beam_search(
    chain, sources, width, alpha, beta
):
    max_length = 7
    ids, scores, lengths, attention = _numpy(
        beam_search(
            chain,
            sources,
            max_length,
            beam_width=width,
            length_penalty=alpha,
            coverage_penalty=beta,
            return_attention=True,
        )
    )
    without = _numpy(
        beam_search(chain, sources, max_length, beam_width=width, length_penalty=alpha)
    )
    for row, source_row in enumerate(sources):
        reference = Reference(chain, source_row)
        expected, expected_score = reference.beam(max_length, width, alpha, beta=beta)
        np.testing.assert_array_equal(ids[row], _padded(expected, max_length), err_msg=f"row {row}")
        # Scores stay log-probabilities: the penalties only rank. float32 sums: 1e-4.
        np.testing.assert_allclose(scores[row], expected_score, atol=1e-4)
        assert lengths[row] == len(expected)
        n = len(reference.source)
        for t in range(len(expected)):
            np.testing.assert_allclose(
                attention[row, t, :n], reference.attention(expected[:t]), atol=1e-5
            )
    # The term changes what is chosen, for 4 to 10 of the 16 sources in these cases (and the
    # reference agrees row by row above).
    changed = int((ids != without[0]).any(axis=1).sum())
    assert changed >= 2, changed


@agnostic
def test_a_zero_coverage_penalty_is_the_plain_beam_search(chain, sources):
    ids, scores, _, _ = _numpy(
        beam_search(chain, sources, 7, beam_width=3, length_penalty=0.6, coverage_penalty=0.0)
    )
    for row, source_row in enumerate(sources):
        expected, expected_score = Reference(chain, source_row).beam(7, 3, 0.6)
        np.testing.assert_array_equal(ids[row], _padded(expected, 7), err_msg=f"row {row}")
        np.testing.assert_allclose(scores[row], expected_score, atol=1e-4)


@pytest.mark.parametrize("alpha,beta", [(0.0, 1.0), (0.6, 0.4)])
def test_exhaustive_beam_with_coverage_finds_the_best_sequence_by_enumeration(alpha, beta):
    # As in the test without coverage: a beam of 4^4 keeps every candidate, so the best
    # hypothesis by s(Y, X) = log P / lp + cp is the best of all sequences.
    model = SecondOrderChain(source_vocab_size=7, target_vocab_size=6, seed=5, scale=1.0)
    source = _sources(seed=2, batch=6, source_vocab=7, max_source=4)
    max_length = 4
    ids, _, _, _ = _numpy(
        beam_search(
            model,
            source,
            max_length,
            beam_width=4**max_length,
            length_penalty=alpha,
            coverage_penalty=beta,
        )
    )
    plain = _numpy(
        beam_search(model, source, max_length, beam_width=4**max_length, length_penalty=alpha)
    )[0]
    for row, source_row in enumerate(source):
        best = Reference(model, source_row).best_by_enumeration(max_length, alpha, beta=beta)
        np.testing.assert_array_equal(ids[row], _padded(best, max_length), err_msg=f"row {row}")
    assert (ids != plain).any(), "these cases were picked for coverage to change the best"


def test_the_coverage_penalty_leaves_source_padding_out(sources):
    """A model that puts attention on PAD: only the source tokens' coverage counts."""
    leaky = SecondOrderChain(
        source_vocab_size=9, target_vocab_size=8, seed=3, attend_to_padding=True
    )
    ids, _, _, _ = _numpy(beam_search(leaky, sources, 7, beam_width=3, coverage_penalty=2.0))
    counted_padding = 0
    for row, source_row in enumerate(sources):
        expected, _ = Reference(leaky, source_row).beam(7, 3, 0.6, beta=2.0)
        np.testing.assert_array_equal(ids[row], _padded(expected, 7), err_msg=f"row {row}")
        wrong, _ = Reference(leaky, source_row, coverage_of_padding=True).beam(7, 3, 0.6, beta=2.0)
        counted_padding += wrong != expected
    assert counted_padding >= 1, "padding must matter here, or this test proves nothing"


@pytest.mark.large
@agnostic
def test_compiled_beam_search_with_coverage_equals_the_reference(sources):
    model = SecondOrderChain(source_vocab_size=9, target_vocab_size=8, seed=3)
    decode = compile_decoder(model, 8, beam_width=3, length_penalty=0.6, coverage_penalty=1.0)
    ids, scores, _, _ = _numpy(decode(sources))
    for row, source_row in enumerate(sources):
        expected, expected_score = Reference(model, source_row).beam(8, 3, 0.6, beta=1.0)
        np.testing.assert_array_equal(ids[row], _padded(expected, 8), err_msg=f"row {row}")
        np.testing.assert_allclose(scores[row], expected_score, atol=1e-4)


class _WithoutAttention:
    """The chain, reporting no attention weights (None) from `decode_step`."""

    def __init__(self, model):
        self.model = model

    def encode(self, source):
        return self.model.encode(source)

    def decode_step(self, tokens, state):
        log_probs, state, _ = self.model.decode_step(tokens, state)
        return log_probs, state, None


@agnostic
def test_a_coverage_penalty_is_refused_for_a_model_without_attention(chain, sources):
    from keras_seq.models import seq2seq

    message = "argument `coverage_penalty`, expected 0 for a model without attention"
    plain = seq2seq(13, 11, units=8, embedding_dim=4, cell="gru")  # attention=None
    with pytest.raises(ValueError, match=message):
        beam_search(plain, sources, 5, beam_width=2, coverage_penalty=0.2)
    with pytest.raises(ValueError, match=message):
        compile_decoder(plain, 5, beam_width=2, coverage_penalty=0.2)
    with pytest.raises(ValueError, match=message):
        beam_search(_WithoutAttention(chain), sources, 5, beam_width=2, coverage_penalty=0.2)


def test_a_model_without_attention_decodes_with_no_coverage_penalty(chain, sources):
    ids = _numpy(beam_search(_WithoutAttention(chain), sources, 6, beam_width=3))[0]
    np.testing.assert_array_equal(ids, _numpy(beam_search(chain, sources, 6, beam_width=3))[0])


# --- Compiled loop ---------------------------------------------------------------------------


# Tracing and compiling the whole loop: 3.5-5.1 s of CPU on TensorFlow (5.1 on a loaded
# machine, over the tier bound), so large on every backend.
@agnostic
@pytest.mark.large
def test_compiled_decoder_matches_the_reference_and_traces_the_step_once(sources):
    model = SecondOrderChain(source_vocab_size=9, target_vocab_size=8, seed=3)
    decode = compile_decoder(model, 12, beam_width=3, length_penalty=0.6, return_attention=True)
    before = model.decode_step_calls
    first = _numpy(decode(sources))
    second = _numpy(decode(sources[:5, :4]))  # another batch size and source length
    calls = model.decode_step_calls - before
    # One eager warm-up step, then one trace of the loop body per traced shape
    # (TensorFlow: one graph for every shape), never one call per token. PyTorch
    # has no graph for the loop (`compile_decoder` runs it eagerly there).
    if keras.backend.backend() in ("tensorflow", "jax"):
        assert calls <= 3, calls
    for (ids, scores, lengths, attention), source in ((first, sources), (second, sources[:5, :4])):
        assert attention.shape == (len(source), 12, source.shape[1])
        for row, source_row in enumerate(source):
            reference = Reference(model, source_row)
            expected, expected_score = reference.beam(12, 3, 0.6)
            np.testing.assert_array_equal(ids[row], _padded(expected, 12))
            np.testing.assert_allclose(scores[row], expected_score, atol=1e-4)
            assert lengths[row] == len(expected)


@agnostic
def test_greedy_decoding_works_inside_the_backends_compiler(chain, sources):
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        run = tf.function(lambda s: greedy_decode(chain, s, 6, return_attention=True)[:2])
        graph = run.get_concrete_function(tf.TensorSpec((None, None), tf.int32)).graph
        assert any(op.type in ("While", "StatelessWhile") for op in graph.get_operations())
    elif backend == "jax":
        import jax

        # The chain's tables are read as constants here (no stateless scope): fine for a test.
        run = jax.jit(lambda s: greedy_decode(chain, s, 6, return_attention=True)[:2])
    else:
        pytest.skip(f"no compiler check for {backend}")
    ids, scores = _numpy(run(ops.convert_to_tensor(sources)))
    expected = _numpy(greedy_decode(chain, sources, 6))
    np.testing.assert_array_equal(ids, expected[0])
    np.testing.assert_allclose(scores, expected[1], atol=1e-5)


# --- Arguments -------------------------------------------------------------------------------


@agnostic
@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"max_length": 0}, "argument `max_length`, expected a positive integer"),
        ({"beam_width": 0}, "argument `beam_width`, expected a positive integer"),
        ({"length_penalty": -0.5}, "argument `length_penalty`, expected a number ≥ 0"),
        ({"length_penalty": float("nan")}, "argument `length_penalty`, expected a finite"),
        ({"coverage_penalty": -0.1}, "argument `coverage_penalty`, expected a number ≥ 0"),
        ({"coverage_penalty": float("inf")}, "argument `coverage_penalty`, expected a finite"),
        ({"coverage_penalty": "0.2"}, "argument `coverage_penalty`, expected a finite"),
        ({"end_token": 0}, "argument `end_token`, expected an id other than PAD"),
        ({"end_token": 1}, "argument `end_token`, expected an id other than `start_token`"),
        ({"return_attention": "yes"}, "argument `return_attention`, expected True or False"),
    ],
)
def test_bad_arguments_are_refused_with_their_name(chain, sources, kwargs, message):
    arguments = {"max_length": 5, **kwargs}
    with pytest.raises(ValueError, match=message):
        beam_search(chain, sources, **arguments)


@agnostic
def test_bad_sources_and_models_are_refused(chain):
    with pytest.raises(ValueError, match="argument `source`, expected token ids of shape"):
        greedy_decode(chain, np.zeros((3,), "int32"), 5)
    with pytest.raises(ValueError, match="argument `source`, expected token ids of shape"):
        greedy_decode(chain, np.zeros((3, 0), "int32"), 5)
    with pytest.raises(ValueError, match="argument `source`, expected integer token ids"):
        greedy_decode(chain, np.zeros((3, 4), "float32"), 5)
    with pytest.raises(ValueError, match="argument `model`, expected a model with `encode"):
        greedy_decode(keras.layers.Dense(3), np.ones((3, 4), "int32"), 5)


# --- A real Seq2Seq --------------------------------------------------------------------------
#
# Random weights: nothing here needs a trained model. The checks use the teacher-forced
# pass (`model({"source", "target"})`, which the model helper tests against its layers) as
# the independent reference: fed the decoded tokens, it must give each of them the highest
# probability at its step (PAD and START aside), and their log-probabilities must sum to
# the reported score.

SEQ2SEQ_VARIANTS = {
    "lstm": {"cell": "lstm"},
    "gru-bahdanau-bidirectional-reversed": {
        "cell": "gru",
        "attention": "bahdanau",
        "bidirectional": True,
        "reverse_source": True,
    },
    "lstm-luong-input-feeding": {
        "cell": "lstm",
        "attention": "luong_general",
        "input_feeding": True,
    },
    "transformer": {
        "architecture": "transformer",
        "embedding_dim": 16,
        "num_heads": 2,
        "ff_dim": 32,
        "max_length": 12,
    },
}


@pytest.fixture(scope="module")
def seq2seq_models():
    from keras_seq.models import seq2seq

    keras.utils.set_random_seed(0)
    models = {}
    for name, options in SEQ2SEQ_VARIANTS.items():
        if "architecture" not in options:
            options = {"units": 16, "embedding_dim": 8, **options}
        models[name] = seq2seq(13, 11, **options)
    return models


def _teacher_forced_log_probs(model, source, ids):
    probabilities = model({"source": source, "target": ids}, training=False)
    return np.log(np.maximum(keras.ops.convert_to_numpy(probabilities), 1e-30))


@pytest.mark.parametrize("variant", list(SEQ2SEQ_VARIANTS))
def test_greedy_output_is_the_teacher_forced_argmax_of_a_seq2seq(seq2seq_models, variant):
    model = seq2seq_models[variant]
    source = _sources(seed=4, batch=6, source_vocab=13, max_source=7)
    ids, scores, lengths, attention = _numpy(
        compile_decoder(model, 10, return_attention=True)(source)
    )
    log_probs = _teacher_forced_log_probs(model, source, ids)  # (6, 10, V)
    allowed = log_probs.copy()
    allowed[..., [PAD, START]] = -np.inf
    for row in range(len(source)):
        steps = lengths[row]
        np.testing.assert_array_equal(ids[row, :steps], allowed[row, :steps].argmax(-1))
        chosen = log_probs[row, np.arange(steps), ids[row, :steps]]
        np.testing.assert_allclose(scores[row], chosen.sum(), rtol=1e-4, atol=1e-4)
        n = int((source[row] != PAD).sum())
        if variant in ("lstm",):
            assert not attention[row].any()
        else:
            np.testing.assert_allclose(attention[row, :steps, :n].sum(-1), 1.0, atol=1e-4)
            assert not attention[row, :, n:].any()


@pytest.mark.parametrize("variant", list(SEQ2SEQ_VARIANTS))
def test_beam_width_one_equals_greedy_on_a_seq2seq(seq2seq_models, variant):
    model = seq2seq_models[variant]
    source = _sources(seed=5, batch=6, source_vocab=13, max_source=7)
    greedy = _numpy(compile_decoder(model, 10, return_attention=True)(source))
    beam = _numpy(beam_search(model, source, 10, beam_width=1, return_attention=True))
    np.testing.assert_array_equal(beam[0], greedy[0])
    np.testing.assert_allclose(beam[1], greedy[1], atol=1e-4)
    np.testing.assert_allclose(beam[3], greedy[3], atol=1e-5)


@pytest.mark.parametrize("variant", ["gru-bahdanau-bidirectional-reversed", "transformer"])
def test_beam_search_scores_are_the_teacher_forced_log_probabilities(seq2seq_models, variant):
    model = seq2seq_models[variant]
    source = _sources(seed=6, batch=6, source_vocab=13, max_source=7)
    greedy = _numpy(compile_decoder(model, 10)(source))[1]
    ids, scores, lengths, _ = _numpy(
        compile_decoder(model, 10, beam_width=4, length_penalty=0.0)(source)
    )
    log_probs = _teacher_forced_log_probs(model, source, ids)
    for row in range(len(source)):
        steps = lengths[row]
        chosen = log_probs[row, np.arange(steps), ids[row, :steps]]
        np.testing.assert_allclose(scores[row], chosen.sum(), rtol=1e-4, atol=1e-4)
    # Not a theorem (see the module docstring), but holds for these sources.
    assert (scores >= greedy - 1e-4).all()


def test_decoding_past_a_transformers_buffer_is_refused(seq2seq_models):
    with pytest.raises(ValueError, match="argument `max_length`, expected at most the model's"):
        greedy_decode(seq2seq_models["transformer"], np.ones((1, 3), "int32"), 13)


@pytest.mark.parametrize(
    "architecture",
    [{"attention": "bahdanau"}, {"architecture": "transformer", "num_heads": 2}],
    ids=["rnn", "transformer"],
)
def test_decoding_a_mixed_precision_seq2seq_keeps_float32_scores(architecture):
    """The states (the Transformer's float16 key/value caches included) keep their dtypes
    through the compiled loop."""
    from keras_seq.models import seq2seq

    keras.utils.set_random_seed(2)
    model = seq2seq(13, 11, units=16, embedding_dim=8, dtype="mixed_float16", **architecture)
    source = _sources(seed=8, batch=4, source_vocab=13, max_source=5)
    for width in (1, 3):
        _, scores, lengths, attention = compile_decoder(
            model, 7, beam_width=width, return_attention=True
        )(source)
        assert keras.backend.standardize_dtype(scores.dtype) == "float32"
        assert keras.backend.standardize_dtype(attention.dtype) == "float32"
        scores, lengths = _numpy((scores, lengths))
        assert np.isfinite(scores).all() and (scores < 0).all() and (lengths >= 1).all()


@pytest.mark.large
def test_docstring_examples_run():
    import doctest

    from keras_seq.models.decoding import beam, compiled, greedy, sampling

    attempted = 0
    for module in (greedy, sampling, beam, compiled):  # the decoders' own modules
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__
        attempted += result.attempted
    assert attempted >= 10
