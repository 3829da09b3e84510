"""Transformer encoder and decoder blocks against an independent NumPy version of the paper."""

import math

import keras
import numpy as np
import pytest

from keras_seq import layers
from keras_seq.testing import LayerCase
from keras_seq.testing.layer_checks import LayerInput
from tests.keras_seq.layers.shared_checks import in_process_check_tests

# Under JAX the blocks' equation checks compile with XLA (5-11 s a test there, under 2 s on
# TensorFlow and PyTorch), so the file is large on JAX.
pytestmark = [pytest.mark.backend_agnostic, pytest.mark.large_on("jax")]

D_MODEL, HEADS, FF, BATCH, T_DEC, T_ENC, D_ENC = 8, 2, 12, 3, 5, 6, 6
EPSILON = 1e-5


# NumPy reference: Vaswani et al. 2017, Sections 3.2-3.3 ------------------------


def layer_norm(x, gamma, beta, epsilon=EPSILON):
    mean = x.mean(-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(variance + epsilon) * gamma + beta


def softmax_rows(scores, allowed):
    """softmax over allowed positions; a row with none allowed is all zeros."""
    out = np.zeros_like(scores)
    for index in np.ndindex(scores.shape[:-1]):
        keep = allowed[index]
        if keep.any():
            e = np.exp(scores[index][keep] - scores[index][keep].max())
            out[index][keep] = e / e.sum()
    return out


def multi_head(queries, memory, w, allowed):
    """MultiHead(Q, K, V) = Concat(head_1 … head_h) W^O, written out head by head:

        head_i = softmax((Q W_i^Q)(K W_i^K)ᵀ / √d_k) (V W_i^V)

    `w` holds Keras's layout: W^Q, W^K, W^V as (d, h, d_k), W^O as (h, d_k, d_model).
    `allowed[b, i, j]`: may query i of row b read key j.
    """
    batch, t_q, _ = queries.shape
    heads, d_k = w["query/bias"].shape
    outputs = np.zeros((batch, t_q, w["attention_output/bias"].shape[0]))
    all_weights = np.zeros((batch, heads, t_q, memory.shape[1]))
    for b in range(batch):
        concat = []
        for i in range(heads):
            q = queries[b] @ w["query/kernel"][:, i, :] + w["query/bias"][i]
            k = memory[b] @ w["key/kernel"][:, i, :] + w["key/bias"][i]
            v = memory[b] @ w["value/kernel"][:, i, :] + w["value/bias"][i]
            weights = softmax_rows(q @ k.T / math.sqrt(d_k), allowed[b])
            all_weights[b, i] = weights
            concat.append(weights @ v)  # head_i, (t_q, d_k)
        w_o = w["attention_output/kernel"].reshape(heads * d_k, -1)
        outputs[b] = np.concatenate(concat, axis=-1) @ w_o + w["attention_output/bias"]
    return outputs, all_weights


def gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def feed_forward(x, w, activation):
    hidden = (
        x @ w["feedforward_intermediate_dense/kernel"] + w["feedforward_intermediate_dense/bias"]
    )
    hidden = np.maximum(hidden, 0.0) if activation == "relu" else gelu(hidden)
    return hidden @ w["feedforward_output_dense/kernel"] + w["feedforward_output_dense/bias"]


def sublayer(x, w, name, function, norm_first):
    """Post-LN: LN(x + f(x)). Pre-LN: x + f(LN(x)). (Dropout is off.)"""
    gamma, beta = w[f"{name}_layer_norm/gamma"], w[f"{name}_layer_norm/beta"]
    if norm_first:
        return x + function(layer_norm(x, gamma, beta))
    return layer_norm(x + function(x), gamma, beta)


def numpy_encoder(x, w, norm_first, activation, mask):
    allowed = mask[:, :, None] & mask[:, None, :]
    attention = w["self_attention"]
    x = sublayer(
        x, w, "self_attention", lambda h: multi_head(h, h, attention, allowed)[0], norm_first
    )
    return sublayer(x, w, "feedforward", lambda h: feed_forward(h, w, activation), norm_first)


def numpy_decoder(x, memory, w, norm_first, decoder_mask, encoder_mask):
    t = x.shape[1]
    causal = np.tril(np.ones((t, t), bool))
    self_allowed = decoder_mask[:, :, None] & decoder_mask[:, None, :] & causal
    cross_allowed = decoder_mask[:, :, None] & encoder_mask[:, None, :]
    self_w, cross_w = w["self_attention"], w["cross_attention"]
    x = sublayer(
        x, w, "self_attention", lambda h: multi_head(h, h, self_w, self_allowed)[0], norm_first
    )
    x = sublayer(
        x,
        w,
        "cross_attention",
        lambda h: multi_head(h, memory, cross_w, cross_allowed)[0],
        norm_first,
    )
    return sublayer(x, w, "feedforward", lambda h: feed_forward(h, w, "relu"), norm_first)


# Helpers ------------------------------------------------------------------------


def randomize(layer, seed=0):
    """Sets every weight, layer-norm gains and biases included, to random values.

    Returns them keyed by path below the block: "feedforward_layer_norm/gamma",
    and, per attention sublayer, a dict {"query/kernel": ..., ...}.
    """
    rng = np.random.default_rng(seed)
    weights = {}
    for variable in layer.weights:
        value = rng.normal(scale=0.5, size=variable.shape).astype("float32")
        variable.assign(value)
        parts = variable.path.split("/")[1:]
        if parts[0] in ("self_attention", "cross_attention"):
            weights.setdefault(parts[0], {})["/".join(parts[1:])] = value.astype("float64")
        else:
            weights["/".join(parts)] = value.astype("float64")
    return weights


def sequence(seed, batch=BATCH, time=T_DEC, features=D_MODEL):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(batch, time, features)).astype("float32")


