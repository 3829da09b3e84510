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

A mask of right-padded sequences (each row's True steps first, then its False
ones: what `Embedding(mask_zero=True)` gives for sequences padded at the end) is
read as each sequence's length. Where the caller reads the final cell state `c`
(`return_state`, `stateful`), the kernel runs on the packed sequences
(`torch.nn.utils.rnn.pack_padded_sequence`), so no step past a sequence's end is
computed and `c` is the one after each sequence's last step. Otherwise it runs on
the padded batch as it is, past each sequence's end, and each sequence's outputs
are read up to its end only: with right padding, a step's output depends on the
steps before it alone, so these are the packed run's outputs, and `h` is the
output of each sequence's last step. On a CPU PyTorch's packed kernel is slow (a
`torch.nn.LSTM` training step at B 64 × 32 → 128 on 2 cores: 91 ms on packed
sequences of 50–100 steps, 42 ms on 100 unpadded steps; benchmarks/peers.py), so the
packed run is kept to the callers that need its `c`. Either way the outputs are
then laid out as Keras's masked loop lays them out: reading forwards, a padded step
repeats the last real output (zeros with `zero_output_for_mask`); reading backwards
(`go_backwards`), the padded steps are read first and give zeros, then the real
steps from the last to the first.

It declines (returns None) where the cell's own loop or Keras's function must
run instead: any other mask (padding at the start, holes, or an empty
sequence), `unroll`, a tensor that is not on the CPU (a GPU: Keras's cuDNN
call), a dtype other than float32 and float64 (mixed precision), and inside
`torch.jit` tracing or `torch.compile`, whose graphs Keras keeps to its own ops.
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
    zero_output_for_mask=False,
    final_cell_state=True,
):
    """One LSTM layer on ATen's CPU kernel, or None where it does not apply (see the module).

    Args:
        inputs: `(batch, time, features)`.
        initial_state_h, initial_state_c: `(batch, units)` each.
        mask: None, or `(batch, time)` booleans of right-padded sequences (see the
            module); the kernel declines any other.
        kernel, recurrent_kernel, bias: Keras's LSTM layout, `(features, 4 units)`,
            `(units, 4 units)`, `(4 units,)`; gates (i, f, c, o).
        return_sequences: Every step's output, else the last one (as `(batch, 1, units)`).
        go_backwards: Read the sequence from its end (outputs in the order read).
        unroll: Must be False for the kernel to run.
        zero_output_for_mask: Zeros, not the last real output, at the padded steps
            (reading forwards; reading backwards they are zeros either way).
        final_cell_state: Whether the caller reads the final `c`. With a mask and
            False, the kernel runs on the padded batch, not the packed one (see the
            module), and the `c` returned is zeros: not computed.

    Returns:
        `(last_output, outputs, [h, c])` as Keras's backend LSTM returns them, or None.
    """
    import torch  # only on the torch backend: the caller checks

    if unroll:
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
    lengths = None
    if mask is not None:
        lengths = _right_padded_lengths(torch, ops.convert_to_tensor(mask), inputs.shape[:2])
        if lengths is None:
            return None
        if bool((lengths == inputs.shape[1]).all()):
            lengths = None  # nothing padded: the mask changes nothing
    inputs = inputs.to(kernel.dtype)
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
    if lengths is None:
        if go_backwards:
            inputs = torch.flip(inputs, dims=[1])
        outputs, h, c = _run(torch, inputs, state, weights)
    else:
        run = _run_packed if final_cell_state else _run_past_ends
        outputs, h, c = run(torch, inputs, lengths, state, weights, go_backwards)
        if go_backwards:
            outputs = _as_read_backwards(torch, outputs, lengths)
        elif not zero_output_for_mask:
            outputs = _repeat_last_real_output(torch, outputs, lengths)
    last_output = outputs[:, -1]
    if not return_sequences:
        outputs = last_output.unsqueeze(1)
    return last_output, outputs, [h.squeeze(0), c.squeeze(0)]


