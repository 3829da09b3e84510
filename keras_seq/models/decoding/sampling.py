"""Sampling: each token drawn from the model's tempered, truncated distribution,

    q(y) ∝ exp(log p(y | y_<t, x) / T),   y_t ~ q restricted to top-k(q) ∩ nucleus_p(q),

with the semantics of keras-hub's `TopKSampler` and `TopPSampler`: top-k keeps the `k` most
probable tokens (Fan et al. 2018), the nucleus the fewest most probable tokens whose
probability reaches `p` (Holtzman et al. 2020). The randomness is stateless: step `t` draws
with the key `(seed, t)`, a loop carry like any other, so the same seed gives the same output
in eager mode, under `tf.function` and under `jax.jit`.

References:
    - Fan, Lewis & Dauphin, "Hierarchical Neural Story Generation", ACL 2018
      (top-k sampling).
    - Holtzman, Buys, Du, Forbes & Choi, "The Curious Case of Neural Text
      Degeneration", ICLR 2020 (nucleus, top-p, sampling).
"""

from __future__ import annotations

import numbers

import keras
import numpy as np
from keras import ops

from keras_seq import argument_checks
from keras_seq.models.decoding.common import (
    END,
    MAX_SEED,
    START,
    _check_common,
    _decode_one_path,
    check_sampling,
    seed_value,
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
    temperature, top_k, top_p = check_sampling(temperature, top_k, top_p)
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


def _seed_tensor(seed):
    """An int32 scalar seed tensor from an int, None (random) or an integer scalar tensor."""
    if seed is None or isinstance(seed, numbers.Integral):
        return ops.convert_to_tensor(seed_value(seed), dtype="int32")
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
        import tensorflow as tf  # the backend in use: its own random ops

        drawn = tf.random.stateless_categorical(logits, 1, seed=key, dtype=tf.int32)
    elif backend == "jax":
        drawn = keras.random.categorical(logits, 1, seed=ops.cast(key, "uint32"))
    else:
        seed, step = (int(x) for x in ops.convert_to_numpy(key))
        drawn = keras.random.categorical(logits, 1, seed=(seed * 1_000_003 + step) % 2**31)
    return ops.cast(drawn[:, 0], "int32")
