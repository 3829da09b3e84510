"""CECLSTM against an independent NumPy version of each paper's equations."""

import keras
import numpy as np
import pytest

from keras_seq import layers
from keras_seq.testing import LayerCase
from tests.keras_seq.layers.shared_checks import in_process_check_tests

pytestmark = pytest.mark.backend_agnostic

UNITS, FEATURES, BATCH, TIME = 5, 3, 4, 7

VARIANTS = {
    "1997": {},
    "forget_gate": {"forget_gate": True},
    "peephole": {"peephole": True},
    "peephole_forget_gate": {"peephole": True, "forget_gate": True},
}


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def numpy_lstm(x, weights, *, forget_gate, peephole, h0=None, c0=None):
    """The LSTM recurrences written out step by step in NumPy.

    Hochreiter & Schmidhuber 1997: c_t = c_{t-1} + i_t g(z_c), h_t = o_t h(c_t).
    Gers et al. 2000 add f_t: c_t = f_t c_{t-1} + i_t g(z_c). Gers & Schmidhuber
    2000 add peepholes: i and f see c_{t-1}, o sees c_t. g = h = tanh, σ = logistic.
    Weight blocks are laid out i, [f,] c, o along the last axis.
    Returns (h for every step, final h, final c).
    """
    kernel, recurrent, bias = weights[:3]
    n = UNITS
    gates = ["i", "f", "c", "o"] if forget_gate else ["i", "c", "o"]
    W = {g: kernel[:, k * n : (k + 1) * n] for k, g in enumerate(gates)}
    U = {g: recurrent[:, k * n : (k + 1) * n] for k, g in enumerate(gates)}
    b = {g: bias[k * n : (k + 1) * n] for k, g in enumerate(gates)}
    p = {}
    if peephole:
        names = ["i", "f", "o"] if forget_gate else ["i", "o"]
        p = dict(zip(names, weights[3:], strict=True))
    batch = x.shape[0]
    h = np.zeros((batch, n)) if h0 is None else h0.astype("float64")
    c = np.zeros((batch, n)) if c0 is None else c0.astype("float64")
    hs = []
    for t in range(x.shape[1]):
        x_t = x[:, t]
        pre = {g: x_t @ W[g] + h @ U[g] + b[g] for g in gates}
        i = sigmoid(pre["i"] + (p["i"] * c if peephole else 0.0))
        if forget_gate:
            f = sigmoid(pre["f"] + (p["f"] * c if peephole else 0.0))
            c = f * c + i * np.tanh(pre["c"])
        else:
            c = c + i * np.tanh(pre["c"])
        o = sigmoid(pre["o"] + (p["o"] * c if peephole else 0.0))
        h = o * np.tanh(c)
        hs.append(h)
    return np.stack(hs, axis=1), h, c


def random_weights(layer, seed=0, scale=0.6):
    """Random, non-constant weights of every shape the layer holds."""
    rng = np.random.default_rng(seed)
    weights = [rng.normal(scale=scale, size=w.shape).astype("float32") for w in layer.weights]
    layer.set_weights(weights)
    return weights


def make_input(seed=1, batch=BATCH, time=TIME):
    return np.random.default_rng(seed).normal(size=(batch, time, FEATURES)).astype("float32")


def built(layer, x):
    layer(x)
    return layer


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("truncated", [False, True])
def test_outputs_match_numpy_equations(variant, truncated):
    kwargs = VARIANTS[variant]
    x = make_input()
    layer = built(
        layers.CECLSTM(
            UNITS, **kwargs, truncated_gradients=truncated, return_sequences=True, return_state=True
        ),
        x,
    )
    weights = random_weights(layer)
    sequence, h_T, c_T = (keras.ops.convert_to_numpy(t) for t in layer(x))
    expected_sequence, expected_h, expected_c = numpy_lstm(x, weights, **_flags(kwargs))
    np.testing.assert_allclose(sequence, expected_sequence, atol=1e-5)
    np.testing.assert_allclose(h_T, expected_h, atol=1e-5)
    np.testing.assert_allclose(c_T, expected_c, atol=1e-5)


