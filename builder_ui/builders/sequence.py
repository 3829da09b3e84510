"""`sequence_classifier` and `sequence_regressor`: one encoder stack, a class or a value out.

    sequence ─▶ [Embedding | Dense projection] ─▶ encoder ─▶ classifier | regressor

The encoder is chosen by `model.encoder.type`:

- `rnn`: `num_layers` recurrent layers of one cell, each optionally
  bidirectional: `simple` (Elman's RNN, `keras.layers.SimpleRNN`), `lstm`
  (`keras.layers.LSTM`, forget gate and all), `gru` (`keras.layers.GRU`) or
  `cec_lstm` (`keras_seq.layers.CECLSTM`: the 1997 LSTM, with the 2000
  forget gate and peepholes as options). Token ids first go through an
  `Embedding` of `embedding_dim`.
- `transformer`: token ids through an `Embedding` (numeric steps through a
  `Dense` projection) of `embedding_dim`, positions added (sinusoidal or learned),
  `num_layers` `TransformerEncoderBlock`s (post-LN, or pre-LN with a final
  norm), then a masked mean or a class token.

The head is a float32 softmax over the classes (classification) or a linear
layer of `output_dim` (regression), float32 so that mixed precision keeps the
loss exact.

Both types are short forms of a graph of blocks: the builders build, check and
estimate the graph `short_forms.expand_short_form` writes out (the layers above,
named `token_embedding`, `gru_0`, `encoder_block_1`, `classifier`, ...), with the
graph builder's walk (`graph.ShortFormBuilder`). Only the fields are here.

Spec example:

    model:
      type: sequence_classifier
      encoder: {type: rnn, cell: cec_lstm, units: 16, forget_gate: true}
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from builder_ui.builders.fields import Layers, Rate, Units
from builder_ui.builders.graph import ShortFormBuilder
from builder_ui.builders.registry import register_model
from builder_ui.builders.short_forms import CEC_OPTIONS
from builder_ui.specs import ModelParams, StrictModel, TypeShorthand

# A gate bias far past ±20 saturates σ in float32 (σ(20) = 1 − 2e-9): no use, so refused.
GateBias = Annotated[float, Field(ge=-20, le=20, allow_inf_nan=False)]
Activation = Literal["tanh", "sigmoid", "hard_sigmoid", "relu", "linear", "softsign", "elu"]


class RNNEncoder(StrictModel):
    """A stack of recurrent layers; the last returns one vector per sequence.

    Args:
        cell: `simple`, `gru`, `lstm` or `cec_lstm` (the 1997 LSTM).
        units: Width of each layer (per direction).
        num_layers: Layers in the stack.
        bidirectional: Read each sequence both ways and concatenate.
        dropout: Dropout of each layer's inputs.
        forget_gate: `cec_lstm` only: add the forget gate of Gers et al. 2000.
        peephole: `cec_lstm` only: gates see the cell state (Gers & Schmidhuber 2000).
        truncated_gradients: `cec_lstm` only: the 1997 learning rule (error reaches
            earlier steps only through the carousel).
        input_gate_bias: `cec_lstm` only: initial input-gate bias (default −3.0, as in 1997).
        forget_gate_bias: `cec_lstm` only: initial forget-gate bias (default 1.0).
        output_gate_bias: `cec_lstm` only: initial output-gate bias (default −2.0).
        cell_activation: `cec_lstm` only: g, squashing the cell input (default tanh).
        output_activation: `cec_lstm` only: h, squashing the cell state (default tanh).
        gate_activation: `cec_lstm` only: the gates' σ (default sigmoid).
    """

    type: Literal["rnn"] = "rnn"
    cell: Literal["simple", "gru", "lstm", "cec_lstm"] = "lstm"
    units: Units = 32
    num_layers: Layers = 1
    bidirectional: bool = False
    dropout: Rate = 0.0
    forget_gate: bool | None = None
    peephole: bool | None = None
    truncated_gradients: bool | None = None
    input_gate_bias: GateBias | None = None
    forget_gate_bias: GateBias | None = None
    output_gate_bias: GateBias | None = None
    cell_activation: Activation | None = None
    output_activation: Activation | None = None
    gate_activation: Activation | None = None

    @model_validator(mode="after")
    def _cec_options(self) -> RNNEncoder:
        for option in CEC_OPTIONS:
            if getattr(self, option) is not None and self.cell != "cec_lstm":
                raise ValueError(
                    f"{option}: only for cell 'cec_lstm' (keras_seq.layers.CECLSTM; the "
                    f"other cells have no such option), got cell {self.cell!r}"
                )
        if self.forget_gate_bias is not None and not self.forget_gate:
            raise ValueError(
                f"forget_gate_bias: the cell has no forget gate (forget_gate is "
                f"{self.forget_gate!r}); set forget_gate: true, got {self.forget_gate_bias!r}"
            )
        return self


class TransformerEncoder(StrictModel):
    """A stack of Transformer encoder blocks (Vaswani et al. 2017) and a pooling.

    Args:
        embedding_dim: Width of every token vector, `d_model`.
        num_heads: Attention heads; must divide `embedding_dim`.
        ff_dim: Inner size of each block's feed-forward network.
        num_layers: Encoder blocks.
        norm_first: Pre-LN blocks (and a final norm) instead of the paper's post-LN.
        positions: `sinusoidal` (fixed) or `learned` positions.
        pooling: `mean` over the real steps, or a `class_token`.
        dropout: Dropout after the positions and inside every block.
    """

    type: Literal["transformer"] = "transformer"
    embedding_dim: Units = 32
    num_heads: Units = 4
    ff_dim: Units = 64
    num_layers: Layers = 2
    norm_first: bool = False
    positions: Literal["sinusoidal", "learned"] = "sinusoidal"
    pooling: Literal["mean", "class_token"] = "mean"
    dropout: Rate = 0.0

    @model_validator(mode="after")
    def _heads_divide_width(self) -> TransformerEncoder:
        if self.embedding_dim % self.num_heads:
            raise ValueError(
                f"num_heads: expected a divisor of embedding_dim={self.embedding_dim} (each head "
                f"gets embedding_dim / num_heads features), got {self.num_heads}"
            )
        return self


# `encoder: transformer` is `encoder: {type: transformer}` with its defaults.
Encoder = Annotated[RNNEncoder | TransformerEncoder, Field(discriminator="type"), TypeShorthand]


class SequenceModelParams(ModelParams):
    """Fields shared by `sequence_classifier` and `sequence_regressor`.

    Args:
        encoder: `{type: rnn, ...}` or `{type: transformer, ...}`.
        embedding_dim: Token vector size for the `rnn` encoder over token
            ids (default 16); the `transformer` uses `encoder.embedding_dim`.
        mask_zero: Token id 0 is padding: mask it out of the encoder.
    """

    encoder: Encoder = Field(default_factory=RNNEncoder)
    embedding_dim: Units | None = None
    mask_zero: bool = False

    @model_validator(mode="after")
    def _embedding_for_rnn(self) -> SequenceModelParams:
        if self.embedding_dim is not None and self.encoder.type != "rnn":
            raise ValueError(
                "embedding_dim: only for the rnn encoder; the transformer's token vectors "
                f"are encoder.embedding_dim={self.encoder.embedding_dim} wide"
            )
        return self


class SequenceClassifierParams(SequenceModelParams):
    """A recurrent or Transformer encoder and a softmax over the task's classes."""

    type: Literal["sequence_classifier"] = "sequence_classifier"


