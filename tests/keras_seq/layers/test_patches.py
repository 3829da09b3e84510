"""Patch embedding and the class token against the ViT paper's definitions."""

import keras
import numpy as np
import pytest

from keras_seq import layers
from keras_seq.testing import LayerCase
from keras_seq.testing.layer_checks import LayerInput
from tests.keras_seq.layers.shared_checks import in_process_check_tests

pytestmark = pytest.mark.backend_agnostic


def numpy_of(x):
    return keras.ops.convert_to_numpy(x)


def images(shape, seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype("float32")


def flatten_then_project(x, patch_size, projection, bias):
    """ViT Eq. 1: cut into P×P patches (row-major over the grid), flatten each, multiply by E."""
    batch, height, width, _ = x.shape
    tokens = []
    for row in range(0, height, patch_size):
        for col in range(0, width, patch_size):
            patch = x[:, row : row + patch_size, col : col + patch_size, :]  # (batch, P, P, C)
            tokens.append(patch.reshape(batch, -1) @ projection + bias)  # (batch, D)
    return np.stack(tokens, axis=1)


# PatchEmbedding -------------------------------------------------------------------


def test_patch_embedding_equals_flatten_then_project():
    x = images((2, 8, 12, 3))
    layer = layers.PatchEmbedding(patch_size=4, embedding_dim=5)
    layer(x)
    rng = np.random.default_rng(1)
    projection = rng.normal(size=(4 * 4 * 3, 5)).astype("float32")  # E, (P²·C, D)
    bias = rng.normal(size=(5,)).astype("float32")
    layer.set_weights([projection.reshape(4, 4, 3, 5), bias])
    np.testing.assert_allclose(
        numpy_of(layer(x)), flatten_then_project(x, 4, projection, bias), atol=1e-5
    )


@pytest.mark.parametrize(
    ("height", "width", "patch_size", "tokens"),
    [(8, 12, 4, 6), (5, 5, 5, 1)],
)
def test_patches_give_hw_over_p_squared_tokens_and_one_more_with_the_class_token(
    height, width, patch_size, tokens
):
    x = images((2, height, width, 3))
    patches = layers.PatchEmbedding(patch_size, embedding_dim=6)(x)
    assert tuple(patches.shape) == (2, tokens, 6)
    assert tuple(layers.ClassToken()(patches).shape) == (2, tokens + 1, 6)


@pytest.mark.parametrize(
    ("shape", "axis", "size"), [((1, 10, 8, 3), "H", 10), ((1, 8, 10, 3), "W", 10)]
)
def test_height_or_width_not_divisible_by_patch_size_is_a_clear_error(shape, axis, size):
    with pytest.raises(ValueError, match=rf"{axis}={size} is not divisible by patch_size=4"):
        layers.PatchEmbedding(4, 6)(images(shape))


def test_non_image_input_is_a_clear_error():
    with pytest.raises(ValueError, match=r"\(batch, H, W, C\)"):
        layers.PatchEmbedding(4, 6)(images((2, 8, 3)))


def test_patch_embedding_names_its_projection():
    layer = layers.PatchEmbedding(4, 6)
    layer(images((1, 8, 8, 3)))
    assert [w.path.split("/", 1)[1] for w in layer.weights] == [
        "projection/kernel",
        "projection/bias",
    ]


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"patch_size": 0, "embedding_dim": 4}, "patch_size"),
        ({"patch_size": 4.0, "embedding_dim": 4}, "patch_size"),
        ({"patch_size": 4, "embedding_dim": 10**12}, "embedding_dim"),
    ],
)
def test_invalid_arguments_name_the_argument_and_value(kwargs, argument):
    with pytest.raises(ValueError, match=f"`{argument}`") as error:
        layers.PatchEmbedding(**kwargs)
    assert repr(kwargs[argument]) in str(error.value)


# ClassToken -------------------------------------------------------------------------


def test_class_token_is_one_learned_vector_put_before_every_sequence():
    x = images((3, 4, 6))
    layer = layers.ClassToken()
    layer(x)
    token = np.random.default_rng(2).normal(size=(1, 1, 6)).astype("float32")
    layer.set_weights([token])
    output = numpy_of(layer(x))
    np.testing.assert_array_equal(output[:, 0], np.repeat(token[0], 3, axis=0))
    np.testing.assert_array_equal(output[:, 1:], x)


def test_class_token_is_unmasked_and_the_padding_stays_masked():
    tokens = keras.Input((None,), dtype="int32")
    x = layers.ClassToken()(keras.layers.Embedding(10, 4, mask_zero=True)(tokens))
    pooled = keras.layers.GlobalAveragePooling1D()(x)  # a masked mean if the mask arrives
    model = keras.Model(tokens, [x, pooled])
    steps, mean = model(np.array([[3, 4, 0, 0]]))
    np.testing.assert_allclose(numpy_of(mean), numpy_of(steps)[:, :3].mean(1), atol=1e-6)


def test_class_token_rejects_non_sequences():
    with pytest.raises(ValueError, match=r"ndim=3|\(batch, N, D\)"):
        layers.ClassToken()(images((2, 6)))


# The shared layer checks --------------------------------------------------------------


# Their saved files are checked in tests/keras_seq/test_saved_layers.py, in one fresh process.
SAVED_CASES = {
    # Images of one fixed size, as ViT takes them: (batch, 8, 12, 3), no time axis.
    "patch_embedding": LayerCase(
        make=lambda **kw: layers.PatchEmbedding(4, 5, **kw),
        named_inputs=(LayerInput("images", features=(8, 12, 3), time_axis=False),),
        masking=False,
    ),
    # masking=False: the check compares outputs step for step with the input's
    # mask, which the token shifts by one (tested above instead).
    "class_token": LayerCase(make=lambda **kw: layers.ClassToken(**kw), features=6, masking=False),
}


test_layer_passes_eager_layer_checks, test_every_layer_fits_one_jit_compiled_step = (
    in_process_check_tests(SAVED_CASES)
)


def test_docstring_examples_run():
    import doctest

    from keras_seq.layers import patches

    globs = {"np": np, "keras": keras, **vars(patches)}
    result = doctest.testmod(patches, globs=globs, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
