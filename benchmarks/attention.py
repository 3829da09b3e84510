"""Forward + backward time and peak memory of keras_seq's attention layers against Keras's.

Three pairs, each at query/key lengths 128, 512 and 1024, batch 8, model dimension 256, 8 heads
of 32:

- `sdpa-mha`: multi-head attention built on `ScaledDotProductAttention` (defined below: the
  projections of `keras.layers.MultiHeadAttention(num_heads=8, key_dim=32)`, with the same
  parameters, around our layer on the heads layout) against `keras-mha`, that Keras layer;
  both are self-attention on x of shape (8, T, 256).
- `sdpa`: bare `ScaledDotProductAttention` on pre-split heads (8, T, 8, 32) against `mha-core`,
  the attention inside Keras's MultiHeadAttention (its `_compute_attention`, which calls
  `keras.ops.dot_product_attention`) on the same heads.
- `bahdanau`: `BahdanauAttention(units)` on query and value (8, T, 256) against `additive`:
  two `Dense(units)` projections (of the query, and of the value as keys) and
  `keras.layers.AdditiveAttention()`. Both materialise (batch, Tq, Tv, units) where they
  run unfused, so units is 32 by default (1 GiB per such tensor at T = 1024).

One step is the forward pass and the gradient of a scalar loss, mean(output²), with respect to
every weight and every input, compiled: a `tf.function` around a GradientTape on TensorFlow,
`jax.jit(jax.value_and_grad(...))` around the model's `stateless_call` on JAX. Timing follows
benchmarks/README.md: every step built and warmed up first, then interleaved rounds in one
process, medians, ratios to the reference in the same run. Peak memory is measured in fresh
processes, two ways: XLA's memory analysis of the compiled step under JAX (exact and
deterministic; the memory target is judged on it), and the peak resident set of the process
during the step under the timing backend (a check).

Targets, at every length: at most 1.2x the reference's time and no more than its memory.

Run from the repository root (the timing backend is Keras's, chosen by KERAS_BACKEND):

    python benchmarks/attention.py            # 18 minutes on 2 cores at load 6; less if quiet
    python benchmarks/attention.py --quick    # smoke run at length 128; not a measurement
    python benchmarks/attention.py --check    # exit 1 if a target is missed

Writes benchmarks/results/attention.json (every sample, the memory figures, the environment)
and benchmarks/results/attention.md (the tables).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import functools
import gc
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable

import _timing

RESULTS_DIR = _timing.RESULTS_DIR
LENGTHS = (128, 512, 1024)
TIME_TARGET = 1.2  # most the median step time may be, as a multiple of the reference's
MEMORY_TARGET = 1.0  # most the peak memory may be, as a multiple of the reference's
RSS_STEPS = 2  # steps whose resident peak a memory process records, after its warm-up
MiB = 2**20


# How each memory figure is taken, for the record.
MEMORY_METHODS = {
    "xla": (
        "A process under KERAS_BACKEND=jax compiles each step (jax.jit(...).lower().compile(), "
        "not run) and reads memory_analysis(); step_peak_bytes = argument + output - alias + "
        "temp: the inputs and weights, the loss and gradients, and the temporary buffer XLA "
        "allocates for the step, sized by its own liveness analysis. Exact and deterministic "
        "for the compiled program, and independent of the timing backend."
    ),
    "rss": (
        "One fresh process per case under the timing backend: builds the model, traces and "
        "compiles the step without running it (TensorFlow: get_concrete_function; JAX: "
        "lower().compile()), records VmRSS, resets the kernel's high-water mark "
        "(/proc/self/clear_refs), then runs the step 1 + warmup_steps + "
        f"{RSS_STEPS} times; step_peak_bytes = VmHWM - that VmRSS. Leaves out imports, tracing "
        "and compilation, but counts what a first run sets up (TensorFlow optimises its graph "
        "then) and the growth of TensorFlow's tensor pool, which keeps freed memory. Run with "
        "MALLOC_MMAP_THRESHOLD_=131072 so that glibc does not keep freed blocks of compilation "
        "for the steps to reuse. Noisy by a few MiB; a check on the XLA figure, not judged."
    ),
}


@dataclasses.dataclass(frozen=True)
class Settings:
    batch: int = 8
    model_dim: int = 256
    num_heads: int = 8
    key_dim: int = 32  # model_dim / num_heads
    bahdanau_units: int = 32
    lengths: tuple[int, ...] = LENGTHS
    rounds: int = 7
    # Steps per sample at the longest length; a length L runs longest / L times as many.
    steps_per_sample: int = 2
    warmup_steps: int = 2
    seed: int = 0
    jit_compile: str | bool = "auto"
    memory: str = "both"
    quick: bool = False
    variants: tuple[str, ...] = ()

    def steps_for(self, length):
        return self.steps_per_sample * max(1, round(max(self.lengths) / length))


# --- The layers compared -------------------------------------------------------------------
#
# Each builder takes the Keras module, the model's inputs (see INPUTS) and the settings, and
# returns the output tensor. Layers that need Keras at class-definition time are made by
# cached factories, so that this module imports no Keras before `main` has set up logging.

INPUTS = {
    # kind -> input names and their shapes without the batch axis, from (settings, length)
    "self": lambda s, t: {"x": (t, s.model_dim)},
    "heads": lambda s, t: {name: (t, s.num_heads, s.key_dim) for name in ("query", "key", "value")},
    "query-value": lambda s, t: {"query": (t, s.model_dim), "value": (t, s.model_dim)},
}


@functools.cache
def _multi_head_on_sdpa_class(keras):
    from keras_seq.layers import ScaledDotProductAttention

    class MultiHeadOnSDPA(keras.layers.Layer):
        """Multi-head attention around keras_seq's `ScaledDotProductAttention`.

            MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,
            head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

        The projections are those of `keras.layers.MultiHeadAttention(num_heads, key_dim)`
        (value_dim = key_dim, biases on), so the two have the same parameters.
        """

        def __init__(self, num_heads, key_dim, output_dim, **kwargs):
            super().__init__(**kwargs)
            heads = (num_heads, key_dim)
            einsum_dense = keras.layers.EinsumDense
            self.query_dense = einsum_dense(
                "btd,dhk->bthk", (None, *heads), bias_axes="hk", name="query"
            )
            self.key_dense = einsum_dense(
                "btd,dhk->bthk", (None, *heads), bias_axes="hk", name="key"
            )
            self.value_dense = einsum_dense(
                "btd,dhk->bthk", (None, *heads), bias_axes="hk", name="value"
            )
            self.attention = ScaledDotProductAttention(name="attention")
            self.output_dense = einsum_dense(
                "bthk,hkd->btd", (None, output_dim), bias_axes="d", name="attention_output"
            )

        def call(self, query, value, key=None):
            key = value if key is None else key
            # (batch, time, heads, key_dim)
            query = self.query_dense(query)
            key = self.key_dense(key)
            value = self.value_dense(value)
            return self.output_dense(self.attention(query, value, key=key))

    return MultiHeadOnSDPA


@functools.cache
def _mha_core_class(keras):
    class MultiHeadAttentionCore(keras.layers.Layer):
        """The attention step inside `keras.layers.MultiHeadAttention`, on projected heads.

        Calls its `_compute_attention(query, key, value)`, the hook Keras documents for
        overriding that step; without dropout or returned scores it is
        `keras.ops.dot_product_attention(query, key, value, scale=1 / sqrt(key_dim))`.
        """

        def __init__(self, num_heads, key_dim, **kwargs):
            super().__init__(**kwargs)
            self.multi_head = keras.layers.MultiHeadAttention(num_heads, key_dim)

        def build(self, query_shape, key_shape, value_shape):
            pass  # `_compute_attention` uses none of the projections' weights

        def call(self, query, key, value):
            output, _ = self.multi_head._compute_attention(query, key, value)
            return output

    return MultiHeadAttentionCore


def _build_multi_head_on_sdpa(keras, inputs, s):
    (x,) = inputs
    layer = _multi_head_on_sdpa_class(keras)(
        s.num_heads, s.key_dim, s.model_dim, name="multi_head_on_sdpa"
    )
    return layer(x, x)


def _build_keras_multi_head(keras, inputs, s):
    (x,) = inputs
    return keras.layers.MultiHeadAttention(s.num_heads, s.key_dim, name="multi_head")(x, x)


def _build_sdpa(keras, inputs, s):
    from keras_seq.layers import ScaledDotProductAttention

    query, key, value = inputs
    return ScaledDotProductAttention(name="attention")(query, value, key=key)


def _build_mha_core(keras, inputs, s):
    query, key, value = inputs
    return _mha_core_class(keras)(s.num_heads, s.key_dim, name="attention")(query, key, value)


def _build_bahdanau(keras, inputs, s):
    from keras_seq.layers import BahdanauAttention

    query, value = inputs
    return BahdanauAttention(s.bahdanau_units, name="attention")(query, value)


def _build_dense_additive(keras, inputs, s):
    query, value = inputs
    # W_a q and U_a k without biases, as in BahdanauAttention; AdditiveAttention's `scale`
    # is v_a. Scores come from the projections, the context mixes the unprojected values.
    units = s.bahdanau_units
    projected_query = keras.layers.Dense(units, use_bias=False, name="query_projection")(query)
    keys = keras.layers.Dense(units, use_bias=False, name="key_projection")(value)
    return keras.layers.AdditiveAttention(name="attention")([projected_query, value, keys])


@dataclasses.dataclass(frozen=True)
class Variant:
    """One layer to time; `layer` is formatted with the settings for the tables."""

    key: str
    label: str
    layer: str
    inputs: str  # a key of INPUTS
    build: Callable
    reference: str | None = None  # the variant it is judged against; None: a reference

    def describe(self, settings):
        return self.layer.format(**dataclasses.asdict(settings))


VARIANTS = (
    Variant(
        "sdpa-mha",
        "multi-head on SDPA",
        "Q/K/V EinsumDense → ScaledDotProductAttention → EinsumDense "
        "({num_heads} heads × {key_dim})",
        "self",
        _build_multi_head_on_sdpa,
        reference="keras-mha",
    ),
    Variant(
        "keras-mha",
        "keras MultiHeadAttention",
        "MultiHeadAttention(num_heads={num_heads}, key_dim={key_dim})",
        "self",
        _build_keras_multi_head,
    ),
    Variant(
        "sdpa",
        "ScaledDotProductAttention",
        "ScaledDotProductAttention() on heads",
        "heads",
        _build_sdpa,
        reference="mha-core",
    ),
    Variant(
        "mha-core",
        "keras MHA attention core",
        "MultiHeadAttention._compute_attention on heads",
        "heads",
        _build_mha_core,
    ),
    Variant(
        "bahdanau",
        "BahdanauAttention",
        "BahdanauAttention({bahdanau_units})",
        "query-value",
        _build_bahdanau,
        reference="additive",
    ),
    Variant(
        "additive",
        "Dense + AdditiveAttention",
        "Dense({bahdanau_units}, use_bias=False) ×2 → AdditiveAttention()",
        "query-value",
        _build_dense_additive,
    ),
)
VARIANT_KEYS = tuple(variant.key for variant in VARIANTS)
_BY_KEY = {variant.key: variant for variant in VARIANTS}


def case_name(key, length):
    return f"{key}@{length}"


def parse_case(name):
    key, _, length = name.partition("@")
    return _BY_KEY[key], int(length)


# --- The step: forward and backward ----------------------------------------------------------


@dataclasses.dataclass
class Step:
    run: Callable[[], None]  # one forward + backward step, returning once it is done
    prepare: Callable[[], object]  # traces and compiles the step without running it
    # What the backend will run: the op types of TensorFlow's traced graph, or the size and
    # a fingerprint of XLA's optimised program. Two steps with the same program can differ
    # in time only by noise.
    program: Callable[[], dict]
    memory_analysis: Callable[[], dict] | None = None  # XLA's figures for the step (JAX)


# An instruction of XLA's optimised HLO text, and the debug metadata (source lines) to strip
# from it before comparing programs.
_HLO_INSTRUCTION = re.compile(r"\s*(ROOT )?%\S+ = ")
_HLO_METADATA = re.compile(r", metadata=\{[^}]*\}")


def build_model(keras, variant, length, settings):
    shapes = INPUTS[variant.inputs](settings, length)
    inputs = [
        keras.Input(shape, batch_size=settings.batch, name=name) for name, shape in shapes.items()
    ]
    outputs = variant.build(keras, inputs, settings)
    return keras.Model(inputs, outputs, name=variant.key.replace("-", "_"))


def make_inputs(keras, rng, variant, length, settings):
    shapes = INPUTS[variant.inputs](settings, length)
    return [
        keras.ops.convert_to_tensor(rng.standard_normal((settings.batch, *shape)).astype("float32"))
        for shape in shapes.values()
    ]


def gradient_step(keras, model, inputs, jit_compile):
    """The compiled forward + backward step of `model` on `inputs`, for the current backend.

    The loss is mean(output²); the step returns it and its gradients with respect to every
    trainable weight and every input.
    """
    backend = keras.backend.backend()
    if backend == "jax":
        return _jax_step(keras, model, inputs)
    if backend == "tensorflow":
        return _tensorflow_step(keras, model, inputs, jit_compile)
    raise SystemExit(f"benchmarks/attention.py supports TensorFlow and JAX, not {backend!r}")


def _jax_step(keras, model, inputs):
    import jax

    def loss(trainable, non_trainable, inputs):
        outputs, _ = model.stateless_call(trainable, non_trainable, inputs, training=True)
        return keras.ops.mean(keras.ops.square(outputs))

    value_and_grad = jax.jit(jax.value_and_grad(loss, argnums=(0, 2)))
    arguments = (
        [variable.value for variable in model.trainable_variables],
        [variable.value for variable in model.non_trainable_variables],
        list(inputs),
    )
    compiled = []

    def prepare():
        if not compiled:
            compiled.append(value_and_grad.lower(*arguments).compile())
        return compiled[0]

    def memory_analysis():
        stats = prepare().memory_analysis()
        return {
            field: getattr(stats, field)
            for field in (
                "argument_size_in_bytes",
                "output_size_in_bytes",
                "alias_size_in_bytes",
                "temp_size_in_bytes",
                "generated_code_size_in_bytes",
                "peak_memory_in_bytes",
            )
            if hasattr(stats, field)
        }

    def program():
        instructions = [
            _HLO_METADATA.sub("", line).strip()
            for line in prepare().as_text().splitlines()
            if _HLO_INSTRUCTION.match(line)
        ]
        digest = hashlib.sha256("\n".join(instructions).encode()).hexdigest()
        return {"hlo_instructions": len(instructions), "hlo_fingerprint": digest[:16]}

    return Step(
        run=lambda: jax.block_until_ready(prepare()(*arguments)),
        prepare=prepare,
        program=program,
        memory_analysis=memory_analysis,
    )


def _tensorflow_step(keras, model, inputs, jit_compile):
    import tensorflow as tf

    weights = model.trainable_variables
    inputs = list(inputs)

    @tf.function(jit_compile=jit_compile is True)
    def value_and_grad(inputs):
        with tf.GradientTape() as tape:
            tape.watch(inputs)
            loss = keras.ops.mean(keras.ops.square(model(inputs, training=True)))
        return loss, tape.gradient(loss, [weights, inputs])

    def run():
        loss, _ = value_and_grad(inputs)
        loss.numpy()  # a sync point, although TensorFlow runs functions synchronously on CPU

    def prepare():
        return value_and_grad.get_concrete_function(inputs)

    def program():
        # the graph as traced (forward and gradient ops), before Grappler rewrites it
        types = collections.Counter(op.type for op in prepare().graph.get_operations())
        return {"graph_ops": sum(types.values()), "graph_op_types": dict(sorted(types.items()))}

    return Step(run=run, prepare=prepare, program=program)


# --- Memory: fresh processes ----------------------------------------------------------------
#
# `python attention.py --worker xla|rss --cases ...` measures memory and writes JSON to the
# file given by --worker-output. The parent starts one XLA process (under JAX) for all cases
# and one resident-set process per case (under the timing backend).


def _worker(args):
    import keras
    import numpy as np

    settings = args.settings
    results = {}
    for name in args.cases.split(","):
        variant, length = parse_case(name)
        keras.utils.set_random_seed(settings.seed)
        rng = np.random.default_rng(settings.seed)
        model = build_model(keras, variant, length, settings)
        inputs = make_inputs(keras, rng, variant, length, settings)
        step = gradient_step(keras, model, inputs, settings.jit_compile)
        if args.worker == "xla":
            results[name] = {**step.memory_analysis(), **step.program()}
        else:
            results[name] = _resident_peak(step, settings.warmup_steps)
        results[name]["parameters"] = model.count_params()
        del model, inputs, step
        keras.backend.clear_session()
        gc.collect()
    record = {
        "backend": keras.backend.backend(),
        "backend_version": _timing.backend_version(keras.backend.backend()),
        "results": results,
    }
    if keras.backend.backend() == "jax":
        import jax

        record["jax_platform"] = jax.default_backend()
    _timing.write_atomic(args.worker_output, json.dumps(record))
    return 0


def _resident_peak(step, warmup_steps):
    """Peak resident memory of the steps above what the process held before the first one.

    The baseline is taken after tracing and compiling, before the first run: TensorFlow keeps
    freed tensors in its own pool, so the resident set after a run stays at that run's peak
    and a baseline taken then would hide the step's memory.
    """
    step.prepare()
    gc.collect()
    baseline = _timing.resident_bytes()
    if baseline is None or not _timing.reset_peak_resident():
        return {"error": "needs Linux /proc (VmRSS, VmHWM and clear_refs)"}
    for _ in range(1 + warmup_steps + RSS_STEPS):
        step.run()
    peak = _timing.peak_resident_bytes()
    return {"baseline_bytes": baseline, "peak_bytes": peak, "step_peak_bytes": peak - baseline}


def _run_worker(kind, cases, settings, environment, log):
    """Run one memory process; return case -> figures (or {"error": ...}) and its record."""
    with tempfile.TemporaryDirectory(prefix="attention-bench-") as directory:
        output = os.path.join(directory, "memory.json")
        command = [
            sys.executable,
            os.path.abspath(__file__),
            "--worker",
            kind,
            "--cases",
            ",".join(cases),
            "--worker-output",
            output,
            "--bahdanau-units",
            str(settings.bahdanau_units),
            "--seed",
            str(settings.seed),
            "--warmup",
            str(settings.warmup_steps),
            "--jit-compile",
            {True: "true", False: "false"}.get(settings.jit_compile, "auto"),
        ]
        completed = subprocess.run(
            command,
            env={**os.environ, **environment},
            capture_output=True,
            text=True,
            check=False,
        )
        if completed.returncode == 0 and os.path.exists(output):
            with open(output, encoding="utf-8") as file:
                record = json.load(file)
            return record.pop("results"), record
    error = _exception_line(completed.stderr) or f"exit status {completed.returncode}"
    if completed.returncode < 0:
        error = f"killed by signal {-completed.returncode} (out of memory?); {error}"
    log(f"memory ({kind}) failed for {', '.join(cases)}: {error}")
    stderr_tail = completed.stderr.strip().splitlines()[-20:]
    return {case: {"error": error, "stderr_tail": stderr_tail} for case in cases}, {}


def _exception_line(stderr):
    """The `SomeError: message` line of the last traceback in `stderr`, or None."""
    lines = stderr.strip().splitlines()
    for index in range(len(lines) - 1, -1, -1):
        if lines[index].startswith("Traceback"):
            return next(
                (line for line in lines[index + 1 :] if line and not line[0].isspace()), None
            )
    return lines[-1] if lines else None


def measure_memory(settings, log=print):
    """XLA's analysis of every case (one JAX process) and the resident peak (one per case)."""
    cases = [
        case_name(variant.key, length)
        for length in settings.lengths
        for variant in VARIANTS
        if variant.key in settings.variants
    ]
    memory = {case: {} for case in cases}
    record = {}
    if settings.memory in ("both", "xla"):
        log(f"memory: XLA analysis of {len(cases)} compiled steps under JAX")
        results, record["xla"] = _run_worker("xla", cases, settings, {"KERAS_BACKEND": "jax"}, log)
        for case, figures in results.items():
            if "error" not in figures:
                figures["step_peak_bytes"] = (
                    figures["argument_size_in_bytes"]
                    + figures["output_size_in_bytes"]
                    - figures["alias_size_in_bytes"]
                    + figures["temp_size_in_bytes"]
                )
            memory[case]["xla"] = figures
    if settings.memory in ("both", "rss"):
        # glibc otherwise keeps freed blocks of up to 32 MiB (from tracing and compiling) for
        # reuse, which the steps would then fill without raising the resident set; a fixed
        # threshold maps every block of 128 KiB or more on its own and returns it on free.
        environment = {"MALLOC_MMAP_THRESHOLD_": "131072"}
        record["rss"] = {"environment": environment}
        for index, case in enumerate(cases):
            log(f"memory: resident peak {index + 1}/{len(cases)} {case}")
            results, worker = _run_worker("rss", [case], settings, environment, log)
            memory[case]["rss"] = results[case]
            record["rss"].update(worker)
    return memory, record


