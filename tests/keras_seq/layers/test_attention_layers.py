"""The attention layers against independent NumPy versions of each paper's equations."""

import doctest

import keras
import numpy as np
import pytest

from keras_seq import layers
from keras_seq.layers import (
    attention_base,
    bahdanau_attention,
    luong_attention,
    pointer_attention,
    scaled_dot_product_attention,
)
from keras_seq.testing.layer_checks import LayerCase, LayerInput
from tests.keras_seq.layers.shared_checks import in_process_check_tests

pytestmark = pytest.mark.backend_agnostic

BATCH, TQ, TV, D_Q, D_K, D_V, UNITS = 3, 4, 6, 5, 3, 4, 7


# === NumPy versions of the equations =========================================


def numpy_masked_softmax(scores, mask):
    """Softmax over the last axis restricted to the True entries; no True entry: zeros."""
    out = np.zeros(scores.shape)
    for index in np.ndindex(scores.shape[:-1]):
        valid = mask[index]
        if valid.any():
            z = np.exp(scores[index][valid] - scores[index][valid].max())
            out[index][valid] = z / z.sum()
    return out


def numpy_mask(query_mask, value_mask, causal=False, tq=TQ, tv=TV, batch=BATCH):
    """mask[b, i, j] = query_mask[b, i] ∧ value_mask[b, j] ∧ (j ≤ i + Tv − Tq if causal)."""
    qm = np.ones((batch, tq), bool) if query_mask is None else query_mask
    vm = np.ones((batch, tv), bool) if value_mask is None else value_mask
    mask = qm[:, :, None] & vm[:, None, :]
    if causal:
        mask &= np.arange(tv)[None, None, :] <= np.arange(tq)[None, :, None] + (tv - tq)
    return mask


def numpy_additive_scores(query, key, w_query, w_key, v):
    """e_ij = vᵀ tanh(W q_i + U k_j), one (i, j) at a time; W, U stored as (d, units)."""
    batch, tq, tv = query.shape[0], query.shape[1], key.shape[1]
    scores = np.zeros((batch, tq, tv))
    for b in range(batch):
        for i in range(tq):
            for j in range(tv):
                scores[b, i, j] = v @ np.tanh(w_query.T @ query[b, i] + w_key.T @ key[b, j])
    return scores


def numpy_luong_scores(score, query, key, weights):
    if score == "dot":  # h_tᵀ h̄_s
        return np.einsum("bid,bjd->bij", query, key)
    if score == "general":  # h_tᵀ W_a h̄_s, W_a stored transposed as key_projection (d_k, d_q)
        w_a = weights["key_projection"].T
        return np.einsum("bid,de,bje->bij", query, w_a, key)
    # concat: v_aᵀ tanh(W_a [h_t; h̄_s]), W_a = [W_q W_k] held as two blocks
    w_a = np.concatenate([weights["query_projection"], weights["key_projection"]]).T
    batch, tq, tv = query.shape[0], query.shape[1], key.shape[1]
    scores = np.zeros((batch, tq, tv))
    for b in range(batch):
        for i in range(tq):
            for j in range(tv):
                joint = np.concatenate([query[b, i], key[b, j]])
                scores[b, i, j] = weights["score_vector"] @ np.tanh(w_a @ joint)
    return scores


def numpy_attention(scores, value, mask):
    """α = masked softmax of the scores, c = Σ_j α_j v_j."""
    alpha = numpy_masked_softmax(scores, mask)
    return np.einsum("bij,bjd->bid", alpha, value), alpha


def numpy_scaled_dot_product(query, key, value, mask):
    """softmax(q·k / √d_k) v for (batch, T, d) inputs."""
    scores = np.einsum("bid,bjd->bij", query, key) / np.sqrt(query.shape[-1])
    return numpy_attention(scores, value, mask)


# === Helpers ==================================================================


def to_numpy(x):
    return keras.ops.convert_to_numpy(x).astype("float64")


