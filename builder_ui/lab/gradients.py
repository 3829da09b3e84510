"""Experiment 1: the vanishing gradient, measured against the lag, and what clipping does.

Part A measures `‖∂L/∂x_t‖` at every step `t` of a seeded random sequence
(`keras_seq.diagnostics.gradient_flow`, a loss on the last step only) for a
SimpleRNN, a GRU, an LSTM (Keras', forget gate and all) and the 1997 LSTM
(`CECLSTM`, no forget gate) with full and with truncated gradients, each with
32 units at its default initialisation. Backpropagation through time
multiplies one Jacobian per step, so the error reaching step `t` shrinks (or
grows) geometrically with the lag `T−1−t`; the 1997 carousel with truncated
gradients has `∂c_T/∂c_t = I` and keeps it constant (Hochreiter 1991;
Bengio et al. 1994; Hochreiter & Schmidhuber 1997).

Part B shows the two sides of Pascanu, Mikolov & Bengio (2013) on a linear
SimpleRNN whose recurrent matrix is 0.9 or 1.1 times an orthogonal one: the
per-step factor is then exactly 0.9 (vanishing) or 1.1 (exploding). Clipping
the gradient to a norm `c`, `g ← g · min(1, c/‖g‖)`, rescales every step's
share by the same factor: the exploding gradient's norm is capped at `c`,
and the vanishing one keeps its shape (the far steps' share of the error is
unchanged). Two runs through the engine show the same in training: a
SimpleRNN on `long_lag` beyond its reach, with and without `clipnorm`.
"""

from __future__ import annotations

import math
import time

import keras
import numpy as np
from matplotlib.figure import Figure

from builder_ui.lab.catalog import DESCRIPTIONS
from builder_ui.lab.common import ExperimentResult, LabContext, fmt, table, verdict_of
from keras_seq.diagnostics import gradient_flow, plot_gradient_flow
from keras_seq.layers import CECLSTM

NUMBER = 1
DESCRIPTION = DESCRIPTIONS["gradients"]
RULE = (
    "Agrees when (1) the SimpleRNN's gradient at the longest lag is below 1e-6 of its value "
    "at lag 10 while the truncated CEC-LSTM's stays within a factor 2 of it; (2) clipping "
    "brings the exploding RNN's total gradient norm down to the clip value and leaves the "
    "vanishing RNN's far-to-near ratio unchanged (to 1e-6 relative); and (3) the SimpleRNN "
    "on long_lag is not rescued by clipnorm (validation accuracy below 0.95 with and without)."
)

UNITS = 32
INPUT_DIM = 8
NEAR_LAG = 10
CLIP_NORM = 1.0


def _layers():
    """(label, factory) of the layers of part A, each at its default initialisation."""

    return [
        ("SimpleRNN", lambda: keras.layers.SimpleRNN(UNITS, name="SimpleRNN")),
        ("GRU", lambda: keras.layers.GRU(UNITS, name="GRU")),
        ("LSTM (forget gate)", lambda: keras.layers.LSTM(UNITS, name="LSTM")),
        ("CEC-LSTM 1997, full gradient", lambda: CECLSTM(UNITS, name="CECLSTM_full")),
        (
            "CEC-LSTM 1997, truncated gradient",
            lambda: CECLSTM(UNITS, truncated_gradients=True, name="CECLSTM_truncated"),
        ),
    ]


def _linear_rnn(gain):
    return keras.layers.SimpleRNN(
        UNITS,
        activation=None,
        recurrent_initializer=keras.initializers.Orthogonal(gain=gain),
        name=f"linear_rnn_{gain}",
    )


def _measure(factory, length, seed):
    keras.utils.set_random_seed(seed)
    frame = gradient_flow(factory(), length, input_dim=INPUT_DIM, wrt="input", seed=seed)
    return frame.sort_values("lag").reset_index(drop=True)


def _ratio(frame, far, near):
    norms = frame.set_index("lag")["grad_norm"]
    return float(norms[far] / norms[near]) if norms[near] > 0 else math.nan