def padding(lengths, time):
    return np.arange(time)[None, :] < np.asarray(lengths)[:, None]


def numpy_of(x):
    return keras.ops.convert_to_numpy(x)


# The blocks equal the paper's equations ----------------------------------------


@pytest.mark.parametrize(
    ("norm_first", "activation"), [(False, "relu"), (True, "gelu")], ids=["post_ln", "pre_ln"]
)
def test_encoder_block_equals_numpy_equations_with_padding(norm_first, activation):
    x = sequence(1)
    mask = padding([T_DEC, 3, 1], T_DEC)
    block = layers.TransformerEncoderBlock(HEADS, FF, norm_first=norm_first, activation=activation)
    block(x)
    weights = randomize(block)
    expected = numpy_encoder(x.astype("float64"), weights, norm_first, activation, mask)
    np.testing.assert_allclose(numpy_of(block(x, mask=mask)), expected, atol=2e-4)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_ln", "pre_ln"])
def test_decoder_block_equals_numpy_equations_with_padding(norm_first):
    x, memory = sequence(2), sequence(3, time=T_ENC, features=D_ENC)
    decoder_mask = padding([T_DEC, 4, 2], T_DEC)
    encoder_mask = padding([T_ENC, 2, 0], T_ENC)  # the last row has no encoder step at all
    block = layers.TransformerDecoderBlock(HEADS, FF, norm_first=norm_first)
    block(x, memory)
    weights = randomize(block, seed=1)
    expected = numpy_decoder(
        x.astype("float64"),
        memory.astype("float64"),
        weights,
        norm_first,
        decoder_mask,
        encoder_mask,
    )
    actual = block(
        x, memory, decoder_sequence_mask=decoder_mask, encoder_sequence_mask=encoder_mask
    )
    np.testing.assert_allclose(numpy_of(actual), expected, atol=2e-4)