def random(shape, seed):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def inputs(d_q=D_Q, d_k=D_K, d_v=D_V, seed=0):
    """A query sequence, a value sequence and a separate key of another size."""
    return (
        random((BATCH, TQ, d_q), seed),
        random((BATCH, TV, d_v), seed + 1),
        random((BATCH, TV, d_k), seed + 2),
    )


def masks_for_test():
    """Query mask: last step of row 1 masked. Value mask: row 1 right-padded, row 2 empty."""
    query_mask = np.ones((BATCH, TQ), bool)
    query_mask[1, -1] = False
    value_mask = np.ones((BATCH, TV), bool)
    value_mask[1, 4:] = False
    value_mask[2] = False
    return query_mask, value_mask


def set_random_weights(layer, seed=7):
    """Random, non-constant values for every weight, returned by weight name."""
    rng = np.random.default_rng(seed)
    values = {}
    for weight in layer.weights:
        value = rng.normal(scale=0.6, size=weight.shape).astype("float32")
        weight.assign(value)
        values[weight.name] = value
    return values


def built(layer, query, value, key=None):
    layer(query, value, key=key)
    return layer


def call(layer, query, value, key=None, query_mask=None, value_mask=None, **kwargs):
    context, weights = layer(
        query,
        value,
        key=key,
        query_mask=query_mask,
        value_mask=value_mask,
        return_attention_scores=True,
        **kwargs,
    )
    return to_numpy(context), to_numpy(weights)


MASK_CASES = ["unmasked", "masked"]
QUERY_CASES = ["single_step", "sequence"]


def select(query_case, mask_case, query, query_mask, value_mask):
    """The query and masks of one parametrized case; a single step is query step 0."""
    masked = mask_case == "masked"
    query_mask = query_mask if masked else None
    value_mask = value_mask if masked else None
    if query_case == "single_step":
        return query[:, 0], (None if query_mask is None else query_mask[:, 0]), value_mask
    return query, query_mask, value_mask


def expected_for(query_case, context, alpha):
    if query_case == "single_step":
        return context[:, 0], alpha[:, 0]
    return context, alpha


# === Each layer equals its equations ==========================================


@pytest.mark.parametrize("mask_case", MASK_CASES)
@pytest.mark.parametrize("query_case", QUERY_CASES)
def test_bahdanau_follows_additive_attention_equations(query_case, mask_case):
    query, value, key = inputs()
    query_mask, value_mask = masks_for_test()
    layer = built(layers.BahdanauAttention(UNITS), query, value, key)
    w = set_random_weights(layer)
    q, qm, vm = select(query_case, mask_case, query, query_mask, value_mask)
    actual = call(layer, q, value, key, qm, vm)

    scores = numpy_additive_scores(
        query, key, w["query_projection"], w["key_projection"], w["score_vector"]
    )
    mask = numpy_mask(
        query_mask if mask_case == "masked" else None,
        value_mask if mask_case == "masked" else None,
    )
    expected = expected_for(query_case, *numpy_attention(scores, value, mask))
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_allclose(a, e, atol=1e-5)


@pytest.mark.parametrize("mask_case", MASK_CASES)
@pytest.mark.parametrize("query_case", QUERY_CASES)
@pytest.mark.parametrize("score", ["dot", "general", "concat"])
def test_luong_follows_its_score_equations(score, query_case, mask_case):
    d_q = D_K if score == "dot" else D_Q  # dot needs equal sizes
    query, value, key = inputs(d_q=d_q)
    query_mask, value_mask = masks_for_test()
    units = UNITS if score == "concat" else None
    layer = built(layers.LuongAttention(score, units=units), query, value, key)
    w = set_random_weights(layer)
    q, qm, vm = select(query_case, mask_case, query, query_mask, value_mask)
    actual = call(layer, q, value, key, qm, vm)

    scores = numpy_luong_scores(score, query, key, w)
    mask = numpy_mask(
        query_mask if mask_case == "masked" else None,
        value_mask if mask_case == "masked" else None,
    )
    expected = expected_for(query_case, *numpy_attention(scores, value, mask))
    for a, e in zip(actual, expected, strict=True):
        np.testing.assert_allclose(a, e, atol=1e-5)


