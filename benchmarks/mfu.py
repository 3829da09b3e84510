"""Transformer training MFU: model FLOPs per second over the chip's dense bf16 peak.

A language model of pre-LN `TransformerEncoderBlock`s (Embedding -> sinusoidal positions ->
N blocks -> Dense(vocab)), trained with `model.train_on_batch` on fixed random tokens with
sparse cross-entropy and Adam, under Keras mixed precision (`mixed_bfloat16` by default).
Beside it, the same stack written with `keras.layers.MultiHeadAttention` (the reference of
benchmarks/transformer.py), timed interleaved with it in the same process.

Model FLOPs (the count of Kaplan et al. 2020 and the PaLM paper's MFU, Chowdhery et al.
2022): the matrix multiplications only, 2 FLOPs a multiply-add, a training step three times
the forward pass (the backward pass computes two products per forward one):

    forward per token = L · (8·d² + 4·d·d_ff + 4·T·d) + 2·d·V
    (QKV and output projections 4·d², two feed-forward matrices 2·d·d_ff, QKᵀ and AV 2·T·d
    each, all times 2; the output head d·V times 2)
    step FLOPs = 3 · B · T · forward per token
    MFU = step FLOPs / median step seconds / peak FLOPs

Recomputation, softmax, layer norms and the optimiser are not counted (model FLOPs, not
hardware FLOPs). The peak is the chip's dense bf16 tensor-core figure from its vendor's data
sheet (`PEAKS`, matched on the device's name), or `--peak-tflops`; on a CPU, or a chip not
listed, MFU is not reported and only throughput is. Target: MFU ≥ 30% for keras_seq's stack.

Run from the repository root on a GPU host (the backend is Keras's, chosen by KERAS_BACKEND):

    python benchmarks/mfu.py                 # B 16, T 1024, d 1024, 8 layers, V 32000
    python benchmarks/mfu.py --quick         # smoke run on any machine, tiny sizes
    python benchmarks/mfu.py --check         # exit 1 if MFU < 30% (an unknown peak: not judged)

Writes benchmarks/results/mfu.json (every sample, the environment) and
benchmarks/results/mfu.md (the table).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import _timing

TARGET_MFU = 0.30
# Dense bf16 tensor-core peaks, FLOP/s, from the vendors' data sheets (no sparsity).
PEAKS = (
    ("H200", 989e12),
    ("H100 PCIe", 756e12),
    ("H100", 989e12),
    ("A100", 312e12),
    ("L40S", 362e12),
    ("L4", 121e12),
    ("A10", 125e12),
)
CASES = (("keras_seq", "TransformerEncoderBlock stack"), ("keras-layers", "Keras layers stack"))


@dataclasses.dataclass(frozen=True)
class Settings:
    batch: int
    length: int
    d_model: int
    num_heads: int
    ff_dim: int
    layers: int
    vocab: int
    precision: str
    rounds: int
    steps_per_sample: int
    warmup_steps: int
    seed: int
    jit_compile: object
    peak_tflops: float | None
    quick: bool


def step_flops(settings: Settings) -> float:
    """Model FLOPs of one training step (the module docstring's count)."""
    d, t = settings.d_model, settings.length
    per_token = (
        settings.layers * (8 * d * d + 4 * d * settings.ff_dim + 4 * t * d) + 2 * d * settings.vocab
    )
    return 3.0 * settings.batch * t * per_token


def device_name(backend: str) -> str:
    """The accelerator's name as the backend reports it, else "CPU"."""
    if backend == "jax":
        import jax

        device = jax.devices()[0]
        return device.device_kind if device.platform == "gpu" else "CPU"
    if backend == "torch":
        import torch

        return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU"
    import tensorflow as tf

    gpus = tf.config.list_physical_devices("GPU")
    if not gpus:
        return "CPU"
    return tf.config.experimental.get_device_details(gpus[0]).get("device_name", "GPU")


def peak_flops(name: str, override_tflops: float | None) -> float | None:
    """The dense bf16 peak of the named chip (`PEAKS`), `--peak-tflops`, or None."""
    if override_tflops is not None:
        return override_tflops * 1e12
    for key, peak in PEAKS:
        if key.lower() in name.lower():
            return peak
    return None


def build_models(keras, settings: Settings) -> dict:
    """The two stacks, same sizes, compiled; the reference block from benchmarks/transformer.py."""
    from transformer import keras_layers_block_class

    from keras_seq.layers import SinusoidalPositionalEncoding, TransformerEncoderBlock

    reference_class = keras_layers_block_class(keras)
    models = {}
    for key, _ in CASES:
        tokens = keras.Input((settings.length,), dtype="int32")
        x = keras.layers.Embedding(settings.vocab, settings.d_model)(tokens)
        x = x + SinusoidalPositionalEncoding()(x)
        for index in range(settings.layers):
            if key == "keras_seq":
                block = TransformerEncoderBlock(
                    settings.num_heads, settings.ff_dim, norm_first=True, name=f"block_{index}"
                )
            else:
                block = reference_class(
                    settings.num_heads, settings.ff_dim, norm_first=True, name=f"block_{index}"
                )
            x = block(x)
        x = keras.layers.LayerNormalization(epsilon=1e-5)(x)
        logits = keras.layers.Dense(settings.vocab, dtype="float32")(x)  # the loss in float32
        model = keras.Model(tokens, logits, name=key.replace("-", "_"))
        model.compile(
            optimizer=keras.optimizers.Adam(1e-4),
            loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            jit_compile=settings.jit_compile,
        )
        models[key] = model
    return models


def measure(keras, np, settings: Settings, log) -> dict:
    keras.mixed_precision.set_global_policy(settings.precision)
    keras.utils.set_random_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    shape = (settings.batch, settings.length)
    x = keras.ops.convert_to_tensor(rng.integers(0, settings.vocab, shape).astype("int32"))
    y = keras.ops.convert_to_tensor(rng.integers(0, settings.vocab, shape).astype("int32"))
    models = build_models(keras, settings)
    first_step = {}
    steps = {}
    for key, model in models.items():
        steps[key] = lambda model=model: model.train_on_batch(x, y)  # returns the loss: synced
        first_step[key] = _timing.warm_up(steps[key], settings.warmup_steps)
        log(f"{key}: first step {first_step[key]:.2f} s, {model.count_params():,} parameters")
    timing = _timing.time_rounds(steps, settings, settings.steps_per_sample, log)
    backend = keras.backend.backend()
    environment = _timing.timing_environment(backend, timing.load_before)
    name = device_name(backend)
    peak = peak_flops(name, settings.peak_tflops)
    flops = step_flops(settings)
    results = []
    for key, label in CASES:
        summary = _timing.summarize(timing.wall[key])
        seconds = summary["median"]
        mfu = flops / seconds / peak if peak else None
        results.append(
            {
                "case": key,
                "label": label,
                "params": models[key].count_params(),
                "first_step_s": round(first_step[key], 3),
                "step_ms": _timing.milliseconds(summary),
                "samples_ms": _timing.samples_ms(timing.wall[key]),
                "tokens_per_s": settings.batch * settings.length / seconds,
                "model_tflops_per_s": flops / seconds / 1e12,
                "mfu": mfu,
                "target": f"MFU >= {TARGET_MFU:.0%}" if key == "keras_seq" else None,
                "passed": (mfu >= TARGET_MFU if mfu is not None else None)
                if key == "keras_seq"
                else None,
            }
        )
    return {
        "benchmark": "mfu",
        "settings": dataclasses.asdict(settings) | {"jit_compile": str(settings.jit_compile)},
        "device": name,
        "peak_tflops": peak / 1e12 if peak else None,
        "step_tflop": flops / 1e12,
        **_timing.record_outcome(environment, timing, results),
    }


def table(record) -> str:
    rows = []
    for entry in record["results"]:
        mfu = entry["mfu"]
        rows.append(
            (
                entry["label"],
                f"{entry['params']:,}",
                f"{entry['step_ms']['median']:.1f}",
                f"{entry['tokens_per_s']:,.0f}",
                f"{entry['model_tflops_per_s']:.3g}",
                f"{mfu:.1%}" if mfu is not None else "n/a",
                _timing.verdict(entry["passed"]) if entry["target"] else "",
            )
        )
    return _timing.markdown_table(
        ("stack", "params", "step ms", "tokens/s", "model TFLOP/s", "MFU", "target"), rows
    )


def verdicts(record):
    (ours,) = [entry for entry in record["results"] if entry["case"] == "keras_seq"]
    if ours["mfu"] is None:
        yield (
            f"MFU not judged: no bf16 peak known for {record['device']!r} "
            "(pass --peak-tflops on an unlisted chip)"
        )
        return
    word = "PASS" if ours["passed"] else "FAIL"
    yield f"{word} keras_seq stack MFU {ours['mfu']:.1%} (target >= {TARGET_MFU:.0%})"


def markdown(record) -> str:
    settings, environment = record["settings"], record["environment"]
    peak = record["peak_tflops"]
    lines = _timing.markdown_preamble("Transformer training MFU", record)
    lines += [
        f"- Device: {record['device']}; dense bf16 peak "
        + (f"{peak:.0f} TFLOP/s" if peak else "unknown (MFU not reported)")
        + f"; {record['step_tflop']:.4g} model TFLOP a step.",
        f"- Model: B {settings['batch']} × T {settings['length']} tokens, d {settings['d_model']}, "
        f"{settings['num_heads']} heads, d_ff {settings['ff_dim']}, {settings['layers']} pre-LN "
        f"blocks, vocabulary {settings['vocab']}, `{settings['precision']}`; one step is "
        "`model.train_on_batch(x, y)` (sparse cross-entropy, Adam).",
        f"- Timing: {_timing.plural(settings['rounds'], 'round')} × "
        f"{_timing.plural(settings['steps_per_sample'], 'step')} per stack, interleaved, after "
        f"{_timing.plural(settings['warmup_steps'], 'warm-up step')}; medians.",
        f"- {_timing.keras_on_backend(environment)}, `jit_compile={settings['jit_compile']}`.",
        _timing.machine_line(environment),
    ]
    note = (
        "Model FLOPs count the matrix multiplications only (3× the forward pass a step); MFU "
        "is model FLOP/s over the peak. See the script's docstring for the count."
    )
    return _timing.markdown_document(lines, [table(record), note], verdicts(record))


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    _timing.add_timing_arguments(
        parser,
        per="stack",
        steps=5,
        steps_help="training steps timed per sample (default 5)",
        warmup=3,
    )
    _timing.add_seed_argument(parser)
    parser.add_argument("--batch", type=int, default=16, help="sequences a step (default 16)")
    parser.add_argument("--length", type=int, default=1024, help="tokens a sequence (1024)")
    parser.add_argument("--d-model", type=int, default=1024, help="model width (default 1024)")
    parser.add_argument("--heads", type=int, default=16, help="attention heads (default 16)")
    parser.add_argument("--ff-dim", type=int, default=4096, help="feed-forward width (4096)")
    parser.add_argument("--layers", type=int, default=8, help="blocks (default 8)")
    parser.add_argument("--vocab", type=int, default=32000, help="vocabulary (default 32000)")
    parser.add_argument(
        "--precision",
        choices=("mixed_bfloat16", "mixed_float16", "float32"),
        default="mixed_bfloat16",
        help="Keras dtype policy (default mixed_bfloat16)",
    )
    parser.add_argument(
        "--peak-tflops", type=float, help="the chip's dense peak, for a chip not in PEAKS"
    )
    _timing.add_jit_compile_argument(parser)
    _timing.add_output_arguments(
        parser, "mfu", quick_help=f"{_timing.QUICK_HELP}; B 2, T 32, d 64, 2 layers, V 128"
    )
    args = parser.parse_args(argv)
    _timing.apply_quick(parser, args)
    if args.quick:
        args.batch, args.length, args.d_model = 2, 32, 64
        args.heads, args.ff_dim, args.layers, args.vocab = 4, 128, 2, 128
    for option in ("batch", "length", "d_model", "heads", "ff_dim", "layers", "vocab"):
        value = getattr(args, option)
        if value < 1:
            parser.error(f"--{option.replace('_', '-')} must be a positive integer, got {value}")
    if args.d_model % args.heads:
        parser.error(f"--d-model ({args.d_model}) must be divisible by --heads ({args.heads})")
    if args.peak_tflops is not None and args.peak_tflops <= 0:
        parser.error(f"--peak-tflops must be positive, got {args.peak_tflops}")
    args.settings = Settings(
        batch=args.batch,
        length=args.length,
        d_model=args.d_model,
        num_heads=args.heads,
        ff_dim=args.ff_dim,
        layers=args.layers,
        vocab=args.vocab,
        precision=args.precision,
        rounds=args.rounds,
        steps_per_sample=args.steps,
        warmup_steps=args.warmup,
        seed=args.seed,
        jit_compile=_timing.jit_compile(args.jit_compile),
        peak_tflops=args.peak_tflops,
        quick=args.quick,
    )
    return args


def main(argv=None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)

    def run(settings):
        import keras
        import numpy as np

        return measure(keras, np, settings, lambda line: print(line, flush=True))

    return _timing.measure_and_report(
        args, run, stem="mfu", markdown=markdown, tables=[table], verdicts=verdicts
    )


if __name__ == "__main__":
    sys.exit(main())
