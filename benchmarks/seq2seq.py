"""Decoding speed of keras_seq's Seq2Seq: greedy and beam search against teacher forcing.

For each model, four compiled calls on the same batch of source ids (batch 32, source and
target length 24, vocabularies of 2,000):

- `teacher-forced`: the training forward pass, `model({"source": x, "target": y})`: the
  encoder once, then the decoder over the 24 target tokens it is given. The reference.
- `greedy`: `compile_decoder(model, 24, end_token=None)`: the encoder once, then 24 steps of
  `decode_step` in one `while_loop`, each choosing its token. With no end token every row
  decodes all 24 tokens, so both calls produce the same number of tokens.
- `beam-4`: `compile_decoder(model, 24, beam_width=4, end_token=None)`: 4 hypotheses per
  source, the states gathered from the surviving beams at every step.
- `python-loop`: the same greedy search with a Python `for` loop over 24 calls of a compiled
  `decode_step` (and one of a compiled `encode`): the per-token Python and dispatch overhead
  that the single compiled loop avoids. Reported, not judged.

Targets (issue 5): greedy decoding of a recurrent model costs at most 2× the teacher-forced
pass per token (no per-token Python work). Beam search of width 4 is reported against greedy.

Models: `rnn` is an LSTM encoder and decoder of 256 units with Luong ("general") attention
and 128-dimensional embeddings. `transformer` is 2 encoder and 2 decoder blocks, d_model
128, 4 heads, d_ff 512. Its `decode_step` runs each decoder block on the new position
only, with a key/value cache, but the teacher-forced pass it is compared with computes all
24 positions in parallel (one matrix product per layer where decoding needs 24 sequential
ones), so its ratio is reported, not judged.

Timing follows benchmarks/README.md: every call built and warmed up first, then interleaved
rounds in one process, medians, ratios to the reference in the same run; a sample repeats a
call for about 0.25 s (the count is set from the warm-up).

Run from the repository root (the backend is Keras's, chosen by KERAS_BACKEND):

    python benchmarks/seq2seq.py                    # 7 rounds, a few minutes on 2 CPU cores
    python benchmarks/seq2seq.py --quick            # smoke run; not a measurement
    python benchmarks/seq2seq.py --models rnn       # one model
    python benchmarks/seq2seq.py --check            # exit 1 if a target is missed

Writes benchmarks/results/seq2seq.json (every sample and the environment) and
benchmarks/results/seq2seq.md (the table).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

import _timing

RESULTS_DIR = _timing.RESULTS_DIR
SAMPLE_SECONDS = 0.25
GREEDY_TARGET = 2.0  # most greedy decoding may cost, as a multiple of the teacher-forced pass
MODEL_KEYS = ("rnn", "transformer")


@dataclasses.dataclass(frozen=True)
class Settings:
    batch: int = 32
    source_length: int = 24
    target_length: int = 24
    source_vocab_size: int = 2000
    target_vocab_size: int = 2000
    units: int = 256
    embedding_dim: int = 128
    embed_dim: int = 128  # the Transformer's embedding_dim
    num_heads: int = 4
    ff_dim: int = 512
    num_layers_transformer: int = 2
    beam_width: int = 4
    rounds: int = 7
    warmup_steps: int = 2
    seed: int = 0
    quick: bool = False
    models: tuple[str, ...] = MODEL_KEYS


@dataclasses.dataclass(frozen=True)
class Case:
    """One call to time; `reference` is the case its ratio is taken to (None: the reference)."""

    key: str
    label: str
    reference: str | None
    target: dict  # model key -> the most the ratio may be (absent: reported only)


CASES = (
    Case("teacher-forced", "teacher-forced pass", None, {}),
    Case("greedy", "greedy, one compiled loop", "teacher-forced", {"rnn": GREEDY_TARGET}),
    Case("beam-4", "beam search, width 4", "greedy", {}),
    Case("python-loop", "greedy, Python loop over a compiled step", "teacher-forced", {}),
)


def case_name(model_key, case_key):
    return f"{model_key}/{case_key}"


def build_model(keras, model_key, settings):
    from keras_seq.models import seq2seq

    if model_key == "rnn":
        return seq2seq(
            settings.source_vocab_size,
            settings.target_vocab_size,
            cell="lstm",
            units=settings.units,
            embedding_dim=settings.embedding_dim,
            attention="luong_general",
            name="rnn_luong",
        )
    return seq2seq(
        settings.source_vocab_size,
        settings.target_vocab_size,
        architecture="transformer",
        num_layers=settings.num_layers_transformer,
        embedding_dim=settings.embed_dim,
        num_heads=settings.num_heads,
        ff_dim=settings.ff_dim,
        max_length=settings.target_length,
        name="transformer",
    )


def describe(model_key, settings):
    if model_key == "rnn":
        return (
            f"seq2seq(cell='lstm', units={settings.units}, embedding_dim="
            f"{settings.embedding_dim}, attention='luong_general')"
        )
    return (
        f"seq2seq(architecture='transformer', num_layers={settings.num_layers_transformer}, "
        f"embedding_dim={settings.embed_dim}, num_heads={settings.num_heads}, "
        f"ff_dim={settings.ff_dim}, max_length={settings.target_length})"
    )


def compiled(keras, model, function):
    """`function` compiled for the backend: tf.function, or jax.jit of a stateless call."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(function)
    if backend == "jax":
        import jax

        variables = list(model.variables)

        def stateless(values, *args):
            with keras.StatelessScope(state_mapping=list(zip(variables, values, strict=True))):
                return function(*args)

        jitted = jax.jit(stateless)
        return lambda *args: jitted([variable.value for variable in variables], *args)
    return function


