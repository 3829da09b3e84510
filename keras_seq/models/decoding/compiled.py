"""`compile_decoder`: any of the decoders, compiled once for the current backend.

`tf.function` with a dynamic `(batch, time)` input signature under TensorFlow, `jax.jit` over
the model's weights under JAX (the weights are arguments, so new weights need no new trace),
eager under PyTorch: what `Translator` and the benchmarks use.
"""

from __future__ import annotations

import keras
from keras import ops

from keras_seq import argument_checks
from keras_seq.models.decoding.beam import (
    beam_search,
)
from keras_seq.models.decoding.common import (
    END,
    MAX_DECODE_LENGTH,
    MAX_SEED,
    METHODS,
    START,
    _as_source,
    _check_options_of,
    _check_tokens,
    _warm_up,
    check_beam_penalties,
    check_beam_width,
    check_model,
    check_sampling,
    seed_value,
)
from keras_seq.models.decoding.greedy import (
    greedy_decode,
)
from keras_seq.models.decoding.sampling import (
    sample_decode,
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
    check_model(model)
    max_length = argument_checks.positive_int("max_length", max_length, MAX_DECODE_LENGTH)
    beam_width = check_beam_width(beam_width)
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
        check_beam_penalties(model, length_penalty, coverage_penalty)

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
        check_sampling(temperature, top_k, top_p)
        next_seed = [seed_value(seed)]

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


def _tensorflow_function(model, decode, sampling):
    import tensorflow as tf  # the backend in use: each backend compiles with its own

    shape, dtype = getattr(model, "source_signature", ((None, None), "int32"))
    signature = [tf.TensorSpec(shape, dtype)]
    if sampling:
        signature.append(tf.TensorSpec((), tf.int32))  # the seed
    return tf.function(decode, input_signature=signature)


def _jax_function(model, decode):
    import jax  # the backend in use, as above

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