def test_returned_attention_weights_equal_numpy_and_are_zero_where_masked():
    x, memory = sequence(4), sequence(5, time=T_ENC, features=D_ENC)
    decoder_mask, encoder_mask = padding([T_DEC, 3, 2], T_DEC), padding([T_ENC, 4, 0], T_ENC)
    block = layers.TransformerDecoderBlock(HEADS, FF)
    block(x, memory)
    w = randomize(block, seed=2)
    _, self_weights, cross_weights = (
        numpy_of(t)
        for t in block(
            x,
            memory,
            decoder_sequence_mask=decoder_mask,
            encoder_sequence_mask=encoder_mask,
            return_attention_scores=True,
        )
    )
    assert self_weights.shape == (BATCH, HEADS, T_DEC, T_DEC)
    assert cross_weights.shape == (BATCH, HEADS, T_DEC, T_ENC)
    causal = np.tril(np.ones((T_DEC, T_DEC), bool))
    allowed = decoder_mask[:, :, None] & decoder_mask[:, None, :] & causal
    _, expected = multi_head(x.astype("float64"), x.astype("float64"), w["self_attention"], allowed)
    np.testing.assert_allclose(self_weights, expected, atol=1e-5)
    assert np.all(self_weights[:, :, ~causal] == 0.0)  # never a future position
    assert np.all(cross_weights[1][..., ~encoder_mask[1]] == 0.0)  # never encoder padding
    assert np.all(cross_weights[2] == 0.0)  # no encoder step: nothing to read
    np.testing.assert_allclose(cross_weights[0].sum(-1), 1.0, atol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_ln", "pre_ln"])
def test_decode_step_with_a_cache_equals_numpy_equations_position_by_position(norm_first):
    """Incremental decoding: step t, fed only x_t and the cache of steps < t, gives the
    NumPy decoder's output at t; its cross-attention weights are `call`'s at t."""
    x, memory = sequence(6), sequence(7, time=T_ENC, features=D_ENC)
    encoder_mask = padding([T_ENC, 2, 0], T_ENC)  # the last row has no encoder step at all
    block = layers.TransformerDecoderBlock(HEADS, FF, norm_first=norm_first)
    block(x, memory)
    weights = randomize(block, seed=3)
    everything = np.ones((BATCH, T_DEC), bool)
    expected = numpy_decoder(
        x.astype("float64"), memory.astype("float64"), weights, norm_first, everything, encoder_mask
    )
    _, _, expected_cross = block(
        x, memory, encoder_sequence_mask=encoder_mask, return_attention_scores=True
    )
    max_length = T_DEC + 2
    cache = block.empty_self_attention_cache(BATCH, max_length)
    cross_cache = block.cross_attention_cache(memory)
    assert numpy_of(cache[0]).shape == (BATCH, max_length, HEADS, D_MODEL // HEADS)
    for t in range(T_DEC):
        position = t if t % 2 else np.full((BATCH,), t, "int32")  # a scalar or one per row
        y, cache, cross = block.decode_step(x[:, t], position, cache, cross_cache, encoder_mask)
        np.testing.assert_allclose(numpy_of(y), expected[:, t], atol=2e-4, err_msg=f"step {t}")
        np.testing.assert_allclose(numpy_of(cross), numpy_of(expected_cross)[:, :, t], atol=1e-5)
    assert np.all(numpy_of(cache[0])[:, T_DEC:] == 0.0)  # positions not reached stay empty
    assert np.all(numpy_of(cross)[2] == 0.0)  # nothing to read in an all-padding source


# Symmetries: permutation equivariance, causality ---------------------------------


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_ln", "pre_ln"])
def test_encoder_without_positions_is_permutation_equivariant(norm_first):
    x = sequence(6, time=7)
    permutation = np.random.default_rng(7).permutation(7)
    block = layers.TransformerEncoderBlock(HEADS, FF, norm_first=norm_first)
    block(x)
    randomize(block, seed=3)
    shuffled_then_encoded = numpy_of(block(x[:, permutation]))
    encoded_then_shuffled = numpy_of(block(x))[:, permutation]
    np.testing.assert_allclose(shuffled_then_encoded, encoded_then_shuffled, atol=1e-5)


@pytest.mark.parametrize(
    "positions",
    [layers.SinusoidalPositionalEncoding, lambda: layers.LearnedPositionalEmbedding(7)],
    ids=["sinusoidal", "learned"],
)
def test_encoder_with_positions_is_not_permutation_equivariant(positions):
    x = sequence(6, time=7)
    permutation = np.random.default_rng(7).permutation(7)
    model = keras.Sequential([positions(), layers.TransformerEncoderBlock(HEADS, FF)])
    model(x)
    shuffled_then_encoded = numpy_of(model(x[:, permutation]))
    encoded_then_shuffled = numpy_of(model(x))[:, permutation]
    assert np.abs(shuffled_then_encoded - encoded_then_shuffled).max() > 1e-2


@pytest.mark.parametrize("norm_first", [False, True], ids=["post_ln", "pre_ln"])
def test_decoder_outputs_up_to_t_ignore_later_decoder_tokens(norm_first):
    x, memory = sequence(8), sequence(9, time=T_ENC, features=D_ENC)
    block = layers.TransformerDecoderBlock(HEADS, FF, norm_first=norm_first)
    block(x, memory)
    randomize(block, seed=4)
    reference = numpy_of(block(x, memory))
    for t in range(T_DEC - 1):
        changed = x.copy()
        changed[:, t + 1 :] = sequence(10 + t)[:, t + 1 :] * 5.0
        outputs = numpy_of(block(changed, memory))
        np.testing.assert_allclose(outputs[:, : t + 1], reference[:, : t + 1], atol=1e-5)
        assert np.abs(outputs[:, t + 1 :] - reference[:, t + 1 :]).min() > 0.0


def test_every_decoder_step_reads_the_whole_encoder_sequence():
    x, memory = sequence(11), sequence(12, time=T_ENC, features=D_ENC)
    block = layers.TransformerDecoderBlock(HEADS, FF)
    block(x, memory)
    randomize(block, seed=5)
    changed = memory.copy()
    changed[:, -1] += 3.0  # only the last encoder step
    difference = np.abs(numpy_of(block(x, changed)) - numpy_of(block(x, memory)))
    assert np.all(difference.max(axis=-1) > 1e-4)  # every decoder step, the first included


# Masks from Keras ----------------------------------------------------------------


def test_keras_masks_reach_both_decoders_that_share_one_encoder_output():
    # MultiHeadAttention clears the masks of the tensors it is given; the
    # blocks must not let that strip the mask of an encoder output they share.
    source = keras.Input((None,), dtype="int32")
    target = keras.Input((None,), dtype="int32")
    memory = keras.layers.Embedding(20, D_MODEL, mask_zero=True)(source)
    x = keras.layers.Embedding(20, D_MODEL, mask_zero=True)(target)
    first = layers.TransformerDecoderBlock(HEADS, FF)(x, memory)
    second = layers.TransformerDecoderBlock(HEADS, FF)(first, memory)
    model = keras.Model([source, target], [first, second])
    tokens = np.array([[3, 4, 5, 1]])
    padded = model([np.array([[3, 4, 5, 0, 0]]), tokens])
    unpadded = model([np.array([[3, 4, 5]]), tokens])
    for name, a, b in zip(["first", "second"], padded, unpadded, strict=True):
        np.testing.assert_allclose(numpy_of(a), numpy_of(b), atol=1e-5, err_msg=name)


def test_encoder_passes_the_keras_mask_on():
    tokens = keras.Input((None,), dtype="int32")
    x = keras.layers.Embedding(20, D_MODEL, mask_zero=True)(tokens)
    x = layers.TransformerEncoderBlock(HEADS, FF)(x)
    pooled = keras.layers.GlobalAveragePooling1D()(x)  # a masked mean if the mask arrives
    model = keras.Model(tokens, [x, pooled])
    steps, mean = model(np.array([[3, 4, 0, 0]]))
    np.testing.assert_allclose(numpy_of(mean), numpy_of(steps)[:, :2].mean(1), atol=1e-5)


# Structure, dropout, arguments -------------------------------------------------------


def test_sublayers_are_named_by_role():
    block = layers.TransformerDecoderBlock(HEADS, FF)
    block(sequence(0), sequence(0, time=T_ENC, features=D_ENC))
    names = {"/".join(w.path.split("/")[1:]) for w in block.weights}
    for role in ("self_attention", "cross_attention"):
        assert {f"{role}/query/kernel", f"{role}/attention_output/kernel"} <= names
        assert {f"{role}_layer_norm/gamma", f"{role}_layer_norm/beta"} <= names
    assert {
        "feedforward_intermediate_dense/kernel",
        "feedforward_output_dense/kernel",
        "feedforward_layer_norm/gamma",
    } <= names
    assert block.self_attention_dropout.name == "self_attention_dropout"
    assert block.cross_attention_dropout.name == "cross_attention_dropout"
    assert block.feedforward_dropout.name == "feedforward_dropout"


def test_dropout_applies_in_training_only_and_never_to_attention_weights():
    x = sequence(13)
    block = layers.TransformerEncoderBlock(HEADS, FF, dropout=0.5, seed=1)
    block(x)
    randomize(block, seed=6)
    plain = layers.TransformerEncoderBlock(HEADS, FF)
    plain(x)
    plain.set_weights(block.get_weights())
    np.testing.assert_allclose(numpy_of(block(x)), numpy_of(plain(x)), atol=1e-6)
    trained, weights = block(x, training=True, return_attention_scores=True)
    assert not np.allclose(numpy_of(trained), numpy_of(plain(x)))
    np.testing.assert_allclose(numpy_of(weights).sum(-1), 1.0, atol=1e-5)


@pytest.mark.parametrize("cls", [layers.TransformerEncoderBlock, layers.TransformerDecoderBlock])
@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"num_heads": 0, "ff_dim": 8}, "num_heads"),
        ({"num_heads": 2.0, "ff_dim": 8}, "num_heads"),
        ({"num_heads": 2, "ff_dim": 10**12}, "ff_dim"),
        ({"num_heads": 2, "ff_dim": 8, "dropout": 1.0}, "dropout"),
        ({"num_heads": 2, "ff_dim": 8, "norm_first": "yes"}, "norm_first"),
        ({"num_heads": 2, "ff_dim": 8, "layer_norm_epsilon": 0.0}, "layer_norm_epsilon"),
        ({"num_heads": 2, "ff_dim": 8, "seed": -1}, "seed"),
        ({"num_heads": 2, "ff_dim": 8, "activation": "swishy"}, "activation"),
    ],
)
def test_invalid_arguments_name_the_argument_and_value(cls, kwargs, argument):
    with pytest.raises(ValueError, match=f"`{argument}`") as error:
        cls(**kwargs)
    assert repr(kwargs[argument]) in str(error.value)