@pytest.mark.parametrize("mask_case", MASK_CASES)
@pytest.mark.parametrize("query_case", QUERY_CASES)
def test_pointer_output_is_the_distribution_over_input_positions(query_case, mask_case):
    query, encoder_states, _ = inputs()
    query_mask, value_mask = masks_for_test()
    layer = built(layers.PointerAttention(UNITS), query, encoder_states)
    w = set_random_weights(layer)
    q, qm, vm = select(query_case, mask_case, query, query_mask, value_mask)
    actual = to_numpy(layer(q, encoder_states, query_mask=qm, value_mask=vm))

    # u_j = vᵀ tanh(W_1 e_j + W_2 d_i), p = softmax(u): W_1 is key_projection, W_2 query_projection.
    u = numpy_additive_scores(
        query, encoder_states, w["query_projection"], w["key_projection"], w["score_vector"]
    )
    mask = numpy_mask(
        query_mask if mask_case == "masked" else None,
        value_mask if mask_case == "masked" else None,
    )
    expected = numpy_masked_softmax(u, mask)
    expected = expected[:, 0] if query_case == "single_step" else expected
    np.testing.assert_allclose(actual, expected, atol=1e-5)


@pytest.mark.parametrize("return_weights", [False, True], ids=["fused", "explicit"])
@pytest.mark.parametrize("mask_case", MASK_CASES)
@pytest.mark.parametrize("query_case", QUERY_CASES)
def test_scaled_dot_product_follows_softmax_qk_over_sqrt_dk(query_case, mask_case, return_weights):
    query, value, key = inputs(d_q=D_K, d_v=D_K)  # d_v == d_k: the fused kernels need it
    query_mask, value_mask = masks_for_test()
    layer = layers.ScaledDotProductAttention()
    q, qm, vm = select(query_case, mask_case, query, query_mask, value_mask)
    outputs = layer(
        q, value, key=key, query_mask=qm, value_mask=vm, return_attention_scores=return_weights
    )

    mask = numpy_mask(
        query_mask if mask_case == "masked" else None,
        value_mask if mask_case == "masked" else None,
    )
    context, alpha = expected_for(query_case, *numpy_scaled_dot_product(query, key, value, mask))
    if return_weights:
        np.testing.assert_allclose(to_numpy(outputs[0]), context, atol=1e-5)
        np.testing.assert_allclose(to_numpy(outputs[1]), alpha, atol=1e-5)
    else:
        np.testing.assert_allclose(to_numpy(outputs), context, atol=1e-5)


@pytest.mark.parametrize("return_weights", [False, True], ids=["fused", "explicit"])
@pytest.mark.parametrize("tq", [TV, 2], ids=["self_attention", "last_queries"])
def test_scaled_dot_product_causal_follows_equations(tq, return_weights):
    x = random((BATCH, TV, D_K), 3)
    query = x[:, TV - tq :]
    layer = layers.ScaledDotProductAttention(causal=True)
    outputs = layer(query, x, return_attention_scores=return_weights)
    context, alpha = numpy_scaled_dot_product(
        query, x, x, numpy_mask(None, None, causal=True, tq=tq)
    )
    actual = outputs[0] if return_weights else outputs
    np.testing.assert_allclose(to_numpy(actual), context, atol=1e-5)
    if return_weights:
        np.testing.assert_allclose(to_numpy(outputs[1]), alpha, atol=1e-5)