def _flags(kwargs):
    return {
        "forget_gate": kwargs.get("forget_gate", False),
        "peephole": kwargs.get("peephole", False),
    }


def test_1997_cell_has_no_forget_gate_weights_and_three_gate_blocks():
    layer = built(layers.CECLSTM(UNITS), make_input())
    shapes = {w.name: tuple(w.shape) for w in layer.weights}
    assert shapes == {
        "kernel": (FEATURES, 3 * UNITS),
        "recurrent_kernel": (UNITS, 3 * UNITS),
        "bias": (3 * UNITS,),
    }


def test_carousel_keeps_cell_state_when_input_gate_is_shut():
    # With the input gate driven to zero the 1997 cell state must not move at
    # all: its self-connection is exactly 1.0 (a forget gate would decay it).
    layer = built(layers.CECLSTM(UNITS, return_state=True), make_input())
    weights = random_weights(layer)
    weights[2][:UNITS] = -1e4  # input-gate bias
    layer.set_weights(weights)
    c0 = np.random.default_rng(3).normal(size=(BATCH, UNITS)).astype("float32")
    h0 = np.zeros_like(c0)
    _, _, c_T = layer(make_input(), initial_state=[h0, c0])
    np.testing.assert_allclose(keras.ops.convert_to_numpy(c_T), c0, atol=1e-6)


def test_gate_biases_start_at_the_documented_values():
    layer = built(layers.CECLSTM(UNITS, forget_gate=True), make_input())
    bias = keras.ops.convert_to_numpy(layer.cell.bias).reshape(4, UNITS)
    np.testing.assert_array_equal(bias[0], -3.0)  # i
    np.testing.assert_array_equal(bias[1], 1.0)  # f
    np.testing.assert_array_equal(bias[2], 0.0)  # c
    np.testing.assert_array_equal(bias[3], -2.0)  # o
    custom = built(layers.CECLSTM(UNITS, input_gate_bias=-1.5, output_gate_bias=0.5), make_input())
    bias = keras.ops.convert_to_numpy(custom.cell.bias).reshape(3, UNITS)
    np.testing.assert_array_equal(bias[:, 0], [-1.5, 0.0, 0.5])


def test_forget_gate_variant_is_a_drop_in_for_keras_lstm():
    x = make_input()
    reference = built(keras.layers.LSTM(UNITS, return_sequences=True), x)
    ours = built(layers.CECLSTM(UNITS, forget_gate=True, return_sequences=True), x)
    assert [w.shape for w in ours.get_weights()] == [w.shape for w in reference.get_weights()]
    random_weights(reference, seed=4)
    ours.set_weights(reference.get_weights())
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(ours(x)), keras.ops.convert_to_numpy(reference(x)), atol=1e-5
    )


def test_cell_inside_keras_rnn_equals_the_layer():
    x = make_input()
    layer = built(layers.CECLSTM(UNITS, peephole=True, return_sequences=True), x)
    rnn = built(
        keras.layers.RNN(layers.CECLSTMCell(UNITS, peephole=True), return_sequences=True), x
    )
    rnn.set_weights(random_weights(layer))
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(rnn(x)), keras.ops.convert_to_numpy(layer(x)), atol=1e-6
    )


def test_initial_state_and_go_backwards_follow_the_equations():
    x = make_input()
    rng = np.random.default_rng(5)
    h0, c0 = (rng.normal(size=(BATCH, UNITS)).astype("float32") for _ in range(2))
    layer = built(layers.CECLSTM(UNITS, forget_gate=True, go_backwards=True), x)
    weights = random_weights(layer)
    out = keras.ops.convert_to_numpy(layer(x, initial_state=[h0, c0]))
    _, expected, _ = numpy_lstm(x[:, ::-1], weights, forget_gate=True, peephole=False, h0=h0, c0=c0)
    np.testing.assert_allclose(out, expected, atol=1e-5)


