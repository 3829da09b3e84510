"""`CECLSTM(forget_gate=True)` as a drop-in for `keras.layers.LSTM`.

Two kinds of evidence. The golden values are the outputs Keras's own test suite
(`keras/src/layers/rnn/lstm_test.py`, Keras 3.15) expects of `keras.layers.LSTM`
with constant initialisers: a layer built from the same arguments must give
them, whatever code computes them. The rest builds both layers from one set of
Keras arguments and compares them, and checks the 1997 defaults and the rule
that chooses between the two bias initialisations.
"""

import inspect

import keras
import numpy as np
import pytest
from keras import initializers

from keras_seq import layers

pytestmark = pytest.mark.backend_agnostic

# Keras's own tolerance for these values (float32 through up to six steps of
# tanh/sigmoid; the last digits differ with the order of the additions).
GOLDEN_TOLERANCE = {"atol": 1e-5, "rtol": 1e-5}


def constant(**kwargs):
    """Keras's test set-up: every weight a constant, so each unit gives the same value."""
    return dict(
        forget_gate=True,
        kernel_initializer=initializers.Constant(0.01),
        recurrent_initializer=initializers.Constant(0.02),
        bias_initializer=initializers.Constant(0.03),
        **kwargs,
    )


def numpy_of(value):
    return keras.ops.convert_to_numpy(value)


SEQUENCE = np.arange(72).reshape((3, 6, 4)).astype("float32")


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, [0.6288687, 0.86899155, 0.9460773]),
        ({"go_backwards": True}, [0.35622165, 0.74789524, 0.8872726]),
        ({"unroll": True}, [0.6288687, 0.86899155, 0.9460773]),
        ({"unit_forget_bias": False}, [0.57019705, 0.8661914, 0.9459622]),
        ({"use_bias": False}, [0.54986924, 0.86226785, 0.9443936]),
        ({"implementation": 1}, [0.6288687, 0.86899155, 0.9460773]),
    ],
    ids=["plain", "go_backwards", "unroll", "no_unit_forget_bias", "no_bias", "implementation_1"],
)
def test_keras_golden_values(kwargs, expected):
    output = layers.CECLSTM(3, **constant(**kwargs))(SEQUENCE)
    np.testing.assert_allclose(
        numpy_of(output), np.repeat(np.array(expected)[:, None], 3, axis=1), **GOLDEN_TOLERANCE
    )


def test_keras_golden_values_stateful_and_reset():
    sequence = np.arange(24).reshape((2, 3, 4)).astype("float32")
    layer = layers.CECLSTM(4, stateful=True, **constant())
    expected = np.repeat(np.array([0.3124785, 0.6863672])[:, None], 4, axis=1)
    for _ in range(2):  # a reset brings back the first pair of calls
        layer(sequence)
        np.testing.assert_allclose(numpy_of(layer(sequence)), expected, **GOLDEN_TOLERANCE)
        layer.reset_state()


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, [[0.20574439, 0.3558822], [0.64930826, 0.66276]]),
        ({"go_backwards": True}, [[0.13281618, 0.2790356], [0.5839337, 0.5992567]]),
    ],
    ids=["forwards", "go_backwards"],
)
def test_keras_golden_values_with_initial_state(kwargs, expected):
    sequence = np.arange(24).reshape((2, 4, 3)).astype("float32")
    state = [np.arange(4).reshape((2, 2)).astype("float32")] * 2
    output = layers.CECLSTM(2, **constant(**kwargs))(sequence, initial_state=state)
    np.testing.assert_allclose(numpy_of(output), expected, **GOLDEN_TOLERANCE)


MASK_SEQUENCE = np.arange(24).reshape((2, 4, 3)).astype("float32")
MASK = np.array([[True, True, True, False], [True, True, False, False]])