@pytest.mark.parametrize("return_weights", [False, True], ids=["fused", "explicit"])
def test_scaled_dot_product_attends_per_head_on_a_heads_axis(return_weights):
    heads, d_k, d_v = 2, 4, 4
    query = random((BATCH, TQ, heads, d_k), 4)
    key = random((BATCH, TV, heads, d_k), 5)
    value = random((BATCH, TV, heads, d_v), 6)
    query_mask, value_mask = masks_for_test()
    layer = layers.ScaledDotProductAttention(causal=True)
    outputs = layer(
        query,
        value,
        key=key,
        query_mask=query_mask,
        value_mask=value_mask,
        return_attention_scores=return_weights,
    )
    mask = numpy_mask(query_mask, value_mask, causal=True)
    for h in range(heads):
        context, alpha = numpy_scaled_dot_product(
            query[:, :, h], key[:, :, h], value[:, :, h], mask
        )
        actual = outputs[0] if return_weights else outputs
        np.testing.assert_allclose(to_numpy(actual)[:, :, h], context, atol=1e-5)
        if return_weights:
            assert tuple(outputs[1].shape) == (BATCH, heads, TQ, TV)
            np.testing.assert_allclose(to_numpy(outputs[1])[:, h], alpha, atol=1e-5)


def test_scaled_dot_product_allows_values_of_another_size_than_keys():
    query, value, key = inputs(d_q=D_K, d_v=D_V)
    query_mask, value_mask = masks_for_test()
    layer = layers.ScaledDotProductAttention()
    context = layer(query, value, key=key, query_mask=query_mask, value_mask=value_mask)
    expected, _ = numpy_scaled_dot_product(query, key, value, numpy_mask(query_mask, value_mask))
    np.testing.assert_allclose(to_numpy(context), expected, atol=1e-5)


@pytest.mark.parametrize(
    ("d_v", "call_kwargs", "fused"),
    [
        (D_K, {}, True),
        (D_K, {"value_mask": np.ones((BATCH, TV), bool)}, True),
        (D_K, {"return_attention_scores": True}, False),
        (D_K, {"training": True}, False),
        (D_V, {}, False),
    ],
    ids=["plain", "masked", "weights_requested", "dropout_in_training", "d_v_differs"],
)
def test_fused_kernel_is_used_unless_weights_dropout_or_sizes_need_the_explicit_path(
    monkeypatch, d_v, call_kwargs, fused
):
    calls = []
    original = keras.ops.dot_product_attention

    def spy(*args, **kwargs):
        calls.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(keras.ops, "dot_product_attention", spy)
    query, value, key = inputs(d_q=D_K, d_v=d_v)
    layers.ScaledDotProductAttention(dropout=0.2)(query, value, key=key, **call_kwargs)
    assert bool(calls) == fused


def test_scaled_dot_product_single_step_with_heads_drops_the_query_time_axis():
    query = random((BATCH, 2, 4), 7)  # (batch, heads, d_k): one step
    value = random((BATCH, TV, 2, 4), 8)
    context, weights = layers.ScaledDotProductAttention()(
        query, value, return_attention_scores=True
    )
    assert tuple(context.shape) == (BATCH, 2, 4)
    assert tuple(weights.shape) == (BATCH, 2, TV)
    for h in range(2):
        expected, alpha = numpy_scaled_dot_product(
            query[:, None, h], value[:, :, h], value[:, :, h], numpy_mask(None, None, tq=1)
        )
        np.testing.assert_allclose(to_numpy(context)[:, h], expected[:, 0], atol=1e-5)
        np.testing.assert_allclose(to_numpy(weights)[:, h], alpha[:, 0], atol=1e-5)


# === The worked example =======================================================


def test_luong_dot_reproduces_the_worked_example():
    h = np.array([[[0.2, -0.1, 0.5, 0.3], [0.8, 0.4, -0.2, 0.1], [0.1, 0.6, 0.3, -0.5]]], "float32")
    s_1 = np.array([[0.5, 0.3, -0.1, 0.7]], "float32")
    scores = np.array([0.23, 0.61, -0.15])  # the article's dot products s_1 · h_j
    np.testing.assert_allclose(h[0] @ s_1[0], scores, atol=1e-6)
    weights = np.exp(scores) / np.exp(scores).sum()
    context = weights @ h[0]

    actual_context, actual_weights = call(layers.LuongAttention("dot"), s_1, h)
    np.testing.assert_allclose(actual_weights[0], weights, atol=1e-6)
    np.testing.assert_allclose(actual_context[0], context, atol=1e-6)
    # By hand: e^0.23 = 1.2586, e^0.61 = 1.8404, e^-0.15 = 0.8607, sum 3.9597.
    np.testing.assert_allclose(actual_weights[0], [0.32, 0.46, 0.22], atol=0.005)