def test_stateful_layer_carries_state_across_batches():
    x = make_input(batch=2, time=8)
    layer = layers.CECLSTM(UNITS, stateful=True, return_sequences=True)
    layer(x[:, :4])
    weights = random_weights(layer)
    layer.reset_states()
    first = keras.ops.convert_to_numpy(layer(x[:, :4]))
    second = keras.ops.convert_to_numpy(layer(x[:, 4:]))
    expected, _, _ = numpy_lstm(x, weights, forget_gate=False, peephole=False)
    np.testing.assert_allclose(np.concatenate([first, second], axis=1), expected, atol=1e-5)


def test_right_and_left_padding_give_the_unpadded_result():
    x = make_input(batch=1, time=TIME)
    layer = built(layers.CECLSTM(UNITS, peephole=True, forget_gate=True), x)
    weights = random_weights(layer)
    valid = 4
    _, expected, _ = numpy_lstm(x[:, :valid], weights, forget_gate=True, peephole=True)
    padded_right = np.concatenate([x[:, :valid], np.full((1, TIME - valid, FEATURES), 9.0)], 1)
    mask_right = np.arange(TIME)[None] < valid
    padded_left = np.concatenate([np.full((1, TIME - valid, FEATURES), 9.0), x[:, :valid]], 1)
    mask_left = np.arange(TIME)[None] >= TIME - valid
    for padded, mask in ((padded_right, mask_right), (padded_left, mask_left)):
        out = keras.ops.convert_to_numpy(layer(padded.astype("float32"), mask=mask))
        np.testing.assert_allclose(out, expected, atol=1e-5)


def test_fully_masked_sequence_gives_finite_zeros():
    x = make_input(batch=2)
    layer = layers.CECLSTM(UNITS, return_sequences=True, zero_output_for_mask=True)
    out = keras.ops.convert_to_numpy(layer(x, mask=np.zeros((2, TIME), bool)))
    assert np.all(np.isfinite(out))
    np.testing.assert_array_equal(out, 0.0)


def test_bidirectional_runs_both_directions_of_the_equations():
    x = make_input()
    layer = built(keras.layers.Bidirectional(layers.CECLSTM(UNITS, return_sequences=True)), x)
    forward = random_weights(layer.forward_layer, seed=6)
    backward = random_weights(layer.backward_layer, seed=7)
    out = keras.ops.convert_to_numpy(layer(x))
    expected_f, _, _ = numpy_lstm(x, forward, forget_gate=False, peephole=False)
    expected_b, _, _ = numpy_lstm(x[:, ::-1], backward, forget_gate=False, peephole=False)
    np.testing.assert_allclose(out[..., :UNITS], expected_f, atol=1e-5)
    np.testing.assert_allclose(out[..., UNITS:], expected_b[:, ::-1], atol=1e-5)


def test_stacked_layers_feed_sequences_forward():
    x = make_input()
    first = built(layers.CECLSTM(UNITS, return_sequences=True), x)
    second = built(layers.CECLSTM(UNITS, forget_gate=True), first(x))
    w1, w2 = random_weights(first, seed=8), random_weights(second, seed=9)
    out = keras.ops.convert_to_numpy(keras.Sequential([first, second])(x))
    hidden, _, _ = numpy_lstm(x, w1, forget_gate=False, peephole=False)
    _, expected, _ = numpy_lstm(hidden, w2, forget_gate=True, peephole=False)
    np.testing.assert_allclose(out, expected, atol=1e-5)