def test_model_dimension_not_divisible_by_heads_names_both():
    with pytest.raises(ValueError, match=r"d_model=10.*num_heads=4"):
        layers.TransformerEncoderBlock(4, 8)(np.zeros((1, 3, 10), "float32"))
    with pytest.raises(ValueError, match=r"d_model=10.*num_heads=4"):
        layers.TransformerDecoderBlock(4, 8)(
            np.zeros((1, 3, 10), "float32"), np.zeros((1, 3, 8), "float32")
        )


def test_huge_model_dimension_is_refused_before_allocation():
    block = layers.TransformerEncoderBlock(2, 60_000)
    with pytest.raises(ValueError, match="would create"):
        block.build((None, 5, 60_000))
    assert not block.weights


def test_wrong_input_rank_is_a_clear_error():
    with pytest.raises(ValueError, match=r"\(batch, time, d_model\)"):
        layers.TransformerEncoderBlock(2, 8)(np.zeros((4, 8), "float32"))


# The shared layer checks -------------------------------------------------------------


# Their saved files are checked in tests/keras_seq/test_saved_layers.py, in one fresh process.
SAVED_CASES = {
    "encoder_block": LayerCase(
        make=lambda **kw: layers.TransformerEncoderBlock(2, 8, norm_first=True, **kw),
        features=4,
        call_kwargs={"return_attention_scores": True},
        output_time_axes=(1, 2),  # outputs (batch, T, d), weights (batch, heads, T, T)
    ),
    "decoder_block": LayerCase(
        make=lambda **kw: layers.TransformerDecoderBlock(2, 8, **kw),
        named_inputs=(
            LayerInput("decoder_sequence", features=4, sequence_lengths=(4, 7)),
            LayerInput("encoder_sequence", features=6),
        ),
    ),
}