def _sync(keras, outputs):
    """Waits for the backend to finish (JAX dispatches asynchronously)."""
    if keras.backend.backend() == "jax":
        import jax

        jax.block_until_ready(outputs)
    return outputs


def make_calls(keras, model, source, target, settings):
    """Case key -> a function that runs one call on the fixed batch and waits for it."""
    from keras import ops

    from keras_seq.models import compile_decoder
    from keras_seq.models.decoding import START

    length = settings.target_length
    forward = compiled(keras, model, lambda s, t: model({"source": s, "target": t}))
    greedy = compile_decoder(model, length, end_token=None)
    beam = compile_decoder(model, length, beam_width=settings.beam_width, end_token=None)
    encode = compiled(keras, model, model.encode)

    def step(tokens, state):
        log_probs, state, _ = model.decode_step(tokens, state)
        return ops.cast(ops.argmax(log_probs, axis=-1), "int32"), state

    decode_step = compiled(keras, model, step)
    start = ops.full((settings.batch,), START, dtype="int32")

    def python_loop():
        state, tokens = encode(source), start
        for _ in range(length):
            tokens, state = decode_step(tokens, state)
        return _sync(keras, tokens)

    return {
        "teacher-forced": lambda: _sync(keras, forward(source, target)),
        "greedy": lambda: _sync(keras, greedy(source).ids),
        "beam-4": lambda: _sync(keras, beam(source).ids),
        "python-loop": python_loop,
    }, {"greedy": greedy, "beam-4": beam}


