"""`recurrent_model` and `compile_for`: the model that puts one recurrent layer on a task."""

import keras
import numpy as np
import pytest

from keras_seq.layers import CECLSTM
from keras_seq.models import compile_for, recurrent_model
from keras_seq.tasks import SequenceSpec, TargetSpec

NUMERIC = SequenceSpec("numeric", length=7, features=3)
TOKENS = SequenceSpec("tokens", length=7, vocab_size=5)
THREE_CLASSES = TargetSpec("classification", num_classes=3)
TWO_OUTPUTS = TargetSpec("regression", output_dim=2)


def test_classification_model_outputs_class_probabilities():
    model = recurrent_model(CECLSTM(4), NUMERIC, THREE_CLASSES)
    x = np.random.default_rng(0).normal(size=(6, 7, 3)).astype("float32")
    probabilities = keras.ops.convert_to_numpy(model(x))
    assert probabilities.shape == (6, 3)
    np.testing.assert_allclose(probabilities.sum(axis=-1), np.ones(6), rtol=1e-5)
    assert model.get_layer("classifier").activation is keras.activations.softmax


def test_regression_head_is_linear():
    model = recurrent_model(keras.layers.GRU(4), NUMERIC, TWO_OUTPUTS)
    head = model.get_layer("regressor")
    assert model.output_shape == (None, 2)
    assert head.activation is keras.activations.linear


def test_token_inputs_are_embedded_first():
    model = recurrent_model(keras.layers.SimpleRNN(4), TOKENS, THREE_CLASSES, embedding_dim=6)
    assert model.input_shape == (None, 7)
    assert model.inputs[0].dtype == "int32"
    embedding = model.get_layer("token_embedding")
    assert (embedding.input_dim, embedding.output_dim) == (5, 6)
    ids = np.random.default_rng(1).integers(0, 5, size=(4, 7)).astype("int32")
    assert model(ids).shape == (4, 3)


def test_numeric_inputs_have_no_embedding():
    model = recurrent_model(keras.layers.LSTM(4), NUMERIC, THREE_CLASSES)
    assert not any(isinstance(layer, keras.layers.Embedding) for layer in model.layers)


@pytest.mark.parametrize(
    "layer",
    [CECLSTM(4, return_sequences=True), keras.layers.LSTM(4, return_state=True)],
    ids=["return_sequences", "return_state"],
)
def test_layer_returning_more_than_one_vector_is_refused(layer):
    with pytest.raises(ValueError, match="one vector per sequence"):
        recurrent_model(layer, NUMERIC, THREE_CLASSES)


def test_bad_specs_and_embedding_dim_are_refused():
    with pytest.raises(ValueError, match="`inputs`"):
        recurrent_model(CECLSTM(4), (7, 3), THREE_CLASSES)
    with pytest.raises(ValueError, match="`targets`"):
        recurrent_model(CECLSTM(4), NUMERIC, "classification")
    with pytest.raises(ValueError, match=r"`embedding_dim`.*got 0"):
        recurrent_model(CECLSTM(4), TOKENS, THREE_CLASSES, embedding_dim=0)


def test_compile_for_picks_the_loss_from_the_targets():
    classifier = compile_for(recurrent_model(CECLSTM(4), NUMERIC, THREE_CLASSES), THREE_CLASSES)
    x = np.random.default_rng(2).normal(size=(8, 7, 3)).astype("float32")
    labels = np.array([0, 1, 2, 0, 1, 2, 0, 1], dtype="int32")
    logs = classifier.evaluate(x, labels, verbose=0, return_dict=True)
    probabilities = keras.ops.convert_to_numpy(classifier(x))
    expected = -np.mean(np.log(probabilities[np.arange(8), labels]))
    np.testing.assert_allclose(logs["loss"], expected, rtol=1e-5)
    assert "accuracy" in logs

    regressor = compile_for(recurrent_model(CECLSTM(4), NUMERIC, TWO_OUTPUTS), TWO_OUTPUTS)
    y = np.random.default_rng(3).normal(size=(8, 2)).astype("float32")
    logs = regressor.evaluate(x, y, verbose=0, return_dict=True)
    prediction = keras.ops.convert_to_numpy(regressor(x))
    np.testing.assert_allclose(logs["loss"], np.mean((prediction - y) ** 2), rtol=1e-5)


def test_compile_for_uses_adam_with_the_given_rate_and_clipnorm():
    model = compile_for(
        recurrent_model(CECLSTM(4), NUMERIC, TWO_OUTPUTS),
        TWO_OUTPUTS,
        learning_rate=3e-3,
        clipnorm=0.5,
    )
    assert isinstance(model.optimizer, keras.optimizers.Adam)
    np.testing.assert_allclose(float(model.optimizer.learning_rate), 3e-3, rtol=1e-6)
    assert model.optimizer.clipnorm == 0.5


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [({"learning_rate": 0.0}, "learning_rate"), ({"clipnorm": -1.0}, "clipnorm")],
)
def test_compile_for_refuses_non_positive_settings(kwargs, argument):
    model = recurrent_model(CECLSTM(4), NUMERIC, TWO_OUTPUTS)
    with pytest.raises(ValueError, match=f"`{argument}`"):
        compile_for(model, TWO_OUTPUTS, **kwargs)


def test_docstring_examples_run():
    import doctest

    from keras_seq.models import recurrent
    from keras_seq.tasks import long_lag

    globs = {**vars(recurrent), "CECLSTM": CECLSTM, "long_lag": long_lag}
    result = doctest.testmod(recurrent, globs=globs, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0


def test_pointer_targets_are_refused_with_a_pointer_to_the_right_model():
    from keras_seq.tasks import sort_numbers

    task = sort_numbers(4, 20)
    with pytest.raises(ValueError, match="pointer_network"):
        recurrent_model(keras.layers.GRU(4), task.inputs, task.targets)
    model = recurrent_model(keras.layers.GRU(4), NUMERIC, THREE_CLASSES)
    with pytest.raises(ValueError, match="'pointer'"):
        compile_for(model, task.targets)
