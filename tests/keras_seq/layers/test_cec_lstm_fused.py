"""CECLSTM on the backend's fused LSTM kernel: when it is asked for, and what it computes.

`keras.layers.LSTM` hands its loop to the backend's fused LSTM (cuDNN on a GPU), and so does
`CECLSTM` where its cell is that kernel's: the forget-gate cell with tanh and sigmoid, and the
1997 cell with its forget gate pinned open. On a CPU the kernel declines (TensorFlow, JAX), so
these tests spy on the call to see when it is made, and check the pinned formulation against an
independent NumPy version of the 1997 equations. On PyTorch on a CPU, PyTorch's own LSTM kernel
runs (`keras_seq.layers.torch_lstm`): its outputs and gradients are checked against the cell's
own loop, and the cases it must decline are checked to decline.
"""

import keras
import numpy as np
import pytest

from keras_seq import layers
from keras_seq.layers import cec_lstm, torch_lstm

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
        # PyTorch's own LSTM kernel runs on a CPU too (keras_seq.layers.torch_lstm).
        assert keras.ops.convert_to_numpy(layer(sequence())).shape == (2, UNITS)
        return
    with pytest.raises(ValueError, match="use_cudnn=True asks for the fused LSTM kernel"):
        layer(sequence())


# --- PyTorch's CPU kernel (the torch backend) -------------------------------------------------

torch_only = pytest.mark.skipif(
    keras.backend.backend() != "torch", reason="PyTorch's CPU LSTM kernel is for the torch backend"
)


@pytest.fixture
def native(monkeypatch):
    """Records whether each call of PyTorch's kernel ran (True) or declined (None → False)."""
    ran = []
    real = torch_lstm.lstm

    def recording(*args, **kwargs):
        result = real(*args, **kwargs)
        ran.append(result is not None)
        return result

    monkeypatch.setattr(torch_lstm, "lstm", recording)
    return ran


def _outputs_and_gradients(layer, x, state, mask=None):
    """The layer's outputs (all, as a list) and the gradient of their sum for every weight."""
    import torch

    inputs = torch.tensor(x)
    initial = [torch.tensor(s) for s in state]
    mask = None if mask is None else torch.tensor(mask)
    outputs = layer(inputs, initial_state=initial, mask=mask, training=True)
    outputs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
    total = sum(o.sum() for o in outputs)
    weights = [w.value for w in layer.trainable_weights]
    grads = torch.autograd.grad(total, weights)
    return [o.detach().numpy() for o in outputs], [g.numpy() for g in grads]


def _fused_and_loop(options, x, rng):
    """The same layer twice, on PyTorch's kernel and on the cell's own loop, equal weights."""
    fused = layers.CECLSTM(UNITS, **options)
    loop = layers.CECLSTM(UNITS, use_cudnn=False, **options)
    fused(x)
    loop(x)
    weights = [rng.normal(scale=0.5, size=w.shape).astype("float32") for w in fused.get_weights()]
    fused.set_weights(weights)
    loop.set_weights(weights)
    return fused, loop


@torch_only
@pytest.mark.parametrize(
    "options",
    [
        {"forget_gate": True, "return_sequences": True},
        {"forget_gate": True, "use_bias": False, "return_state": True},
        {"return_sequences": True, "go_backwards": True},
        {"return_state": True},
    ],
    ids=["forget_gate", "no_bias_states", "1997_backwards", "1997_states"],
)
def test_pytorchs_cpu_kernel_computes_the_cells_own_loop_and_its_gradients(native, options):
    x = sequence(batch=3, time=8, seed=3)
    rng = np.random.default_rng(4)
    state = [rng.normal(size=(3, UNITS)).astype("float32") for _ in range(2)]
    fused, loop = _fused_and_loop(options, x, rng)
    fused_out, fused_grads = _outputs_and_gradients(fused, x, state)
    assert native and all(native)  # PyTorch's kernel ran
    loop_out, loop_grads = _outputs_and_gradients(loop, x, state)
    # Both float32 over eight steps, summed in different orders: about 1e-7 apart; 1e-5 leaves
    # room for the gradients, which add up eight steps of products.
    for a, b in zip(fused_out, loop_out, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)
    for a, b in zip(fused_grads, loop_grads, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)


# Right-padded sequences of 5, 8 (no padding) and 1 steps: PyTorch packs them longest first,
# so the rows are reordered and put back.
RIGHT_PADDED = np.arange(8) < np.array([[5], [8], [1]])