def measure(settings, log=print):
    """Build, warm up and time every case; return the run record (a JSON-able dict)."""
    import keras
    import numpy as np

    keras.utils.set_random_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    shape = (settings.batch, settings.source_length)
    source = rng.integers(4, settings.source_vocab_size, size=shape).astype("int32")
    target = rng.integers(
        4, settings.target_vocab_size, size=(settings.batch, settings.target_length)
    )
    target = target.astype("int32")
    source_tensor = keras.ops.convert_to_tensor(source)
    target_tensor = keras.ops.convert_to_tensor(target)

    steps, counts, built = {}, {}, {}
    for model_key in settings.models:
        model = build_model(keras, model_key, settings)
        calls, decoders = make_calls(keras, model, source_tensor, target_tensor, settings)
        for case in CASES:
            name = case_name(model_key, case.key)
            call = calls[case.key]
            start = time.perf_counter()  # the first call traces and compiles
            if case.key in decoders:
                # Every row decodes the full target length: the cases produce the same tokens.
                lengths = decoders[case.key](source_tensor).lengths
                if not (keras.ops.convert_to_numpy(lengths) == settings.target_length).all():
                    raise RuntimeError(f"{name} decoded fewer than {settings.target_length} tokens")
            else:
                call()
            first = time.perf_counter() - start
            start = time.perf_counter()
            for _ in range(max(settings.warmup_steps, 1)):
                call()
            seconds = (time.perf_counter() - start) / max(settings.warmup_steps, 1)
            steps[name] = call
            counts[name] = 1 if settings.quick else max(1, round(SAMPLE_SECONDS / seconds))
            built[name] = {"parameters": model.count_params(), "first_call_s": round(first, 3)}
            log(f"built {name:<26} first call {first:6.2f} s, then {1e3 * seconds:8.1f} ms")

    timing = _timing.time_rounds(steps, settings, counts, log)
    wall, cpu = timing.wall, timing.cpu

    tokens = settings.batch * settings.target_length
    results = []
    for model_key in settings.models:
        for case in CASES:
            name = case_name(model_key, case.key)
            reference = case_name(model_key, case.reference or case.key)
            wall_figures, cpu_figures = _timing.against_reference(
                wall[name], cpu[name], wall[reference], cpu[reference]
            )
            target = case.target.get(model_key)
            median = _timing.summarize(wall[name])["median"]
            results.append(
                {
                    "key": name,
                    "model": model_key,
                    "case": case.key,
                    "label": f"{model_key}: {case.label}",
                    "reference": None if case.reference is None else reference,
                    **built[name],
                    "calls_per_sample": counts[name],
                    "tokens_per_call": tokens,
                    "tokens_per_s": round(tokens / median, 1),
                    **wall_figures,
                    "target": target,
                    "passed": None if target is None else wall_figures["ratio"] <= target,
                    **cpu_figures,
                }
            )

    environment = _timing.timing_environment(keras.backend.backend(), timing.load_before)
    return {
        "benchmark": "seq2seq",
        "description": (
            "Milliseconds per call and tokens per second of Seq2Seq decoding on one batch: "
            "the teacher-forced forward pass, greedy decoding and beam search of width 4 in one "
            "compiled loop, and greedy decoding with a Python loop over a compiled step; every "
            "row produces target_length tokens; interleaved rounds; ratios are to the case's "
            "reference for the same model in the same run."
        ),
        "models": {key: describe(key, settings) for key in settings.models},
        "targets": {
            "rnn/greedy": f"median call time ≤ {GREEDY_TARGET} × rnn/teacher-forced "
            "(the same number of tokens)"
        },
        "settings": {
            **dataclasses.asdict(settings),
            "sample_seconds": SAMPLE_SECONDS,
            "order": "shuffled every round, seeded by `seed`",
            "compilation": {
                "tensorflow": "tf.function, no XLA",
                "jax": "jax.jit (XLA)",
            }.get(keras.backend.backend(), "eager"),
        },
        **_timing.record_outcome(environment, timing, results),
    }


def table(record):
    headers = (
        "model",
        "call",
        "ms/call (median)",
        "IQR (ms)",
        "tokens/s",
        "reference",
        "× reference",
        "× per round: median (min–max)",
        "CPU ×",
        "target",
        "result",
    )
    rows = []
    for entry in record["results"]:
        ms, per_round = entry["ms_per_step"], entry["ratio_per_round"]
        is_reference = entry["reference"] is None
        rows.append(
            (
                entry["model"],
                entry["case"],
                f"{ms['median']:.1f}",
                f"{ms['q1']:.1f}–{ms['q3']:.1f}",
                f"{entry['tokens_per_s']:,.0f}",
                "—" if is_reference else entry["reference"].partition("/")[2],
                "—" if is_reference else f"{entry['ratio']:.2f}×",
                "—" if is_reference else _timing.spread(per_round),
                "—" if is_reference else f"{entry['cpu_ratio']:.2f}×",
                "reference"
                if is_reference
                else ("—" if entry["target"] is None else f"≤ {entry['target']:.2f}×"),
                _timing.verdict(entry["passed"]),
            )
        )
    return _timing.markdown_table(headers, rows)


