"""PyTorch's own LSTM kernel on a CPU, for `CECLSTM` on the torch backend.

`keras.layers.LSTM` hands its loop to the backend's fused LSTM function. On
PyTorch that function runs cuDNN on a GPU, and on a CPU a Python loop of one
matmul and a few element-wise ops per step. PyTorch has a fused LSTM for the CPU
as well: ATen's `lstm` (`torch.lstm`), which `torch.nn.LSTM` runs, with its own
backward pass. `lstm` here calls it with the Keras layout of the weights, so a
`CECLSTM` whose cell is that kernel's cell (the forget-gate cell with tanh and
σ, or the 1997 cell with its forget gate pinned open: `CECLSTMCell.fused_weights`)
trains at `torch.nn.LSTM`'s pace on a CPU.

The kernel computes, for gates in the order (i, f, c, o) of both layouts,

    z_t = x_t W + h_{t-1} U + b
    c_t = σ(z_f) ⊙ c_{t-1} + σ(z_i) ⊙ tanh(z_c)
    h_t = σ(z_o) ⊙ tanh(c_t)

(Gers, Schmidhuber & Cummins 2000). PyTorch's weights are the transposes of
Keras's, with a second bias added to the first, given here as zeros.

It declines (returns None) where the cell's own loop or Keras's function must
run instead: a mask (the kernel reads every step), `unroll`, a tensor that is
not on the CPU (a GPU: Keras's cuDNN call), a dtype other than float32 and
float64 (mixed precision), and inside `torch.jit` tracing or `torch.compile`,
whose graphs Keras keeps to its own ops.
"""

from __future__ import annotations

from keras import ops

FLOAT_DTYPES = ("float32", "float64")


def lstm(
    inputs,
    initial_state_h,
    initial_state_c,
    mask,
    *,
    kernel,
    recurrent_kernel,
    bias,
    return_sequences,
    go_backwards,
    unroll,
):
    """One LSTM layer on ATen's CPU kernel, or None where it does not apply (see the module).

    Args:
        inputs: `(batch, time, features)`.
        initial_state_h, initial_state_c: `(batch, units)` each.
        mask: Must be None for the kernel to run.
        kernel, recurrent_kernel, bias: Keras's LSTM layout, `(features, 4 units)`,
            `(units, 4 units)`, `(4 units,)`; gates (i, f, c, o).
        return_sequences: Every step's output, else the last one (as `(batch, 1, units)`).
        go_backwards: Read the sequence from its end (outputs in the order read).
        unroll: Must be False for the kernel to run.

    Returns:
        `(last_output, outputs, [h, c])` as Keras's backend LSTM returns them, or None.
    """
    import torch  # only on the torch backend: the caller checks

    if mask is not None or unroll:
        return None
    kernel = ops.convert_to_tensor(kernel)
    recurrent_kernel = ops.convert_to_tensor(recurrent_kernel)
    bias = ops.convert_to_tensor(bias)
    inputs = ops.convert_to_tensor(inputs)
    if (
        inputs.device.type != "cpu"
        or ops.dtype(kernel) not in FLOAT_DTYPES
        or torch.jit.is_tracing()
        or torch.compiler.is_compiling()
    ):
        return None
    inputs = inputs.to(kernel.dtype)
    if go_backwards:
        inputs = torch.flip(inputs, dims=[1])
    weights = [
        kernel.T.contiguous(),
        recurrent_kernel.T.contiguous(),
        bias,
        torch.zeros_like(bias),
    ]
    state = (
        ops.convert_to_tensor(initial_state_h).to(kernel.dtype).unsqueeze(0),
        ops.convert_to_tensor(initial_state_c).to(kernel.dtype).unsqueeze(0),
    )
    outputs, h, c = torch.lstm(
        inputs,
        state,
        weights,
        True,  # has_biases
        1,  # num_layers
        0.0,  # dropout (the layer drops its inputs before)
        torch.is_grad_enabled(),  # train
        False,  # bidirectional
        True,  # batch_first
    )
    last_output = outputs[:, -1]
    if not return_sequences:
        outputs = last_output.unsqueeze(1)
    return last_output, outputs, [h.squeeze(0), c.squeeze(0)]