# --- Timing ----------------------------------------------------------------------------------


def measure(settings, log=print):
    """Memory, then build, warm up and time every case; return the run record (JSON-able)."""
    memory, memory_record = measure_memory(settings, log) if settings.memory != "none" else ({}, {})

    import keras
    import numpy as np

    keras.utils.set_random_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    variants = [variant for variant in VARIANTS if variant.key in settings.variants]
    steps, built = {}, {}
    for length in settings.lengths:
        data = {}  # one set of inputs per input kind and length: a pair gets the same data
        for variant in variants:
            if variant.inputs not in data:
                data[variant.inputs] = make_inputs(keras, rng, variant, length, settings)
            name = case_name(variant.key, length)
            model = build_model(keras, variant, length, settings)
            step = gradient_step(keras, model, data[variant.inputs], settings.jit_compile)
            # the first step traces, and compiles under XLA
            first_step = _timing.warm_up(step.run, settings.warmup_steps)
            steps[name] = step.run
            built[name] = {
                "parameters": model.count_params(),
                "first_step_s": round(first_step, 3),
                "program": step.program(),
            }
            log(f"built {name:<18} first step {first_step:6.2f} s")

    steps_per_sample = {name: settings.steps_for(parse_case(name)[1]) for name in steps}
    timing = _timing.time_rounds(steps, settings, steps_per_sample, log)
    wall, cpu = timing.wall, timing.cpu

    measured = {
        "wall": wall,
        "cpu": cpu,
        "memory": memory,
        "built": built,
        "steps_per_sample": steps_per_sample,
    }
    results = [
        _result(variant, length, settings, measured)
        for length in settings.lengths
        for variant in variants
    ]

    environment = _timing.timing_environment(keras.backend.backend(), timing.load_before)
    return {
        "benchmark": "attention",
        "description": (
            "Milliseconds per forward + backward step (gradient of mean(output²) with respect "
            "to every weight and input) and peak memory of the step, at each query/key length; "
            "interleaved rounds; ratios are to each layer's reference at the same length in "
            "the same run."
        ),
        "variants": [
            {
                "key": variant.key,
                "label": variant.label,
                "layer": variant.describe(settings),
                "inputs": {
                    name: ["batch", *shape]
                    for name, shape in INPUTS[variant.inputs](settings, "T").items()
                },
                "reference": variant.reference,
            }
            for variant in variants
        ],
        "targets": {
            "time": f"median step time ≤ {TIME_TARGET} × the reference's",
            "memory": f"peak memory ≤ {MEMORY_TARGET} × the reference's",
            "memory_judged_on": _memory_judged_on(settings),
        },
        "settings": {
            **dataclasses.asdict(settings),
            "steps_per_sample_by_length": {
                str(length): settings.steps_for(length) for length in settings.lengths
            },
            "step": (
                "TensorFlow: tf.function(GradientTape: model(inputs, training=True) -> "
                "mean(square)) returning loss and gradients w.r.t. trainable weights and inputs; "
                "JAX: jax.jit(jax.value_and_grad(loss of model.stateless_call, "
                "argnums=(weights, inputs)))"
            ),
            "order": "shuffled every round, seeded by `seed`",
            "compilation": _compilation(keras.backend.backend(), settings.jit_compile),
        },
        "memory_method": {
            method: {"description": MEMORY_METHODS[method], **memory_record.get(method, {})}
            for method in ("xla", "rss")
            if settings.memory in (method, "both")
        },
        **_timing.record_outcome(environment, timing, results),
    }