def _run(torch, inputs, state, weights):
    """ATen's LSTM over `(batch, time, features)`: every step's h, and the last h and c."""
    return torch.lstm(
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


def _right_padded_lengths(torch, mask, batch_time):
    """Each row's number of True steps if every row is True then False and none is empty."""
    if tuple(mask.shape) != tuple(batch_time):
        return None
    mask = mask.to(torch.bool)
    lengths = mask.sum(dim=1)
    steps = torch.arange(mask.shape[1], device=mask.device)
    if int(lengths.min()) == 0 or not torch.equal(mask, steps < lengths.unsqueeze(1)):
        return None
    return lengths


def _run_packed(torch, inputs, lengths, state, weights, go_backwards):
    """The kernel on each sequence's real steps only (reversed in place if `go_backwards`).

    Returns every step's h, `(batch, time, units)`, zeros past each sequence's end, in the
    order the sequence was read, and the h and c after its last real step.
    """
    from torch.nn.utils import rnn  # only on the torch backend, as above

    if go_backwards:  # x_L … x_1, then the padding (which the packing leaves out)
        inputs = _reverse_real_steps(torch, inputs, lengths)
    packed = rnn.pack_padded_sequence(inputs, lengths.cpu(), batch_first=True, enforce_sorted=False)
    order = packed.sorted_indices
    state = tuple(s.index_select(1, order) for s in state)
    data, h, c = torch.lstm(
        packed.data,
        packed.batch_sizes,
        state,
        weights,
        True,  # has_biases
        1,  # num_layers
        0.0,  # dropout
        torch.is_grad_enabled(),  # train
        False,  # bidirectional
    )
    outputs, _ = rnn.pad_packed_sequence(
        rnn.PackedSequence(data, packed.batch_sizes, order, packed.unsorted_indices),
        batch_first=True,
        total_length=inputs.shape[1],
    )
    back = packed.unsorted_indices
    return outputs, h.index_select(1, back), c.index_select(1, back)


def _run_past_ends(torch, inputs, lengths, state, weights, go_backwards):
    """The kernel on the padded batch, for callers that do not read the final `c`.

    Returns what `_run_packed` returns, but for `c`, which is zeros: every step's h up
    to each sequence's end (zeros after it), and the h of its last real step. The
    steps after a sequence's end are computed and then dropped; with right padding
    none of them reaches a step before the end.
    """
    if go_backwards:  # x_L … x_1, then the padding, which comes after them
        inputs = _reverse_real_steps(torch, inputs, lengths)
    outputs, _, c = _run(torch, inputs, state, weights)
    steps = torch.arange(inputs.shape[1]).unsqueeze(0)
    outputs = torch.where((steps < lengths.unsqueeze(1)).unsqueeze(2), outputs, 0.0)
    last = (lengths - 1).view(-1, 1, 1).expand(-1, 1, outputs.shape[2])
    h = torch.gather(outputs, 1, last).transpose(0, 1)  # (1, batch, units), as the kernel's
    return outputs, h, torch.zeros_like(c)


def _reverse_real_steps(torch, inputs, lengths):
    """Each sequence's real steps in reverse (x_L … x_1), its padding left after them."""
    steps = torch.arange(inputs.shape[1]).unsqueeze(0)
    reverse = torch.where(steps < lengths.unsqueeze(1), lengths.unsqueeze(1) - 1 - steps, steps)
    return torch.gather(inputs, 1, reverse.unsqueeze(2).expand_as(inputs))


def _repeat_last_real_output(torch, outputs, lengths):
    """Each padded step's output is the sequence's last real one, as Keras's loop keeps it."""
    steps = torch.arange(outputs.shape[1]).unsqueeze(0)
    source = torch.minimum(steps, lengths.unsqueeze(1) - 1)
    return torch.gather(outputs, 1, source.unsqueeze(2).expand_as(outputs))


def _as_read_backwards(torch, outputs, lengths):
    """Zeros for the padding read first, then the outputs of x_L … x_1: right-aligned."""
    time = outputs.shape[1]
    steps = torch.arange(time).unsqueeze(0)
    start = time - lengths.unsqueeze(1)  # where x_L's output goes
    source = (steps - start).clamp(min=0)
    aligned = torch.gather(outputs, 1, source.unsqueeze(2).expand_as(outputs))
    return aligned * (steps >= start).unsqueeze(2).to(outputs.dtype)
