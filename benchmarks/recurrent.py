"""Training-step time of every CECLSTM variant against Keras's LSTM, GRU and SimpleRNN.

Each layer sits in the same small model, Input(100, 32) -> layer(128) -> Dense(1), compiled
with Adam and MSE; one step is `model.train_on_batch(x, y)` on a fixed batch of 64. All
models are built and warmed up first (tracing and compilation are not timed, but the first
step is recorded), then timed interleaved: in every round each model runs a few steps, in a
new random order. The table gives the median seconds per step over the rounds and its ratio
to `keras.layers.LSTM` in the same run, and checks the targets below.

Run from the repository root (the backend is Keras's, chosen by KERAS_BACKEND):

    python benchmarks/recurrent.py             # 7 rounds, about a minute on 2 CPU cores
    python benchmarks/recurrent.py --quick     # smoke run, under a minute; not a measurement
    python benchmarks/recurrent.py --check     # exit 1 if a target is missed

Writes benchmarks/results/recurrent.json (every sample and the environment) and
benchmarks/results/recurrent.md (the table).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import importlib
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path

import _timing

RESULTS_DIR = Path(__file__).resolve().parent / "results"
REFERENCE = "lstm"


@dataclasses.dataclass(frozen=True)
class Variant:
    """One layer to time: `layer(units, **options)`, imported from its dotted path."""

    key: str
    label: str
    layer: str
    options: dict = dataclasses.field(default_factory=dict)
    # Most the median step time may be, as a multiple of the reference's; None: report only.
    target: float | None = None

    def call(self, units):
        """The constructor call, e.g. `CECLSTM(128, forget_gate=True)`."""
        arguments = [str(units), *(f"{name}={value!r}" for name, value in self.options.items())]
        return f"{self.layer.rpartition('.')[2]}({', '.join(arguments)})"


# The CECLSTM cells without peepholes do the matmuls of Keras's LSTMCell (the 1997 cell has
# one gate fewer), so they should cost about the same: 1.15x. Peepholes add three
# elementwise multiply-adds per step, and their gradients, on the sequential path: 1.3x.
# Truncated gradients leave the forward pass alone and only drop backward work: 1.15x.
_CEC = "keras_seq.layers.CECLSTM"
VARIANTS = (
    Variant("cec-1997", "CECLSTM (1997)", _CEC, {}, 1.15),
    Variant("cec-forget", "CECLSTM forget", _CEC, {"forget_gate": True}, 1.15),
    Variant("cec-peephole", "CECLSTM peephole", _CEC, {"peephole": True}, 1.3),
    Variant(
        "cec-forget-peephole",
        "CECLSTM forget + peephole",
        _CEC,
        {"forget_gate": True, "peephole": True},
        1.3,
    ),
    Variant("cec-truncated", "CECLSTM truncated", _CEC, {"truncated_gradients": True}, 1.15),
    Variant(REFERENCE, "keras LSTM", "keras.layers.LSTM"),
    Variant("gru", "keras GRU", "keras.layers.GRU"),
    Variant("simple-rnn", "keras SimpleRNN", "keras.layers.SimpleRNN"),
)
VARIANT_KEYS = tuple(variant.key for variant in VARIANTS)


@dataclasses.dataclass(frozen=True)
class Settings:
    batch: int = 64
    length: int = 100
    input_dim: int = 32
    units: int = 128
    rounds: int = 7
    steps_per_sample: int = 5
    warmup_steps: int = 3
    seed: int = 0
    jit_compile: str | bool = "auto"
    quick: bool = False
    variants: tuple[str, ...] = VARIANT_KEYS


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Time a training step of every CECLSTM variant against Keras's RNN layers.",
    )
    parser.add_argument("--rounds", type=int, default=7, help="samples per layer (default 7)")
    parser.add_argument(
        "--steps", type=int, default=5, help="training steps timed per sample (default 5)"
    )
    parser.add_argument(
        "--warmup", type=int, default=3, help="untimed steps after the first one (default 3)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seeds data, weights, order")
    parser.add_argument(
        "--jit-compile",
        choices=("auto", "true", "false"),
        default="auto",
        help='passed to model.compile (default "auto": no XLA for TensorFlow on CPU)',
    )
    parser.add_argument(
        "--variants",
        help=f"comma-separated subset of {', '.join(VARIANT_KEYS)}; {REFERENCE} is always run",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 2 rounds of 1 step, no warm-up"
    )
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=RESULTS_DIR,
        help="where recurrent.json and recurrent.md go (default benchmarks/results)",
    )
    args = parser.parse_args(argv)

    if args.quick:
        args.rounds, args.steps, args.warmup = 2, 1, 0
    elif args.rounds < 5:
        parser.error(f"--rounds must be at least 5 for a measurement, got {args.rounds}")
    if args.steps < 1 or args.warmup < 0:
        parser.error("--steps must be at least 1 and --warmup at least 0")
    keys = VARIANT_KEYS
    if args.variants:
        chosen = {key.strip() for key in args.variants.split(",") if key.strip()}
        unknown = sorted(chosen - set(VARIANT_KEYS))
        if unknown:
            parser.error(f"unknown --variants {unknown}; choose from {list(VARIANT_KEYS)}")
        keys = tuple(key for key in VARIANT_KEYS if key in chosen or key == REFERENCE)
    args.settings = Settings(
        rounds=args.rounds,
        steps_per_sample=args.steps,
        warmup_steps=args.warmup,
        seed=args.seed,
        jit_compile={"auto": "auto", "true": True, "false": False}[args.jit_compile],
        quick=args.quick,
        variants=keys,
    )
    return args


def _layer_class(dotted):
    module, _, name = dotted.rpartition(".")
    return getattr(importlib.import_module(module), name)


def build_model(keras, variant, settings):
    layer = _layer_class(variant.layer)(settings.units, **variant.options)
    model = keras.Sequential(
        [
            keras.Input((settings.length, settings.input_dim)),
            layer,
            keras.layers.Dense(1),
        ],
        name=variant.key.replace("-", "_"),
    )
    model.compile(optimizer=keras.optimizers.Adam(), loss="mse", jit_compile=settings.jit_compile)
    return model


def measure(settings, log=print):
    """Build, warm up and time every variant; return the run record (a JSON-able dict)."""
    import keras
    import numpy as np

    keras.utils.set_random_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    x = rng.standard_normal((settings.batch, settings.length, settings.input_dim))
    y = rng.standard_normal((settings.batch, 1))
    x = keras.ops.convert_to_tensor(x.astype("float32"))
    y = keras.ops.convert_to_tensor(y.astype("float32"))

    variants = [variant for variant in VARIANTS if variant.key in settings.variants]
    steps, built = {}, {}
    for variant in variants:
        model = build_model(keras, variant, settings)
        start = time.perf_counter()
        model.train_on_batch(x, y)  # traces, and compiles under XLA
        first_step = time.perf_counter() - start
        for _ in range(settings.warmup_steps):
            model.train_on_batch(x, y)
        steps[variant.key] = functools.partial(model.train_on_batch, x, y)
        built[variant.key] = {
            "parameters": model.count_params(),
            "jit_compile": model.jit_compile,
            "first_step_s": round(first_step, 3),
        }
        log(f"built {variant.call(settings.units):<50} first step {first_step:6.2f} s")

    load_before = _timing.load_average()
    start = time.perf_counter()
    wall, cpu, orders = _timing.interleaved(
        steps,
        rounds=settings.rounds,
        steps_per_sample=settings.steps_per_sample,
        seed=settings.seed,
        on_round=lambda index, _: log(f"round {index + 1}/{settings.rounds}"),
    )
    timing_s = time.perf_counter() - start

    reference_median = statistics.median(wall[REFERENCE])
    reference_cpu_median = statistics.median(cpu[REFERENCE])
    results = []
    for variant in variants:
        seconds, cpu_seconds = wall[variant.key], cpu[variant.key]
        summary = _timing.summarize(seconds)
        ratio = summary["median"] / reference_median
        per_round = [s / r for s, r in zip(seconds, wall[REFERENCE], strict=True)]
        cpu_summary = _timing.summarize(cpu_seconds)
        results.append(
            {
                "key": variant.key,
                "label": variant.label,
                "layer": variant.call(settings.units),
                **built[variant.key],
                "ms_per_step": _milliseconds(summary),
                "samples_ms": [round(1e3 * value, 3) for value in seconds],
                "ratio": ratio,
                "ratio_per_round": _timing.summarize(per_round),
                "target": variant.target,
                "passed": None if variant.target is None else ratio <= variant.target,
                "cpu_ms_per_step": _milliseconds(cpu_summary),
                "cpu_samples_ms": [round(1e3 * value, 3) for value in cpu_seconds],
                "cpu_ratio": cpu_summary["median"] / reference_cpu_median,
            }
        )

    environment = _timing.environment()
    environment["load_average_timing"] = {"start": load_before, "end": _timing.load_average()}
    environment["keras_backend"] = keras.backend.backend()
    environment["backend_version"] = _backend_version(keras.backend.backend())
    jit = {entry["jit_compile"] for entry in built.values()}
    return {
        "benchmark": "recurrent",
        "description": (
            "Milliseconds per training step (model.train_on_batch) of Input(length, input_dim) -> "
            "layer(units) -> Dense(1), Adam, MSE; interleaved rounds; ratios are to "
            f"{_variant(REFERENCE).label} in the same run."
        ),
        "reference": REFERENCE,
        "settings": {
            **dataclasses.asdict(settings),
            "optimizer": "adam",
            "loss": "mse",
            "step": "model.train_on_batch(x, y)",
            "order": "shuffled every round, seeded by `seed`",
            "jit_compile_resolved": jit.pop() if len(jit) == 1 else sorted(jit),
        },
        "environment": environment,
        "timing_s": round(timing_s, 1),
        "results": results,
        "orders": orders,
        "all_targets_met": all(entry["passed"] is not False for entry in results),
    }


def _milliseconds(summary):
    return {name: round(1e3 * value, 3) for name, value in summary.items()}


def _variant(key):
    return next(variant for variant in VARIANTS if variant.key == key)


def _backend_version(backend):
    module = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}.get(backend)
    if module is None:
        return None
    return getattr(importlib.import_module(module), "__version__", None)


def table(record):
    headers = (
        "layer",
        "ms/step (median)",
        "IQR (ms)",
        "min (ms)",
        f"× {_variant(REFERENCE).label}",
        "× per round: median (min–max)",
        "CPU ×",
        "target",
        "result",
    )
    rows = []
    for entry in record["results"]:
        ms, per_round = entry["ms_per_step"], entry["ratio_per_round"]
        if entry["key"] == REFERENCE:
            target = "reference"
        else:
            target = "—" if entry["target"] is None else f"≤ {entry['target']:.2f}×"
        rows.append(
            (
                f"`{entry['layer']}`",
                f"{ms['median']:.1f}",
                f"{ms['q1']:.1f}–{ms['q3']:.1f}",
                f"{ms['min']:.1f}",
                f"{entry['ratio']:.2f}×",
                f"{per_round['median']:.2f} ({per_round['min']:.2f}–{per_round['max']:.2f})",
                f"{entry['cpu_ratio']:.2f}×",
                target,
                {None: "—", True: "PASS", False: "FAIL"}[entry["passed"]],
            )
        )
    return _timing.markdown_table(headers, rows)


def verdicts(record):
    """One PASS/FAIL line per target."""
    lines = []
    for entry in record["results"]:
        if entry["target"] is not None:
            verdict = "PASS" if entry["passed"] else "FAIL"
            lines.append(
                f"{verdict}: {entry['label']} at {entry['ratio']:.2f}× {_variant(REFERENCE).label}"
                f" (target ≤ {entry['target']:.2f}×)"
            )
    return lines


def markdown(record):
    settings, environment = record["settings"], record["environment"]
    packages = environment["packages"]
    backend = environment["keras_backend"]
    load = environment["load_average_timing"]
    lines = ["# Recurrent layers: training-step time", ""]
    if settings["quick"]:
        lines += [
            "> **Smoke run (`--quick`)**: too few steps to mean anything. "
            "Rerun without `--quick` for a measurement.",
            "",
        ]
    lines += [
        f"Written by `{environment['command']}` on {environment['date_utc']}; "
        "rerun the script rather than editing this file.",
        "",
        f"- Model: `Input(({settings['length']}, {settings['input_dim']}))` → layer "
        f"({settings['units']} units) → `Dense(1)`, Adam, MSE, batch {settings['batch']}; "
        "one step is `model.train_on_batch(x, y)`.",
        f"- Timing: {_count(settings['rounds'], 'round')} × "
        f"{_count(settings['steps_per_sample'], 'step')} per layer, the layers in a new random "
        f"order each round, after {_count(settings['warmup_steps'], 'warm-up step')} "
        "(the first step, which traces the model, is not timed).",
        f"- Keras {packages.get('keras')} on {backend} {environment['backend_version']}, "
        f"`jit_compile={settings['jit_compile_resolved']}` "
        f"(requested `{settings['jit_compile']!r}`).",
        f"- Machine: {environment['platform']}, {environment['usable_cpus']} usable CPUs; "
        f"load average {_first(load['start'])} before timing, {_first(load['end'])} after.",
        "",
        table(record),
        "",
        f"Ratios are to {_variant(REFERENCE).label} in the same run; lower is faster. A target "
        "is met when the ratio of medians is at most the target. The per-round column divides "
        "each round's time by the reference's in the same round: its spread shows the noise. "
        "CPU × is the same ratio of medians in CPU time of the process (all threads), which "
        "waiting for a core on a busy machine inflates less than wall time.",
        "",
        *(f"- {line}" for line in verdicts(record)),
        "",
    ]
    return "\n".join(lines)


def _count(number, noun):
    return f"{number} {noun}" + ("" if number == 1 else "s")


def _first(load):
    return "n/a" if load is None else f"{load[0]:.2f}"


def write(record, output_dir):
    output_dir = Path(output_dir)
    json_path, md_path = output_dir / "recurrent.json", output_dir / "recurrent.md"
    _timing.write_atomic(json_path, json.dumps(record, indent=2) + "\n")
    _timing.write_atomic(md_path, markdown(record))
    return json_path, md_path


def main(argv=None):
    args = parse_args(argv)
    # Keep TensorFlow's C++ start-up chatter and its retracing warnings (one function per
    # model is expected here) out of the output; errors still show.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    logging.getLogger("tensorflow").setLevel(logging.ERROR)

    record = measure(args.settings)
    print()
    print(table(record))
    print()
    for line in verdicts(record):
        print(line)
    for path in write(record, args.output_dir):
        print(f"wrote {path}")
    if args.check and not record["all_targets_met"]:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
