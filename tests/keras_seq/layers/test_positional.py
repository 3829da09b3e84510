"""Positional encodings: the paper's sinusoid formula, and a learned table that refuses overlong
input."""

import math

import keras
import numpy as np
import pytest

from keras_seq import layers
from keras_seq.testing import LayerCase
from tests.keras_seq.layers.shared_checks import in_process_check_tests

pytestmark = pytest.mark.backend_agnostic


def paper_encoding(length, d, max_wavelength=10000.0):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d))."""
    pe = np.zeros((length, d))
    for pos in range(length):
        for i in range(0, d, 2):
            angle = pos / max_wavelength ** (i / d)
            pe[pos, i] = math.sin(angle)
            if i + 1 < d:
                pe[pos, i + 1] = math.cos(angle)
    return pe


def numpy_of(x):
    return keras.ops.convert_to_numpy(x)


# Sinusoidal ------------------------------------------------------------------------


@pytest.mark.parametrize(("d", "max_wavelength"), [(6, 10000), (7, 10000), (4, 50.0)])
def test_sinusoidal_encoding_equals_the_paper_formula(d, max_wavelength):
    layer = layers.SinusoidalPositionalEncoding(max_wavelength=max_wavelength)
    encoding = numpy_of(layer(np.zeros((2, 11, d), "float32")))
    for row in encoding:
        np.testing.assert_allclose(row, paper_encoding(11, d, max_wavelength), atol=1e-5)


def test_sinusoidal_encoding_is_added_to_its_input_at_any_length():
    layer = layers.SinusoidalPositionalEncoding()
    for length in (3, 40):  # one layer, no rebuilding for a new length
        x = np.random.default_rng(length).normal(size=(2, length, 6)).astype("float32")
        np.testing.assert_allclose(numpy_of(layer(x)), x + paper_encoding(length, 6), atol=1e-5)


def test_sinusoidal_encoding_is_computed_in_float32_under_mixed_precision():
    # At position 2000 an angle computed in float16 would be off by about a radian.
    layer = layers.SinusoidalPositionalEncoding(dtype="mixed_float16")
    output = layer(np.zeros((1, 2001, 8), "float32"))
    assert keras.backend.standardize_dtype(output.dtype) == "float16"
    np.testing.assert_allclose(
        numpy_of(output).astype("float64"), paper_encoding(2001, 8)[None], atol=2e-3
    )


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), "10000", True])
def test_invalid_max_wavelength_is_named(value):
    with pytest.raises(ValueError, match="`max_wavelength`") as error:
        layers.SinusoidalPositionalEncoding(max_wavelength=value)
    assert repr(value) in str(error.value)


# Learned -----------------------------------------------------------------------------


def test_learned_embedding_adds_row_t_of_its_table_to_step_t():
    x = np.random.default_rng(0).normal(size=(3, 5, 4)).astype("float32")
    layer = layers.LearnedPositionalEmbedding(max_length=8)
    layer(x)
    table = np.random.default_rng(1).normal(size=(8, 4)).astype("float32")
    layer.set_weights([table])
    np.testing.assert_allclose(numpy_of(layer(x)), x + table[:5], atol=1e-6)
    full = np.zeros((1, 8, 4), "float32")  # exactly max_length is fine
    np.testing.assert_allclose(numpy_of(layer(full))[0], table, atol=1e-6)


def test_learned_embedding_rejects_an_overlong_sequence_when_called():
    layer = layers.LearnedPositionalEmbedding(max_length=8)
    layer(np.zeros((1, 8, 4), "float32"))
    with pytest.raises(ValueError, match=r"length 9.*max_length=8"):
        layer(np.zeros((1, 9, 4), "float32"))


def test_learned_embedding_rejects_a_static_overlong_length_when_built():
    with pytest.raises(ValueError, match=r"length 12.*max_length=8"):
        layers.LearnedPositionalEmbedding(max_length=8)(keras.Input((12, 4)))


def test_learned_embedding_refuses_an_overlong_sequence_in_a_compiled_predict():
    # JAX traces with static shapes, so the layer's own check runs. TensorFlow
    # may trace for a `None` time axis; then the slice of the table fails at
    # run time with TensorFlow's message (as the docstring says).
    inputs = keras.Input((None, 4))
    model = keras.Model(inputs, layers.LearnedPositionalEmbedding(max_length=8)(inputs))
    model.predict(np.zeros((2, 8, 4), "float32"), verbose=0)
    with pytest.raises(Exception, match=r"length 10.*max_length=8|size\[0\] in \[0, 8\]"):
        model.predict(np.zeros((2, 10, 4), "float32"), verbose=0)


@pytest.mark.parametrize("value", [0, 2.5, 10**12, None])
def test_invalid_max_length_is_named(value):
    with pytest.raises(ValueError, match="`max_length`") as error:
        layers.LearnedPositionalEmbedding(max_length=value)
    assert repr(value) in str(error.value)


def test_huge_table_is_refused_before_allocation():
    layer = layers.LearnedPositionalEmbedding(max_length=2**20)
    with pytest.raises(ValueError, match="would create"):
        layer.build((None, 5, 2**12))


# Both ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [layers.SinusoidalPositionalEncoding, lambda: layers.LearnedPositionalEmbedding(6)],
    ids=["sinusoidal", "learned"],
)
def test_positional_layers_pass_the_keras_mask_on(make):
    tokens = keras.Input((None,), dtype="int32")
    x = make()(keras.layers.Embedding(10, 4, mask_zero=True)(tokens))
    pooled = keras.layers.GlobalAveragePooling1D()(x)  # a masked mean if the mask arrives
    model = keras.Model(tokens, [x, pooled])
    steps, mean = model(np.array([[3, 4, 5, 0, 0, 0]]))
    np.testing.assert_allclose(numpy_of(mean), numpy_of(steps)[:, :3].mean(1), atol=1e-6)


@pytest.mark.parametrize(
    "make",
    [layers.SinusoidalPositionalEncoding, lambda: layers.LearnedPositionalEmbedding(6)],
    ids=["sinusoidal", "learned"],
)
@pytest.mark.parametrize("shape", [(4, 6), (2, 3, 4, 6)])
def test_wrong_input_rank_is_a_clear_error(make, shape):
    with pytest.raises(ValueError, match=r"ndim=3|\(batch, time, features\)"):
        make()(np.zeros(shape, "float32"))


# Their saved files are checked in tests/keras_seq/test_saved_layers.py, in one fresh process.
SAVED_CASES = {
    "sinusoidal": LayerCase(
        make=lambda **kw: layers.SinusoidalPositionalEncoding(max_wavelength=100, **kw),
        features=6,
    ),
    "learned": LayerCase(make=lambda **kw: layers.LearnedPositionalEmbedding(12, **kw), features=4),
}


test_layer_passes_eager_layer_checks, test_every_layer_fits_one_jit_compiled_step = (
    in_process_check_tests(SAVED_CASES)
)


def test_docstring_examples_run():
    import doctest

    from keras_seq.layers import positional

    globs = {"np": np, "keras": keras, **vars(positional)}
    result = doctest.testmod(positional, globs=globs, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