def _compilation(backend, jit_compile):
    if backend == "jax":
        return "jax.jit (XLA)"
    return "tf.function with XLA" if jit_compile is True else "tf.function, no XLA"


def _memory_judged_on(settings):
    return {"both": "xla", "xla": "xla", "rss": "rss", "none": None}[settings.memory]


def _result(variant, length, settings, measured):
    """The record of one case; `measured` holds every case's figures, keyed by case name."""
    name = case_name(variant.key, length)
    reference = case_name(variant.reference or variant.key, length)
    wall, reference_wall = measured["wall"][name], measured["wall"][reference]
    cpu, reference_cpu = measured["cpu"][name], measured["cpu"][reference]
    memory = measured["memory"].get(name, {})
    reference_memory = measured["memory"].get(reference, {})
    built, reference_built = measured["built"][name], measured["built"][reference]

    wall_figures, cpu_figures = _timing.against_reference(wall, cpu, reference_wall, reference_cpu)
    ratio = wall_figures["ratio"]
    entry = {
        "key": variant.key,
        "label": variant.label,
        "layer": variant.describe(settings),
        "length": length,
        "reference": variant.reference,
        **built,
        "steps_per_sample": measured["steps_per_sample"][name],
        **wall_figures,
        **cpu_figures,
        "memory": memory,
    }
    for method in ("xla", "rss"):
        mine = memory.get(method, {}).get("step_peak_bytes")
        theirs = reference_memory.get(method, {}).get("step_peak_bytes")
        entry[f"{method}_memory_ratio"] = mine / theirs if mine and theirs else None
    if variant.reference is None:
        entry.update(program_vs_reference=None, time_passed=None, memory_passed=None, passed=None)
        return entry

    entry["program_vs_reference"] = {
        "xla": _program_difference(memory.get("xla", {}), reference_memory.get("xla", {})),
        "timing_backend": _program_difference(built["program"], reference_built["program"]),
    }
    judged_on = _memory_judged_on(settings)
    memory_ratio = entry[f"{judged_on}_memory_ratio"] if judged_on else None
    entry["time_passed"] = ratio <= TIME_TARGET
    # A memory figure that could not be measured fails the target rather than passing it.
    entry["memory_passed"] = (
        None if judged_on is None else memory_ratio is not None and memory_ratio <= MEMORY_TARGET
    )
    entry["passed"] = entry["time_passed"] and entry["memory_passed"] is not False
    return entry