# The eager checks are large: 9-13 s of CPU under JAX, which compiles each op at its first use.
test_layer_passes_eager_layer_checks, test_every_layer_fits_one_jit_compiled_step = (
    in_process_check_tests(SAVED_CASES, large_eager=SAVED_CASES)
)


def test_docstring_examples_run():
    import doctest

    from keras_seq.layers import transformer_decoder, transformer_encoder

    for module in (transformer_encoder, transformer_decoder):
        globs = {"np": np, "keras": keras, **vars(module)}
        result = doctest.testmod(module, globs=globs, optionflags=doctest.ELLIPSIS)
        assert result.attempted > 0
        assert result.failed == 0


@pytest.mark.parametrize("scores", [False, True])
def test_symbolic_outputs_have_the_shapes_and_dtypes_of_real_ones(scores):
    # The blocks give their output spec from the shapes, without tracing `call`; it must say
    # what a real call returns, scores included.
    target, memory = np.zeros((2, 4, 8), "float32"), np.zeros((2, 7, 6), "float32")
    encoder = layers.TransformerEncoderBlock(2, 16)
    decoder = layers.TransformerDecoderBlock(2, 16)
    cases = [
        (encoder, (keras.Input((4, 8), batch_size=2),), (target,)),
        (
            decoder,
            (keras.Input((4, 8), batch_size=2), keras.Input((7, 6), batch_size=2)),
            (target, memory),
        ),
    ]
    for block, symbolic_inputs, real_inputs in cases:
        symbolic = block(*symbolic_inputs, return_attention_scores=scores)
        real = block(*real_inputs, return_attention_scores=scores)
        symbolic, real = keras.tree.flatten(symbolic), keras.tree.flatten(real)
        assert [tuple(s.shape) for s in symbolic] == [tuple(r.shape) for r in real], block.name
        assert [s.dtype for s in symbolic] == [
            keras.backend.standardize_dtype(r.dtype) for r in real
        ]
