"""keras_seq against what a user would pick instead: PyTorch's own modules, in one process.

Each case pairs keras_seq's layer (and Keras's own, where it has one) with the PyTorch
module a user would reach for, on the same shapes, in the same small model, and times one
training step of each (forward, loss, backward, Adam update), interleaved: every round runs
every model a few steps in a new random order, so a drift of the machine lands on all of
them alike. The table gives the median seconds per step and the ratio to PyTorch's in the
same run (below 1: keras_seq is faster).

Cases (PyTorch 2.x modules, `batch_first`, no dropout):

- LSTM, B 64 × T 100 × 32 → 128, a linear head on the last state: `CECLSTM(forget_gate=True)`,
  the 1997 `CECLSTM`, `keras.layers.LSTM` against `torch.nn.LSTM`.
- The same LSTMs on right-padded sequences of 50 to 100 steps (lengths drawn uniformly, the
  padding zeros): Keras's models read a `Masking` layer's mask, PyTorch's LSTM the packed
  sequences (`pack_padded_sequence`), the head on each sequence's last real state.
- Transformer encoder block, B 8 × L {128, 512} × 256, 8 heads, ff 1024, post-LN, ReLU, the
  mean over time into a linear head: `TransformerEncoderBlock` against
  `torch.nn.TransformerEncoderLayer`.
- Transformer decoder block, the same sizes with a causal mask and cross-attention to a
  memory of the same length: `TransformerDecoderBlock` against
  `torch.nn.TransformerDecoderLayer`.
- Bahdanau attention, one query `(B 64, 128)` over `S 50` values of 128, 128 units:
  `BahdanauAttention` against the same equations written with `torch.nn.Linear`
  (`e_j = vᵀ tanh(W q + U h_j)`, softmax, `Σ α_j h_j`; PyTorch has no such module).
- Greedy decoding, tokens per second: an `RNNSeq2Seq` (GRU 128, Bahdanau, vocabularies of
  1,000, embeddings of 64) through `compile_decoder`, against the same decoder written as a
  PyTorch loop (`nn.GRUCell`, the attention above, `argmax`) under `torch.inference_mode`;
  B 64, source 30, exactly 30 output tokens (no END), random weights.

On TensorFlow every keras_seq and Keras model is timed twice: as Keras compiles it by
default (a `tf.function`, no XLA on a CPU) and with `jit_compile=True` (`+XLA`), the
`train.jit_compile: true` of a spec.

Run from the repository root (Keras's backend is KERAS_BACKEND's; PyTorch is imported
beside it):

    python benchmarks/peers.py             # 7 rounds, a few minutes on 2 CPU cores
    python benchmarks/peers.py --quick     # smoke run; not a measurement
    KERAS_BACKEND=jax python benchmarks/peers.py --output-dir benchmarks/results/jax
    python benchmarks/peers.py --groups encoder --rounds 21 --output-dir /tmp/encoder

`--groups PATTERN` times only the groups whose name matches the regular expression (case
not minded), each with its PyTorch reference: more rounds of the cases you care about in
the same time, and fewer other models in memory between them.

Writes benchmarks/results/peers.json (every sample and the environment) and
benchmarks/results/peers.md (the table).
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import re

import _timing

RESULTS_DIR = _timing.RESULTS_DIR


@dataclasses.dataclass(frozen=True)
class Settings:
    rounds: int = 7
    steps_per_sample: int = 3
    warmup_steps: int = 2
    seed: int = 0
    quick: bool = False
    lengths: tuple[int, ...] = (128, 512)
    groups: str | None = None  # a regular expression: only the groups it matches


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="Time keras_seq's layers against PyTorch's.")
    _timing.add_timing_arguments(
        parser,
        per="model",
        steps=3,
        steps_help="training steps timed per sample (default 3)",
        warmup=2,
    )
    _timing.add_seed_argument(parser)
    parser.add_argument(
        "--groups",
        metavar="PATTERN",
        help="time only the groups whose name matches this regular expression (e.g. encoder)",
    )
    _timing.add_output_arguments(parser, "peers")
    args = parser.parse_args(argv)
    if args.groups is not None:
        try:
            re.compile(args.groups)
        except re.error as error:
            parser.error(f"--groups: {args.groups!r} is not a regular expression ({error})")
    _timing.apply_quick(parser, args)
    args.settings = Settings(
        rounds=args.rounds,
        steps_per_sample=args.steps,
        warmup_steps=args.warmup,
        seed=args.seed,
        quick=args.quick,
        lengths=(32,) if args.quick else (128, 512),
        groups=args.groups,
    )
    return args


# ----------------------------------------------------------------------------- Keras side


def _keras_step(keras, inputs, outputs, x, y, jit_compile="auto"):
    """A compiled Keras model's training step on the fixed batch `(x, y)`.

    `jit_compile="auto"` is Keras's default (XLA with JAX, and with TensorFlow on a GPU
    only); `True` compiles the step with XLA on every backend that has it.
    """
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam(), loss="mse", jit_compile=jit_compile)
    return functools.partial(model.train_on_batch, x, y), model.count_params()


def keras_recurrent(keras, make_layer, x, y, jit_compile="auto"):
    inputs = keras.Input(x.shape[1:])
    outputs = keras.layers.Dense(1)(make_layer()(inputs))
    return _keras_step(keras, inputs, outputs, x, y, jit_compile)


def keras_recurrent_masked(keras, make_layer, x, y, jit_compile="auto"):
    """As `keras_recurrent`, the layer reading the mask of the all-zero (padded) steps."""
    inputs = keras.Input(x.shape[1:])
    masked = keras.layers.Masking(0.0)(inputs)
    outputs = keras.layers.Dense(1)(make_layer()(masked))
    return _keras_step(keras, inputs, outputs, x, y, jit_compile)


def keras_encoder(keras, x, y, jit_compile="auto"):
    from keras_seq import layers

    inputs = keras.Input(x.shape[1:])
    hidden = layers.TransformerEncoderBlock(num_heads=8, ff_dim=1024)(inputs)
    pooled = keras.layers.GlobalAveragePooling1D()(hidden)
    return _keras_step(keras, inputs, keras.layers.Dense(1)(pooled), x, y, jit_compile)


def keras_decoder(keras, x, memory, y, jit_compile="auto"):
    from keras_seq import layers

    target = keras.Input(x.shape[1:])
    source = keras.Input(memory.shape[1:])
    hidden = layers.TransformerDecoderBlock(num_heads=8, ff_dim=1024)(target, source)
    pooled = keras.layers.GlobalAveragePooling1D()(hidden)
    outputs = keras.layers.Dense(1)(pooled)
    return _keras_step(keras, [target, source], outputs, [x, memory], y, jit_compile)


def keras_bahdanau(keras, query, values, y, jit_compile="auto"):
    from keras_seq import layers

    q = keras.Input(query.shape[1:])
    v = keras.Input(values.shape[1:])
    context = layers.BahdanauAttention(128)(q, v)
    outputs = keras.layers.Dense(1)(context)
    return _keras_step(keras, [q, v], outputs, [query, values], y, jit_compile)


# ---------------------------------------------------------------------------- PyTorch side


def _torch_step(torch, model, inputs, y):
    """One training step of `model` on the fixed batch: forward, MSE, backward, Adam."""
    optimizer = torch.optim.Adam(model.parameters())
    loss_fn = torch.nn.MSELoss()

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(*inputs), y)
        loss.backward()
        optimizer.step()

    return step, sum(p.numel() for p in model.parameters())


def torch_models(torch):
    """The PyTorch models of the cases (classes made once torch is imported)."""
    nn = torch.nn

    class LastState(nn.Module):
        def __init__(self, features, units):
            super().__init__()
            self.lstm = nn.LSTM(features, units, batch_first=True)
            self.head = nn.Linear(units, 1)

        def forward(self, x):
            _, (h, _) = self.lstm(x)
            return self.head(h[-1])

    class PackedLastState(LastState):
        """`LastState` on packed right-padded sequences: the state after each one's end."""

        def forward(self, x, lengths):
            packed = nn.utils.rnn.pack_padded_sequence(
                x, lengths, batch_first=True, enforce_sorted=False
            )
            _, (h, _) = self.lstm(packed)
            return self.head(h[-1])

    class Encoder(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.block = nn.TransformerEncoderLayer(d, 8, 1024, dropout=0.0, batch_first=True)
            self.head = nn.Linear(d, 1)

        def forward(self, x):
            return self.head(self.block(x).mean(dim=1))

    class Decoder(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.block = nn.TransformerDecoderLayer(d, 8, 1024, dropout=0.0, batch_first=True)
            self.head = nn.Linear(d, 1)

        def forward(self, x, memory):
            mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
            return self.head(self.block(x, memory, tgt_mask=mask, tgt_is_causal=True).mean(dim=1))

    class Additive(nn.Module):
        """Bahdanau et al. (2015): e_j = vᵀ tanh(W q + U h_j), α = softmax(e), c = Σ α_j h_j."""

        def __init__(self, query_dim, value_dim, units):
            super().__init__()
            self.w = nn.Linear(query_dim, units, bias=False)
            self.u = nn.Linear(value_dim, units, bias=False)
            self.v = nn.Linear(units, 1, bias=False)

        def forward(self, query, values, projected=None):
            keys = self.u(values) if projected is None else projected
            scores = self.v(torch.tanh(self.w(query)[:, None] + keys)).squeeze(-1)
            return (torch.softmax(scores, dim=-1)[..., None] * values).sum(dim=1)

    class AttentionHead(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.attention = Additive(d, d, 128)
            self.head = nn.Linear(d, 1)

        def forward(self, query, values):
            return self.head(self.attention(query, values))

    class GreedyDecoder(nn.Module):
        """The RNNSeq2Seq decoder step by step: GRU encoder, GRUCell with Bahdanau attention."""

        def __init__(self, vocab, embed, units):
            super().__init__()
            self.source_embedding = nn.Embedding(vocab, embed)
            self.target_embedding = nn.Embedding(vocab, embed)
            self.encoder = nn.GRU(embed, units, batch_first=True)
            self.attention = Additive(units, units, units)
            self.cell = nn.GRUCell(embed + units, units)
            self.output = nn.Linear(2 * units, vocab)

        def forward(self, source, length):
            memory, h = self.encoder(self.source_embedding(source))
            h = h[0]
            keys = self.attention.u(memory)  # projected once per sentence
            token = torch.ones(source.shape[0], dtype=torch.long)  # START
            tokens = []
            for _ in range(length):
                context = self.attention(h, memory, keys)
                h = self.cell(torch.cat([self.target_embedding(token), context], dim=-1), h)
                context = self.attention(h, memory, keys)
                token = self.output(torch.cat([h, context], dim=-1)).argmax(dim=-1)
                tokens.append(token)
            return torch.stack(tokens, dim=1)

    return LastState, PackedLastState, Encoder, Decoder, AttentionHead, GreedyDecoder


# ------------------------------------------------------------------------------- the cases


def build_cases(settings, log):
    """Case name -> (step function, parameters, group, reference name, tokens per step)."""
    import keras
    import numpy as np
    import torch

    from keras_seq import layers
    from keras_seq.models import RNNSeq2Seq
    from keras_seq.models.decoding import compile_decoder

    keras.utils.set_random_seed(settings.seed)
    torch.manual_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    LastState, PackedLastState, Encoder, Decoder, AttentionHead, GreedyDecoder = torch_models(torch)

    def arrays(*shape):
        value = rng.standard_normal(shape).astype("float32")
        return keras.ops.convert_to_tensor(value), torch.from_numpy(value)

    cases = {}
    # TensorFlow leaves XLA off on a CPU by default; each keras_seq model is timed both ways.
    xla = keras.backend.backend() == "tensorflow"

    def selected(group):
        return settings.groups is None or re.search(settings.groups, group, re.IGNORECASE)

    def add(group, name, made, reference, tokens=None):
        if selected(group):
            step, parameters = made
            cases[name] = (step, parameters, group, reference, tokens)

    def add_keras(group, name, make, reference):
        """A Keras case, and on TensorFlow the same model with `jit_compile=True` (`+XLA`)."""
        if not selected(group):
            return  # not built
        add(group, name, make("auto"), reference)
        if xla:
            add(group, f"{name} +XLA", make(True), reference)

    batch, time_steps = (8, 20) if settings.quick else (64, 100)
    x, x_t = arrays(batch, time_steps, 32)
    y, y_t = arrays(batch, 1)
    group = f"LSTM B{batch}×T{time_steps}×32→128"
    ref = "torch.nn.LSTM"
    add(group, ref, _torch_step(torch, LastState(32, 128), (x_t,), y_t), ref)

    def add_lstms(group, suffix, model, x, reference):
        for label, make_layer in (
            ("CECLSTM forget", lambda: layers.CECLSTM(128, forget_gate=True)),
            ("CECLSTM 1997", lambda: layers.CECLSTM(128)),
            ("keras LSTM", lambda: keras.layers.LSTM(128)),
        ):
            add_keras(
                group,
                label + suffix,
                lambda jit, make_layer=make_layer: model(keras, make_layer, x, y, jit),
                reference,
            )

    add_lstms(group, "", keras_recurrent, x, ref)

    # Right-padded: each sequence's steps past its length are zeros (the mask).
    lengths = rng.integers(time_steps // 2, time_steps + 1, size=batch)
    padded = keras.ops.convert_to_numpy(x) * (np.arange(time_steps) < lengths[:, None])[..., None]
    x, x_t = keras.ops.convert_to_tensor(padded), torch.from_numpy(padded)
    group = f"LSTM right-padded B{batch}×T{time_steps // 2}–{time_steps}×32→128"
    ref = "torch.nn.LSTM packed"
    packed_model = PackedLastState(32, 128)
    add(group, ref, _torch_step(torch, packed_model, (x_t, torch.from_numpy(lengths)), y_t), ref)
    add_lstms(group, ", masked", keras_recurrent_masked, x, ref)

    d = 256
    for length in settings.lengths:
        x, x_t = arrays(8, length, d)
        memory, memory_t = arrays(8, length, d)
        y, y_t = arrays(8, 1)
        group = f"encoder block B8×L{length}×{d}"
        ref = f"torch encoder L{length}"
        add(group, ref, _torch_step(torch, Encoder(d), (x_t,), y_t), ref)
        add_keras(
            group,
            f"TransformerEncoderBlock L{length}",
            lambda jit, x=x, y=y: keras_encoder(keras, x, y, jit),
            ref,
        )
        group = f"decoder block B8×L{length}×{d}"
        ref = f"torch decoder L{length}"
        add(group, ref, _torch_step(torch, Decoder(d), (x_t, memory_t), y_t), ref)
        add_keras(
            group,
            f"TransformerDecoderBlock L{length}",
            lambda jit, x=x, memory=memory, y=y: keras_decoder(keras, x, memory, y, jit),
            ref,
        )

    query, query_t = arrays(64, 128)
    values, values_t = arrays(64, 50, 128)
    y, y_t = arrays(64, 1)
    group = "Bahdanau B64, S50, 128"
    ref = "torch additive"
    add(group, ref, _torch_step(torch, AttentionHead(128), (query_t, values_t), y_t), ref)
    add_keras(
        group,
        "BahdanauAttention",
        lambda jit: keras_bahdanau(keras, query, values, y, jit),
        ref,
    )

    group = "greedy decoding B64, 30 tokens"
    if selected(group):  # the decoders are built only when timed
        vocab, source_length, length = 1000, 30, 30
        source = rng.integers(3, vocab, size=(64, source_length)).astype("int32")
        model = RNNSeq2Seq(
            vocab, vocab, cell="gru", units=128, attention="bahdanau", embedding_dim=64
        )
        decode = compile_decoder(model, length, end_token=None)
        source_keras = keras.ops.convert_to_tensor(source)
        decoder = GreedyDecoder(vocab, 64, 128).eval()
        source_torch = torch.from_numpy(source.astype("int64"))

        def torch_greedy():
            with torch.inference_mode():
                decoder(source_torch, length)

        def keras_greedy():
            keras.ops.convert_to_numpy(decode(source_keras).ids)

        ref = "torch greedy loop"
        tokens = 64 * length
        params = sum(p.numel() for p in decoder.parameters())
        add(group, ref, (torch_greedy, params), ref, tokens)
        add(group, "RNNSeq2Seq compile_decoder", (keras_greedy, model.count_params()), ref, tokens)

    if not cases:
        raise SystemExit(f"--groups: {settings.groups!r} matches no group of cases")
    for name, (step, *_rest) in cases.items():
        first = _timing.warm_up(step, settings.warmup_steps)
        log(f"built {name:<36} first step {first:6.2f} s")
    return cases


def measure(settings, log=print):
    import keras
    import torch

    cases = build_cases(settings, log)
    steps = {name: case[0] for name, case in cases.items()}
    timing = _timing.time_rounds(steps, settings, settings.steps_per_sample, log)
    results = []
    for name, (_, parameters, group, reference, tokens) in cases.items():
        wall, cpu = _timing.against_reference(
            timing.wall[name], timing.cpu[name], timing.wall[reference], timing.cpu[reference]
        )
        entry = {"group": group, "case": name, "reference": reference, "parameters": parameters}
        entry["passed"] = None  # no target: a measurement to compare against
        entry.update(wall)
        entry.update(cpu)
        if tokens:
            entry["tokens_per_s"] = round(tokens / (wall["ms_per_step"]["median"] / 1000), 1)
        results.append(entry)
    environment = _timing.timing_environment(keras.backend.backend(), timing.load_before)
    environment["torch_threads"] = torch.get_num_threads()
    return {
        "benchmark": "peers",
        "description": (
            "Milliseconds per training step (forward, MSE, backward, Adam) of keras_seq's "
            "layers, Keras's, and PyTorch's modules on the same shapes, interleaved in one "
            "process; ratios are to the PyTorch model of the same case. Greedy decoding: "
            "milliseconds per batch decode and tokens per second."
        ),
        "settings": dataclasses.asdict(settings),
        **_timing.record_outcome(environment, timing, results),
    }


def markdown(record):
    lines = _timing.markdown_preamble("keras_seq against PyTorch's modules", record)
    environment = record["environment"]
    lines += [
        f"{_timing.keras_on_backend(environment)}, PyTorch "
        f"{environment['packages'].get('torch')} ({environment['torch_threads']} threads).",
        _timing.machine_line(environment),
        "",
    ]
    if record["settings"].get("groups"):
        lines += [f"Only the groups matching `{record['settings']['groups']}` (`--groups`).", ""]
    rows = []
    for entry in record["results"]:
        tokens = entry.get("tokens_per_s")
        reference = entry["case"] == entry["reference"]
        rows.append(
            [
                entry["group"],
                entry["case"],
                f"{entry['parameters']:,}",
                f"{entry['ms_per_step']['median']:.1f}",
                "reference" if reference else f"{entry['ratio']:.2f}×",
                "—" if reference else _timing.spread(entry["ratio_per_round"]),
                f"{entry['cpu_ratio']:.2f}×",
                "" if tokens is None else f"{tokens:,.0f}",
            ]
        )
    lines.append(
        _timing.markdown_table(
            [
                "case",
                "model",
                "params",
                "ms/step (median)",
                "× PyTorch",
                "× per round: median (min–max)",
                "CPU ×",
                "tokens/s",
            ],
            rows,
        )
    )
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = parse_args(argv)
    _timing.quiet_tensorflow()
    record = measure(args.settings)
    text = markdown(record)
    print(text)
    for path in _timing.write_results("peers", record, text, args.output_dir):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