def _program_difference(mine, theirs):
    """How one step's program differs from its reference's, in words; None if unknown."""
    if "hlo_fingerprint" in mine and "hlo_fingerprint" in theirs:
        if mine["hlo_fingerprint"] == theirs["hlo_fingerprint"]:
            return "same XLA program"
        return (
            f"different XLA program ({mine['hlo_instructions']} instructions against "
            f"{theirs['hlo_instructions']})"
        )
    if "graph_op_types" in mine and "graph_op_types" in theirs:
        mine, theirs = (collections.Counter(p["graph_op_types"]) for p in (mine, theirs))
        extra = [f"+{count} {op}" for op, count in sorted((mine - theirs).items())]
        missing = [f"−{count} {op}" for op, count in sorted((theirs - mine).items())]
        if not extra and not missing:
            return "same TensorFlow graph ops"
        return "TensorFlow graph ops " + ", ".join(extra + missing)
    return None


# --- Report ----------------------------------------------------------------------------------


def tables(record):
    """One Markdown table per pair: the layer and its reference at every length."""
    results = record["results"]
    sections = []
    for variant in record["variants"]:
        if variant["reference"] is None:
            continue
        keys = (variant["key"], variant["reference"])
        rows = [
            _row(entry)
            for length in record["settings"]["lengths"]
            for key in keys
            for entry in results
            if entry["key"] == key and entry["length"] == length
        ]
        reference = next(v for v in record["variants"] if v["key"] == variant["reference"])
        sections.append(
            f"### {variant['label']} against {reference['label']}\n\n"
            f"`{variant['layer']}` against `{reference['layer']}`.\n\n"
            + _timing.markdown_table(_HEADERS, rows)
        )
    return "\n\n".join(sections)