class SequenceRegressorParams(SequenceModelParams):
    """A recurrent or Transformer encoder and a linear layer for the task's real targets."""

    type: Literal["sequence_regressor"] = "sequence_regressor"


class _SequenceBuilder(ShortFormBuilder):
    input_kinds = ("tokens", "numeric")

    def model_width(self, params):
        encoder = params.encoder
        return encoder.embedding_dim if encoder.type == "transformer" else None

    def check(self, params, task):
        """The token-only fields on numeric inputs, then the graph's own check (the layers'
        refusals and sizes, what `model.fit` would refuse), at the fields that set them."""
        problems = []
        if task.inputs.kind != "tokens":
            for name in ("embedding_dim", "mask_zero"):
                if getattr(params, name):
                    problems.append(
                        (name, f"only for token inputs; task {task.name!r} has numeric inputs")
                    )
        return problems or super().check(params, task)


@register_model("sequence_classifier")
class SequenceClassifier(_SequenceBuilder):
    params = SequenceClassifierParams
    target_kinds = ("classification",)
    description = "Recurrent or Transformer encoder over tokens or features, softmax classes."


@register_model("sequence_regressor")
class SequenceRegressor(_SequenceBuilder):
    params = SequenceRegressorParams
    target_kinds = ("regression",)
    description = "Recurrent or Transformer encoder over tokens or features, real outputs."