def _clipped(frame, clip_norm):
    """The per-step gradients after clipping their global norm to `clip_norm`.

    The per-step norms are those of disjoint blocks of one gradient vector, so
    its global norm is `sqrt(Σ_t ‖g_t‖²)`; clipping multiplies every block by
    `min(1, c / ‖g‖)`.
    """
    norms = frame["grad_norm"].to_numpy(dtype=np.float64)
    total = float(np.sqrt(np.sum(norms**2)))
    scale = min(1.0, clip_norm / total) if total > 0 else 1.0
    return frame.assign(grad_norm=norms * scale), total, total * scale


def run(context: LabContext) -> ExperimentResult:
    length = context.size(100, 200)
    far = length - 1
    seed = 0
    started = time.perf_counter()
    rows, clip_table, train_rows = [], [], []

    # Part A: gradient flow by layer type.
    context.log(f"  gradient flow over {length} steps for 5 recurrent layers")
    frames = {}
    for label, factory in _layers():
        frame = _measure(factory, length, seed)
        frames[label] = frame
        ratio = _ratio(frame, far, NEAR_LAG)
        per_step = ratio ** (1 / (far - NEAR_LAG)) if ratio > 0 else None
        rows.append(
            {
                "layer": label,
                "grad at lag 0": fmt(float(frame["grad_norm"].iloc[0]), 6),
                f"grad at lag {NEAR_LAG}": fmt(float(frame["grad_norm"].iloc[NEAR_LAG]), 6),
                f"grad at lag {far}": float(f"{frame['grad_norm'].iloc[far]:.3e}"),
                f"ratio lag {far} / lag {NEAR_LAG}": float(f"{ratio:.3e}"),
                "factor per step": fmt(per_step, 4),
            }
        )

    # Part B: exploding and vanishing linear RNNs, before and after clipping.
    context.log("  clipping: linear RNNs with per-step factor 0.9 and 1.1")
    clip_rows = {}
    clip_frames = {}
    for gain, side in ((1.1, "exploding"), (0.9, "vanishing")):
        frame = _measure(lambda gain=gain: _linear_rnn(gain), length, seed)
        clipped, before, after = _clipped(frame, CLIP_NORM)
        ratio_before = _ratio(frame, far, 0)
        ratio_after = _ratio(clipped, far, 0)
        clip_frames[f"linear RNN ×{gain} ({side})"] = frame
        clip_frames[f"×{gain}, clipped to norm {CLIP_NORM:g}"] = clipped
        clip_rows[side] = (before, after, ratio_before, ratio_after)
        clip_table.append(
            {
                "layer": f"linear RNN, W_h = {gain} × orthogonal ({side})",
                "total grad norm": float(f"{before:.3e}"),
                f"after clipping to {CLIP_NORM:g}": float(f"{after:.3e}"),
                f"ratio lag {far} / lag 0": float(f"{ratio_before:.3e}"),
                "same ratio after clipping": float(f"{ratio_after:.3e}"),
            }
        )

    # Part C: training, with and without clipping, where the SimpleRNN's gradient has vanished.
    # Lags at which the SimpleRNN fails without clipping: with a bigger budget it solves lag
    # 100 (experiment 2), not 300.
    lag = context.size(50, 300)
    epochs = context.size(4, 8)
    accuracies = {}
    for clipnorm in (None, CLIP_NORM):
        key = f"simple-lag{lag}-{'clip' if clipnorm else 'noclip'}"
        spec = {
            "task": {"type": "long_lag", "lag": lag, "n": 1000, "seed": 0},
            "model": {
                "type": "sequence_classifier",
                "encoder": {"type": "rnn", "cell": "simple", "units": 16},
            },
            "train": {
                "epochs": epochs,
                "batch_size": 32,
                "learning_rate": 0.01,
                "clipnorm": clipnorm,
                "seed": 0,
            },
        }
        trained = context.train(key, spec)
        record = trained.record
        best = max(
            (e.metrics.get("val_accuracy") or 0.0 for e in context.store.history(record.id)),
            default=math.nan,
        )
        accuracies[clipnorm] = best
        train_rows.append(
            {
                "model": f"SimpleRNN(16) on long_lag, lag {lag}",
                "clipnorm": clipnorm,
                "status": record.status,
                "best val accuracy": fmt(best),
                "epochs": epochs,
                "run": record.name,
            }
        )

    # The figure: part A on the left, part B on the right.
    figure = Figure(figsize=(13.0, 4.8), layout="constrained")
    left, right = figure.subplots(1, 2)
    plot_gradient_flow(frames, ax=left, title=f"(a) ‖∂L/∂x_t‖ against lag, {UNITS} units")
    left.get_lines()[-1].set_linestyle("--")  # the truncated carousel lies on the full one
    left.legend(fontsize=8)
    plot_gradient_flow(
        clip_frames,
        ax=right,
        title=f"(b) linear RNN, factor 0.9 / 1.1 per step; clipped to norm {CLIP_NORM:g}",
    )
    lines = right.get_lines()
    for index, line in enumerate(lines):
        if index % 2 == 1:
            line.set_linestyle("--")
            line.set_color(lines[index - 1].get_color())
    right.legend()
    figures = [context.save_figure(figure, "1-vanishing-gradients")]

    # Verdict.
    simple_ratio = _ratio(frames["SimpleRNN"], far, NEAR_LAG)
    carousel_ratio = _ratio(frames["CEC-LSTM 1997, truncated gradient"], far, NEAR_LAG)
    vanishes = simple_ratio < 1e-6
    constant = 0.5 <= carousel_ratio <= 2.0
    before, after, _, _ = clip_rows["exploding"]
    capped = after <= CLIP_NORM * (1 + 1e-6) and before > CLIP_NORM
    _, _, vr_before, vr_after = clip_rows["vanishing"]
    unchanged = abs(vr_after - vr_before) <= 1e-6 * abs(vr_before)
    not_rescued = all(acc < 0.95 for acc in accuracies.values())
    checks = [vanishes and constant, capped and unchanged, not_rescued]
    verdict = verdict_of(checks)
    finding = (
        f"Over {far} steps the SimpleRNN's gradient falls to {simple_ratio:.1e} of its value at "
        f"lag {NEAR_LAG} (a factor {simple_ratio ** (1 / (far - NEAR_LAG)):.3f} per step); the "
        f"1997 carousel with truncated gradients keeps {carousel_ratio:.2f} of it. Clipping to "
        f"norm {CLIP_NORM:g} cut the exploding RNN's gradient from {before:.2e} to {after:.2g} "
        f"but left the vanishing RNN's far-to-near ratio at {vr_after:.2e}. Trained on long_lag "
        f"with lag {lag}, the SimpleRNN reached a best validation accuracy of "
        f"{accuracies[None]:.2f} without clipping and {accuracies[CLIP_NORM]:.2f} with it."
    )
    underflow = [label for label, frame in frames.items() if frame["grad_norm"].iloc[far] == 0]
    notes = [
        "Part A measures each layer at its default initialisation with random inputs; it shows "
        "the geometry of backpropagation at the start of training, not after it.",
        "Part B is exact by construction: norm clipping multiplies every step's share of the "
        "gradient by the same factor, so it can bound the step size but cannot restore the "
        "far steps' share. Part C checks the same in training, at a lag the SimpleRNN does "
        "not bridge without clipping (experiment 2 shows where that begins).",
    ]
    if underflow:
        notes.append(
            f"{', '.join(underflow)}: the gradient at the longest lag is exactly 0, below the "
            "smallest float32 number (the figure draws values under 1e-30 at 1e-30), so no "
            "per-step factor is given."
        )
    tables = [
        table(f"(a) Gradient norm against lag, {length} steps, default initialisation", rows),
        table("(b) Gradient clipping on an exploding and a vanishing linear RNN", clip_table),
        table("(c) Training through the engine, with and without clipnorm", train_rows),
    ]
    return ExperimentResult(
        number=NUMBER,
        title=DESCRIPTION.title,
        claim=DESCRIPTION.claim,
        rule=RULE,
        verdict=verdict,
        finding=finding,
        tables=tables,
        figures=figures,
        settings={"sequence_length": length, "units": UNITS, "lag_trained": lag, "epochs": epochs},
        seconds=time.perf_counter() - started,
        notes=notes,
    )
