"""gradient_flow shows the two shapes the theory predicts, and agrees with NumPy.

For a tanh RNN, ∂h_T/∂h_t = Π_{k=t+1}^{T} diag(tanh'(z_k)) W_h, so with
σ_max(W_h) = 0.5 the error that reaches step t shrinks at least as fast as
0.5^(T−t) (Hochreiter 1991; Pascanu et al. 2013). Through the constant error
carousel with the 1997 truncated gradient, ∂c_T/∂c_t = I (Hochreiter &
Schmidhuber 1997): the error does not decay at all. Weights are set from
NumPy, so every expectation below is independent of the backend's RNG.
"""

import io
import math

import keras
import matplotlib
import matplotlib.figure
import numpy as np
import pandas as pd
import pytest

from keras_seq.diagnostics import _autodiff, gradient_flow, gradients, plot_gradient_flow
from keras_seq.layers import CECLSTM, CECLSTMCell

matplotlib.use("Agg")

# The package exports the function under the module's name; this is the module.

pytestmark = pytest.mark.backend_agnostic

COLUMNS = ["step", "lag", "grad_norm", "layer", "wrt"]


def orthogonal(rng, n, gain):
    """A random n×n matrix whose singular values all equal `gain`."""
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return gain * q * np.sign(np.diag(r))


def simple_rnn(units=16, input_dim=8, gain=0.5, seed=0, name=None):
    """A tanh SimpleRNN with W_x ~ N(0, 1/input_dim), W_h = gain · orthogonal, b ~ N(0, 0.1²)."""
    rng = np.random.default_rng(seed)
    layer = keras.layers.SimpleRNN(units, name=name)
    layer.build((None, None, input_dim))
    layer.set_weights(
        [
            rng.standard_normal((input_dim, units)) / math.sqrt(input_dim),
            orthogonal(rng, units, gain),
            0.1 * rng.standard_normal(units),
        ]
    )
    return layer


def cec_lstm(units=16, input_dim=8, truncated_gradients=True, seed=0, name=None):
    """The 1997 LSTM (no forget gate): random kernels, the default gate biases (−3, 0, −2)."""
    rng = np.random.default_rng(seed)
    layer = CECLSTM(units, truncated_gradients=truncated_gradients, forget_gate=False, name=name)
    layer.build((None, None, input_dim))
    _, _, bias = layer.get_weights()
    layer.set_weights(
        [
            rng.standard_normal((input_dim, 3 * units)) / math.sqrt(input_dim),
            np.concatenate([orthogonal(rng, units, 1.0) for _ in range(3)], axis=1),
            bias,
        ]
    )
    return layer


def by_lag(frame):
    """grad_norm as an array indexed by lag (0 = the step the loss reads)."""
    return frame.sort_values("lag")["grad_norm"].to_numpy()


def log_linear_fit(norms):
    """Slope and R² of the least-squares line through (lag, log norm)."""
    lags = np.arange(len(norms))
    log_norms = np.log(norms)
    slope, intercept = np.polyfit(lags, log_norms, 1)
    residual = log_norms - (slope * lags + intercept)
    r_squared = 1.0 - np.sum(residual**2) / np.sum((log_norms - log_norms.mean()) ** 2)
    return slope, r_squared


# The frame


def test_frame_has_one_row_per_step_with_lag_counted_back_from_the_loss():
    frame = gradient_flow(simple_rnn(name="rnn"), 7)

    assert list(frame.columns) == COLUMNS
    np.testing.assert_array_equal(frame["step"], np.arange(7))
    np.testing.assert_array_equal(frame["lag"], 6 - np.arange(7))
    assert (frame["layer"] == "rnn").all()
    assert (frame["wrt"] == "input").all()
    assert np.all(np.isfinite(frame["grad_norm"])) and np.all(frame["grad_norm"] > 0)


def test_same_seed_gives_the_same_frame_and_another_seed_does_not():
    layer = simple_rnn()
    first = gradient_flow(layer, 10, seed=3)

    pd.testing.assert_frame_equal(first, gradient_flow(layer, 10, seed=3))
    assert not np.allclose(first["grad_norm"], gradient_flow(layer, 10, seed=4)["grad_norm"])


def test_built_layer_keeps_its_weights_and_input_dim():
    layer = simple_rnn(input_dim=5)
    before = layer.get_weights()

    gradient_flow(layer, 5)  # input_dim comes from the build: 5, not the default 8

    for old, new in zip(before, layer.get_weights(), strict=True):
        np.testing.assert_array_equal(old, new)


