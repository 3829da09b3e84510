"""`transformer_classifier` and `vision_transformer`: shapes, parameters, pooling, saving.

Parameter counts are recomputed here from the architecture (Vaswani et al.
2017; Dosovitskiy et al. 2020), pooled vectors from the definition of a
masked mean, never read back from the model under test.
"""

import json
import re
import zipfile

import keras
import numpy as np
import pytest

from keras_seq.layers import (
    ClassToken,
    LearnedPositionalEmbedding,
    PatchEmbedding,
    SinusoidalPositionalEncoding,
    TransformerEncoderBlock,
)
from keras_seq.models import (
    compile_for,
    transformer_classifier,
    vision_transformer,
)
from keras_seq.tasks import ImageSpec, TargetSpec

# Under JAX each test compiles its models with XLA: 5-20 s each, so the file is large there.
pytestmark = pytest.mark.large_on("jax")


def _block_params(d, ff):
    attention = 4 * d * d + 4 * d  # W_Q, W_K, W_V, W_O and their biases
    feedforward = d * ff + ff + ff * d + d
    layer_norms = 2 * 2 * d
    return attention + feedforward + layer_norms


def _numpy(x):
    return keras.ops.convert_to_numpy(x)


def _softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    return np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)


def _tokens(rng, batch, length, vocab, lengths):
    ids = rng.integers(1, vocab, size=(batch, length)).astype("int32")
    for row, real in enumerate(lengths):
        ids[row, real:] = 0  # padding
    return ids


# ---------------------------------------------------------------------------- vision_transformer


def test_vit_layers_are_named_by_role_in_the_papers_order():
    model = vision_transformer((12, 8, 3), 4, 16, 3, 2, 32, 5)
    names = [layer.name for layer in model.layers]
    assert names == [
        "images",
        "patch_embedding",
        "class_token",
        "position_embedding",
        "embedding_dropout",
        "encoder_block_0",
        "encoder_block_1",
        "encoder_block_2",
        "encoder_layer_norm",
        "class_token_pooling",
        "classifier",
    ]
    assert isinstance(model.get_layer("patch_embedding"), PatchEmbedding)
    assert isinstance(model.get_layer("class_token"), ClassToken)
    assert isinstance(model.get_layer("position_embedding"), LearnedPositionalEmbedding)


def test_vit_blocks_are_pre_ln_with_gelu():
    model = vision_transformer((8, 8, 1), 2, 16, 2, 2, 32, 10, layer_norm_epsilon=1e-6)
    for index in range(2):
        block = model.get_layer(f"encoder_block_{index}")
        assert isinstance(block, TransformerEncoderBlock)
        assert block.norm_first is True
        assert block.activation is keras.activations.gelu
        assert block.layer_norm_epsilon == 1e-6
        assert (block.num_heads, block.ff_dim) == (2, 32)


def test_vit_position_table_has_one_row_per_patch_and_the_class_token():
    # 12 × 8 image, patch 4: a 3 × 2 grid of 6 patches, plus the class token.
    model = vision_transformer((12, 8, 3), 4, 16, 1, 2, 32, 5)
    table = model.get_layer("position_embedding").embeddings
    assert tuple(table.shape) == (7, 16)


@pytest.mark.parametrize(
    ("image_shape", "patch", "d", "depth", "heads", "mlp", "classes"),
    [((8, 8, 1), 2, 64, 2, 4, 128, 10), ((32, 16, 3), 8, 24, 3, 3, 40, 4)],
)
def test_vit_parameter_count_matches_the_architecture(
    image_shape, patch, d, depth, heads, mlp, classes
):
    height, width, channels = image_shape
    num_patches = (height // patch) * (width // patch)
    expected = (
        patch * patch * channels * d + d  # E and its bias
        + d  # x_class
        + (num_patches + 1) * d  # E_pos
        + depth * _block_params(d, mlp)
        + 2 * d  # the final LayerNorm
        + d * classes + classes  # the head
    )  # fmt: skip
    model = vision_transformer(image_shape, patch, d, depth, heads, mlp, classes)
    assert model.count_params() == expected


@pytest.mark.backend_agnostic
def test_vit_maps_images_to_class_probabilities_from_the_class_token_alone():
    # An ImageSpec is taken for the image shape (the other tests give a tuple).
    model = vision_transformer(ImageSpec(8, 8, 1), 4, 8, 1, 2, 16, 3)
    assert model.input_shape == (None, 8, 8, 1)
    # The head reads only z_L^0: the class token's final state after the last LayerNorm.
    features = keras.Model(model.input, model.get_layer("encoder_layer_norm").output)
    images = np.random.default_rng(1).random((4, 8, 8, 1)).astype("float32")
    tokens = _numpy(features(images))  # (batch, 1 + N, D)
    kernel, bias = (_numpy(w) for w in model.get_layer("classifier").weights)
    expected = _softmax(tokens[:, 0] @ kernel + bias)
    probabilities = _numpy(model(images))
    assert probabilities.shape == (4, 3)
    np.testing.assert_allclose(probabilities.sum(axis=-1), np.ones(4), rtol=1e-5)
    np.testing.assert_allclose(probabilities, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "argument", "value"),
    [
        ({"image_shape": (10, 8, 1), "patch_size": 4}, "patch_size", "4"),
        ({"image_shape": (8, 9, 1), "patch_size": 2}, "patch_size", "2"),
        ({"embedding_dim": 30, "num_heads": 4}, "num_heads", "4"),
        ({"image_shape": (8, 8)}, "image_shape", "(8, 8)"),
        ({"image_shape": (8, 0, 1)}, "image_shape", "(8, 0, 1)"),
        ({"patch_size": 0}, "patch_size", "0"),
        ({"num_layers": 0}, "num_layers", "0"),
        ({"ff_dim": -1}, "ff_dim", "-1"),
        ({"num_classes": 1}, "num_classes", "1"),
        ({"dropout": 1.0}, "dropout", "1.0"),
    ],
)
def test_vit_bad_arguments_are_refused_naming_them_before_building(kwargs, argument, value):
    arguments = {
        "image_shape": (8, 8, 1),
        "patch_size": 2,
        "embedding_dim": 16,
        "num_layers": 1,
        "num_heads": 2,
        "ff_dim": 32,
        "num_classes": 10,
        **kwargs,
    }
    keras.backend.clear_session()
    with pytest.raises(ValueError, match=rf"`{argument}`.*got {re.escape(value)}"):
        vision_transformer(**arguments)
    # Refused before any layer was made: the next layer gets the first automatic name.
    assert keras.layers.Dense(1).name == "dense"


