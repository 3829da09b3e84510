"""Next-frame prediction: a ConvLSTM encoder–forecaster, and a frame-flattening LSTM to compare.

    frames ─▶ ConvLSTM2D ─▶ … ─▶ ConvLSTM2D ─▶ [H_t of every layer, last step]
           ─▶ Conv2D (T_out · C maps, sigmoid) ─▶ T_out future frames

    frames ─▶ flatten each frame ─▶ LSTM ─▶ Dense (T_out · H · W · C, sigmoid)
           ─▶ T_out future frames

Shi et al. (2015) replace the matrix products of an LSTM by convolutions, so
that its input, hidden and cell states are images (`H × W × filters`) and
each unit sees only a neighbourhood of the frame; their baseline, the
FC-LSTM of Srivastava et al. (2015), reads each frame as one flat vector and
must learn every spatial relation from its weights. `conv_lstm_predictor`
builds the first over Keras's `ConvLSTM2D` (not rewritten here);
`frame_lstm_predictor` the second; `matched_units` gives the frame LSTM as
many weights as a ConvLSTM has, as near as whole units allow, so that the two
can be compared at an equal parameter budget.

Both are plain functional `keras.Model`s of Keras layers (no `Lambda`), so
they save to `.keras` files that reload with `safe_mode=True`. Their outputs
are sigmoids, per-pixel probabilities of a lit pixel, for a binary
cross-entropy or a squared-error loss (`compile_for` picks the first for
targets of kind `"frames"`, as Shi et al. did on Moving MNIST).
"""

from __future__ import annotations

import math
import numbers

import keras

from keras_seq import argument_checks
from keras_seq.tasks.base import FramesSpec

MAX_KERNEL_SIZE = 15
MAX_LAYERS = 16


def conv_lstm_predictor(
    input_shape,
    output_frames,
    *,
    filters=16,
    num_layers=2,
    kernel_size=3,
    head_kernel_size=3,
    name="conv_lstm_predictor",
):
    """A stack of ConvLSTMs that reads the input frames and predicts the next ones.

    Each layer is a `keras.layers.ConvLSTM2D` with `filters` maps, `k × k`
    kernels and "same" padding, so its states keep the frame's size. It
    computes (Shi et al. 2015, Eq. 3; `*` is a convolution, `∘` the
    Hadamard product):

        i_t = σ(W_xi * X_t + W_hi * H_{t−1} + W_ci ∘ C_{t−1} + b_i)
        f_t = σ(W_xf * X_t + W_hf * H_{t−1} + W_cf ∘ C_{t−1} + b_f)
        C_t = f_t ∘ C_{t−1} + i_t ∘ tanh(W_xc * X_t + W_hc * H_{t−1} + b_c)
        o_t = σ(W_xo * X_t + W_ho * H_{t−1} + W_co ∘ C_t + b_o)
        H_t = o_t ∘ tanh(C_t)

    Keras's `ConvLSTM2D` has no peepholes: the `W_c· ∘ C` terms are left
    out (and its forget bias starts at 1, `unit_forget_bias=True`). Layer
    `l + 1` reads the hidden states `H_t` of layer `l` at every step.

    The forecast: the paper's forecasting network is a second ConvLSTM
    stack started from the encoder's states, and a 1 × 1 convolution over
    the hidden states of all its layers gives each predicted frame. Here the
    forecaster is one convolution: the last hidden states `H_T` of all
    layers, concatenated, go to a `head_kernel_size`² `Conv2D` with
    `T_out · C` sigmoid maps, which are the `T_out` future frames, predicted
    at once. Simpler, and it keeps what the paper shows: the state is an
    image, and every step is a convolution.

    Args:
        input_shape: `(frames, height, width, channels)` of one input video,
            or a `FramesSpec` (e.g. `task.inputs`).
        output_frames: `T_out`, the frames to predict.
        filters: Maps of every ConvLSTM layer's states. Default 16.
        num_layers: Stacked ConvLSTM layers. Default 2.
        kernel_size: `k`, the side of the input-to-state and state-to-state
            kernels; odd, 1 to 15. Default 3.
        head_kernel_size: Side of the output convolution's kernel; odd, 1
            to 15. Default 3.
        name: Name of the model.

    Returns:
        An uncompiled functional `keras.Model` from `(batch, T_in, H, W, C)`
        float32 frames to `(batch, T_out, H, W, C)` sigmoid frames. Its
        layers: `conv_lstm_0` …, `final_states` (with two or more layers),
        `frame_head`, `frames_split`, `frames_time_major`.

    Example:

    >>> model = conv_lstm_predictor((5, 16, 16, 1), 5, filters=8)
    >>> model.output_shape
    (None, 5, 16, 16, 1)

    References:
        - Shi et al., "Convolutional LSTM Network: A Machine Learning
          Approach for Precipitation Nowcasting", NeurIPS 2015
          (arXiv:1506.04214).
    """
    length, height, width, channels = _frames_shape(input_shape)
    output_frames = argument_checks.positive_int("output_frames", output_frames, 1000)
    filters = argument_checks.positive_int("filters", filters, argument_checks.MAX_UNITS)
    num_layers = argument_checks.positive_int("num_layers", num_layers, MAX_LAYERS)
    kernel_size = _odd_kernel("kernel_size", kernel_size)
    head_kernel_size = _odd_kernel("head_kernel_size", head_kernel_size)

    frames = keras.Input(shape=(length, height, width, channels), name="frames")
    x, final = frames, []
    for index in range(num_layers):
        x, h, _ = keras.layers.ConvLSTM2D(
            filters,
            kernel_size,
            padding="same",
            return_sequences=True,
            return_state=True,
            name=f"conv_lstm_{index}",
        )(x)  # (batch, T_in, H, W, filters); h: (batch, H, W, filters)
        final.append(h)
    if num_layers > 1:
        h = keras.layers.Concatenate(name="final_states")(final)  # (batch, H, W, L · filters)
    maps = keras.layers.Conv2D(
        output_frames * channels,
        head_kernel_size,
        padding="same",
        activation="sigmoid",
        name="frame_head",
    )(h)  # (batch, H, W, T_out · C)
    future = _time_major(maps, output_frames, height, width, channels)
    return keras.Model(frames, future, name=name)