@pytest.mark.large_on("jax")
def test_unbuilt_layer_and_bare_cell_are_built_on_input_dim():
    layer = keras.layers.GRU(16)
    cell = CECLSTMCell(16)

    gradient_flow(layer, 5, input_dim=3, wrt="state")
    gradient_flow(cell, 5)

    assert layer.cell.kernel.shape == (3, 48)
    assert cell.kernel.shape == (8, 48)  # the default input_dim
    assert layer(np.zeros((2, 5, 3), dtype="float32")).shape == (2, 16)  # still usable


@pytest.mark.parametrize(
    "make_layer",
    [
        lambda: keras.layers.LSTM(16),
        lambda: keras.layers.GRU(16),
        lambda: keras.layers.SimpleRNN(16, stateful=True),
        lambda: keras.layers.RNN(CECLSTMCell(16, forget_gate=True, peephole=True)),
        lambda: keras.layers.RNN(
            keras.layers.StackedRNNCells([keras.layers.SimpleRNNCell(8), CECLSTMCell(16)])
        ),
    ],
    ids=["lstm", "gru", "stateful-simple-rnn", "rnn-peephole-cell", "rnn-stacked-cells"],
)
@pytest.mark.parametrize("wrt", ["input", "state"])
def test_keras_recurrent_layers_and_wrapped_cells_are_measured(make_layer, wrt):
    norms = by_lag(gradient_flow(make_layer(), 6, wrt=wrt))

    assert norms.shape == (6,) and np.all(np.isfinite(norms))
    assert norms[0] > 0


# The vanishing gradient: an exponential in the lag


def test_simple_rnn_input_gradient_decays_exponentially_with_lag():
    # σ_max(W_h) = 0.5 and |tanh'| ≤ 1: each step back multiplies the norm by ≤ 0.5.
    norms = by_lag(gradient_flow(simple_rnn(gain=0.5), 60, wrt="input"))

    slope, r_squared = log_linear_fit(norms[:51])
    assert slope < math.log(0.5)  # measured −1.09 per step
    assert r_squared > 0.98  # measured 0.9999: a straight line on a log axis
    assert norms[50] < 1e-12 * norms[0]  # 0.5**50 ≈ 9e-16; measured 1.9e-24


def test_simple_rnn_state_gradient_is_bounded_by_the_singular_value_power():
    # At lag 0, ∂L/∂h_T = w for every sample; each Jacobian diag(1 − h²) W_h has norm ≤ 0.5.
    norms = by_lag(gradient_flow(simple_rnn(gain=0.5), 60, wrt="state"))

    bound = norms[0] * 0.5 ** np.arange(60)
    assert np.all(norms <= bound * (1 + 1e-4))
    assert norms[40] < 1e-12 * norms[0]  # measured 1.2e-19


# The constant error carousel: no decay


@pytest.mark.large_on("torch")
def test_truncated_carousel_input_gradient_does_not_decay_with_lag():
    norms = by_lag(gradient_flow(cec_lstm(truncated_gradients=True), 200, wrt="input"))

    # Lag 0 also reaches the loss through the last output gate; from lag 1 on,
    # ∂L/∂x_t = ∂L/∂c_T · ∂c_t/∂x_t, the first factor the same for every t.
    ratios = norms[1:] / norms[1]
    assert ratios.min() > 0.2 and ratios.max() < 5  # measured within [0.59, 1.70]
    slope, _ = log_linear_fit(norms[1:])
    assert abs(slope) * 199 < math.log(2)  # a trend of less than ×2 end to end; measured 0.04


@pytest.mark.large_on("torch")
def test_truncated_carousel_state_gradient_is_constant_across_lags():
    norms = by_lag(gradient_flow(cec_lstm(truncated_gradients=True), 200, wrt="state"))

    # ∂L/∂h_t = 0 for t < T−1 and ∂L/∂c_t = ∂L/∂c_{T−2}: one value from lag 1 on.
    np.testing.assert_allclose(norms[1:], norms[1], rtol=1e-5)
    assert norms[1] > 0


def test_untruncated_carousel_state_gradient_is_not_constant():
    # Without the 1997 truncation error also flows through h_{t−1} and the gates.
    norms = by_lag(gradient_flow(cec_lstm(truncated_gradients=False), 200, wrt="state"))

    assert np.ptp(norms[1:]) / norms[1] > 1e-2  # measured 0.28


# Against NumPy


