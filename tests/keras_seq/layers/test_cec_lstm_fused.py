"""CECLSTM on the backend's fused LSTM kernel: when it is asked for, and what it computes.

`keras.layers.LSTM` hands its loop to the backend's fused LSTM (cuDNN on a GPU), and so does
`CECLSTM` where its cell is that kernel's: the forget-gate cell with tanh and sigmoid, and the
1997 cell with its forget gate pinned open. On a CPU the kernel declines (TensorFlow, JAX) or
runs as a plain loop (PyTorch), so these tests spy on the call to see when it is made, and
check the pinned formulation against an independent NumPy version of the 1997 equations.
"""

import keras
import numpy as np
import pytest

from keras_seq import layers
from keras_seq.layers import cec_lstm

pytestmark = pytest.mark.backend_agnostic

UNITS, FEATURES = 4, 3


def sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


def numpy_1997(x, kernel, recurrent, bias):
    """Hochreiter & Schmidhuber 1997: c_t = c_{t-1} + i_t g(z_c), h_t = o_t h(c_t); i, c, o."""
    h = np.zeros((x.shape[0], UNITS))
    c = np.zeros((x.shape[0], UNITS))
    outputs = []
    for t in range(x.shape[1]):
        z = x[:, t] @ kernel + h @ recurrent + bias
        z_i, z_c, z_o = np.split(z, 3, axis=-1)
        c = c + sigmoid(z_i) * np.tanh(z_c)
        h = sigmoid(z_o) * np.tanh(c)
        outputs.append(h)
    return np.stack(outputs, axis=1)


@pytest.fixture
def spy(monkeypatch):
    """Records each call of the fused kernel, then lets the real one run (or decline)."""
    calls = []
    real = cec_lstm._fused_lstm

    def recording(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(cec_lstm, "_fused_lstm", recording)
    return calls


def sequence(batch=2, time=6, seed=0):
    return np.random.default_rng(seed).normal(size=(batch, time, FEATURES)).astype("float32")


@pytest.mark.parametrize(
    "options",
    [{}, {"forget_gate": True}, {"forget_gate": True, "use_bias": False}, {"dropout": 0.2}],
    ids=["1997", "forget_gate", "no_bias", "input_dropout"],
)
def test_the_fused_kernel_is_asked_for_when_the_cell_is_its_cell(spy, options):
    layer = layers.CECLSTM(UNITS, **options)
    assert layer.fused_kernel_refusal() is None
    layer(sequence(), training=True)
    assert len(spy) == 1
    assert tuple(spy[0]["kernel"].shape) == (FEATURES, 4 * UNITS)  # i, f, c, o
    assert spy[0]["activation"] is keras.activations.tanh
    assert spy[0]["recurrent_activation"] is keras.activations.sigmoid


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"peephole": True}, "peephole connections"),
        ({"truncated_gradients": True}, "truncated gradients"),
        ({"recurrent_dropout": 0.2}, "recurrent dropout"),
        ({"cell_activation": "relu"}, "activations other than"),
        ({"gate_activation": "hard_sigmoid"}, "activations other than"),
        ({"forget_gate": True, "activation": "relu"}, "activations other than"),
        ({"use_cudnn": False}, "use_cudnn=False"),
    ],
)
def test_the_fused_kernel_is_never_asked_for_otherwise(spy, options, reason):
    layer = layers.CECLSTM(UNITS, **options)
    assert reason in layer.fused_kernel_refusal()
    output = layer(sequence(), training=True)
    assert spy == []
    assert np.isfinite(keras.ops.convert_to_numpy(output)).all()


def test_the_pinned_forget_bias_rounds_to_an_open_gate_in_every_float_dtype():
    for dtype in ("float32", "float16", "bfloat16"):
        gate = keras.ops.sigmoid(keras.ops.full((1,), cec_lstm.PINNED_FORGET_BIAS, dtype=dtype))
        value = keras.ops.convert_to_numpy(keras.ops.cast(gate, "float32"))
        np.testing.assert_array_equal(value, [1.0], err_msg=dtype)  # exactly 1: no decay


def test_the_pinned_forget_gate_is_the_1997_cell():
    """Keras's LSTM with the 1997 cell's fused weights computes the 1997 equations."""
    x = sequence(batch=3, time=9, seed=1)
    ours = layers.CECLSTM(UNITS, return_sequences=True)
    ours(x)
    rng = np.random.default_rng(2)
    weights = [rng.normal(scale=0.5, size=w.shape).astype("float32") for w in ours.get_weights()]
    ours.set_weights(weights)
    reference = keras.layers.LSTM(UNITS, return_sequences=True, use_cudnn=False)
    reference(x)
    reference.set_weights([keras.ops.convert_to_numpy(w) for w in ours.cell.fused_weights()])
    expected = numpy_1997(x.astype("float64"), *[w.astype("float64") for w in weights])
    # float32 through nine steps of tanh and sigmoid against float64: about 1e-7 apart.
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(reference(x)), expected, atol=1e-6, rtol=0
    )
    np.testing.assert_allclose(keras.ops.convert_to_numpy(ours(x)), expected, atol=1e-6, rtol=0)


def test_no_gradient_reaches_the_pinned_blocks():
    """The pinned forget gate is built from constants: only the cell's own weights train."""
    layer = layers.CECLSTM(UNITS)
    layer(sequence())
    assert [tuple(w.shape) for w in layer.trainable_weights] == [
        (FEATURES, 3 * UNITS),
        (UNITS, 3 * UNITS),
        (3 * UNITS,),
    ]


def test_use_cudnn_true_is_refused_where_the_kernel_cannot_run():
    layer = layers.CECLSTM(UNITS, forget_gate=True, use_cudnn=True)
    if keras.backend.backend() == "torch":
        # PyTorch's fused function runs on a CPU too (as a loop of its own).
        assert keras.ops.convert_to_numpy(layer(sequence())).shape == (2, UNITS)
        return
    with pytest.raises(ValueError, match="use_cudnn=True asks for the fused LSTM kernel"):
        layer(sequence())
