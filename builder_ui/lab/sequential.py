"""Experiment 4: sequential computation, step time against sequence length.

One training step (`model.train_on_batch`, Adam, mean squared error to a
fixed target) of two models reading `(batch, length, d_model)`:

- a Transformer encoder block (`keras_seq.layers.TransformerEncoderBlock`,
  `d_model` 64, 4 heads, feed-forward 256), which computes every position at
  once (its attention work grows with length²);
- an LSTM (`keras.layers.LSTM`, `return_sequences=True`) with as nearly the
  same number of parameters as a whole number of units allows, which must
  take its `length` steps one after another.

Each case is built and warmed up first (tracing is not timed), then timed in
interleaved rounds, in a new seeded random order each round; a sample
repeats the step for about `sample_seconds`, and the table gives the median
over rounds. On the TensorFlow backend the cases are measured on the CPU
and, when TensorFlow sees one, on the GPU.

The measurement is not a training run, so it is not in the run store; its
numbers are in the report's table and `results.json`.
"""

from __future__ import annotations

import contextlib
import statistics
import time

import keras
import numpy as np
from matplotlib.figure import Figure

from builder_ui.engine import devices
from builder_ui.lab.catalog import DESCRIPTIONS
from builder_ui.lab.common import ExperimentResult, LabContext, device_name, fmt, table, verdict_of
from keras_seq.layers import TransformerEncoderBlock

NUMBER = 4
DESCRIPTION = DESCRIPTIONS["sequential"]
RULE = (
    "Agrees when, at batch 1 on every device measured, the LSTM's step time grows more from "
    "the shortest to the longest length than the Transformer's (the LSTM ÷ Transformer ratio "
    "rises with the length). Batch 16 is reported beside it: on a few CPU cores the "
    "Transformer's quadratic work can outweigh its parallelism there, which the claim allows."
)

D_MODEL = 64
NUM_HEADS = 4
FF_DIM = 256
BATCHES = (1, 16)


def lstm_parameters(units: int, d_model: int = D_MODEL) -> int:
    """Parameters of LSTM(units) on d_model inputs plus the Dense(d_model) after it."""
    return 4 * (units * (d_model + units) + units) + units * d_model + d_model


def lstm_units_matching(target_parameters: int, d_model: int = D_MODEL) -> int:
    """The LSTM width whose parameters (with its projection) come nearest the target."""
    return min(
        range(1, 4097), key=lambda units: abs(lstm_parameters(units, d_model) - target_parameters)
    )


def _devices():
    """`[(label, Keras device name or None)]`: the CPU, and the GPU when TensorFlow has one."""

    if keras.backend.backend() != "tensorflow":
        return [(device_name(), None)]
    found = [("CPU", "cpu:0")]
    device = devices.detect()
    if device.is_gpu:
        found.append((device.name or "GPU", "gpu:0"))
    return found


def _device_scope(device):
    return contextlib.nullcontext() if device is None else keras.device(device)


def _models(lengths, seed):
    """`{(kind, length): compiled model}` sharing one block and one LSTM; their parameters."""

    keras.utils.set_random_seed(seed)
    block = TransformerEncoderBlock(NUM_HEADS, FF_DIM, name="transformer_block")
    block.build((None, None, D_MODEL))
    units = lstm_units_matching(block.count_params())
    lstm = keras.layers.LSTM(units, return_sequences=True, name="lstm")
    lstm.build((None, None, D_MODEL))
    # A Dense(d_model) after the LSTM gives both the same output width.
    lstm_head = keras.layers.Dense(D_MODEL, name="lstm_projection")
    lstm_head.build((None, None, units))
    models = {}
    for length in lengths:
        inputs = keras.Input((length, D_MODEL))
        transformer = keras.Model(inputs, block(inputs), name=f"transformer_{length}")
        recurrent = keras.Model(inputs, lstm_head(lstm(inputs)), name=f"lstm_{length}")
        for kind, model in (("transformer", transformer), ("lstm", recurrent)):
            model.compile(optimizer=keras.optimizers.Adam(1e-4), loss="mean_squared_error")
            models[(kind, length)] = model
    parameters = {
        "transformer": int(block.count_params()),
        "lstm": int(lstm.count_params() + lstm_head.count_params()),
        "lstm_units": units,
    }
    return models, parameters