@pytest.mark.large
@pytest.mark.backend_agnostic
def test_vit_trains_a_step_with_compile_for():
    model = vision_transformer((8, 8, 1), 2, 16, 1, 2, 32, 10, dropout=0.1)
    compile_for(model, TargetSpec("classification", num_classes=10), learning_rate=1e-3)
    rng = np.random.default_rng(2)
    images = rng.random((8, 8, 8, 1)).astype("float32")
    labels = rng.integers(0, 10, size=8).astype("int32")
    before = [_numpy(w).copy() for w in model.trainable_weights]
    logs = model.train_on_batch(images, labels, return_dict=True)
    assert np.isfinite(logs["loss"])
    after = [_numpy(w) for w in model.trainable_weights]
    assert all(not np.array_equal(a, b) for a, b in zip(before, after, strict=True))


# ------------------------------------------------------------------------ transformer_classifier


@pytest.mark.parametrize("pooling", ["mean", "class_token"])
@pytest.mark.parametrize("positions", ["sinusoidal", "learned"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_classifier_parameter_count_matches_the_architecture(pooling, positions, norm_first):
    vocab, length, classes, d, depth, ff = 30, 9, 4, 16, 2, 24
    tokens = length + (pooling == "class_token")
    expected = (
        vocab * d  # token embedding
        + (d if pooling == "class_token" else 0)
        + (tokens * d if positions == "learned" else 0)
        + depth * _block_params(d, ff)
        + (2 * d if norm_first else 0)  # the LayerNorm after pre-LN blocks
        + d * classes + classes
    )  # fmt: skip
    model = transformer_classifier(
        vocab,
        length,
        classes,
        embedding_dim=d,
        num_layers=depth,
        num_heads=2,
        ff_dim=ff,
        pooling=pooling,
        positions=positions,
        norm_first=norm_first,
    )
    assert model.count_params() == expected
    assert model.input_shape == (None, length)
    assert model.output_shape == (None, classes)


def test_classifier_position_layers_follow_the_argument():
    sinusoidal = transformer_classifier(20, 8, 2, embedding_dim=8, num_heads=2, ff_dim=8)
    learned = transformer_classifier(
        20, 8, 2, embedding_dim=8, num_heads=2, ff_dim=8, positions="learned", pooling="class_token"
    )
    assert isinstance(sinusoidal.get_layer("position_encoding"), SinusoidalPositionalEncoding)
    table = learned.get_layer("position_embedding")
    assert table.max_length == 9  # 8 tokens and the class token
    assert learned.get_layer("token_embedding").mask_zero is True


@pytest.mark.backend_agnostic
def test_mean_pooling_averages_only_the_real_steps():
    model = transformer_classifier(40, 7, 3, embedding_dim=16, num_layers=1, num_heads=2, ff_dim=16)
    rng = np.random.default_rng(3)
    ids = _tokens(rng, 4, 7, 40, lengths=[7, 5, 2, 1])
    encoded = keras.Model(model.input, model.get_layer("encoder_block_0").output)
    states = _numpy(encoded(ids))  # (batch, time, d)
    real = (ids != 0).astype("float32")[..., None]
    pooled = (states * real).sum(axis=1) / real.sum(axis=1)
    kernel, bias = (_numpy(w) for w in model.get_layer("classifier").weights)
    np.testing.assert_allclose(
        _numpy(model(ids)), _softmax(pooled @ kernel + bias), rtol=1e-5, atol=1e-6
    )


@pytest.mark.backend_agnostic
@pytest.mark.parametrize("pooling", ["mean", "class_token"])
def test_classifier_output_does_not_depend_on_padding_amount_beyond_the_real_steps(pooling):
    # The same three real tokens, padded to 6 or 9: positions of real tokens are the
    # same, and padding is masked out of attention and pooling, so outputs agree.
    kwargs = {
        "embedding_dim": 16,
        "num_layers": 2,
        "num_heads": 4,
        "ff_dim": 32,
        "pooling": pooling,
    }
    short = transformer_classifier(25, 6, 3, **kwargs)
    long = transformer_classifier(25, 9, 3, **kwargs)
    long.set_weights(short.get_weights())  # sinusoidal positions: same weights
    ids = np.array([[4, 17, 9, 0, 0, 0]], "int32")
    padded = np.pad(ids, ((0, 0), (0, 3)))
    np.testing.assert_allclose(_numpy(short(ids)), _numpy(long(padded)), rtol=1e-5, atol=1e-6)


@pytest.mark.backend_agnostic
def test_without_mask_zero_id_zero_is_a_token_the_mean_counts():
    model = transformer_classifier(
        40, 7, 3, embedding_dim=16, num_layers=1, num_heads=2, ff_dim=16, mask_zero=False
    )
    rng = np.random.default_rng(4)
    ids = _tokens(rng, 3, 7, 40, lengths=[7, 4, 1])
    encoded = keras.Model(model.input, model.get_layer("encoder_block_0").output)
    pooled = _numpy(encoded(ids)).mean(axis=1)  # every step, 0s included
    kernel, bias = (_numpy(w) for w in model.get_layer("classifier").weights)
    np.testing.assert_allclose(
        _numpy(model(ids)), _softmax(pooled @ kernel + bias), rtol=1e-5, atol=1e-6
    )


@pytest.mark.backend_agnostic
@pytest.mark.parametrize("pooling", ["mean", "class_token"])
def test_all_padding_sequence_gives_finite_probabilities(pooling):
    model = transformer_classifier(
        10, 5, 3, embedding_dim=8, num_layers=1, num_heads=2, ff_dim=8, pooling=pooling
    )
    probabilities = _numpy(model(np.zeros((2, 5), "int32")))
    assert np.all(np.isfinite(probabilities))
    np.testing.assert_allclose(probabilities.sum(axis=-1), np.ones(2), rtol=1e-5)


@pytest.mark.parametrize(
    ("kwargs", "argument", "value"),
    [
        ({"vocab_size": 1}, "vocab_size", "1"),
        ({"max_length": 0}, "max_length", "0"),
        ({"num_classes": 1}, "num_classes", "1"),
        ({"embedding_dim": 10, "num_heads": 4}, "num_heads", "4"),
        ({"pooling": "max"}, "pooling", "'max'"),
        ({"positions": "rotary"}, "positions", "'rotary'"),
        ({"norm_first": 1}, "norm_first", "1"),
        ({"ff_dim": 0}, "ff_dim", "0"),
        ({"dropout": -0.1}, "dropout", "-0.1"),
    ],
)
def test_classifier_bad_arguments_are_refused_naming_them(kwargs, argument, value):
    arguments = {"vocab_size": 20, "max_length": 8, "num_classes": 2, **kwargs}
    with pytest.raises(ValueError, match=rf"`{argument}`.*got {re.escape(value)}"):
        transformer_classifier(**arguments)


# ---------------------------------------------------------------------------------------- saving


def _saved_config(path):
    with zipfile.ZipFile(path) as archive:
        return archive.read("config.json").decode()


@pytest.mark.backend_agnostic
@pytest.mark.parametrize(
    "make",
    [
        lambda: vision_transformer((8, 8, 1), 2, 16, 2, 2, 32, 10),
        lambda: transformer_classifier(
            30, 6, 3, embedding_dim=8, num_heads=2, ff_dim=8, pooling="class_token",
            positions="learned", norm_first=True,
        ),
        lambda: transformer_classifier(30, 6, 3, embedding_dim=8, num_heads=2, ff_dim=8),
    ],
    ids=["vit", "classifier_class_token_learned", "classifier_mean_sinusoidal"],
)  # fmt: skip
def test_models_reload_from_keras_files_in_safe_mode_without_lambda_layers(make, tmp_path):
    model = make()
    rng = np.random.default_rng(6)
    if len(model.input_shape) == 4:
        x = rng.random((3, 8, 8, 1)).astype("float32")
    else:
        x = _tokens(rng, 3, 6, 30, lengths=[6, 4, 1])
    path = tmp_path / "model.keras"
    model.save(path)

    config = _saved_config(path)
    assert "Lambda" not in config
    assert not any(isinstance(layer, keras.layers.Lambda) for layer in model.layers)
    json.loads(config)

    reloaded = keras.saving.load_model(path, safe_mode=True)
    np.testing.assert_allclose(_numpy(reloaded(x)), _numpy(model(x)), rtol=1e-5, atol=1e-6)
    assert [layer.name for layer in reloaded.layers] == [layer.name for layer in model.layers]


def test_docstring_examples_run():
    import doctest

    from keras_seq.models import transformer

    globs = {"np": np, "keras": keras, **vars(transformer)}
    result = doctest.testmod(transformer, globs=globs, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