_HEADERS = (
    "layer",
    "T",
    "ms/step (median)",
    "IQR (ms)",
    "× ref",
    "× per round: median (min–max)",
    "CPU ×",
    "XLA peak (MiB)",
    "XLA ×",
    "RSS peak (MiB)",
    "RSS ×",
    "result",
)


def _row(entry):
    ms, per_round = entry["ms_per_step"], entry["ratio_per_round"]
    return (
        entry["label"],
        entry["length"],
        f"{ms['median']:.1f}",
        f"{ms['q1']:.1f}–{ms['q3']:.1f}",
        f"{entry['ratio']:.2f}×",
        _timing.spread(per_round),
        f"{entry['cpu_ratio']:.2f}×",
        _mebibytes(entry["memory"].get("xla")),
        _times(entry["xla_memory_ratio"]),
        _mebibytes(entry["memory"].get("rss")),
        _times(entry["rss_memory_ratio"]),
        _verdict(entry),
    )


def _mebibytes(figures):
    if not figures:
        return "—"
    if "error" in figures:
        return "error"
    return f"{figures['step_peak_bytes'] / MiB:.1f}"


def _times(ratio):
    return "—" if ratio is None else f"{ratio:.2f}×"


def _verdict(entry):
    if entry["reference"] is None:
        return "reference"
    failed = [aspect for aspect in ("time", "memory") if entry[f"{aspect}_passed"] is False]
    return "PASS" if not failed else f"FAIL ({', '.join(failed)})"