def frame_lstm_predictor(input_shape, output_frames, *, units, name="frame_lstm_predictor"):
    """An LSTM over flattened frames (the FC-LSTM of Srivastava et al. 2015) that predicts frames.

    Each frame `X_t` is flattened to a vector `x_t` of `D = H · W · C`
    pixels and read by a `keras.layers.LSTM` of `units` cells, whose
    products are full matrices (no convolution: a pixel's neighbours are
    nothing special to it):

        i_t = σ(W_xi x_t + W_hi h_{t−1} + b_i)
        f_t = σ(W_xf x_t + W_hf h_{t−1} + b_f)
        c_t = f_t ∘ c_{t−1} + i_t ∘ tanh(W_xc x_t + W_hc h_{t−1} + b_c)
        o_t = σ(W_xo x_t + W_ho h_{t−1} + b_o)
        h_t = o_t ∘ tanh(c_t)

    The last `h_T` goes to a sigmoid `Dense` of `T_out · D` outputs, the
    `T_out` future frames, predicted at once as `conv_lstm_predictor` does.
    Srivastava et al. decode with a second LSTM; one dense layer keeps the
    two models alike but for the convolutions. `matched_units` gives it the
    parameter count of a ConvLSTM.

    Args:
        input_shape: `(frames, height, width, channels)`, or a `FramesSpec`.
        output_frames: `T_out`, the frames to predict.
        units: LSTM cells.
        name: Name of the model.

    Returns:
        An uncompiled functional `keras.Model` from `(batch, T_in, H, W, C)`
        to `(batch, T_out, H, W, C)` sigmoid frames. Its layers:
        `flatten_frames`, `lstm`, `frame_head`, `frames_split`.

    Example:

    >>> model = frame_lstm_predictor((5, 16, 16, 1), 5, units=12)
    >>> model.count_params() == frame_lstm_parameters((5, 16, 16, 1), 5, 12)
    True

    References:
        - Srivastava, Mansimov & Salakhutdinov, "Unsupervised Learning of
          Video Representations using LSTMs", ICML 2015 (arXiv:1502.04681).
        - Shi et al., "Convolutional LSTM Network", NeurIPS 2015.
    """
    length, height, width, channels = _frames_shape(input_shape)
    output_frames = argument_checks.positive_int("output_frames", output_frames, 1000)
    units = argument_checks.positive_int("units", units, argument_checks.MAX_UNITS)
    pixels = height * width * channels

    frames = keras.Input(shape=(length, height, width, channels), name="frames")
    x = keras.layers.Reshape((length, pixels), name="flatten_frames")(frames)  # (batch, T_in, D)
    h = keras.layers.LSTM(units, name="lstm")(x)  # (batch, units)
    flat = keras.layers.Dense(output_frames * pixels, activation="sigmoid", name="frame_head")(h)
    future = keras.layers.Reshape((output_frames, height, width, channels), name="frames_split")(
        flat
    )  # (batch, T_out, H, W, C)
    return keras.Model(frames, future, name=name)