def numpy_simple_rnn_gradient_norms(kernel, recurrent_kernel, bias, x, w):
    """Per-step mean ‖∂L/∂h_t‖ and ‖∂L/∂x_t‖ for L = Σ_b ⟨h_T, w⟩, by Jacobian products.

    Forward: h_k = tanh(W_xᵀ x_k + W_hᵀ h_{k−1} + b) (Keras stores W_x, W_h as kernels).
    ∂h_k/∂h_{k−1} = diag(1 − h_k²) W_hᵀ and ∂h_t/∂x_t = diag(1 − h_t²) W_xᵀ, so
    ∂L/∂h_t = (Π_{k=t+1}^{T} ∂h_k/∂h_{k−1})ᵀ w and ∂L/∂x_t = (∂h_t/∂x_t)ᵀ ∂L/∂h_t.
    """
    batch, steps, _ = x.shape
    units = recurrent_kernel.shape[0]
    state_norms = np.zeros((batch, steps))
    input_norms = np.zeros((batch, steps))
    for b in range(batch):
        h, hs = np.zeros(units), []
        for t in range(steps):
            h = np.tanh(kernel.T @ x[b, t] + recurrent_kernel.T @ h + bias)
            hs.append(h)
        for t in range(steps):
            product = np.eye(units)  # ∂h_{T−1}/∂h_t, built as J_{T−1} ⋯ J_{t+1}
            for k in range(t + 1, steps):
                product = np.diag(1 - hs[k] ** 2) @ recurrent_kernel.T @ product
            dl_dh = product.T @ w
            dl_dx = (np.diag(1 - hs[t] ** 2) @ kernel.T).T @ dl_dh
            state_norms[b, t] = np.linalg.norm(dl_dh)
            input_norms[b, t] = np.linalg.norm(dl_dx)
    return state_norms.mean(axis=0), input_norms.mean(axis=0)


def test_simple_rnn_gradient_norms_match_numpy_product_of_jacobians():
    batch, steps, input_dim, units, seed = 4, 12, 5, 8, 7
    layer = simple_rnn(units=units, input_dim=input_dim, gain=1.2, seed=11)
    kernel, recurrent_kernel, bias = (v.astype(np.float64) for v in layer.get_weights())
    # The documented inputs: x, then w, from one generator seeded with `seed`.
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, steps, input_dim)).astype(np.float32)
    w = (rng.standard_normal(units) / math.sqrt(units)).astype(np.float32)

    expected_state, expected_input = numpy_simple_rnn_gradient_norms(
        kernel, recurrent_kernel, bias, x.astype(np.float64), w.astype(np.float64)
    )

    kwargs = {"batch_size": batch, "seed": seed}
    state = gradient_flow(layer, steps, wrt="state", **kwargs)["grad_norm"]
    inputs = gradient_flow(layer, steps, wrt="input", **kwargs)["grad_norm"]
    np.testing.assert_allclose(state, expected_state, rtol=1e-4)
    np.testing.assert_allclose(inputs, expected_input, rtol=1e-4)


# ∂c_T/∂c_0, the full Jacobian


def carousel_jacobian(truncated_gradients, units=6, input_dim=4, batch=3, steps=24):
    """∂c_T/∂c_0 per sample, (batch, units, units), one basis vector e_j per row."""
    rng = np.random.default_rng(5)
    cell = CECLSTMCell(units, truncated_gradients=truncated_gradients, forget_gate=False)
    cell.build((None, input_dim))
    # Random, non-constant weights and biases: gates neither shut nor saturated.
    cell.set_weights(
        [
            rng.standard_normal((input_dim, 3 * units)),
            rng.standard_normal((units, 3 * units)),
            0.5 * rng.standard_normal(3 * units),
        ]
    )
    x_steps = list(rng.standard_normal((steps, batch, input_dim)).astype(np.float32))
    h_0 = rng.standard_normal((batch, units)).astype(np.float32)
    c_0 = rng.standard_normal((batch, units)).astype(np.float32)

    def c_final(c_0):
        states = [keras.ops.convert_to_tensor(h_0), c_0]
        for x_t in x_steps:
            _, states = cell(x_t, states)
        return states[1]

    rows = []
    for j in range(units):
        e_j = keras.ops.convert_to_tensor(np.eye(units, dtype=np.float32)[j])
        # Samples do not interact: ∂(Σ_b c_T^(b)·e_j)/∂c_0^(b) is row j of sample b's Jacobian.
        [row] = _autodiff.gradients(lambda c, e_j=e_j: keras.ops.sum(c_final(c) * e_j), [c_0])
        rows.append(keras.ops.convert_to_numpy(row))
    return np.stack(rows, axis=1)


@pytest.mark.large_on("jax")
def test_truncated_carousel_jacobian_is_exactly_the_identity():
    jacobian = carousel_jacobian(truncated_gradients=True)

    np.testing.assert_array_equal(jacobian, np.broadcast_to(np.eye(6), jacobian.shape))