def verdicts(record):
    """One PASS/FAIL line per layer and length."""
    lines = []
    judged_on = record["targets"]["memory_judged_on"]
    for entry in record["results"]:
        if entry["reference"] is None:
            continue
        memory = entry[f"{judged_on}_memory_ratio"] if judged_on else None
        if judged_on is None:
            memory_text = "memory not measured"
        elif memory is None:
            memory_text = f"{judged_on.upper()} memory n/a"
        else:
            memory_text = f"{judged_on.upper()} memory {memory:.2f}×"
        programs = [text for text in entry["program_vs_reference"].values() if text]
        lines.append(
            f"{'PASS' if entry['passed'] else 'FAIL'}: {entry['label']} at T={entry['length']} "
            f"against {_label(record, entry['reference'])}: time {entry['ratio']:.2f}×, "
            f"{memory_text} (targets ≤ {TIME_TARGET:.2f}×, ≤ {MEMORY_TARGET:.2f}×)"
            + (f"; {', '.join(dict.fromkeys(programs))}" if programs else "")
        )
    return lines


def _label(record, key):
    return next(variant["label"] for variant in record["variants"] if variant["key"] == key)


def markdown(record):
    settings, environment = record["settings"], record["environment"]
    xla = record["memory_method"].get("xla", {})
    rss = record["memory_method"].get("rss", {})
    steps = ", ".join(
        f"{_timing.plural(count, 'step')} at T={length}"
        for length, count in settings["steps_per_sample_by_length"].items()
    )
    lines = _timing.markdown_preamble(
        "Attention layers: forward + backward time and peak memory", record
    )
    lines += [
        f"- Shapes: batch {settings['batch']}, query and key length T, model dimension "
        f"{settings['model_dim']}, {settings['num_heads']} heads × {settings['key_dim']}; "
        f"Bahdanau and additive attention with {settings['bahdanau_units']} units. "
        "Inputs are the same for a layer and its reference.",
        "- One step: forward pass and the gradients of mean(output²) with respect to every "
        "weight and input, compiled (a `tf.function` with a GradientTape on TensorFlow, "
        "`jax.jit(jax.value_and_grad(...))` on JAX).",
        f"- Timing: {_timing.plural(settings['rounds'], 'round')}; a sample is {steps}; the "
        "cases in a new random order each round, after "
        f"{_timing.plural(settings['warmup_steps'], 'warm-up step')} "
        "(the first step, which traces and compiles, is not timed).",
        f"- {_timing.keras_on_backend(environment)}, the step compiled by "
        f"{settings['compilation']} "
        f"(`--jit-compile {str(settings['jit_compile']).lower()}`).",
        _timing.machine_line(environment),
        "- XLA peak: XLA's memory analysis of the compiled step under JAX "
        f"{xla.get('backend_version', '')} ({xla.get('jax_platform', 'n/a')}): inputs and "
        "weights + loss and gradients + XLA's temporary buffer. Exact for the compiled "
        "program; the memory target is judged on it.",
        "- RSS peak: the rise of the resident set of a fresh process while it runs the step "
        f"{_timing.plural(1 + settings['warmup_steps'] + RSS_STEPS, 'time')} under "
        f"{rss.get('backend', 'the timing backend')}, from after tracing and compilation. A "
        "check, not judged: it also counts what a first run sets up, and is noisy by a few MiB.",
        "",
        f"Targets at every length: at most {TIME_TARGET:.1f}× the reference's median time and "
        f"no more than its peak memory. × columns divide by the reference at the same length "
        "in the same run; the per-round column divides each round's time by the reference's in "
        "that round, and its spread shows the noise. CPU × is the ratio of medians in CPU time "
        "of the process (all threads), which waiting for a core inflates less than wall time.",
    ]
    return _timing.markdown_document(lines, [tables(record)], verdicts(record))