# === Masks ====================================================================


def every_layer():
    return {
        "bahdanau": lambda: layers.BahdanauAttention(UNITS),
        "luong_dot": lambda: layers.LuongAttention("dot"),
        "luong_general": lambda: layers.LuongAttention("general"),
        "luong_concat": lambda: layers.LuongAttention("concat", units=UNITS),
        "scaled_dot_product": lambda: layers.ScaledDotProductAttention(),
        "pointer": lambda: layers.PointerAttention(UNITS),
    }


LAYERS = every_layer()


def weights_of(layer, query, value, **kwargs):
    """The attention weights: the pointer's output, the others' second output."""
    if isinstance(layer, layers.PointerAttention):
        return to_numpy(layer(query, value, **kwargs))
    return to_numpy(layer(query, value, return_attention_scores=True, **kwargs)[1])


@pytest.mark.parametrize("name", LAYERS)
def test_masked_steps_get_exactly_zero_attention_weight(name):
    query, value, _ = inputs(d_q=D_V)
    _, value_mask = masks_for_test()
    value_mask[0, ::2] = False
    layer = LAYERS[name]()
    built(layer, query, value)
    set_random_weights(layer)
    weights = weights_of(layer, query, value, value_mask=value_mask)
    blocked = np.broadcast_to(~value_mask[:, None, :], weights.shape)
    assert np.all(weights[blocked] == 0.0)
    np.testing.assert_allclose(weights[0].sum(-1), 1.0, atol=1e-6)


@pytest.mark.parametrize(
    ("name", "return_weights"),
    [(name, True) for name in LAYERS] + [("scaled_dot_product", False)],
    ids=[*LAYERS, "scaled_dot_product_fused"],
)
def test_query_with_every_value_masked_gets_zero_weights_and_zero_context(name, return_weights):
    query, value, _ = inputs(d_q=D_V)
    query_mask = np.ones((BATCH, TQ), bool)
    query_mask[0, 1] = False  # a masked query step
    value_mask = np.ones((BATCH, TV), bool)
    value_mask[1] = False  # a row with no value to read
    layer = LAYERS[name]()
    built(layer, query, value)
    set_random_weights(layer)
    kwargs = {"query_mask": query_mask, "value_mask": value_mask}
    outputs = layer(query, value, return_attention_scores=return_weights, **kwargs)
    context = to_numpy(outputs[0] if return_weights else outputs)
    weights = weights_of(layer, query, value, **kwargs)
    for output in (context, weights):
        assert np.all(np.isfinite(output))
        np.testing.assert_array_equal(output[1], 0.0)
        np.testing.assert_array_equal(output[0, 1], 0.0)
        assert np.any(output[0, 0] != 0.0)


@pytest.mark.parametrize("return_weights", [False, True], ids=["fused", "explicit"])
def test_causal_outputs_do_not_depend_on_future_values(return_weights):
    x = random((BATCH, TV, D_K), 9)
    changed = x.copy()
    changed[:, 3:] = random((BATCH, TV - 3, D_K), 10) * 10.0
    layer = layers.ScaledDotProductAttention(causal=True)

    def context(sequence):
        outputs = layer(sequence, sequence, return_attention_scores=return_weights)
        return to_numpy(outputs[0] if return_weights else outputs)

    np.testing.assert_allclose(context(changed)[:, :3], context(x)[:, :3], atol=1e-6)
    assert not np.allclose(context(changed)[:, 3:], context(x)[:, 3:])