def test_untruncated_carousel_jacobian_is_not_the_identity():
    jacobian = carousel_jacobian(truncated_gradients=False)

    assert np.abs(jacobian - np.eye(6)).max() > 0.1  # measured 4.5


# The figure


def test_plot_draws_one_log_scale_line_per_layer():
    frame = pd.concat(
        [
            gradient_flow(simple_rnn(name="tanh_rnn"), 30),
            gradient_flow(cec_lstm(name="carousel"), 30),
            gradient_flow(keras.layers.GRU(16, name="gru"), 30),
        ]
    )

    figure = plot_gradient_flow(frame)
    ax = figure.axes[0]

    assert isinstance(figure, matplotlib.figure.Figure)
    assert ax.get_yscale() == "log"
    assert [line.get_label() for line in ax.get_lines()] == ["tanh_rnn", "carousel", "gru"]
    for line in ax.get_lines():
        np.testing.assert_array_equal(line.get_xdata(), np.arange(30))
    figure.savefig(io.BytesIO(), format="png")


def test_plot_draws_zero_norms_at_the_floor():
    frame = pd.DataFrame(
        {
            "step": [0, 1, 2],
            "lag": [2, 1, 0],
            "grad_norm": [0.0, 1e-3, 1.0],
            "layer": "cut",
            "wrt": "state",
        }
    )

    figure = plot_gradient_flow(frame, floor=1e-20)
    [line] = figure.axes[0].get_lines()

    np.testing.assert_array_equal(line.get_ydata(), [1.0, 1e-3, 1e-20])  # by lag
    figure.savefig(io.BytesIO(), format="png")


def test_plot_accepts_a_dict_of_frames_and_layers_on_a_given_axes():
    from matplotlib.figure import Figure

    figure = Figure()
    ax = figure.add_subplot()
    frames = {"vanilla": gradient_flow(simple_rnn(), 20), "1997 LSTM": cec_lstm()}

    returned = plot_gradient_flow(frames, ax=ax, sequence_length=20)

    assert returned is figure
    assert [line.get_label() for line in ax.get_lines()] == ["vanilla", "1997 LSTM"]
    assert len(ax.get_lines()[1].get_xdata()) == 20


# Bad arguments


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"sequence_length": 0}, "sequence_length"),
        ({"sequence_length": 10_001}, "sequence_length"),
        ({"sequence_length": 2.5}, "sequence_length"),
        ({"sequence_length": True}, "sequence_length"),
        ({"batch_size": 0}, "batch_size"),
        ({"batch_size": 100_000}, "batch_size"),
        ({"input_dim": -1}, "input_dim"),
        ({"wrt": "hidden"}, "wrt"),
        ({"wrt": None}, "wrt"),
        ({"seed": -1}, "seed"),
        ({"seed": "zero"}, "seed"),
        ({"seed": False}, "seed"),
    ],
)
def test_bad_argument_is_refused_naming_it(kwargs, argument):
    arguments = {"sequence_length": 5, **kwargs}
    with pytest.raises(ValueError, match=f"argument `{argument}`.*got {kwargs[argument]!r}"):
        gradient_flow(keras.layers.SimpleRNN(2), **arguments)


@pytest.mark.parametrize(
    "layer",
    [keras.layers.Dense(3), keras.layers.Bidirectional(keras.layers.LSTM(2)), "lstm"],
    ids=["dense", "bidirectional", "string"],
)
def test_non_recurrent_layer_is_refused(layer):
    with pytest.raises(ValueError, match="argument `layer`"):
        gradient_flow(layer, 5)


def test_input_dim_other_than_the_built_one_is_refused():
    with pytest.raises(ValueError, match=r"argument `input_dim`, expected 5.*got 8"):
        gradient_flow(simple_rnn(input_dim=5), 5, input_dim=8)


@pytest.mark.parametrize(
    ("frames", "kwargs"),
    [
        ([], {}),
        ({}, {}),
        (None, {}),
        ([pd.DataFrame({"lag": [0], "grad_norm": [1.0]})], {}),
        ([3.0], {}),
        (pd.DataFrame({c: [0] for c in COLUMNS}), {"floor": 0.0}),
        (pd.DataFrame({c: [0] for c in COLUMNS}), {"floor": float("nan")}),
    ],
    ids=["empty-list", "empty-dict", "none", "missing-columns", "number", "zero-floor", "nan"],
)
def test_plot_refuses_what_it_cannot_draw(frames, kwargs):
    with pytest.raises(ValueError, match=r"argument `(frames_or_layers|floor)`"):
        plot_gradient_flow(frames, **kwargs)


def test_docstring_examples_run():
    import doctest

    globs = {"np": np, "keras": keras, **vars(gradients)}
    result = doctest.testmod(gradients, globs=globs, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
