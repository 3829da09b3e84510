"""Every public layer is registered for safe loading and documented."""

import inspect

import keras
import pytest

import keras_seq
from keras_seq import layers

pytestmark = pytest.mark.backend_agnostic

PUBLIC_LAYERS = [getattr(layers, name) for name in layers.__all__]


@pytest.mark.parametrize("cls", PUBLIC_LAYERS, ids=lambda cls: cls.__name__)
def test_public_layer_is_registered_under_keras_seq(cls):
    assert keras.saving.get_registered_name(cls) == f"keras_seq>{cls.__name__}"
    assert keras.saving.get_registered_object(f"keras_seq>{cls.__name__}") is cls


@pytest.mark.parametrize("cls", PUBLIC_LAYERS, ids=lambda cls: cls.__name__)
def test_public_layer_documents_args_call_and_references(cls):
    doc = inspect.getdoc(cls)
    for section in ("Args:", "Example:", "References:"):
        assert section in doc, f"{cls.__name__} docstring lacks {section}"


def test_package_exposes_a_version():
    assert keras_seq.__version__.count(".") >= 2


def test_docstring_examples_run():
    import doctest

    import numpy as np

    from keras_seq.layers import cec_lstm

    globs = {"np": np, "keras": keras, **vars(cec_lstm)}
    result = doctest.testmod(cec_lstm, globs=globs, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