@torch_only
@pytest.mark.parametrize(
    "options",
    [
        {"forget_gate": True, "return_sequences": True, "return_state": True},
        {"forget_gate": True, "return_sequences": True, "zero_output_for_mask": True},
        {"forget_gate": True, "zero_output_for_mask": True},
        {"return_sequences": True, "go_backwards": True, "return_state": True},
        {"forget_gate": True, "go_backwards": True, "zero_output_for_mask": True},
        {"return_state": True},
        {"forget_gate": True, "return_sequences": True},
        {"forget_gate": True},
        {"return_sequences": True, "go_backwards": True},
    ],
    ids=[
        "sequences_states",
        "zero_outputs",
        "last_output_zeroed",
        "1997_backwards",
        "backwards_zero_outputs",
        "1997_last",
        "sequences",
        "last_output",
        "1997_backwards_sequences",
    ],
)
def test_pytorchs_cpu_kernel_reads_right_padded_sequences_as_the_masked_loop(native, options):
    """The kernel lays out padded steps, states and gradients as Keras's masked loop, on the
    packed sequences (`return_state`) and on the padded batch (the others)."""
    x = sequence(batch=3, time=8, seed=6)
    rng = np.random.default_rng(7)
    state = [rng.normal(size=(3, UNITS)).astype("float32") for _ in range(2)]
    fused, loop = _fused_and_loop(options, x, rng)
    native.clear()
    fused_out, fused_grads = _outputs_and_gradients(fused, x, state, RIGHT_PADDED)
    assert native == [True]  # PyTorch's kernel ran, on the packed sequences
    loop_out, loop_grads = _outputs_and_gradients(loop, x, state, RIGHT_PADDED)
    # float32 over at most eight steps, as in the unmasked test above.
    for a, b in zip(fused_out, loop_out, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=0)
    for a, b in zip(fused_grads, loop_grads, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-5, rtol=1e-5)


@torch_only
@pytest.mark.parametrize(
    ("options", "packed"),
    [
        ({"return_state": True}, True),
        ({"stateful": True}, True),
        ({"return_sequences": True}, False),
        ({"go_backwards": True, "zero_output_for_mask": True}, False),
    ],
    ids=["return_state", "stateful", "sequences", "backwards"],
)
def test_only_a_layer_that_reads_its_final_cell_state_runs_the_packed_kernel(
    monkeypatch, options, packed
):
    """The packed kernel, several times slower on a CPU, runs only where `c` is read."""
    calls = []
    real = torch_lstm._run_packed

    def recording(*args, **kwargs):
        calls.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch_lstm, "_run_packed", recording)
    x = sequence(batch=3, time=8, seed=9)
    layer = layers.CECLSTM(UNITS, forget_gate=True, **options)
    layer(x, mask=RIGHT_PADDED)
    assert calls == ([True] if packed else [])


@torch_only
@pytest.mark.parametrize("go_backwards", [False, True], ids=["forwards", "backwards"])
def test_on_the_padded_batch_h_is_each_sequences_last_real_steps(go_backwards):
    """`final_cell_state=False`: the h returned is the masked loop's; c is not computed."""
    x = sequence(batch=3, time=8, seed=10)
    rng = np.random.default_rng(11)
    state = [rng.normal(size=(3, UNITS)).astype("float32") for _ in range(2)]
    options = {"forget_gate": True, "return_state": True, "go_backwards": go_backwards}
    fused, loop = _fused_and_loop(options, x, rng)
    kernel, recurrent_kernel, bias = fused.cell.fused_weights()
    _, _, (h, c) = torch_lstm.lstm(
        x,
        state[0],
        state[1],
        RIGHT_PADDED,
        kernel=kernel,
        recurrent_kernel=recurrent_kernel,
        bias=bias,
        return_sequences=False,
        go_backwards=go_backwards,
        unroll=False,
        final_cell_state=False,
    )
    _, loop_h, _ = loop(x, initial_state=state, mask=RIGHT_PADDED)
    # float32 over at most eight steps, as above.
    np.testing.assert_allclose(
        h.detach().numpy(), keras.ops.convert_to_numpy(loop_h), atol=1e-5, rtol=0
    )
    assert not c.detach().numpy().any()


@torch_only
@pytest.mark.parametrize(
    "mask",
    [
        [[0, 0, 1, 1, 1, 1], [1] * 6],  # padded at the start
        [[1, 1, 0, 1, 1, 0], [1] * 6],  # a hole
        [[0] * 6, [1] * 3 + [0] * 3],  # an empty sequence
    ],
    ids=["left_padded", "hole", "empty_row"],
)
def test_pytorchs_cpu_kernel_declines_other_masks_and_the_cells_loop_runs(native, mask):
    x = sequence(batch=2, time=6, seed=5)
    mask = np.array(mask, dtype=bool)
    fused, loop = _fused_and_loop(
        {"forget_gate": True, "return_sequences": True}, x, np.random.default_rng(8)
    )
    native.clear()  # the unmasked calls that built the layers ran it
    got = keras.ops.convert_to_numpy(fused(x, mask=mask))
    assert native == [False]  # declined: the mask
    np.testing.assert_allclose(
        got, keras.ops.convert_to_numpy(loop(x, mask=mask)), atol=1e-6, rtol=0
    )


@torch_only
def test_pytorchs_cpu_kernel_declines_mixed_precision(native):
    layer = layers.CECLSTM(UNITS, forget_gate=True, dtype="mixed_bfloat16")
    output = layer(sequence())
    assert native == [False]
    assert keras.backend.standardize_dtype(output.dtype) == "bfloat16"