def _measure_device(context, device, lengths, rounds, sample_seconds, seed):
    """Median seconds per training step for every (kind, length, batch) on one device."""
    rng = np.random.default_rng(seed)
    with _device_scope(device):
        models, parameters = _models(lengths, seed)
        steps, calls = {}, {}
        for length in lengths:
            for batch in BATCHES:
                x = rng.standard_normal((batch, length, D_MODEL)).astype("float32")
                y = np.zeros_like(x)
                for kind in ("transformer", "lstm"):
                    model = models[(kind, length)]
                    model.train_on_batch(x, y)  # traces the step for this shape
                    start = time.perf_counter()
                    model.train_on_batch(x, y)
                    once = max(time.perf_counter() - start, 1e-6)
                    key = (kind, length, batch)
                    steps[key] = lambda model=model, x=x, y=y: model.train_on_batch(x, y)
                    calls[key] = max(1, round(sample_seconds / once))
            context.log(f"    built and warmed up length {length}")
        samples = {key: [] for key in steps}
        order_rng = np.random.default_rng(seed)
        keys = list(steps)
        for index in range(rounds):
            for i in order_rng.permutation(len(keys)):
                key = keys[i]
                start = time.perf_counter()
                for _ in range(calls[key]):
                    steps[key]()
                samples[key].append((time.perf_counter() - start) / calls[key])
            context.log(f"    round {index + 1}/{rounds}")
    return {key: statistics.median(values) for key, values in samples.items()}, parameters


def run(context: LabContext) -> ExperimentResult:
    started = time.perf_counter()
    lengths = context.size([16, 64, 256], [16, 64, 256, 1024])
    rounds = context.size(3, 5)
    sample_seconds = context.size(0.05, 0.2)
    seed = 0
    rows = []
    measured = {}
    parameters = {}
    for label, device in _devices():
        context.log(f"  timing on {label}")
        times, parameters = _measure_device(context, device, lengths, rounds, sample_seconds, seed)
        measured[label] = times
        for batch in BATCHES:
            for length in lengths:
                transformer = times[("transformer", length, batch)]
                lstm = times[("lstm", length, batch)]
                rows.append(
                    {
                        "device": label,
                        "batch": batch,
                        "length": length,
                        "Transformer ms/step": fmt(1e3 * transformer, 2),
                        "LSTM ms/step": fmt(1e3 * lstm, 2),
                        "LSTM ÷ Transformer": fmt(lstm / transformer, 2),
                    }
                )

    # Figure: ms per step against length, one panel per device, a line per model and batch.
    labels = list(measured)
    figure = Figure(figsize=(6.0 * len(labels), 4.5), layout="constrained")
    axes = figure.subplots(1, len(labels), squeeze=False)[0]
    for ax, label in zip(axes, labels, strict=True):
        times = measured[label]
        for kind, name in (("lstm", "LSTM"), ("transformer", "Transformer")):
            for batch, style in zip(BATCHES, ("-", "--"), strict=True):
                ax.plot(
                    lengths,
                    [1e3 * times[(kind, length, batch)] for length in lengths],
                    style,
                    marker="o",
                    color="tab:red" if kind == "lstm" else "tab:blue",
                    label=f"{name}, batch {batch}",
                )
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("sequence length")
        ax.set_ylabel("ms per training step (median)")
        ax.set_title(f"{label}: LSTM vs Transformer block of ~{parameters['transformer']:,} params")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=8)
    figures = [context.save_figure(figure, "4-sequential-computation")]

    shortest, longest = min(lengths), max(lengths)
    growth_lines, agreements = [], []
    for label, times in measured.items():
        for batch in BATCHES:
            lstm_growth = times[("lstm", longest, batch)] / times[("lstm", shortest, batch)]
            transformer_growth = (
                times[("transformer", longest, batch)] / times[("transformer", shortest, batch)]
            )
            if batch == 1:
                agreements.append(lstm_growth > transformer_growth)
            growth_lines.append(
                f"{label}, batch {batch}: from length {shortest} to {longest} the LSTM's step "
                f"time grows {lstm_growth:.1f}×, the Transformer's {transformer_growth:.1f}×"
            )
    verdict = verdict_of(agreements)
    finding = "; ".join(growth_lines) + "."
    notes = [
        f"Transformer block: d_model {D_MODEL}, {NUM_HEADS} heads, feed-forward {FF_DIM}, "
        f"{parameters['transformer']:,} parameters; LSTM: {parameters['lstm_units']} units and "
        f"a Dense({D_MODEL}) projection, {parameters['lstm']:,} parameters.",
        f"Medians of {rounds} interleaved rounds; each sample repeats the step for about "
        f"{sample_seconds:g} s. The machine may be shared, which adds noise but not bias "
        "between the models (they are interleaved).",
    ]
    if len(measured) == 1:
        notes.append("No GPU was visible to the backend, so only the CPU was measured.")
    return ExperimentResult(
        number=NUMBER,
        title=DESCRIPTION.title,
        claim=DESCRIPTION.claim,
        rule=RULE,
        verdict=verdict,
        finding=finding,
        tables=[table("Median milliseconds per training step", rows)],
        figures=figures,
        settings={"lengths": lengths, "batches": list(BATCHES), "rounds": rounds},
        seconds=time.perf_counter() - started,
        notes=notes,
    )