def test_keras_golden_values_with_masks():
    last = layers.CECLSTM(2, unroll=True, **constant())(MASK_SEQUENCE, mask=MASK)
    np.testing.assert_allclose(
        numpy_of(last), [[0.11755939] * 2, [0.28556206] * 2], **GOLDEN_TOLERANCE
    )
    steps_0 = [0.01588910, 0.05552048, 0.11755939, 0.11755939]
    steps_1 = [0.14185596, 0.28556206, 0.28556206, 0.28556206]
    carried = layers.CECLSTM(2, return_sequences=True, **constant())(MASK_SEQUENCE, mask=MASK)
    np.testing.assert_allclose(
        numpy_of(carried), np.stack([steps_0, steps_1])[..., None].repeat(2, -1), **GOLDEN_TOLERANCE
    )
    zeroed = layers.CECLSTM(2, return_sequences=True, zero_output_for_mask=True, **constant())(
        MASK_SEQUENCE, mask=MASK
    )
    expected = np.stack([[*steps_0[:3], 0.0], [*steps_1[:2], 0.0, 0.0]])
    np.testing.assert_allclose(
        numpy_of(zeroed), expected[..., None].repeat(2, -1), **GOLDEN_TOLERANCE
    )
    backwards_mask = np.array([[False, True, True, True], [False, False, True, True]])
    backwards = layers.CECLSTM(2, go_backwards=True, **constant())(
        MASK_SEQUENCE, mask=backwards_mask
    )
    np.testing.assert_allclose(
        numpy_of(backwards), [[0.15341201] * 2, [0.3844719] * 2], **GOLDEN_TOLERANCE
    )


def test_every_keras_lstm_argument_is_accepted():
    ours = inspect.signature(layers.CECLSTM.__init__).parameters
    theirs = inspect.signature(keras.layers.LSTM.__init__).parameters
    missing = [name for name in theirs if name not in ours]
    assert missing == []
    # `implementation` reaches keras.layers.LSTM through **kwargs; here it is named.
    assert "implementation" in ours


@pytest.mark.large_on("jax")
def test_a_keras_lstm_config_builds_an_equal_layer():
    """`keras.layers.LSTM(**cfg)` → `CECLSTM(forget_gate=True, **cfg)`, every option changed."""
    config = dict(
        units=5,
        activation="relu",
        recurrent_activation="hard_sigmoid",
        use_bias=True,
        kernel_initializer="he_normal",
        recurrent_initializer="glorot_normal",
        bias_initializer="ones",
        unit_forget_bias=False,
        kernel_regularizer="l2",
        recurrent_regularizer="l1",
        bias_regularizer="l1",
        activity_regularizer="l2",
        kernel_constraint="non_neg",
        recurrent_constraint="unit_norm",
        bias_constraint="max_norm",
        dropout=0.25,
        recurrent_dropout=0.1,
        seed=3,
        return_sequences=True,
        return_state=True,
        go_backwards=True,
        stateful=False,
        unroll=True,
        use_cudnn=False,
    )
    x = np.random.default_rng(0).normal(size=(4, 6, 3)).astype("float32")
    reference = keras.layers.LSTM(**config)
    ours = layers.CECLSTM(forget_gate=True, **config)
    reference_out = reference(x)
    ours_out = ours(x)
    # The same initial bias: all ones, the forget block too (unit_forget_bias=False).
    np.testing.assert_array_equal(numpy_of(ours.cell.bias), np.ones(20))
    ours.set_weights(reference.get_weights())
    reference_out, ours_out = reference(x), ours(x)
    for theirs, mine in zip(reference_out, ours_out, strict=True):
        # float32 arithmetic in a different order: differences near 1e-6.
        np.testing.assert_allclose(numpy_of(mine), numpy_of(theirs), atol=1e-5)
    # Regularizers: the three weights' and the activity's (once per returned tensor).
    assert len(ours.losses) == len(reference.losses) >= 4
    np.testing.assert_allclose(
        sorted(float(numpy_of(loss)) for loss in ours.losses),
        sorted(float(numpy_of(loss)) for loss in reference.losses),
        rtol=1e-5,
    )
    # The same Keras-level config keys, with the same values where both mean the same.
    keras_config = reference.get_config()
    our_config = ours.get_config()
    for key in keras_config:
        if key not in {"name", "dtype"}:
            assert our_config[key] == keras_config[key], key


