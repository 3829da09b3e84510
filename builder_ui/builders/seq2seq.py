"""`seq2seq`: an encoder–decoder from source token ids to target token ids.

Built by `keras_seq.models.seq2seq`. `architecture` is a section of its own,
discriminated by its `type`, holding only that architecture's fields:
`{type: rnn, ...}` is the model of Sutskever et al. (2014), with the attention
of Bahdanau et al. (2015) or Luong et al. (2015) as options;
`{type: transformer, ...}` is the encoder–decoder Transformer of Vaswani et
al. (2017). `architecture: transformer` alone takes that architecture's
defaults, so `--set model.architecture=transformer` or a sweep over
`model.architecture: [rnn, transformer]` switches between them.

The Transformer is a short form of a graph (`short_forms`): its encoder block
by block and its decoder one `TransformerDecoder` block, built, checked and
counted by the graph builder's walk (`graph.ShortFormBuilder`), so it opens on
the canvas as the model it trains. The RNN architecture is built by
`keras_seq.models.RNNSeq2Seq` (`short_forms.seq2seq_nodes` opens it as a graph).
Training and scoring (teacher forcing, BLEU, exact match) are `translating`'s.

Spec example:

    task: {type: toy_translation, n: 2000, max_len: 12}
    model:
      type: seq2seq
      architecture: {type: rnn, cell: gru, units: 64, attention: bahdanau}
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from builder_ui.builders import memory
from builder_ui.builders.fields import Layers, Rate, Units
from builder_ui.builders.graph import ShortFormBuilder
from builder_ui.builders.registry import register_model
from builder_ui.builders.translating import Translating
from builder_ui.specs import ModelParams, StrictModel, TypeShorthand

ATTENTIONS = ("bahdanau", "luong_dot", "luong_general", "luong_concat")
LUONG = ("luong_dot", "luong_general", "luong_concat")
MAX_LAYER_PARAMS = 2**31  # keras_seq.validation.MAX_LAYER_PARAMS


class RNNArchitecture(StrictModel):
    """The RNN encoder–decoder (`keras_seq.models.RNNSeq2Seq`).

    Args:
        cell: `simple`, `gru`, `lstm` or `cec_lstm` (the 1997 LSTM).
        units: Width of the encoder and the decoder (a bidirectional
            encoder has `units / 2` per direction).
        bidirectional: Read the source both ways.
        attention: null (the fixed context vector of Sutskever et al. 2014),
            `bahdanau` (additive) or `luong_dot` / `luong_general` /
            `luong_concat` (multiplicative).
        attention_units: Width of the additive score (`bahdanau`,
            `luong_concat`); null for `units`.
        input_feeding: Feed the attentional vector into the next step (Luong).
        embedding_dim: Width of the token vectors.
    """

    type: Literal["rnn"] = "rnn"
    cell: Literal["simple", "gru", "lstm", "cec_lstm"] = "lstm"
    units: Units = 64
    bidirectional: bool = False
    attention: Literal["bahdanau", "luong_dot", "luong_general", "luong_concat"] | None = None
    attention_units: Units | None = None
    input_feeding: bool = False
    embedding_dim: Units = 64

    @model_validator(mode="after")
    def _options_fit(self) -> RNNArchitecture:
        if self.bidirectional and self.units % 2:
            raise ValueError(
                f"units: expected an even number with bidirectional: true (each direction "
                f"has units / 2), got {self.units}"
            )
        if self.attention_units is not None and self.attention not in ("bahdanau", "luong_concat"):
            raise ValueError(
                "attention_units: only with attention 'bahdanau' or 'luong_concat', got "
                f"attention {self.attention!r}"
            )
        if self.input_feeding and self.attention not in LUONG:
            raise ValueError(
                "input_feeding: only with a Luong attention (luong_dot, luong_general, "
                f"luong_concat), got attention {self.attention!r}"
            )
        return self


class TransformerArchitecture(StrictModel):
    """The Transformer encoder–decoder (`keras_seq.models.TransformerSeq2Seq`).

    Args:
        embedding_dim: `d_model`, the width of every token vector.
        num_heads: Attention heads; must divide `embedding_dim`.
        ff_dim: Inner size of each block's feed-forward network.
        norm_first: Pre-LN blocks instead of the paper's post-LN.
        max_length: Longest sequence the positions cover.
        positions: `sinusoidal` (fixed) or `learned`.
    """

    type: Literal["transformer"] = "transformer"
    embedding_dim: Units = 64
    num_heads: Units = 4
    ff_dim: Units = 128
    norm_first: bool = False
    max_length: Annotated[int, Field(ge=1, le=2**20)] = 128
    positions: Literal["sinusoidal", "learned"] = "sinusoidal"

    @model_validator(mode="after")
    def _heads_divide_width(self) -> TransformerArchitecture:
        if self.embedding_dim % self.num_heads:
            raise ValueError(
                f"num_heads: expected a divisor of embedding_dim={self.embedding_dim} (each head "
                f"gets embedding_dim / num_heads features), got {self.num_heads}"
            )
        return self


# `architecture: transformer` is `architecture: {type: transformer}` with its defaults.
Architecture = Annotated[
    RNNArchitecture | TransformerArchitecture, Field(discriminator="type"), TypeShorthand
]


class Seq2SeqParams(ModelParams):
    """The encoder–decoder's fields.

    Args:
        architecture: `{type: rnn, ...}` or `{type: transformer, ...}` (or just
            `rnn` / `transformer` for that architecture's defaults).
        num_layers: Encoder and decoder layers (RNN layers or blocks).
        reverse_source: Read each source backwards (Sutskever et al. 2014).
        dropout: Dropout rate.
    """

    type: Literal["seq2seq"] = "seq2seq"
    architecture: Architecture = Field(default_factory=RNNArchitecture)
    num_layers: Layers = 1
    reverse_source: bool = False
    dropout: Rate = 0.0

    def arguments(self) -> dict:
        """The keyword arguments of `keras_seq.models.seq2seq` for this architecture."""
        return {
            **self.architecture.model_dump(exclude={"type"}),
            "architecture": self.architecture.type,
            "num_layers": self.num_layers,
            "reverse_source": self.reverse_source,
            "dropout": self.dropout,
        }


@register_model("seq2seq")
class Seq2SeqBuilder(Translating, ShortFormBuilder):
    params = Seq2SeqParams
    input_kinds = ("tokens",)
    target_kinds = ("sequence",)
    description = "Encoder–decoder: RNN (Sutskever 2014) with optional attention, or Transformer."

    def check(self, params, task):
        architecture = params.architecture
        problems = []
        source, target = task.inputs.vocab_size, task.targets.vocab_size
        if architecture.type == "transformer":
            learned = architecture.positions == "learned"
            needed = (
                max(task.inputs.length, task.targets.length) if learned else task.targets.length
            )
            if architecture.max_length < needed:
                what = "source and target" if learned else "target"
                problems.append(
                    (
                        "architecture.max_length",
                        f"expected at least {needed} (the longest {what} of task "
                        f"{task.name!r}), got {architecture.max_length}",
                    )
                )
        width = architecture.embedding_dim
        if max(source, target) * width > MAX_LAYER_PARAMS:
            problems.append(
                (
                    "architecture.embedding_dim",
                    f"an embedding of {max(source, target):,} tokens × {width} would hold "
                    f"more than {MAX_LAYER_PARAMS:,} weights",
                )
            )
        if problems or architecture.type == "rnn":
            return problems
        return super().check(params, task)  # the graph's own check (`ShortFormBuilder`)

    def build(self, params, task):
        if params.architecture.type == "transformer":
            return super().build(params, task)  # the graph (`ShortFormBuilder`)
        # Keras loads on first use, not on import (specs and the app start without it).
        from keras_seq.models import seq2seq

        return seq2seq(task.inputs.vocab_size, task.targets.vocab_size, **params.arguments())

    def estimate(self, params, task):
        """The Transformer's graph counted from its layers (`ShortFormBuilder`); the RNN's
        layers counted from the fields (see `memory.Part`)."""
        if params.architecture.type == "rnn":
            return _rnn_parts(params, task)
        return super().estimate(params, task)

    def model_width(self, params):
        architecture = params.architecture
        return architecture.embedding_dim if architecture.type == "transformer" else None


def _embedding_parts(params, task):
    """The source and target embeddings (and the target's softmax, `output_projection`)."""
    width, field = params.architecture.embedding_dim, "model.architecture.embedding_dim"
    source, target = task.inputs, task.targets
    return [
        memory.Part("source_embedding", field, source.vocab_size * width, source.length * width),
        memory.Part("target_embedding", field, target.vocab_size * width, target.length * width),
    ]


def _output_part(width, field, task):
    """`output_projection`: every step's logits and softmax over the target vocabulary."""
    target = task.targets
    weights = memory.dense(width, target.vocab_size)
    return memory.Part("output_projection", field, weights, 2 * target.length * target.vocab_size)


def _rnn_parts(params, task):
    """`keras_seq.models.RNNSeq2Seq`: encoder layers, `RecurrentDecoder`, attention, output."""
    arch, layers = params.architecture, params.num_layers
    units, cell, field = arch.units, arch.cell, "model.architecture.units"
    source, target = task.inputs.length, task.targets.length
    parts = _embedding_parts(params, task)
    directions = 2 if arch.bidirectional else 1
    per_direction = units // directions
    features = arch.embedding_dim
    for index in range(layers):
        weights = directions * memory.recurrent_cell(cell, features, per_direction)
        kept = directions * memory.recurrent_activations(cell, source, per_direction)
        parts.append(memory.Part(f"encoder_{index}", field, weights, kept))
        features = units
    first = arch.embedding_dim
    first += units if arch.attention == "bahdanau" else 0  # [x_t; c_t]
    first += units if arch.input_feeding else 0  # [x_t; h̃_{t−1}]
    cells = memory.recurrent_cell(cell, first, units)
    cells += (layers - 1) * memory.recurrent_cell(cell, units, units)
    kept = layers * memory.recurrent_activations(cell, target, units)
    parts.append(memory.Part("decoder", field, cells, kept))
    output_width = units
    if arch.attention is not None:
        parts.append(_attention_part(arch, source, target))
        output_width += units if arch.attention == "bahdanau" else 0
    return [*parts, _output_part(output_width, field, task)]


def _attention_part(arch, source, target):
    """The decoder's attention: its score weights, W_c for Luong, the (T, S) weights it keeps."""
    units = arch.units
    kept = 2 * target * source + target * units  # scores, softmax weights, contexts
    if arch.attention in ("bahdanau", "luong_concat"):
        hidden = arch.attention_units or units
        field = "model.architecture.attention_units" if arch.attention_units else None
        weights = 2 * units * hidden + hidden  # W, U and v of vᵀ tanh(W q + U k)
        kept += target * source * hidden  # tanh(W q_i + U k_j) for every (i, j)
    else:
        field = None
        weights = units * units if arch.attention == "luong_general" else 0
    if arch.attention in LUONG:
        weights += memory.dense(2 * units, units, bias=False)  # W_c [c_t; h_t]
    return memory.Part("attention", field or "model.architecture.units", weights, kept)