def test_causal_incremental_decoding_matches_the_full_sequence():
    # A new query at the end of a cache of values sees every cached value.
    x = random((BATCH, TV, D_K), 11)
    layer = layers.ScaledDotProductAttention(causal=True)
    full = to_numpy(layer(x, x))
    last = to_numpy(layer(x[:, -1], x))  # one step, (batch, d)
    last_two = to_numpy(layer(x[:, -2:], x))
    np.testing.assert_allclose(last, full[:, -1], atol=1e-6)
    np.testing.assert_allclose(last_two, full[:, -2:], atol=1e-6)


@pytest.mark.parametrize("name", LAYERS)
def test_keras_masks_propagate_from_an_embedding(name):
    tokens = np.array([[3, 5, 2, 0, 0], [4, 1, 0, 0, 0], [7, 7, 7, 7, 7]], "int32")
    valid = tokens != 0
    embedding = keras.layers.Embedding(10, D_V, mask_zero=True)
    layer = LAYERS[name]()
    pooled = keras.layers.GlobalAveragePooling1D()  # averages over unmasked steps only

    token_input = keras.Input(shape=(None,), dtype="int32")
    embedded = embedding(token_input)
    output = layer(embedded, embedded)
    model = keras.Model(token_input, [output, pooled(output)])
    set_random_weights(layer)
    output, mean = (to_numpy(t) for t in model(tokens))

    x = embedding(tokens)
    expected = to_numpy(layer(x, x, query_mask=valid, value_mask=valid))
    np.testing.assert_allclose(output, expected, atol=1e-6)
    weights = weights_of(layer, x, x, query_mask=valid, value_mask=valid)
    assert np.all(weights[np.broadcast_to(~valid[:, None, :], weights.shape)] == 0.0)
    # The context carries the query's mask on: the pooling skips padded steps.
    expected_mean = np.stack([expected[b, valid[b]].mean(0) for b in range(len(tokens))])
    np.testing.assert_allclose(mean, expected_mean, atol=1e-6)


def test_pointer_gives_chosen_positions_zero_probability():
    encoder_states = random((2, 5, 3), 12)
    decoder_state = random((2, 6), 13)
    chosen = np.array([[False, True, False, False, True], [True, True, True, True, False]])
    layer = layers.PointerAttention(UNITS)
    p = to_numpy(layer(decoder_state, encoder_states, value_mask=~chosen))
    assert np.all(p[chosen] == 0.0)
    np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-6)
    np.testing.assert_allclose(p[1], [0, 0, 0, 0, 1.0])


def test_pointer_returns_the_distribution_twice_when_asked_for_scores():
    encoder_states = random((2, 5, 3), 14)
    layer = layers.PointerAttention(UNITS)
    p, weights = layer(encoder_states, encoder_states, return_attention_scores=True)
    np.testing.assert_array_equal(to_numpy(p), to_numpy(weights))


def test_dropout_drops_weights_only_in_training():
    query, value, key = inputs(d_q=D_K)
    layer = layers.ScaledDotProductAttention(dropout=0.5, seed=1)
    inference = to_numpy(layer(query, value, key=key))
    context, alpha = numpy_scaled_dot_product(query, key, value, numpy_mask(None, None))
    np.testing.assert_allclose(inference, context, atol=1e-5)
    trained, weights = layer(query, value, key=key, training=True, return_attention_scores=True)
    assert not np.allclose(to_numpy(trained), inference)
    np.testing.assert_allclose(to_numpy(weights), alpha, atol=1e-5)  # reported before dropout


# === Weights, arguments, bad input ============================================


ADDITIVE_WEIGHTS = {
    "query_projection": (D_Q, UNITS),
    "key_projection": (D_K, UNITS),
    "score_vector": (UNITS,),
}
ROLE_CASES = {  # layer, query size, weight shapes by name
    "bahdanau": (lambda: layers.BahdanauAttention(UNITS), D_Q, ADDITIVE_WEIGHTS),
    "luong_dot": (lambda: layers.LuongAttention("dot"), D_K, {}),
    "luong_general": (
        lambda: layers.LuongAttention("general"),
        D_Q,
        {"key_projection": (D_K, D_Q)},
    ),
    "luong_concat": (lambda: layers.LuongAttention("concat", units=UNITS), D_Q, ADDITIVE_WEIGHTS),
    "scaled_dot_product": (lambda: layers.ScaledDotProductAttention(), D_K, {}),
    "pointer": (lambda: layers.PointerAttention(UNITS), D_Q, ADDITIVE_WEIGHTS),
}