def test_the_config_keras_writes_builds_the_layer():
    keras_config = keras.layers.LSTM(4, return_sequences=True, dropout=0.1).get_config()
    layer = layers.CECLSTM(forget_gate=True, **keras_config)
    assert numpy_of(layer(np.zeros((2, 3, 5), "float32"))).shape == (2, 3, 4)
    # Keras's defaults arrive explicitly (bias_initializer zeros, unit_forget_bias True),
    # so the bias starts as Keras's: zeros and a forget block of ones.
    np.testing.assert_array_equal(
        numpy_of(layer.cell.bias).reshape(4, 4), [[0] * 4, [1] * 4, [0] * 4, [0] * 4]
    )


def test_1997_defaults_stay_when_keras_bias_arguments_are_absent():
    layer = layers.CECLSTM(3, forget_gate=True)
    layer(np.zeros((1, 2, 2), "float32"))
    np.testing.assert_array_equal(
        numpy_of(layer.cell.bias).reshape(4, 3), [[-3] * 3, [1] * 3, [0] * 3, [-2] * 3]
    )
    assert not layer.cell.keras_bias


def test_keras_activation_names_set_keras_seqs_own():
    layer = layers.CECLSTM(3, activation="relu", recurrent_activation="hard_sigmoid")
    assert layer.cell.cell_activation is keras.activations.relu
    assert layer.cell.output_activation is keras.activations.relu
    assert layer.cell.gate_activation is keras.activations.hard_sigmoid


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"activation": "relu", "cell_activation": "sigmoid"}, "activation"),
        ({"recurrent_activation": "relu", "gate_activation": "tanh"}, "recurrent_activation"),
        (
            {"forget_gate": True, "bias_initializer": "ones", "input_gate_bias": -1.0},
            "input_gate_bias",
        ),
        (
            {"forget_gate": True, "unit_forget_bias": True, "forget_gate_bias": 2.0},
            "forget_gate_bias",
        ),
        ({"unit_forget_bias": True}, "unit_forget_bias"),
        ({"forget_gate": True, "unit_forget_bias": "yes"}, "unit_forget_bias"),
        ({"implementation": 3}, "implementation"),
        ({"use_cudnn": "yes"}, "use_cudnn"),
        ({"use_cudnn": True, "peephole": True}, "peephole connections"),
        ({"activation": "no_such_activation"}, "no_such_activation"),
    ],
)
def test_conflicting_or_bad_keras_arguments_name_the_argument(kwargs, named):
    with pytest.raises(ValueError, match=named):
        layers.CECLSTM(3, **kwargs)


def test_keras_arguments_survive_saving(tmp_path):
    inputs = keras.Input((4, 2))
    outputs = layers.CECLSTM(
        3,
        forget_gate=True,
        activation="relu",
        bias_initializer="ones",
        unit_forget_bias=False,
        implementation=1,
    )(inputs)
    model = keras.Model(inputs, outputs)
    path = tmp_path / "model.keras"
    model.save(path)
    loaded = keras.saving.load_model(path, safe_mode=True)
    x = np.random.default_rng(2).normal(size=(2, 4, 2)).astype("float32")
    np.testing.assert_allclose(numpy_of(loaded(x)), numpy_of(model(x)), atol=1e-6)
    layer = loaded.layers[-1]
    assert layer.get_config()["activation"] == "relu"
    assert layer.get_config()["implementation"] == 1
    assert layer.cell.keras_bias and layer.cell.unit_forget_bias is False
