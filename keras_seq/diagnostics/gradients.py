"""The vanishing gradient, measured: how much error reaches each past step.

Backpropagation through time multiplies one Jacobian per step. For the
simple RNN `h_k = tanh(z_k)`, `z_k = W_h h_{k−1} + W_x x_k + b` (column
vectors; Keras stores `W_hᵀ` as `recurrent_kernel`):

    ∂h_T/∂h_t = Π_{k=t+1}^{T} diag(tanh'(z_k)) W_h        (k = T leftmost)

    ‖∂h_T/∂h_t‖ ≤ (γ · σ_max(W_h))^{T−t},   γ = sup |tanh'| = 1

so when the largest singular value of `W_h` is below 1 the error that
reaches step `t` shrinks exponentially with the lag `T − t` (Hochreiter
1991; Bengio, Simard & Frasconi 1994; Pascanu, Mikolov & Bengio 2013), and
when it is well above 1 it may grow exponentially instead.

The LSTM's constant error carousel (Hochreiter & Schmidhuber 1997) replaces
that product on the path through the cell state: `c_k = c_{k−1} + i_k ⊙
g(z_k)` has `∂c_k/∂c_{k−1} = I` plus terms that pass through the gates and
`h_{k−1}`. The 1997 learning rule (`CECLSTM(truncated_gradients=True)`,
without a forget gate) drops those terms, so `∂c_T/∂c_t = I` exactly for
every `t`: the error neither vanishes nor explodes, however long the lag.

`gradient_flow` measures `‖∂L/∂x_t‖` (or `‖∂L/∂s_t‖` for the state) at every
step of a seeded random sequence; `plot_gradient_flow` draws several layers
against the lag on one log-scale figure.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence

import keras
import numpy as np
from keras import ops

from keras_seq import argument_checks
from keras_seq._extras import import_extra
from keras_seq.diagnostics._autodiff import gradients

# Each step is unrolled in Python and kept for the backward pass: 10,000 steps
# is already minutes on a CPU, and longer sequences say nothing new.
MAX_SEQUENCE_LENGTH = 10_000
MAX_BATCH_SIZE = 4096
# The input dimension used to build a layer that is not built yet.
DEFAULT_INPUT_DIM = 8

_WRT = ("input", "state")
_COLUMNS = ("step", "lag", "grad_norm", "layer", "wrt")


def gradient_flow(
    layer,
    sequence_length,
    *,
    input_dim=None,
    batch_size=16,
    wrt="input",
    seed=0,
):
    """Measures the norm of the gradient of a last-step loss at every step.

    The layer's cell is unrolled step by step in Python (the RNN layer's
    own loop is not used, so that every step's state is reachable), from a
    zero initial state, with `training=False`, over seeded random inputs:

        rng = np.random.default_rng(seed)
        x = rng.standard_normal((batch_size, T, input_dim))     # x_0 … x_{T−1}
        w = rng.standard_normal(output_size) / sqrt(output_size)

    (both cast to the cell's compute dtype). The loss is a fixed random
    projection of the last step's output `y_{T−1}` (its `h`), summed over
    the batch:

        L = Σ_b ⟨y_{T−1}^{(b)}, w⟩

    The samples do not interact, so `∂L/∂x_t^{(b)}` is sample `b`'s own
    gradient; `grad_norm` is the mean over the batch of its L2 norm.

    `wrt="input"` differentiates with respect to `x_t`. `wrt="state"` adds a
    zero perturbation `δ_t` to every state tensor after step `t` and
    differentiates with respect to it, which gives `∂L/∂s_t`; the norm is
    taken over all state tensors together, `sqrt(‖∂L/∂h_t‖² + ‖∂L/∂c_t‖²)`
    for an LSTM. The loss reads the perturbed `h_{T−1}` (every Keras cell
    returns its `h` both as output and as a state), so at lag 0
    `∂L/∂h_{T−1} = w` and `∂L/∂c_{T−1} = 0` (after the last step `c` feeds
    nothing). For the truncated carousel (`CECLSTM(truncated_gradients=True,
    forget_gate=False)`) `∂L/∂h_t = 0` for every `t < T−1`, since
    `h_{t}` enters step `t+1` only through `stop_gradient`; only `c` carries
    error, and `∂L/∂c_t = ∂L/∂c_{T−2}` for all `t ≤ T−2`: the curve is flat
    from lag 1 on.

    What the RNN layer adds around its cell (`go_backwards`, masks, the
    states of a `stateful` layer, dropout) is not part of the measurement.

    Args:
        layer: A Keras recurrent layer (`keras.layers.RNN` or a subclass:
            `SimpleRNN`, `GRU`, `LSTM`, `CECLSTM`, `RNN(cell)`) or a bare
            cell (a layer with a `state_size` whose states are vectors). The
            cell of an unbuilt layer is built on `input_dim` (its weights
            initialized as usual); a built one is used as it is.
        sequence_length: `T`, the number of steps, at most 10,000.
        input_dim: Features per step. Default: the dimension a built layer
            was built with, else 8. Must match a built layer's.
        batch_size: Sequences averaged over, at most 4096. Default 16.
        wrt: `"input"` (`∂L/∂x_t`, default) or `"state"` (`∂L/∂s_t`).
        seed: Non-negative integer seeding `x` and `w`. Default 0.

    Returns:
        A `pandas.DataFrame` with one row per step and the columns `step`
        (`t`, 0 … T−1), `lag` (`T−1−t`), `grad_norm`, `layer` (the layer's
        name) and `wrt`.

    Raises:
        ValueError: for an argument out of range, naming it and its value.

    Example:

    >>> rnn = keras.layers.SimpleRNN(16, recurrent_initializer=keras.initializers.Orthogonal(0.5))
    >>> frame = gradient_flow(rnn, 50)
    >>> frame.columns.tolist()
    ['step', 'lag', 'grad_norm', 'layer', 'wrt']

    References:
        - Hochreiter, "Untersuchungen zu dynamischen neuronalen Netzen",
          Diploma thesis, TU München, 1991.
        - Bengio, Simard & Frasconi, "Learning Long-Term Dependencies with
          Gradient Descent is Difficult", IEEE Trans. Neural Networks 5(2), 1994.
        - Hochreiter & Schmidhuber, "Long Short-Term Memory", Neural
          Computation 9(8), 1997.
        - Pascanu, Mikolov & Bengio, "On the Difficulty of Training Recurrent
          Neural Networks", ICML 2013.
    """
    sequence_length = argument_checks.positive_int(
        "sequence_length", sequence_length, MAX_SEQUENCE_LENGTH
    )
    batch_size = argument_checks.positive_int("batch_size", batch_size, MAX_BATCH_SIZE)
    if input_dim is not None:
        input_dim = argument_checks.positive_int("input_dim", input_dim, argument_checks.MAX_UNITS)
    wrt = argument_checks.one_of("wrt", wrt, _WRT)
    seed = argument_checks.seed("seed", seed)
    # Before the measurement: a missing pandas is said first, not after minutes of steps.
    pd = import_extra("pandas", "app", "keras_seq.diagnostics.gradient_flow")

    cell = _recurrent_cell(layer)
    input_dim = _build(layer, cell, input_dim)
    state_sizes = [int(size) for size in keras.tree.flatten(cell.state_size)]
    output_size = int(getattr(cell, "output_size", None) or state_sizes[0])
    dtype = keras.backend.standardize_dtype(cell.compute_dtype)

    rng = np.random.default_rng(int(seed))
    x = rng.standard_normal((batch_size, sequence_length, input_dim)).astype(dtype)
    w = (rng.standard_normal(output_size) / math.sqrt(output_size)).astype(dtype)
    initial_state = keras.tree.map_structure(
        lambda size: np.zeros((batch_size, int(size)), dtype=dtype), cell.state_size
    )
    n_states = len(state_sizes)
    if wrt == "state":
        # δ_t for every state tensor after every step, flat: step-major.
        zero_deltas = [
            np.zeros((batch_size, size), dtype=dtype)
            for _ in range(sequence_length)
            for size in state_sizes
        ]
    else:
        zero_deltas = []

    # The inputs go in as T tensors, not one sliced per step: eager JAX compiles
    # a new slice (and its transpose) for every index.
    x_steps = list(np.moveaxis(x, 1, 0))  # T × (batch, input_dim)

    def loss(*tensors):
        inputs, deltas = tensors[:sequence_length], tensors[sequence_length:]
        states = keras.tree.map_structure(ops.convert_to_tensor, initial_state)
        for t, x_t in enumerate(inputs):
            output, states = cell(x_t, states, training=False)
            if deltas:
                flat = keras.tree.flatten(states)
                step_deltas = deltas[t * n_states : (t + 1) * n_states]
                perturbed = [s + d for s, d in zip(flat, step_deltas, strict=True)]
                # The loss reads the perturbed h_{T−1}: the state the output is.
                output = next(
                    (p for s, p in zip(flat, perturbed, strict=True) if s is output), output
                )
                states = keras.tree.pack_sequence_as(states, perturbed)
        return ops.sum(ops.matmul(output, w))  # Σ_b ⟨y_{T−1}^(b), w⟩

    grads = [
        ops.convert_to_numpy(g).astype(np.float64)
        for g in gradients(loss, [*x_steps, *zero_deltas])
    ]
    if wrt == "input":
        # T × (batch, input_dim) -> (batch, time)
        squared = np.stack([np.sum(g**2, axis=-1) for g in grads[:sequence_length]], axis=1)
    else:
        # T · n_states × (batch, size) -> (time, n_states, batch) -> (batch, time)
        per_state = np.stack([np.sum(g**2, axis=-1) for g in grads[sequence_length:]])
        squared = per_state.reshape(sequence_length, n_states, batch_size).sum(axis=1).T
    steps = np.arange(sequence_length)
    return pd.DataFrame(
        {
            "step": steps,
            "lag": sequence_length - 1 - steps,
            "grad_norm": np.sqrt(squared).mean(axis=0),
            "layer": _label(layer),
            "wrt": wrt,
        }
    )


def plot_gradient_flow(
    frames_or_layers,
    *,
    ax=None,
    sequence_length=100,
    wrt="input",
    seed=0,
    floor=1e-30,
    title="Gradient flow through time",
):
    """Draws gradient norm against lag, one line per layer, on a log scale.

    A straight falling line is an exponentially vanishing gradient (its
    slope is `log` of the per-step factor); a flat line is the carousel.

    Args:
        frames_or_layers: What `gradient_flow` returned (one frame, or several
            concatenated; lines are grouped by the `layer` column), a list of
            such frames, or a dict `{label: frame}` (the label replaces the
            `layer` column). Layers may stand in for frames anywhere; they are
            measured with `gradient_flow(layer, sequence_length, wrt=wrt,
            seed=seed)`.
        ax: A matplotlib `Axes` to draw on. Default: a new `Figure` (made
            without `pyplot`, so nothing is shown or kept open).
        sequence_length, wrt, seed: For the layers that are measured here.
        floor: A log axis cannot show 0, and exact zeros are real results (a
            gradient cut by `stop_gradient`); norms below `floor` are drawn at
            `floor`. Default 1e-30.
        title: The axes title; `None` for none.

    Returns:
        The matplotlib `Figure` holding the axes.

    Example:

    >>> from keras_seq.layers import CECLSTM
    >>> frames = [gradient_flow(keras.layers.SimpleRNN(16), 100),
    ...           gradient_flow(CECLSTM(16, truncated_gradients=True), 100)]
    >>> figure = plot_gradient_flow(frames)  # then figure.savefig("gradient_flow.png")
    >>> len(figure.axes[0].get_lines())
    2
    """
    floor = argument_checks.positive_float("floor", floor)
    frame = _collect(frames_or_layers, sequence_length=sequence_length, wrt=wrt, seed=seed)

    if ax is None:
        figures = import_extra(
            "matplotlib.figure", "app", "keras_seq.diagnostics.plot_gradient_flow"
        )
        figure = figures.Figure(figsize=(7.0, 4.5), layout="constrained")
        ax = figure.add_subplot()
    several_wrt = frame["wrt"].nunique() > 1
    for (name, of), group in frame.groupby(["layer", "wrt"], sort=False):
        group = group.sort_values("lag")
        label = f"{name} (wrt {of})" if several_wrt else str(name)
        ax.plot(group["lag"], np.maximum(group["grad_norm"].to_numpy(), floor), label=label)
    ax.set_yscale("log")
    ax.set_xlabel("lag T−1−t (steps between step t and the loss)")
    ylabels = {"input": "‖∂L/∂x_t‖", "state": "‖∂L/∂s_t‖ (all state tensors)"}
    ax.set_ylabel("gradient norm" if several_wrt else ylabels[frame["wrt"].iloc[0]])
    if title is not None:
        ax.set_title(title)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend()
    return ax.figure


def _recurrent_cell(layer):
    if isinstance(layer, keras.layers.RNN):
        return layer.cell
    if isinstance(layer, keras.layers.Layer) and hasattr(layer, "state_size"):
        return layer
    raise argument_checks.invalid(
        "layer",
        "a Keras recurrent layer (keras.layers.RNN or a subclass) or a recurrent cell",
        layer,
    )


def _label(layer):
    return getattr(layer, "name", None) or type(layer).__name__


def _build(layer, cell, input_dim):
    """Builds an unbuilt layer on `input_dim`; returns the input dimension used."""
    if not all(isinstance(size, numbers.Integral) for size in keras.tree.flatten(cell.state_size)):
        raise argument_checks.invalid("layer", "a recurrent layer whose states are vectors", layer)
    if cell.built:
        built_dim = _built_input_dim(cell)
        if input_dim is None:
            if built_dim is None:
                raise ValueError(
                    f"Layer `{_label(layer)}` is built but its input dimension is unknown; "
                    "pass `input_dim`."
                )
            return built_dim
        if built_dim is not None and input_dim != built_dim:
            raise argument_checks.invalid(
                "input_dim",
                f"{built_dim}, the input dimension layer `{_label(layer)}` was built with",
                input_dim,
            )
        return input_dim
    if input_dim is None:
        input_dim = DEFAULT_INPUT_DIM
    # Only the cell: building the RNN layer would fix more than its input dimension
    # (a stateful layer, for one, also needs its batch size).
    cell.build((None, input_dim))
    return input_dim


def _built_input_dim(cell):
    shape = (cell.get_build_config() or {}).get("input_shape")
    if shape is not None and len(shape) > 0 and shape[-1] is not None:
        return int(shape[-1])
    kernel = getattr(cell, "kernel", None)
    if kernel is not None and len(kernel.shape) == 2:
        return int(kernel.shape[0])
    return None


def _collect(frames_or_layers, *, sequence_length, wrt, seed):
    """One frame with the columns of `gradient_flow` from any accepted input."""
    pd = import_extra("pandas", "app", "keras_seq.diagnostics.plot_gradient_flow")
    if isinstance(frames_or_layers, pd.DataFrame):
        items = [(None, frames_or_layers)]
    elif isinstance(frames_or_layers, Mapping):
        items = list(frames_or_layers.items())
    elif isinstance(frames_or_layers, Sequence) and not isinstance(frames_or_layers, str):
        items = [(None, item) for item in frames_or_layers]
    elif isinstance(frames_or_layers, keras.layers.Layer):
        items = [(None, frames_or_layers)]
    else:
        items = None
    if not items:
        raise argument_checks.invalid(
            "frames_or_layers",
            "a gradient_flow DataFrame, or a non-empty list or dict of frames or layers",
            frames_or_layers,
        )
    frames = []
    for label, item in items:
        if isinstance(item, keras.layers.Layer):
            item = gradient_flow(item, sequence_length, wrt=wrt, seed=seed)
        if not isinstance(item, pd.DataFrame) or not set(_COLUMNS) <= set(item.columns):
            raise argument_checks.invalid(
                "frames_or_layers",
                f"frames with the columns {list(_COLUMNS)} (what gradient_flow returns) "
                "or recurrent layers",
                item,
            )
        frames.append(item if label is None else item.assign(layer=str(label)))
    return pd.concat(frames, ignore_index=True)
