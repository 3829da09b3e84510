"""The bottleneck lab: each structural limit of sequence models, measured beside the papers' claims.

Seven experiments, each a module with a `run(context)` function (the table of them
and the runners are in `builder_ui.lab.suite`; this package only re-exports):

1. `gradients`: the vanishing gradient against the lag (SimpleRNN, GRU, LSTM,
   the 1997 CEC-LSTM with full and truncated gradients) and what clipping does;
2. `long_lags`: the fresh training sequences each recurrent layer needs to
   bridge `long_lag` (p = q distractors) against the lag, the distractor
   alphabet's effect at q = 1000, and `adding_problem`;
3. `bottleneck`: seq2seq without attention, with Bahdanau and with Luong
   attention on `toy_translation`, BLEU by source length, and the
   reversed-source ablation;
4. `sequential`: training-step time against sequence length, LSTM against a
   Transformer block of the same size, batch 1 and 16, on CPU (and GPU);
5. `transformer_choices`: heads at a fixed width, sinusoidal against learned
   positions, post-LN against pre-LN, and a ViT on `digits` with its
   position-similarity figure;
6. `visual_attention`: Show, Attend and Tell on `shape_captions`, the share
   of each object word's attention on that object's box, with the doubly
   stochastic penalty and without region positions;
7. `conv_lstm`: the ConvLSTM against the frame-flattening LSTM of equal
   size on `moving_shapes`, next-frame MSE beside the last-frame and
   mean-frame baselines.

Every model the lab trains goes through `builder_ui.engine.run`, so it is a
run in the store (named `lab-<n>-<key>`, one sweep id per experiment and
invocation) and shows in `keras-seq runs` and the app's Compare tab. The pure
measurements (gradient norms, step times) are computed directly and recorded
in the report's tables and `results.json`.

`run_lab(...)` runs several and writes the report (`builder_ui.lab.report`):
Markdown with PNG figures, each experiment with its figure, its tables, the
papers' claim and whether the measurement agrees. `quick=True` runs every
experiment at small sizes (minutes on two CPU cores).

For the app: `experiments()` lists them (number, title, claim, rough
minutes), `run_experiment(number, store, quick=True, out_dir=..., log=...)`
runs one (its runs go to the store; its result is merged into the report in
`out_dir`) and returns its `ExperimentResult` (`figure_path`, `frame()` for
the main table, `verdict`, `finding`, `run_ids`), and `stored_results(out_dir)`
reads back what a report directory already holds.

Example:

>>> from builder_ui.lab import experiments, run_lab
>>> [e.number for e in experiments()]
[1, 2, 3, 4, 5, 6, 7]
>>> lab = run_lab([1], quick=True, out_dir="lab-report", runs_dir="runs")  # doctest: +SKIP
>>> lab.report_path  # doctest: +SKIP
PosixPath('lab-report/README.md')
"""

import importlib
from typing import Any

# What this package re-exports, by the module that defines it. They load on first use
# (PEP 562), so `keras-seq --help`, which reads the lab's arguments, loads none of them.
_EXPORTS = {
    "ExperimentResult": "builder_ui.lab.common",
    "LabContext": "builder_ui.lab.common",
    **dict.fromkeys(
        (
            "DEFAULT_OUT_DIR",
            "DEFAULT_RUNS_DIR",
            "EXPERIMENTS",
            "FAILED",
            "NUMBERS",
            "Experiment",
            "LabRun",
            "experiments",
            "get_experiment",
            "parse_numbers",
            "run_experiment",
            "run_lab",
            "stored_results",
        ),
        "builder_ui.lab.suite",
    ),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
