"""Sampling (`sample_decode`) against an independent NumPy version of the filtered distribution.

The model here is a small, real, deterministic encoder–decoder whose next-token
distribution is known exactly: a first-order Markov chain over the target
tokens, shifted by the first source token,

    log p(y_t | y_{t−1}, x) = log_softmax(A[y_{t−1}] + C[x_0]),

with random tables `A` and `C` and PAD's and START's logits raised by 4, so
that a decoder which did not forbid them would draw them often. NumPy gives
the distribution a sampler must draw from (temperature, then top-k and the
nucleus, both measured on the tempered distribution, as keras-hub's
`TopPSampler(p, k)` does):

    q = softmax(log p / T) over the tokens other than PAD and START,
    keep the k most probable, and the most probable ones while the mass above
    each is < p; draw ∝ q among the kept.

Statistical tolerance: every count of `n` draws of a token of probability `π`
must lie within 5 standard deviations, `|count − nπ| ≤ 5 √(nπ(1 − π)) + 1`
(a true sampler fails one cell in about 1.7 million); the draws are seeded,
so each test is deterministic on a backend. Each frequency test also checks
that the bounds have power: the model's own, unfiltered distribution fails
them. Tokens outside the kept set must never appear.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops

from keras_seq.models.decoding import (
    END,
    PAD,
    START,
    compile_decoder,
    greedy_decode,
    sample_decode,
)

# Under JAX each test compiles its models with XLA: 5-20 s each, so the file is large there.
pytestmark = pytest.mark.large_on("jax")

agnostic = pytest.mark.backend_agnostic

TARGET_VOCAB = 10
SOURCE_VOCAB = 6
DRAWS = 20_000  # rows of one batch, all with the same source: 20,000 independent draws


@keras.saving.register_keras_serializable(package="keras_seq_tests")
class MarkovChain(keras.Model):
    """A first-order chain shifted by the first source token, with the decoding contract.

    Its attention is uniform over the source tokens (PAD excluded).
    """

    def __init__(self, source_vocab_size, target_vocab_size, seed=0, scale=1.0, **kwargs):
        super().__init__(**kwargs)
        self.source_vocab_size = source_vocab_size
        self.target_vocab_size = target_vocab_size
        self.seed = seed
        self.scale = scale
        rng = np.random.default_rng(seed)
        transitions = scale * rng.standard_normal((target_vocab_size, target_vocab_size))
        transitions[:, [PAD, START]] += 4.0  # tempting, and forbidden
        source_table = scale * rng.standard_normal((source_vocab_size, target_vocab_size))
        self.transitions = self.add_weight(
            name="transitions", shape=transitions.shape, initializer="zeros", trainable=False
        )
        self.transitions.assign(transitions.astype("float32"))
        self.source_table = self.add_weight(
            name="source_table", shape=source_table.shape, initializer="zeros", trainable=False
        )
        self.source_table.assign(source_table.astype("float32"))
        self.decode_step_calls = 0

    def tables(self):
        return (
            ops.convert_to_numpy(self.transitions).astype("float64"),
            ops.convert_to_numpy(self.source_table).astype("float64"),
        )

    def encode(self, source):
        source = ops.cast(source, "int32")
        present = ops.cast(ops.not_equal(source, PAD), "float32")
        return {
            "bias": ops.take(self.source_table, source[:, 0], axis=0),
            "attention": present / ops.sum(present, axis=1, keepdims=True),
        }

    def decode_step(self, tokens, state):
        self.decode_step_calls += 1
        logits = ops.take(self.transitions, ops.cast(tokens, "int32"), axis=0) + state["bias"]
        return ops.log_softmax(logits, axis=-1), state, state["attention"]

    def get_config(self):
        return {
            "source_vocab_size": self.source_vocab_size,
            "target_vocab_size": self.target_vocab_size,
            "seed": self.seed,
            "scale": self.scale,
            "name": self.name,
        }


# --- NumPy references ------------------------------------------------------------------------


def model_log_probs(model, previous, first_source_token):
    """log p(· | previous, x) of the chain, in float64."""
    transitions, source_table = model.tables()
    logits = transitions[previous] + source_table[first_source_token]
    logits = logits - logits.max()
    return logits - np.log(np.exp(logits).sum())


def filtered_distribution(log_probs, temperature=1.0, top_k=None, top_p=None):
    """The distribution a sampler draws from: tempered, PAD/START removed, top-k ∩ nucleus."""
    z = np.array(log_probs, dtype=np.float64) / temperature
    z[[PAD, START]] = -np.inf
    q = np.exp(z - z.max())
    q /= q.sum()
    order = np.argsort(-q, kind="stable")
    keep = np.zeros(len(q), dtype=bool)
    keep[order[: len(q) if top_k is None else top_k]] = True
    if top_p is not None:
        mass_above = np.concatenate([[0.0], np.cumsum(q[order])[:-1]])
        keep[order[mass_above >= top_p]] = False
    keep &= q > 0
    kept = np.where(keep, q, 0.0)
    return kept / kept.sum()


def within_five_sigma(counts, probabilities):
    """Whether every count is within 5 binomial standard deviations (+1 for a discrete count)."""
    n = counts.sum()
    expected = n * probabilities
    sigma = np.sqrt(n * probabilities * (1.0 - probabilities))
    return bool((np.abs(counts - expected) <= 5.0 * sigma + 1.0).all())


def _numpy(result):
    return [None if x is None else ops.convert_to_numpy(x) for x in result]


@pytest.fixture(scope="module")
def chain():
    return MarkovChain(SOURCE_VOCAB, TARGET_VOCAB, seed=4, scale=1.0)


def _sources(seed, batch, max_source=5):
    rng = np.random.default_rng(seed)
    source = np.zeros((batch, max_source), dtype=np.int32)
    for row, length in enumerate(rng.integers(1, max_source + 1, size=batch)):
        source[row, :length] = rng.integers(1, SOURCE_VOCAB, size=length)
    return source


# --- The distribution ------------------------------------------------------------------------

CASES = {
    "ancestral": {"temperature": 1.0},
    "cold": {"temperature": 0.6},
    "hot": {"temperature": 1.8},
    "top-k": {"top_k": 3},
    "top-k-past-the-vocabulary": {"top_k": 50, "temperature": 0.8},
    "top-p": {"top_p": 0.75},
    "top-k-and-top-p-hot": {"top_k": 5, "top_p": 0.9, "temperature": 1.5},
}


@agnostic
@pytest.mark.parametrize("case", list(CASES))
def test_sampled_token_frequencies_match_the_numpy_filtered_distribution(chain, case):
    options = CASES[case]
    source = np.full((DRAWS, 2), 3, dtype=np.int32)  # first source token 3
    ids, scores, lengths, _ = _numpy(
        sample_decode(chain, source, 2, end_token=None, seed=11, **options)
    )
    assert (lengths == 2).all()
    assert not np.isin(ids, [PAD, START]).any()

    # Step 1: START → y_1.
    expected = filtered_distribution(model_log_probs(chain, START, 3), **options)
    counts = np.bincount(ids[:, 0], minlength=TARGET_VOCAB)
    assert not counts[expected == 0].any(), f"drew outside the kept set: {counts}"
    assert within_five_sigma(counts, expected), (counts, np.round(DRAWS * expected))
    if options != {"temperature": 1.0}:  # power: the unfiltered model is rejected
        unfiltered = filtered_distribution(model_log_probs(chain, START, 3))
        assert not within_five_sigma(counts, unfiltered)

    # Step 2, given y_1: the state (the previous token) and a fresh key per step.
    for first in np.flatnonzero(counts >= 500):
        expected = filtered_distribution(model_log_probs(chain, first, 3), **options)
        following = np.bincount(ids[ids[:, 0] == first, 1], minlength=TARGET_VOCAB)
        assert not following[expected == 0].any(), (first, following)
        assert within_five_sigma(following, expected), (first, following)

    # Scores: the drawn sequence's log-probability under the model itself (untempered,
    # unfiltered). float32 log-softmax against float64: 1e-4.
    for row in range(0, DRAWS, 997):
        y1, y2 = ids[row]
        expected_score = model_log_probs(chain, START, 3)[y1] + model_log_probs(chain, y1, 3)[y2]
        np.testing.assert_allclose(scores[row], expected_score, atol=1e-4)


def test_the_numpy_reference_truncates_as_the_papers_define():
    # q = (0.5, 0.3, 0.15, 0.05) on tokens 2..5 (PAD and START at 0).
    log_probs = np.log([1e-9, 1e-9, 0.5, 0.3, 0.15, 0.05])
    # The mass above token 3 is 0.5 < p, above token 4 it is 0.8: two kept for p = 0.79,
    # three for p = 0.81 (p = 0.8 itself is left to rounding).
    nucleus = filtered_distribution(log_probs, top_p=0.79)
    np.testing.assert_allclose(nucleus, [0, 0, 0.625, 0.375, 0, 0], atol=1e-6)
    np.testing.assert_allclose(
        filtered_distribution(log_probs, top_p=0.81),
        np.array([0, 0, 0.5, 0.3, 0.15, 0]) / 0.95,
        atol=1e-6,
    )
    np.testing.assert_allclose(
        filtered_distribution(log_probs, top_k=1), [0, 0, 1, 0, 0, 0], atol=1e-9
    )


@agnostic
def test_sampling_never_draws_pad_or_start_and_ends_with_end_then_pad(chain):
    source = _sources(seed=1, batch=256)
    ids, _, lengths, attention = _numpy(
        sample_decode(chain, source, 12, temperature=1.5, seed=3, return_attention=True)
    )
    ended = 0
    for row, length in enumerate(lengths):
        words = ids[row, :length]
        assert not np.isin(words, [PAD, START]).any()
        assert not ids[row, length:].any()
        assert not attention[row, length:].any(), "attention after END must be zero"
        if END in words:
            ended += 1
            assert words[-1] == END and list(words).count(END) == 1
    # Each step draws END with probability at least min q(END) over the chain's states, so
    # at least 1 − (1 − min)^12 of the rows end; half of that many is a loose floor.
    lowest = min(
        filtered_distribution(model_log_probs(chain, previous, x), temperature=1.5)[END]
        for previous in range(TARGET_VOCAB)
        for x in range(1, SOURCE_VOCAB)
    )
    assert ended >= 0.5 * len(source) * (1 - (1 - lowest) ** 12), (ended, lowest)


# --- Seeds -----------------------------------------------------------------------------------


@agnostic
def test_the_same_seed_gives_the_same_samples_and_another_seed_others(chain):
    source = _sources(seed=2, batch=64)
    first = _numpy(sample_decode(chain, source, 8, top_p=0.95, seed=5))
    again = _numpy(sample_decode(chain, source, 8, top_p=0.95, seed=5))
    other = _numpy(sample_decode(chain, source, 8, top_p=0.95, seed=6))
    np.testing.assert_array_equal(first[0], again[0])
    np.testing.assert_array_equal(first[1], again[1])
    # 64 rows of up to 8 draws from distributions of entropy > 1 nat: they cannot all agree.
    assert (first[0] != other[0]).any(axis=1).sum() >= 32


@agnostic
def test_the_compiled_sampler_equals_sample_decode_and_traces_once(chain):
    source = _sources(seed=3, batch=32)
    options = {"temperature": 0.9, "top_k": 6}
    decode = compile_decoder(chain, 8, method="sample", seed=40, **options)
    before = chain.decode_step_calls
    calls = [_numpy(decode(source)), _numpy(decode(source)), _numpy(decode(source, seed=7))]
    # One eager warm-up step and one trace of the loop body: the seed is an input of the
    # compiled function, so a new seed per call compiles nothing new. (PyTorch has no
    # graph for the loop: `compile_decoder` runs it eagerly there.)
    if keras.backend.backend() in ("tensorflow", "jax"):
        assert chain.decode_step_calls - before <= 2, chain.decode_step_calls - before
    for result, seed in zip(calls, (40, 41, 7), strict=True):
        expected = _numpy(sample_decode(chain, source, 8, seed=seed, **options))
        np.testing.assert_array_equal(result[0], expected[0])
        np.testing.assert_allclose(result[1], expected[1], atol=1e-6)  # same ops, same device
    assert (calls[0][0] != calls[1][0]).any(), "consecutive calls must use new seeds"


@agnostic
def test_sampling_works_inside_the_backends_compiler_with_a_seed_tensor(chain):
    source = _sources(seed=4, batch=16)
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        run = tf.function(lambda s, seed: sample_decode(chain, s, 6, top_p=0.9, seed=seed)[:2])
        spec = (tf.TensorSpec((None, None), tf.int32), tf.TensorSpec((), tf.int32))
        graph = run.get_concrete_function(*spec).graph
        assert any(op.type in ("While", "StatelessWhile") for op in graph.get_operations())
    elif backend == "jax":
        import jax

        # The chain's tables are read as constants here (no stateless scope): fine for a test.
        run = jax.jit(lambda s, seed: sample_decode(chain, s, 6, top_p=0.9, seed=seed)[:2])
    else:
        pytest.skip(f"no compiler check for {backend}")
    for seed in (0, 9):
        ids, scores = _numpy(run(ops.convert_to_tensor(source), ops.convert_to_tensor(seed)))
        expected = _numpy(sample_decode(chain, source, 6, top_p=0.9, seed=seed))
        np.testing.assert_array_equal(ids, expected[0])
        np.testing.assert_allclose(scores, expected[1], atol=1e-6)


# --- Limits ----------------------------------------------------------------------------------


def _numpy_greedy(model, source_row, max_length):
    out, previous = [], START
    for _ in range(max_length):
        log_probs = model_log_probs(model, previous, source_row[0])
        log_probs[[PAD, START]] = -np.inf
        previous = int(np.argmax(log_probs))
        out.append(previous)
        if previous == END:
            break
    return out


@agnostic
@pytest.mark.parametrize("options", [{"temperature": 1e-4}, {"top_k": 1}, {"top_p": 1e-6}])
def test_a_cold_or_single_token_sampler_is_greedy(chain, options):
    source = _sources(seed=5, batch=24)
    ids, scores, lengths, _ = _numpy(sample_decode(chain, source, 9, seed=1, **options))
    for row in range(len(source)):
        expected = _numpy_greedy(chain, source[row], 9)
        assert list(ids[row, : lengths[row]]) == expected, row
    greedy = _numpy(greedy_decode(chain, source, 9))
    np.testing.assert_allclose(scores, greedy[1], atol=1e-5)


# --- Arguments -------------------------------------------------------------------------------


@agnostic
@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"temperature": 0}, "argument `temperature`, expected a positive number"),
        ({"temperature": -1.0}, "argument `temperature`, expected a positive number"),
        ({"temperature": float("nan")}, "argument `temperature`, expected a positive number"),
        ({"top_k": 0}, "argument `top_k`, expected a positive integer"),
        ({"top_k": 2.5}, "argument `top_k`, expected a positive integer"),
        ({"top_p": 0.0}, r"argument `top_p`, expected a number in \(0, 1\]"),
        ({"top_p": 1.5}, r"argument `top_p`, expected a number in \(0, 1\]"),
        ({"top_p": True}, r"argument `top_p`, expected a number in \(0, 1\]"),
        ({"seed": -1}, "argument `seed`, expected an integer from 0 to 2147483647"),
        ({"seed": 2**31}, "argument `seed`, expected an integer from 0 to 2147483647"),
        ({"seed": "7"}, "argument `seed`, expected an integer in"),
        ({"seed": np.zeros(2, "int32")}, "argument `seed`, expected an integer in"),
    ],
)
def test_bad_sampling_arguments_are_refused_with_their_name(chain, kwargs, message):
    with pytest.raises(ValueError, match=message):
        sample_decode(chain, _sources(seed=0, batch=2), 4, **kwargs)


@agnostic
@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"method": "nucleus"}, "argument `method`, expected one of 'greedy', 'beam', 'sample'"),
        ({"method": "sample", "beam_width": 3}, "argument `beam_width`, expected 1 for method"),
        ({"method": "greedy", "top_k": 3}, "argument `top_k`, expected None unless method="),
        ({"beam_width": 3, "temperature": 0.5}, "argument `temperature`, expected 1.0 unless"),
        ({"top_p": 0.9}, "argument `top_p`, expected None unless method='sample'"),
        ({"seed": 1}, "argument `seed`, expected None unless method='sample'"),
        ({"method": "sample", "coverage_penalty": 0.2}, "argument `coverage_penalty`, expected 0"),
        ({"method": "sample", "temperature": 0}, "argument `temperature`, expected a positive"),
        ({"method": "sample", "seed": -3}, "argument `seed`, expected an integer from 0"),
    ],
)
def test_compile_decoder_refuses_options_of_another_method(chain, kwargs, message):
    with pytest.raises(ValueError, match=message):
        compile_decoder(chain, 4, **kwargs)


@agnostic
def test_a_compiled_non_sampler_refuses_a_seed(chain):
    decode = compile_decoder(chain, 4)
    with pytest.raises(ValueError, match="argument `seed`, expected None for method 'greedy'"):
        decode(_sources(seed=0, batch=2), seed=3)