def test_dropout_applies_only_in_training_with_one_mask_per_sequence():
    x = np.repeat(make_input(batch=1, time=1), TIME, axis=1).repeat(3, axis=0)
    layer = built(
        layers.CECLSTM(
            UNITS, dropout=0.5, output_activation="linear", return_sequences=True, seed=1
        ),
        x,
    )
    weights = random_weights(layer)
    weights[1][:] = 0.0  # no recurrence: each step sees only its (dropped) input
    layer.set_weights(weights)
    inference = [keras.ops.convert_to_numpy(layer(x, training=False)) for _ in range(2)]
    np.testing.assert_array_equal(inference[0], inference[1])
    trained = keras.ops.convert_to_numpy(layer(x, training=True))
    assert not np.allclose(trained, inference[0])
    # Same input and the same dropout mask at every step: the carousel adds the
    # same increment each step and h is linear in c, so h_t / t is constant.
    # A mask drawn per step would break this.
    per_step = trained / np.arange(1, TIME + 1)[None, :, None]
    np.testing.assert_allclose(per_step, np.repeat(per_step[:, :1], TIME, axis=1), rtol=1e-4)


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"units": 0}, "units"),
        ({"units": -3}, "units"),
        ({"units": 2.5}, "units"),
        ({"units": 10**12}, "units"),
        ({"units": 4, "dropout": 1.0}, "dropout"),
        ({"units": 4, "recurrent_dropout": -0.1}, "recurrent_dropout"),
        ({"units": 4, "forget_gate": "yes"}, "forget_gate"),
        ({"units": 4, "peephole": 1}, "peephole"),
        ({"units": 4, "input_gate_bias": float("nan")}, "input_gate_bias"),
        ({"units": 4, "return_sequences": None}, "return_sequences"),
    ],
)
def test_invalid_arguments_name_the_argument_and_value(kwargs, argument):
    with pytest.raises(ValueError, match=f"`{argument}`") as error:
        layers.CECLSTM(**kwargs)
    assert repr(kwargs[argument]) in str(error.value)


def test_hostile_units_are_refused_before_any_allocation():
    with pytest.raises(ValueError, match="no larger than 65536"):
        layers.CECLSTMCell(10**12)


def test_huge_input_dimension_is_refused_at_build():
    layer = layers.CECLSTM(60_000)
    with pytest.raises(ValueError, match="would create"):
        layer.build((None, 5, 60_000))


@pytest.mark.parametrize("shape", [(4, 3), (2, 4, 3, 1)])
def test_wrong_input_rank_is_a_clear_error(shape):
    with pytest.raises(ValueError, match=r"ndim=3|\(batch, time, features\)") as error:
        layers.CECLSTM(UNITS)(np.zeros(shape, "float32"))
    assert str(shape) in str(error.value)


def _case(**kwargs):
    return LayerCase(make=lambda **kw: layers.CECLSTM(4, **kwargs, **kw), features=FEATURES)


# Their saved files are checked in tests/keras_seq/test_saved_layers.py, in one fresh process.
SAVED_CASES = {
    "1997": _case(),
    "forget_gate_sequences": _case(forget_gate=True, return_sequences=True),
    "peephole_truncated_state": _case(peephole=True, truncated_gradients=True, return_state=True),
    "peephole_forget_gate_sequences": _case(peephole=True, forget_gate=True, return_sequences=True),
}


# Under JAX, which compiles each op at its first use, the eager checks of the large ones take
# 4-7 s of CPU (peephole_forget_gate_sequences' up to 3.5 s).
test_layer_passes_eager_layer_checks, test_every_layer_fits_one_jit_compiled_step = (
    in_process_check_tests(
        SAVED_CASES,
        large_eager={
            "1997",
            "forget_gate_sequences",
            "peephole_truncated_state",
            "peephole_forget_gate_sequences",
        },
    )
)


def test_cell_passes_config_round_trip():
    cell = layers.CECLSTMCell(4, forget_gate=True, peephole=True, dropout=0.1, seed=3)
    config = cell.get_config()
    assert layers.CECLSTMCell.from_config(config).get_config() == config