def verdicts(record):
    """One PASS/FAIL line per target, and the beam-against-greedy figures."""
    lines = []
    for entry in record["results"]:
        if entry["target"] is not None:
            lines.append(
                f"{'PASS' if entry['passed'] else 'FAIL'}: {entry['label']} at "
                f"{entry['ratio']:.2f}× {entry['reference']} per token "
                f"(target ≤ {entry['target']:.2f}×)"
            )
        elif entry["case"] == "beam-4":
            lines.append(
                f"{entry['label']}: {entry['ratio']:.2f}× greedy "
                f"({entry['tokens_per_s']:,.0f} output tokens/s)"
            )
    return lines


def markdown(record):
    settings, environment = record["settings"], record["environment"]
    lines = _timing.markdown_preamble("Seq2seq decoding: greedy and beam search", record)
    lines += [
        f"- Batch {settings['batch']}, source length {settings['source_length']}, target "
        f"length {settings['target_length']}, vocabularies of {settings['source_vocab_size']:,} "
        f"and {settings['target_vocab_size']:,}; random weights and ids. Every call produces "
        f"{settings['batch'] * settings['target_length']} target tokens (decoding has no end "
        "token, so no row stops early).",
        *(f"- `{key}`: `{text}`." for key, text in record["models"].items()),
        "- Calls: `teacher-forced` is the training forward pass (encoder once, decoder over the "
        "given target); `greedy` and `beam-4` are `compile_decoder` (encoder once, one "
        "`while_loop` of `decode_step`); `python-loop` is greedy decoding with a Python loop "
        "over a compiled `decode_step`.",
        f"- Timing: {_timing.plural(settings['rounds'], 'round')}; a sample repeats a call for "
        f"about {settings['sample_seconds']} s; the calls in a new random order each round, "
        f"after {_timing.plural(settings['warmup_steps'], 'warm-up call')} (the first call, "
        "which traces and compiles, is not timed).",
        f"- {_timing.keras_on_backend(environment)}, compiled by {settings['compilation']}.",
        _timing.machine_line(environment),
    ]
    note = (
        f"Target: greedy decoding of the recurrent model at most {GREEDY_TARGET:.0f}× the "
        "teacher-forced pass, for the same number of tokens (no per-token Python work). The "
        "Transformer's `decode_step` runs its decoder blocks on the new position only (a "
        "key/value cache), but its teacher-forced pass computes every position in parallel "
        "where decoding takes one sequential step per token: "
        "reported, not judged. Ratios are of medians in the same run; the per-round column "
        "divides each round's time by the reference's in the same round, and its spread shows "
        "the noise; CPU × is the ratio in CPU time of the process."
    )
    return _timing.markdown_document(lines, [table(record), note], verdicts(record))


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Time greedy decoding and beam search of Seq2Seq models against the "
        "teacher-forced pass.",
    )
    parser.add_argument("--rounds", type=int, default=7, help="samples per call (default 7)")
    parser.add_argument(
        "--warmup", type=int, default=2, help="untimed calls after the first one (default 2)"
    )
    parser.add_argument(
        "--models", help=f"comma-separated subset of {', '.join(MODEL_KEYS)} (default both)"
    )
    parser.add_argument("--batch", type=int, default=32, help="sources per call (default 32)")
    parser.add_argument(
        "--length", type=int, default=24, help="source and target length (default 24)"
    )
    _timing.add_seed_argument(parser)
    _timing.add_output_arguments(parser, "seq2seq")
    args = parser.parse_args(argv)

    if args.quick:
        args.rounds, args.warmup = 2, 0
    else:
        _timing.require_rounds(parser, args.rounds)
    if args.warmup < 0 or args.batch < 1 or args.length < 1:
        parser.error("--batch and --length must be at least 1 and --warmup at least 0")
    models = MODEL_KEYS
    if args.models:
        chosen = _timing.parse_choices(parser, "--models", args.models, MODEL_KEYS)
        models = tuple(key for key in MODEL_KEYS if key in chosen)
    args.settings = Settings(
        batch=args.batch,
        source_length=args.length,
        target_length=args.length,
        rounds=args.rounds,
        warmup_steps=args.warmup,
        seed=args.seed,
        quick=args.quick,
        models=models,
    )
    return args


def main(argv=None):
    args = parse_args(argv)
    return _timing.measure_and_report(
        args, measure, stem="seq2seq", markdown=markdown, tables=(table,), verdicts=verdicts
    )


if __name__ == "__main__":
    sys.exit(main())