# --- Command line ----------------------------------------------------------------------------


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Time forward + backward and measure peak memory of keras_seq's attention "
        "layers against Keras's.",
    )
    _timing.add_timing_arguments(
        parser,
        per="case",
        steps=2,
        steps_help="steps per sample at the longest length; a length L gets longest/L times as "
        "many (default 2)",
        warmup=2,
    )
    parser.add_argument(
        "--lengths",
        help=f"comma-separated query/key lengths (default {','.join(map(str, LENGTHS))})",
    )
    parser.add_argument(
        "--bahdanau-units",
        type=int,
        default=32,
        help="units of BahdanauAttention and of the reference's projections (default 32)",
    )
    _timing.add_seed_argument(parser)
    _timing.add_jit_compile_argument(
        parser,
        'TensorFlow only: "true" compiles the step with XLA (default "auto": no XLA on '
        "CPU, as Keras does); JAX always compiles with XLA",
    )
    parser.add_argument(
        "--memory",
        choices=("both", "xla", "rss", "none"),
        default="both",
        help="how to measure peak memory (default both; the target is judged on XLA's)",
    )
    parser.add_argument(
        "--variants",
        help=f"comma-separated subset of {', '.join(VARIANT_KEYS)}; a layer's reference "
        "always runs with it",
    )
    _timing.add_output_arguments(
        parser, "attention", quick_help=f"{_timing.QUICK_HELP}, length 128 unless --lengths"
    )
    # A memory process started by this script.
    parser.add_argument("--worker", choices=("xla", "rss"), help=argparse.SUPPRESS)
    parser.add_argument("--cases", help=argparse.SUPPRESS)
    parser.add_argument("--worker-output", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    _timing.apply_quick(parser, args, measurement=not args.worker)
    if args.steps < 1 or args.warmup < 0 or args.bahdanau_units < 1:
        parser.error("--steps and --bahdanau-units must be at least 1 and --warmup at least 0")
    if args.lengths:
        lengths = _timing.parse_integers(parser, "--lengths", args.lengths)
        if not lengths or min(lengths) < 1:
            parser.error(f"--lengths must be positive integers, got {args.lengths!r}")
    else:
        lengths = (128,) if args.quick else LENGTHS
    keys = VARIANT_KEYS
    if args.variants:
        chosen = _timing.parse_choices(parser, "--variants", args.variants, VARIANT_KEYS)
        chosen |= {_BY_KEY[key].reference for key in chosen if _BY_KEY[key].reference}
        keys = tuple(key for key in VARIANT_KEYS if key in chosen)
    args.settings = Settings(
        bahdanau_units=args.bahdanau_units,
        lengths=tuple(sorted(set(lengths))),
        rounds=args.rounds,
        steps_per_sample=args.steps,
        warmup_steps=args.warmup,
        seed=args.seed,
        jit_compile=_timing.jit_compile(args.jit_compile),
        memory=args.memory,
        quick=args.quick,
        variants=keys,
    )
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        _timing.quiet_tensorflow()
        return _worker(args)
    return _timing.measure_and_report(
        args, measure, stem="attention", markdown=markdown, tables=(tables,), verdicts=verdicts
    )


if __name__ == "__main__":
    sys.exit(main())