@pytest.mark.parametrize("name", ROLE_CASES)
def test_weights_are_named_by_their_role(name):
    make, d_q, expected = ROLE_CASES[name]
    query, value, key = inputs(d_q=d_q)
    layer = built(make(), query, value, key)
    assert {w.name: tuple(w.shape) for w in layer.weights} == expected


@pytest.mark.parametrize(
    ("make", "argument", "value"),
    [
        (lambda: layers.BahdanauAttention(0), "units", 0),
        (lambda: layers.BahdanauAttention(-3), "units", -3),
        (lambda: layers.BahdanauAttention(2.5), "units", 2.5),
        (lambda: layers.BahdanauAttention(10**12), "units", 10**12),
        (lambda: layers.PointerAttention(None), "units", None),
        (lambda: layers.LuongAttention("bilinear"), "score", "bilinear"),
        (lambda: layers.LuongAttention("concat"), "units", None),
        (lambda: layers.LuongAttention("concat", units=10**9), "units", 10**9),
        (lambda: layers.LuongAttention("dot", units=8), "units", 8),
        (lambda: layers.ScaledDotProductAttention(causal="yes"), "causal", "yes"),
        (lambda: layers.ScaledDotProductAttention(dropout=1.0), "dropout", 1.0),
        (lambda: layers.ScaledDotProductAttention(seed=-1), "seed", -1),
    ],
)
def test_invalid_arguments_name_the_argument_and_value(make, argument, value):
    with pytest.raises(ValueError, match=f"`{argument}`") as error:
        make()
    assert repr(value) in str(error.value)


def test_invalid_score_lists_the_valid_ones():
    with pytest.raises(ValueError, match="'dot', 'general', 'concat'"):
        layers.LuongAttention("location")


def test_concat_without_units_says_it_needs_them():
    with pytest.raises(ValueError, match="concat"):
        layers.LuongAttention("concat")


def test_hostile_units_are_refused_before_any_allocation():
    with pytest.raises(ValueError, match="no larger than 65536"):
        layers.PointerAttention(10**12)


def test_huge_feature_sizes_are_refused_at_build():
    layer = layers.BahdanauAttention(60_000)
    with pytest.raises(ValueError, match="would create"):
        layer.build((None, 60_000), (None, 5, 60_000))


@pytest.mark.parametrize(
    ("make", "query_shape", "value_shape", "key_shape", "problem"),
    [
        (lambda: layers.BahdanauAttention(4), (2, 3, 4, 5), (2, 6, 4), None, "rank"),
        (lambda: layers.BahdanauAttention(4), (2, 4), (2, 4), None, "value must have shape"),
        (lambda: layers.PointerAttention(4), (2, 3, 4), (2, 6, 4), (2, 5, 4), "time steps"),
        (lambda: layers.LuongAttention("general"), (2, 3, 4), (2, 6, 4), (2, 6), "same rank"),
        (lambda: layers.LuongAttention("dot"), (2, 3, 5), (2, 6, 4), None, "same feature size"),
        (lambda: layers.LuongAttention("dot"), (3, 3, 4), (2, 6, 4), None, "batch size"),
        (
            lambda: layers.ScaledDotProductAttention(),
            (2, 3, 5),
            (2, 6, 4),
            (2, 6, 4),
            "feature size",
        ),
        (
            lambda: layers.ScaledDotProductAttention(),
            (2, 3, 2, 4),
            (2, 6, 3, 4),
            None,
            "number of heads",
        ),
        (
            lambda: layers.ScaledDotProductAttention(),
            (2, 3, 2, 4, 1),
            (2, 6, 2, 4),
            None,
            "rank",
        ),
    ],
)
def test_mismatched_inputs_raise_an_error_naming_both_shapes(
    make, query_shape, value_shape, key_shape, problem
):
    key = None if key_shape is None else np.zeros(key_shape, "float32")
    with pytest.raises(ValueError, match=problem) as error:
        make()(np.zeros(query_shape, "float32"), np.zeros(value_shape, "float32"), key=key)
    message = str(error.value)
    assert str(query_shape) in message
    assert str(value_shape) in message
    if key_shape is not None:
        assert str(key_shape) in message


