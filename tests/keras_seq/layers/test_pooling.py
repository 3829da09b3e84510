"""ClassTokenPooling and MaskedMeanPooling: one vector per sequence, against NumPy."""

import keras
import numpy as np
import pytest

from keras_seq import layers, models
from keras_seq.layers import ClassTokenPooling, MaskedMeanPooling
from keras_seq.testing.layer_checks import LayerCase, check_layer


def _numpy(x):
    return keras.ops.convert_to_numpy(x)


@pytest.mark.backend_agnostic
def test_class_token_pooling_keeps_the_first_token_and_drops_the_mask():
    x = np.random.default_rng(4).normal(size=(3, 5, 6)).astype("float32")
    layer = ClassTokenPooling()
    np.testing.assert_array_equal(_numpy(layer(x)), x[:, 0])
    assert layer.compute_mask(x, np.ones((3, 5), bool)) is None
    assert layer.compute_output_shape((None, 5, 6)) == (None, 6)


@pytest.mark.backend_agnostic
def test_masked_mean_pooling_matches_numpy_and_gives_zeros_for_empty_rows():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3, 4, 2)).astype("float32")
    mask = np.array([[1, 1, 1, 1], [1, 0, 1, 0], [0, 0, 0, 0]], bool)
    expected = np.stack([x[0].mean(axis=0), x[1, [0, 2]].mean(axis=0), np.zeros(2)])
    np.testing.assert_allclose(_numpy(MaskedMeanPooling()(x, mask=mask)), expected, rtol=1e-6)
    np.testing.assert_allclose(_numpy(MaskedMeanPooling()(x)), x.mean(axis=1), rtol=1e-6)


@pytest.mark.parametrize("cls", [ClassTokenPooling, MaskedMeanPooling])
def test_pooling_layers_are_registered_and_reload_from_config(cls):
    assert keras.saving.get_registered_name(cls) == f"keras_seq>{cls.__name__}"
    layer = cls(name="pool")
    clone = cls.from_config(layer.get_config())
    assert clone.get_config() == layer.get_config()


@pytest.mark.backend_agnostic
def test_the_old_import_location_still_gives_the_same_classes():
    # keras_seq.models re-exports them for one release.
    assert models.ClassTokenPooling is layers.ClassTokenPooling
    assert models.MaskedMeanPooling is layers.MaskedMeanPooling


def test_masked_mean_pooling_passes_shared_layer_checks(tmp_path):
    check_layer(LayerCase(make=lambda **kw: MaskedMeanPooling(**kw), features=4), tmp_path)


def test_class_token_pooling_passes_shared_layer_checks(tmp_path):
    # masking=False: the class token is never masked, so the layer reads step 0 whatever
    # the mask says (the masking check would replace a masked step 0 by noise).
    check_layer(
        LayerCase(make=lambda **kw: ClassTokenPooling(**kw), features=4, masking=False), tmp_path
    )


def test_docstring_examples_run():
    import doctest

    from keras_seq.layers import pooling

    globs = {"np": np, "keras": keras, **vars(pooling)}
    result = doctest.testmod(pooling, globs=globs, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
