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


@pytest.mark.large_on("jax")
def test_docstring_examples_run():
    import doctest

    import numpy as np

    from keras_seq.layers import cec_lstm

    globs = {"np": np, "keras": keras, **vars(cec_lstm)}
    result = doctest.testmod(cec_lstm, globs=globs, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


SUBPACKAGES = (
    "diagnostics",
    "layers",
    "losses",
    "metrics",
    "models",
    "schedules",
    "tasks",
    "testing",
)


def test_all_lists_every_public_subpackage():
    assert set(SUBPACKAGES) <= set(keras_seq.__all__)
    assert set(keras_seq.__all__) - set(SUBPACKAGES) == {"__version__"}


@pytest.mark.large
def test_a_plain_import_makes_every_subpackage_an_attribute():
    """In a fresh interpreter, `import keras_seq` alone is enough for `keras_seq.<name>`."""
    import subprocess
    import sys

    script = "import keras_seq\n" + "".join(
        f"print(keras_seq.{name}.__name__)\n" for name in SUBPACKAGES
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    printed = result.stdout.split()
    assert printed == [f"keras_seq.{name}" for name in SUBPACKAGES], result.stderr[-2000:]


def test_moved_classes_keep_their_registered_names():
    from keras_seq import losses, metrics

    for cls in (losses.MaskedSparseCategoricalCrossentropy, metrics.MaskedTokenAccuracy):
        assert keras.saving.get_registered_object(f"keras_seq>{cls.__name__}") is cls
