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
import sys

import _timing

RESULTS_DIR = _timing.RESULTS_DIR
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
    _timing.add_timing_arguments(
        parser,
        per="layer",
        steps=5,
        steps_help="training steps timed per sample (default 5)",
        warmup=3,
    )
    _timing.add_seed_argument(parser)
    _timing.add_jit_compile_argument(parser)
    parser.add_argument(
        "--variants",
        help=f"comma-separated subset of {', '.join(VARIANT_KEYS)}; {REFERENCE} is always run",
    )
    _timing.add_output_arguments(parser, "recurrent")
    args = parser.parse_args(argv)

    _timing.apply_quick(parser, args)
    if args.steps < 1 or args.warmup < 0:
        parser.error("--steps must be at least 1 and --warmup at least 0")
    keys = VARIANT_KEYS
    if args.variants:
        chosen = _timing.parse_choices(parser, "--variants", args.variants, VARIANT_KEYS)
        keys = tuple(key for key in VARIANT_KEYS if key in chosen or key == REFERENCE)
    args.settings = Settings(
        rounds=args.rounds,
        steps_per_sample=args.steps,
        warmup_steps=args.warmup,
        seed=args.seed,
        jit_compile=_timing.jit_compile(args.jit_compile),
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
        steps[variant.key] = functools.partial(model.train_on_batch, x, y)
        # the first step traces, and compiles under XLA
        first_step = _timing.warm_up(steps[variant.key], settings.warmup_steps)
        built[variant.key] = {
            "parameters": model.count_params(),
            "jit_compile": model.jit_compile,
            "first_step_s": round(first_step, 3),
        }
        log(f"built {variant.call(settings.units):<50} first step {first_step:6.2f} s")

    timing = _timing.time_rounds(steps, settings, settings.steps_per_sample, log)
    wall, cpu = timing.wall, timing.cpu

    results = []
    for variant in variants:
        wall_figures, cpu_figures = _timing.against_reference(
            wall[variant.key], cpu[variant.key], wall[REFERENCE], cpu[REFERENCE]
        )
        ratio = wall_figures["ratio"]
        results.append(
            {
                "key": variant.key,
                "label": variant.label,
                "layer": variant.call(settings.units),
                **built[variant.key],
                **wall_figures,
                "target": variant.target,
                "passed": None if variant.target is None else ratio <= variant.target,
                **cpu_figures,
            }
        )

    environment = _timing.timing_environment(
        keras.backend.backend(), timing.load_before, _backend_version
    )
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
        **_timing.record_outcome(environment, timing, results),
    }


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
                _timing.spread(per_round),
                f"{entry['cpu_ratio']:.2f}×",
                target,
                _timing.verdict(entry["passed"]),
            )
        )
    return _timing.markdown_table(headers, rows)


def verdicts(record):
    """One PASS/FAIL line per target."""
    return _timing.target_verdicts(record["results"], _variant(REFERENCE).label)


def markdown(record):
    settings, environment = record["settings"], record["environment"]
    lines = _timing.markdown_preamble("Recurrent layers: training-step time", record)
    lines += [
        f"- Model: `Input(({settings['length']}, {settings['input_dim']}))` → layer "
        f"({settings['units']} units) → `Dense(1)`, Adam, MSE, batch {settings['batch']}; "
        "one step is `model.train_on_batch(x, y)`.",
        f"- Timing: {_timing.plural(settings['rounds'], 'round')} × "
        f"{_timing.plural(settings['steps_per_sample'], 'step')} per layer, the layers in a new "
        f"random order each round, after "
        f"{_timing.plural(settings['warmup_steps'], 'warm-up step')} "
        "(the first step, which traces the model, is not timed).",
        f"- {_timing.keras_on_backend(environment)}, "
        f"`jit_compile={settings['jit_compile_resolved']}` "
        f"(requested `{settings['jit_compile']!r}`).",
        _timing.machine_line(environment),
    ]
    note = (
        f"Ratios are to {_variant(REFERENCE).label} in the same run; lower is faster. A target "
        "is met when the ratio of medians is at most the target. The per-round column divides "
        "each round's time by the reference's in the same round: its spread shows the noise. "
        "CPU × is the same ratio of medians in CPU time of the process (all threads), which "
        "waiting for a core on a busy machine inflates less than wall time."
    )
    return _timing.markdown_document(lines, [table(record), note], verdicts(record))


def main(argv=None):
    args = parse_args(argv)
    return _timing.measure_and_report(
        args, measure, stem="recurrent", markdown=markdown, tables=(table,), verdicts=verdicts
    )


if __name__ == "__main__":
    sys.exit(main())