def conv_lstm_parameters(
    input_shape, output_frames, *, filters=16, num_layers=2, kernel_size=3, head_kernel_size=3
):
    """The weights of `conv_lstm_predictor` with these arguments, counted without building it.

    Layer `l` reads `c_l` maps (`C`, then `filters`): `4 · filters · (k² ·
    (c_l + filters) + 1)` (input and recurrent kernels of the four blocks,
    one bias each); the head `k_h² · L · filters · T_out · C + T_out · C`.
    """
    _, _, _, channels = _frames_shape(input_shape)
    total, maps = 0, channels
    for _ in range(num_layers):
        total += 4 * filters * (kernel_size**2 * (maps + filters) + 1)
        maps = filters
    outputs = output_frames * channels
    return total + head_kernel_size**2 * num_layers * filters * outputs + outputs


def frame_lstm_parameters(input_shape, output_frames, units):
    """The weights of `frame_lstm_predictor`: `4u(D + u + 1)` (LSTM) + `(u + 1) · T_out · D`."""
    _, height, width, channels = _frames_shape(input_shape)
    pixels = height * width * channels
    return 4 * units * (pixels + units + 1) + (units + 1) * output_frames * pixels


def matched_units(parameters, input_shape, output_frames):
    """The `units` of `frame_lstm_predictor` whose parameter count is nearest `parameters`.

    The count `P(u) = 4u² + (4(D + 1) + T_out · D) · u + T_out · D` grows with
    `u`; the nearer of the two whole numbers around its root `P(u) =
    parameters` is returned (the smaller on a tie), at least 1.

    Args:
        parameters: The budget, e.g. `conv_lstm_predictor(...).count_params()`
            or `conv_lstm_parameters(...)`.
        input_shape: `(frames, height, width, channels)`, or a `FramesSpec`.
        output_frames: `T_out`.

    Returns:
        A positive integer.

    Example:

    >>> budget = conv_lstm_parameters((5, 16, 16, 1), 5)
    >>> units = matched_units(budget, (5, 16, 16, 1), 5)
    >>> budget, units, frame_lstm_parameters((5, 16, 16, 1), 5, units)
    (29797, 12, 29552)
    """
    parameters = argument_checks.positive_int("parameters", parameters)
    _, height, width, channels = _frames_shape(input_shape)
    output_frames = argument_checks.positive_int("output_frames", output_frames, 1000)
    pixels = height * width * channels
    a, b, c = 4, 4 * (pixels + 1) + output_frames * pixels, output_frames * pixels - parameters
    root = (-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)
    candidates = {max(1, math.floor(root)), max(1, math.ceil(root))}
    return min(
        sorted(candidates),
        key=lambda u: abs(frame_lstm_parameters(input_shape, output_frames, u) - parameters),
    )


def _time_major(maps, output_frames, height, width, channels):
    """`(batch, H, W, T_out · C)` maps → `(batch, T_out, H, W, C)` frames."""
    x = keras.layers.Reshape((height, width, output_frames, channels), name="frames_split")(maps)
    return keras.layers.Permute((3, 1, 2, 4), name="frames_time_major")(x)


def _odd_kernel(name, value):
    value = argument_checks.positive_int(name, value, MAX_KERNEL_SIZE)
    if value % 2 == 0:
        raise argument_checks.invalid(
            name, f"an odd integer from 1 to {MAX_KERNEL_SIZE} (a kernel with a centre)", value
        )
    return value


def _frames_shape(input_shape):
    if isinstance(input_shape, FramesSpec):
        return input_shape.shape
    if (
        not isinstance(input_shape, (tuple, list))
        or len(input_shape) != 4
        or not all(
            isinstance(side, numbers.Integral) and not isinstance(side, bool) and side > 0
            for side in input_shape
        )
    ):
        raise argument_checks.invalid(
            "input_shape",
            "(frames, height, width, channels) as positive integers, or a FramesSpec",
            input_shape,
        )
    return tuple(int(side) for side in input_shape)
