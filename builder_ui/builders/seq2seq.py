"""`seq2seq`: an encoder–decoder from source token ids to target token ids.

`architecture` is a section of its own, discriminated by its `type`, holding
only that architecture's fields:
`{type: rnn, ...}` is the model of Sutskever et al. (2014), with the attention
of Bahdanau et al. (2015) or Luong et al. (2015) as options;
`{type: transformer, ...}` is the encoder–decoder Transformer of Vaswani et
al. (2017). `architecture: transformer` alone takes that architecture's
defaults, so `--set model.architecture=transformer` or a sweep over
`model.architecture: [rnn, transformer]` switches between them.

A short form of a graph (`short_forms`): its encoder block by block and its
decoder one `RecurrentDecoder` or `TransformerDecoder` block, built, checked
and counted by the graph builder's walk (`graph.ShortFormBuilder`), so it opens
on the canvas as the model it trains: the same weights and outputs as
`keras_seq.models.seq2seq(...)` (`RNNSeq2Seq`, `TransformerSeq2Seq`). Training
and scoring (teacher forcing, BLEU, exact match) are `translating`'s.

Spec example:

    task: {type: toy_translation, n: 2000, max_len: 12}
    model:
      type: seq2seq
      architecture: {type: rnn, cell: gru, units: 64, attention: bahdanau}
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from builder_ui.builders.fields import Layers, Rate, Units
from builder_ui.builders.graph import ShortFormBuilder
from builder_ui.builders.registry import register_model
from builder_ui.specs import ModelParams, StrictModel, TypeShorthand

ATTENTIONS = ("bahdanau", "luong_dot", "luong_general", "luong_concat")
LUONG = ("luong_dot", "luong_general", "luong_concat")
MAX_LAYER_PARAMS = 2**31  # keras_seq.argument_checks.MAX_LAYER_PARAMS


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
class Seq2SeqBuilder(ShortFormBuilder):
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
        return problems or super().check(params, task)  # the graph's (`ShortFormBuilder`)

    def model_width(self, params):
        architecture = params.architecture
        return architecture.embedding_dim if architecture.type == "transformer" else None
