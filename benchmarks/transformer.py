"""The Transformer encoder block's overhead, and the recurrent bottleneck it removes.

Two measurements, in one process, each timed as benchmarks/README.md describes (every case
built and warmed up first, then interleaved rounds in a new random order, medians):

1. **Block overhead.** A training step (`model.train_on_batch`) of
   Input((length, d_model)) -> block -> Dense(1), MSE, Adam, where the block is keras_seq's
   `TransformerEncoderBlock` or the same block written out of Keras layers below
   (`keras.layers.MultiHeadAttention`, `LayerNormalization`, `Dense`, `Dropout` in the
   paper's order), with the same weights: the script checks both compute the same outputs
   before timing them. Post-LN (the paper) and pre-LN (ViT), each judged against its own
   reference. Target: at most 1.1x.

2. **Inference against sequence length.** `model.predict_on_batch(x)` of a one-block
   Transformer encoder and of an LSTM layer (`keras.layers.LSTM`, `return_sequences=True`)
   with as nearly the same number of parameters as a whole number of units allows, both
   reading x of shape (batch, length, d_model), at lengths 64 to 1024 and batch 1 and 16.
   The LSTM must take its `length` steps one after another; the Transformer computes all
   positions at once (with `length²` attention work). Reported, not judged.

Run from the repository root (the backend is Keras's, chosen by KERAS_BACKEND):

    python benchmarks/transformer.py            # 7 rounds, 2-4 minutes on 2 CPU cores
    python benchmarks/transformer.py --quick    # smoke run, lengths 64 and 128; not a measurement
    python benchmarks/transformer.py --check    # exit 1 if a block is over 1.1x its reference

Writes benchmarks/results/transformer.json (every sample, the environment) and
benchmarks/results/transformer.md (the tables).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import time

import _timing

RESULTS_DIR = _timing.RESULTS_DIR
BLOCK_TARGET = 1.1  # most a block's median step time may be, as a multiple of its reference's
LENGTHS = (64, 128, 256, 512, 1024)
QUICK_LENGTHS = (64, 128)
BATCHES = (1, 16)
# Samples of the sequence-length sweep last about this long (the number of calls per sample
# is set from the warm-up), so cheap and dear cases get samples of similar precision.
SAMPLE_SECONDS = 0.25


@dataclasses.dataclass(frozen=True)
class Settings:
    # The block-overhead comparison.
    block_batch: int = 32
    block_length: int = 128
    # Shared by both parts.
    d_model: int = 128
    num_heads: int = 4
    ff_dim: int = 512  # 4 d_model, as in the paper
    # The sequence-length sweep.
    lengths: tuple[int, ...] = LENGTHS
    batches: tuple[int, ...] = BATCHES
    rounds: int = 7
    steps_per_sample: int = 5  # block-overhead training steps per sample
    warmup_steps: int = 3
    seed: int = 0
    jit_compile: str | bool = "auto"
    quick: bool = False


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description=(
            "Time keras_seq's TransformerEncoderBlock against the same block written with "
            "Keras layers, and Transformer against LSTM inference across sequence lengths."
        ),
    )
    _timing.add_timing_arguments(
        parser,
        per="case",
        steps=5,
        steps_help="block training steps timed per sample (default 5)",
        warmup=3,
    )
    _timing.add_seed_argument(parser)
    parser.add_argument(
        "--lengths",
        help="comma-separated sequence lengths for the sweep (default "
        + ",".join(map(str, LENGTHS))
        + ")",
    )
    _timing.add_jit_compile_argument(parser)
    _timing.add_output_arguments(
        parser, "transformer", quick_help=f"{_timing.QUICK_HELP}, lengths 64 and 128"
    )
    args = parser.parse_args(argv)

    _timing.apply_quick(parser, args)
    lengths = QUICK_LENGTHS if args.quick else LENGTHS
    if args.steps < 1 or args.warmup < 0:
        parser.error("--steps must be at least 1 and --warmup at least 0")
    if args.lengths:
        lengths = _timing.parse_integers(parser, "--lengths", args.lengths)
        if not lengths or min(lengths) < 1 or max(lengths) > 8192:
            parser.error(f"--lengths must lie in [1, 8192], got {args.lengths!r}")
    args.settings = Settings(
        lengths=lengths,
        rounds=args.rounds,
        steps_per_sample=args.steps,
        warmup_steps=args.warmup,
        seed=args.seed,
        jit_compile=_timing.jit_compile(args.jit_compile),
        quick=args.quick,
    )
    return args


# ------------------------------------------------------------------ the block out of Keras layers


def keras_layers_block_class(keras):
    """The Transformer encoder block written directly with Keras layers, for reference."""

    class KerasLayersEncoderBlock(keras.layers.Layer):
        """Post-LN or pre-LN encoder block: MultiHeadAttention, LayerNorm, Dense, Dropout."""

        def __init__(self, num_heads, ff_dim, norm_first, activation="relu", **kwargs):
            super().__init__(**kwargs)
            self.num_heads, self.ff_dim = num_heads, ff_dim
            self.norm_first, self.activation = norm_first, activation

        def build(self, input_shape):
            d_model = input_shape[-1]
            self.attention = keras.layers.MultiHeadAttention(
                self.num_heads, d_model // self.num_heads
            )
            self.attention_norm = keras.layers.LayerNormalization(epsilon=1e-5)
            self.attention_dropout = keras.layers.Dropout(0.0)
            self.ff_inner = keras.layers.Dense(self.ff_dim, activation=self.activation)
            self.ff_outer = keras.layers.Dense(d_model)
            self.ff_norm = keras.layers.LayerNormalization(epsilon=1e-5)
            self.ff_dropout = keras.layers.Dropout(0.0)
            shape = (None, None, d_model)
            self.attention.build(shape, shape)
            for layer, layer_shape in (
                (self.attention_norm, shape),
                (self.ff_inner, shape),
                (self.ff_outer, (None, None, self.ff_dim)),
                (self.ff_norm, shape),
            ):
                layer.build(layer_shape)

        def call(self, x, training=None):
            residual = x
            if self.norm_first:
                x = self.attention_norm(x)
            x = self.attention(x, x, training=training)
            x = residual + self.attention_dropout(x, training=training)
            if not self.norm_first:
                x = self.attention_norm(x)
            residual = x
            if self.norm_first:
                x = self.ff_norm(x)
            x = self.ff_outer(self.ff_inner(x))
            x = residual + self.ff_dropout(x, training=training)
            if not self.norm_first:
                x = self.ff_norm(x)
            return x

        def copy_weights_from(self, block):
            """Take every weight of a keras_seq TransformerEncoderBlock, sublayer by sublayer."""
            pairs = (
                (self.attention, block.self_attention),
                (self.attention_norm, block.self_attention_layer_norm),
                (self.ff_inner, block.feedforward_intermediate_dense),
                (self.ff_outer, block.feedforward_output_dense),
                (self.ff_norm, block.feedforward_layer_norm),
            )
            for mine, theirs in pairs:
                mine.set_weights(theirs.get_weights())

    return KerasLayersEncoderBlock


# ------------------------------------------------------------------------------ part 1: the block

BLOCK_CASES = (
    # key, label, norm_first, keras_seq block or reference
    ("post-ln", "TransformerEncoderBlock (post-LN)", False, True),
    ("post-ln-keras", "Keras layers (post-LN)", False, False),
    ("pre-ln", "TransformerEncoderBlock (pre-LN)", True, True),
    ("pre-ln-keras", "Keras layers (pre-LN)", True, False),
)


def _block_models(keras, settings):
    from keras_seq.layers import TransformerEncoderBlock

    reference_class = keras_layers_block_class(keras)
    shape = (settings.block_length, settings.d_model)
    models, blocks = {}, {}
    for key, _, norm_first, ours in BLOCK_CASES:
        if ours:
            block = TransformerEncoderBlock(
                settings.num_heads, settings.ff_dim, norm_first=norm_first, name="block"
            )
        else:
            block = reference_class(
                settings.num_heads, settings.ff_dim, norm_first=norm_first, name="block"
            )
        model = keras.Sequential(
            [keras.Input(shape), block, keras.layers.Dense(1, name="head")],
            name=key.replace("-", "_"),
        )
        blocks[key], models[key] = block, model
    for key, _, _, ours in BLOCK_CASES:
        if not ours:
            ours_key = key.removesuffix("-keras")
            blocks[key].copy_weights_from(blocks[ours_key])
            models[key].get_layer("head").set_weights(
                models[ours_key].get_layer("head").get_weights()
            )
    for model in models.values():
        model.compile(
            optimizer=keras.optimizers.Adam(), loss="mse", jit_compile=settings.jit_compile
        )
    return models


def measure_blocks(keras, np, settings, log):
    rng = np.random.default_rng(settings.seed)
    x = rng.standard_normal((settings.block_batch, settings.block_length, settings.d_model))
    y = rng.standard_normal((settings.block_batch, settings.block_length, 1))
    x = keras.ops.convert_to_tensor(x.astype("float32"))
    y = keras.ops.convert_to_tensor(y.astype("float32"))
    models = _block_models(keras, settings)

    # Same weights, same function: check before timing that the comparison is fair.
    agreement = {}
    for key, _, _, ours in BLOCK_CASES:
        if not ours:
            ours_key = key.removesuffix("-keras")
            difference = np.max(
                np.abs(models[key].predict_on_batch(x) - models[ours_key].predict_on_batch(x))
            )
            agreement[ours_key] = float(difference)
            if difference > 1e-4:
                raise RuntimeError(
                    f"{ours_key}: the Keras-layers block differs from TransformerEncoderBlock "
                    f"by {difference:.2e}; the comparison would not be of the same block."
                )

    steps, built = {}, {}
    for key, label, _, _ in BLOCK_CASES:
        model = models[key]
        steps[key] = lambda model=model: model.train_on_batch(x, y)
        first_step = _timing.warm_up(steps[key], settings.warmup_steps)
        built[key] = {
            "parameters": model.count_params(),
            "block_parameters": model.get_layer("block").count_params(),
            "jit_compile": model.jit_compile,
            "first_step_s": round(first_step, 3),
        }
        log(f"built {label:<40} first step {first_step:6.2f} s")

    wall, cpu, orders = _timing.interleaved(
        steps,
        rounds=settings.rounds,
        steps_per_sample=settings.steps_per_sample,
        seed=settings.seed,
        on_round=lambda index, _: log(f"block round {index + 1}/{settings.rounds}"),
    )
    results = []
    for key, label, norm_first, ours in BLOCK_CASES:
        reference = key if not ours else f"{key}-keras"
        wall_figures, cpu_figures = _timing.against_reference(
            wall[key], cpu[key], wall[reference], cpu[reference]
        )
        results.append(
            {
                "key": key,
                "label": label,
                "norm_first": norm_first,
                "reference": reference,
                **built[key],
                **wall_figures,
                **cpu_figures,
                "target": BLOCK_TARGET if ours else None,
                "passed": (wall_figures["ratio"] <= BLOCK_TARGET) if ours else None,
                "max_output_difference": agreement.get(key),
            }
        )
    return {"results": results, "orders": orders}


# ------------------------------------------------------------------ part 2: sequence-length sweep


def lstm_units_matching(target_parameters, input_dim):
    """The LSTM width whose parameter count, 4 (u (input_dim + u) + u), is nearest the target."""
    # 4u² + 4(input_dim + 1)u − target = 0
    b = input_dim + 1
    root = (-b + math.sqrt(b * b + target_parameters)) / 2
    candidates = {max(1, math.floor(root)), max(1, math.ceil(root))}
    return min(candidates, key=lambda u: abs(4 * (u * (input_dim + u) + u) - target_parameters))


def _sweep_models(keras, settings):
    from keras_seq.layers import TransformerEncoderBlock

    keras.utils.set_random_seed(settings.seed)
    encoder = TransformerEncoderBlock(settings.num_heads, settings.ff_dim, name="encoder")
    encoder.build((None, None, settings.d_model))
    units = lstm_units_matching(encoder.count_params(), settings.d_model)
    lstm = keras.layers.LSTM(units, return_sequences=True, name="lstm")
    lstm.build((None, None, settings.d_model))
    models = {}
    for length in settings.lengths:
        for kind, layer in (("transformer", encoder), ("lstm", lstm)):
            # One model per length, sharing the layer: each traces its own fixed-shape graph.
            inputs = keras.Input((length, settings.d_model))
            model = keras.Model(inputs, layer(inputs), name=f"{kind}_{length}")
            model.compile(jit_compile=settings.jit_compile)
            models[(kind, length)] = model
    description = {
        "transformer": {
            "layer": (
                f"TransformerEncoderBlock(num_heads={settings.num_heads}, ff_dim={settings.ff_dim})"
            ),
            "parameters": encoder.count_params(),
            "state": "none: every position attends to every other at once",
        },
        "lstm": {
            "layer": f"LSTM({units}, return_sequences=True)",
            "parameters": lstm.count_params(),
            "state": f"h and c, {units} values each per sequence, carried from step to step",
        },
    }
    return models, description


def sweep_case(kind, length, batch):
    return f"{kind}/L{length}/B{batch}"


def measure_sweep(keras, np, settings, log):
    rng = np.random.default_rng(settings.seed + 1)
    models, description = _sweep_models(keras, settings)
    steps, counts, first = {}, {}, {}
    for length in settings.lengths:
        for batch in settings.batches:
            x = rng.standard_normal((batch, length, settings.d_model)).astype("float32")
            for kind in ("transformer", "lstm"):
                model, name = models[(kind, length)], sweep_case(kind, length, batch)
                start = time.perf_counter()
                model.predict_on_batch(x)  # traces the predict function for this shape
                first[name] = round(time.perf_counter() - start, 3)
                start = time.perf_counter()
                for _ in range(max(settings.warmup_steps, 1)):
                    model.predict_on_batch(x)
                seconds = (time.perf_counter() - start) / max(settings.warmup_steps, 1)
                steps[name] = lambda model=model, x=x: model.predict_on_batch(x)
                counts[name] = 1 if settings.quick else max(1, round(SAMPLE_SECONDS / seconds))
        log(f"built the sweep at length {length}")

    wall, cpu, orders = _timing.interleaved(
        steps,
        rounds=settings.rounds,
        steps_per_sample=counts,
        seed=settings.seed,
        on_round=lambda index, _: log(f"sweep round {index + 1}/{settings.rounds}"),
    )
    rows = []
    for length in settings.lengths:
        for batch in settings.batches:
            entry = {"length": length, "batch": batch}
            for kind in ("transformer", "lstm"):
                name = sweep_case(kind, length, batch)
                entry[kind] = {
                    "ms": _timing.milliseconds(_timing.summarize(wall[name])),
                    "cpu_ms": _timing.milliseconds(_timing.summarize(cpu[name])),
                    "samples_ms": _timing.samples_ms(wall[name]),
                    "calls_per_sample": counts[name],
                    "first_call_s": first[name],
                }
            entry["lstm_over_transformer"] = (
                entry["lstm"]["ms"]["median"] / entry["transformer"]["ms"]["median"]
            )
            rows.append(entry)
    return {"models": description, "rows": rows, "orders": orders}


# ---------------------------------------------------------------------------------- the record


def measure(settings, log=print):
    """Build, warm up and time both parts; return the run record (a JSON-able dict)."""
    import keras
    import numpy as np

    keras.utils.set_random_seed(settings.seed)
    load_before = _timing.load_average()
    start = time.perf_counter()
    blocks = measure_blocks(keras, np, settings, log)
    sweep = measure_sweep(keras, np, settings, log)
    timing_s = time.perf_counter() - start

    environment = _timing.timing_environment(keras.backend.backend(), load_before)
    return {
        "benchmark": "transformer",
        "description": (
            "1: milliseconds per training step (model.train_on_batch) of Input(length, d_model) "
            "-> encoder block -> Dense(1), Adam, MSE, for keras_seq's TransformerEncoderBlock "
            "and the same block written with Keras layers (same weights); ratios are to the "
            "Keras-layers block in the same run. 2: milliseconds per model.predict_on_batch of "
            "one Transformer encoder block and an LSTM of about the same parameter count, "
            "against sequence length, at two batch sizes."
        ),
        "settings": {
            **dataclasses.asdict(settings),
            "block_step": "model.train_on_batch(x, y)",
            "sweep_step": "model.predict_on_batch(x)",
            "order": "shuffled every round, seeded by `seed`",
            "sample_seconds": SAMPLE_SECONDS,
        },
        "environment": environment,
        "timing_s": round(timing_s, 1),
        "blocks": blocks,
        "sweep": sweep,
        "all_targets_met": all(entry["passed"] is not False for entry in blocks["results"]),
    }


def block_table(record):
    headers = (
        "block",
        "ms/step (median)",
        "IQR (ms)",
        "min (ms)",
        "× its Keras-layers twin",
        "× per round: median (min–max)",
        "CPU ×",
        "target",
        "result",
    )
    rows = []
    for entry in record["blocks"]["results"]:
        ms, per_round = entry["ms_per_step"], entry["ratio_per_round"]
        ours = entry["target"] is not None
        rows.append(
            (
                entry["label"],
                f"{ms['median']:.1f}",
                f"{ms['q1']:.1f}–{ms['q3']:.1f}",
                f"{ms['min']:.1f}",
                f"{entry['ratio']:.2f}×",
                f"{per_round['median']:.2f} ({per_round['min']:.2f}–{per_round['max']:.2f})",
                f"{entry['cpu_ratio']:.2f}×",
                f"≤ {entry['target']:.2f}×" if ours else "reference",
                _timing.verdict(entry["passed"]),
            )
        )
    return _timing.markdown_table(headers, rows)


def sweep_table(record):
    headers = (
        "length",
        "batch",
        "Transformer (ms)",
        "LSTM (ms)",
        "LSTM ÷ Transformer",
        "Transformer µs/token",
        "LSTM µs/token",
    )
    rows = []
    for entry in record["sweep"]["rows"]:
        transformer = entry["transformer"]["ms"]["median"]
        lstm = entry["lstm"]["ms"]["median"]
        tokens = entry["length"] * entry["batch"]
        rows.append(
            (
                entry["length"],
                entry["batch"],
                f"{transformer:.2f}",
                f"{lstm:.2f}",
                f"{entry['lstm_over_transformer']:.2f}×",
                f"{1e3 * transformer / tokens:.2f}",
                f"{1e3 * lstm / tokens:.2f}",
            )
        )
    return _timing.markdown_table(headers, rows)


def verdicts(record):
    """One PASS/FAIL line per target."""
    return _timing.target_verdicts(record["blocks"]["results"], "the same block of Keras layers")


def markdown(record):
    settings, environment = record["settings"], record["environment"]
    packages = environment["packages"]
    models = record["sweep"]["models"]
    lines = _timing.markdown_preamble(
        "Transformer encoder: block overhead and the sequential bottleneck", record
    )
    lines += [
        f"- Keras {packages.get('keras')} on {environment['keras_backend']} "
        f"{environment['backend_version']}, `jit_compile={settings['jit_compile']!r}`.",
        _timing.machine_line(environment),
        f"- Timing: {settings['rounds']} rounds, the cases in a new random order each round; "
        "tracing and warm-up are not timed.",
        "",
        "## Block overhead",
        "",
        f"`Input(({settings['block_length']}, {settings['d_model']}))` → encoder block "
        f"(d_model {settings['d_model']}, {settings['num_heads']} heads, d_ff "
        f"{settings['ff_dim']}) → `Dense(1)`, Adam, MSE, batch {settings['block_batch']}; one "
        f"step is `model.train_on_batch(x, y)`, {settings['steps_per_sample']} per sample. Each "
        "keras_seq block is compared with the same block written out of Keras layers "
        "(`MultiHeadAttention`, `LayerNormalization`, `Dense`, `Dropout`) holding the same "
        "weights; both were checked to give the same outputs before timing.",
        "",
        block_table(record),
        "",
        *(f"- {line}" for line in verdicts(record)),
        "",
        "## Inference time against sequence length",
        "",
        f"`model.predict_on_batch(x)` on x of shape (batch, length, {settings['d_model']}): "
        f"`{models['transformer']['layer']}` ({models['transformer']['parameters']:,} "
        f"parameters) against `{models['lstm']['layer']}` ({models['lstm']['parameters']:,} "
        "parameters, the nearest whole number of units). Each sample repeats the call for "
        f"about {settings['sample_seconds']} s; medians over the rounds.",
        "",
        sweep_table(record),
        "",
        "The LSTM runs its steps one after another, each a small matrix product that cannot "
        "start before the previous one ends, so its time grows with the length even at batch "
        "1, where the machine has cores to spare. The Transformer computes all positions at "
        "once, in large matrix products, but its attention work grows with length².",
        "",
        *(f"- {line}" for line in sweep_summary(record)),
        "",
        "Measured on CPUs only: with few cores there is little parallel hardware for the "
        "Transformer to fill, so the table says nothing about accelerators.",
        "",
    ]
    return "\n".join(lines)


def sweep_summary(record):
    """One line per batch size: the LSTM's time over the Transformer's, shortest to longest."""
    lines = []
    rows = record["sweep"]["rows"]
    for batch in sorted({entry["batch"] for entry in rows}):
        entries = sorted((e for e in rows if e["batch"] == batch), key=lambda e: e["length"])
        first, last = entries[0], entries[-1]
        growth = ""
        if len(entries) > 1:
            lstm_growth = last["lstm"]["ms"]["median"] / first["lstm"]["ms"]["median"]
            transformer_growth = (
                last["transformer"]["ms"]["median"] / first["transformer"]["ms"]["median"]
            )
            growth = (
                f"; from length {first['length']} to {last['length']} the LSTM's time grows "
                f"{lstm_growth:.1f}×, the Transformer's {transformer_growth:.1f}×"
            )
        lines.append(
            f"Batch {batch}: the LSTM takes {first['lstm_over_transformer']:.2f}× the "
            f"Transformer's time at length {first['length']} and "
            f"{last['lstm_over_transformer']:.2f}× at length {last['length']}{growth}."
        )
    return lines


def write(record, output_dir):
    """Write transformer.json and transformer.md into `output_dir`; return their paths."""
    return _timing.write_results("transformer", record, markdown(record), output_dir)


def main(argv=None):
    args = parse_args(argv)
    _timing.quiet_tensorflow()
    record = measure(args.settings)
    return _timing.report(
        record,
        tables=(block_table, sweep_table),
        verdicts=verdicts,
        write=write,
        output_dir=args.output_dir,
        check=args.check,
    )


if __name__ == "__main__":
    sys.exit(main())