# === Shared checks and documentation ==========================================

QUERY = LayerInput("query", features=5, sequence_lengths=(3, 7))
VALUE = LayerInput("value", features=4)
WITH_WEIGHTS = {"return_attention_scores": True}

# Their saved files are checked in tests/keras_seq/test_saved_layers.py, in one fresh process.
SAVED_CASES = {
    # One decoder step against a sequence; context and weights both exported.
    "bahdanau": LayerCase(
        make=lambda **kw: layers.BahdanauAttention(6, **kw),
        named_inputs=(LayerInput("query", features=5, time_axis=False), VALUE),
        call_kwargs=WITH_WEIGHTS,
    ),
    "luong_concat": LayerCase(
        make=lambda **kw: layers.LuongAttention("concat", units=6, **kw),
        named_inputs=(QUERY, VALUE),
        call_kwargs=WITH_WEIGHTS,
    ),
    # The fused path, causal, with a heads axis; queries are the last Tq positions.
    "scaled_dot_product": LayerCase(
        make=lambda **kw: layers.ScaledDotProductAttention(causal=True, **kw),
        named_inputs=(
            LayerInput("query", features=(2, 4), sequence_lengths=(3, 7)),
            LayerInput("value", features=(2, 4)),
        ),
    ),
    "pointer": LayerCase(
        make=lambda **kw: layers.PointerAttention(6, **kw), named_inputs=(QUERY, VALUE)
    ),
}


# Variants checked in this process only (their saving code is the cases' above).
IN_PROCESS_CASES = {
    "luong_dot": LayerCase(
        make=lambda **kw: layers.LuongAttention("dot", **kw),
        named_inputs=(LayerInput("query", 4, sequence_lengths=(3, 7)), VALUE),
        call_kwargs=WITH_WEIGHTS,
    ),
    "luong_general": LayerCase(
        make=lambda **kw: layers.LuongAttention("general", **kw),
        named_inputs=(QUERY, VALUE),
        call_kwargs=WITH_WEIGHTS,
    ),
    # The explicit path, dropout configured (inactive outside training).
    "scaled_dot_product_explicit": LayerCase(
        make=lambda **kw: layers.ScaledDotProductAttention(dropout=0.1, seed=2, **kw),
        named_inputs=(LayerInput("query", 4, sequence_lengths=(3, 7)), VALUE),
        call_kwargs=WITH_WEIGHTS,
    ),
}


# Under JAX, which compiles each op at its first use, the eager checks of the large ones take
# 4-9 s of CPU (those of the others up to 2 s).
test_layer_passes_eager_layer_checks, test_every_layer_fits_one_jit_compiled_step = (
    in_process_check_tests(
        {**SAVED_CASES, **IN_PROCESS_CASES},
        large_eager={
            "bahdanau",
            "luong_concat",
            "scaled_dot_product",
            "scaled_dot_product_explicit",
            "pointer",
        },
    )
)


@pytest.mark.parametrize(
    "module",
    [
        attention_base,
        bahdanau_attention,
        luong_attention,
        pointer_attention,
        scaled_dot_product_attention,
    ],
    ids=lambda module: module.__name__.rsplit(".", 1)[-1],
)
def test_docstring_examples_run(module):
    globs = {"np": np, "keras": keras, **vars(module)}
    result = doctest.testmod(module, globs=globs, optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    if module is not attention_base:
        assert result.attempted > 0
