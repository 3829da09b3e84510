"""keras_seq.layers.masks against NumPy: padding, causal and combined masks, masked softmax."""

import doctest

import keras
import numpy as np
import pytest

from keras_seq.layers import masks

pytestmark = pytest.mark.backend_agnostic


def to_numpy(x):
    return keras.ops.convert_to_numpy(x)


def numpy_masked_softmax(scores, mask):
    """Softmax over the last axis restricted to the True entries; no True entry: zeros."""
    scores = scores.astype("float64")
    mask = np.broadcast_to(mask, scores.shape)
    out = np.zeros_like(scores)
    for index in np.ndindex(scores.shape[:-1]):
        valid = mask[index]
        if valid.any():
            z = np.exp(scores[index][valid] - scores[index][valid].max())
            out[index][valid] = z / z.sum()
    return out


def test_padding_mask_is_true_at_the_first_length_steps():
    lengths = np.array([0, 2, 5])
    expected = np.arange(5)[None, :] < lengths[:, None]
    np.testing.assert_array_equal(to_numpy(masks.padding_mask(lengths, 5)), expected)


def test_causal_mask_is_the_lower_triangle_for_self_attention():
    np.testing.assert_array_equal(to_numpy(masks.causal_mask(4)), np.tril(np.ones((4, 4), bool)))


@pytest.mark.parametrize(("query_length", "value_length"), [(1, 5), (3, 5), (5, 5), (4, 2)])
def test_causal_mask_aligns_queries_with_the_last_values(query_length, value_length):
    # Query i is position i + (Tv - Tq) of the full sequence: incremental decoding.
    i = np.arange(query_length)[:, None]
    j = np.arange(value_length)[None, :]
    expected = j <= i + (value_length - query_length)
    actual = to_numpy(masks.causal_mask(query_length, value_length))
    np.testing.assert_array_equal(actual, expected)
    if query_length == 1:
        assert actual.all(), "one new query must see every cached value"


def test_attention_mask_is_none_without_masks():
    assert masks.attention_mask() is None


def test_attention_mask_combines_query_value_and_causal_masks():
    rng = np.random.default_rng(0)
    query_mask = rng.random((3, 4)) < 0.7
    value_mask = rng.random((3, 6)) < 0.7
    combined = to_numpy(masks.attention_mask(query_mask, value_mask, causal=True))
    causal = np.arange(6)[None, :] <= np.arange(4)[:, None] + 2
    expected = query_mask[:, :, None] & value_mask[:, None, :] & causal[None]
    np.testing.assert_array_equal(np.broadcast_to(combined, expected.shape), expected)
    assert combined.shape == (3, 4, 6)


def test_attention_mask_has_size_one_axes_where_no_argument_fixes_them():
    value_mask = np.array([[True, False, True]])
    assert to_numpy(masks.attention_mask(value_mask=value_mask)).shape == (1, 1, 3)
    assert to_numpy(masks.attention_mask(query_mask=value_mask)).shape == (1, 3, 1)
    only_causal = masks.attention_mask(causal=True, query_length=2, value_length=3)
    assert to_numpy(only_causal).shape == (1, 2, 3)


def test_causal_attention_mask_without_lengths_is_a_clear_error():
    with pytest.raises(ValueError, match="query_length"):
        masks.attention_mask(value_mask=np.ones((2, 3), bool), causal=True)


def test_masked_softmax_matches_numpy_and_gives_masked_positions_exactly_zero():
    rng = np.random.default_rng(1)
    scores = rng.normal(scale=3.0, size=(2, 4, 5)).astype("float32")
    mask = rng.random((2, 4, 5)) < 0.6
    mask[0, 0] = False  # one row with nothing to attend to
    weights = to_numpy(masks.masked_softmax(scores, mask))
    np.testing.assert_allclose(weights, numpy_masked_softmax(scores, mask), atol=1e-6)
    assert np.all(weights[~mask] == 0.0)


def test_fully_masked_rows_give_finite_zero_weights():
    scores = np.random.default_rng(2).normal(size=(2, 3)).astype("float32")
    weights = to_numpy(masks.masked_softmax(scores, np.zeros((2, 3), bool)))
    assert np.all(np.isfinite(weights))
    np.testing.assert_array_equal(weights, 0.0)


def gradient(function, x):
    """d function(x) / dx on the current backend (a scalar function)."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return np.asarray(jax.grad(function)(x))
    if backend == "tensorflow":
        import tensorflow as tf

        x = tf.convert_to_tensor(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = function(x)
        return tape.gradient(y, x).numpy()
    pytest.skip(f"no gradient helper for backend {backend}")


def test_masked_positions_and_fully_masked_rows_pass_no_gradient():
    rng = np.random.default_rng(5)
    scores = rng.normal(size=(3, 4)).astype("float32")
    upstream = rng.normal(size=(3, 4)).astype("float32")
    mask = np.array([[True, True, False, True], [False] * 4, [True] * 4])
    grad = gradient(lambda s: keras.ops.sum(masks.masked_softmax(s, mask) * upstream), scores)
    assert np.all(np.isfinite(grad))
    np.testing.assert_array_equal(grad[~mask], 0.0)
    assert np.all(grad[2] != 0.0)


def test_masked_softmax_without_mask_is_the_softmax():
    scores = np.random.default_rng(3).normal(size=(2, 6)).astype("float32")
    expected = numpy_masked_softmax(scores, np.ones_like(scores, bool))
    np.testing.assert_allclose(to_numpy(masks.masked_softmax(scores)), expected, atol=1e-6)


def test_masked_softmax_normalises_any_axis():
    scores = np.random.default_rng(4).normal(size=(3, 4)).astype("float32")
    mask = np.array([[True, False, True, True]] * 3)
    mask[1, 0] = False
    weights = to_numpy(masks.masked_softmax(scores, mask, axis=0))
    expected = numpy_masked_softmax(scores.T, mask.T).T
    np.testing.assert_allclose(weights, expected, atol=1e-6)


def test_masked_softmax_is_safe_in_float16():
    # Scores near float16's limit must neither overflow the fill nor give NaN.
    scores = np.array([[60000.0, -60000.0, 1.0], [3.0, 2.0, 1.0]], "float16")
    mask = np.array([[True, True, False], [False, False, False]])
    weights = masks.masked_softmax(keras.ops.convert_to_tensor(scores), mask)
    assert keras.backend.standardize_dtype(weights.dtype) == "float16"
    weights = to_numpy(weights).astype("float32")
    np.testing.assert_array_equal(weights, [[1.0, 0.0, 0.0], [0.0, 0.0, 0.0]])


def test_masks_module_examples_run():
    globs = {"np": np, "keras": keras, **vars(masks)}
    result = doctest.testmod(masks, globs=globs, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_per_query_value_mask_is_used_as_given():
    per_query = np.array([[[True, True, False], [False, True, True]]])
    query_mask = np.array([[True, False]])
    mask = keras.ops.convert_to_numpy(
        masks.attention_mask(query_mask=query_mask, value_mask=per_query)
    )
    np.testing.assert_array_equal(mask, [[[True, True, False], [False, False, False]]])


@pytest.mark.parametrize("argument", ["query_mask", "value_mask"])
def test_masks_of_the_wrong_rank_are_refused_with_their_shape(argument):
    with pytest.raises(ValueError, match=r"\(2, 3, 4, 5\)"):
        masks.attention_mask(**{argument: np.ones((2, 3, 4, 5), bool)})
