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

Spec example:

    model:
      type: sequence_classifier
      encoder: {type: rnn, cell: cec_lstm, units: 16, forget_gate: true}
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from builder_ui.builders import memory
from builder_ui.builders.base import ModelBuilder
from builder_ui.builders.registry import register_model
from builder_ui.specs import ModelParams, StrictModel, TypeShorthand

MAX_UNITS = 2**16  # keras_seq.validation.MAX_UNITS
MAX_LAYER_PARAMS = 2**31  # keras_seq.validation.MAX_LAYER_PARAMS
MAX_LAYERS = 64

Units = Annotated[int, Field(ge=1, le=MAX_UNITS)]
Layers = Annotated[int, Field(ge=1, le=MAX_LAYERS)]
Rate = Annotated[float, Field(ge=0, lt=1, description="Dropout rate, in [0, 1).")]

CELL_LAYERS = {"simple": "SimpleRNN", "gru": "GRU", "lstm": "LSTM", "cec_lstm": "CECLSTM"}
# The `cec_lstm` cell's own options, passed to `keras_seq.layers.CECLSTM` when given.
CEC_OPTIONS = (
    "forget_gate",
    "peephole",
    "truncated_gradients",
    "input_gate_bias",
    "forget_gate_bias",
    "output_gate_bias",
    "cell_activation",
    "output_activation",
    "gate_activation",
)
# A gate bias far past ±20 saturates σ in float32 (σ(20) = 1 − 2e-9): no use, so refused.
GateBias = Annotated[float, Field(ge=-20, le=20, allow_inf_nan=False)]
Activation = Literal["tanh", "sigmoid", "hard_sigmoid", "relu", "linear", "softsign", "elu"]
# Weight blocks per recurrent layer: one for a simple RNN, three gates for a GRU, four for an LSTM.
_GATES = {"simple": 1, "gru": 3, "lstm": 4, "cec_lstm": 4}


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


def cec_arguments(encoder: RNNEncoder) -> dict[str, object]:
    """The `cec_lstm` options the spec gives, as `CECLSTM` keyword arguments."""
    given = {key: getattr(encoder, key) for key in CEC_OPTIONS}
    return {key: value for key, value in given.items() if value is not None}


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


DEFAULT_EMBEDDING_DIM = 16


class _SequenceBuilder(ModelBuilder):
    input_kinds = ("tokens", "numeric")

    def model_width(self, params):
        encoder = params.encoder
        return encoder.embedding_dim if encoder.type == "transformer" else None

    def check(self, params, task):
        problems = []
        inputs = task.inputs
        encoder = params.encoder
        tokens = inputs.kind == "tokens"
        if not tokens and params.embedding_dim is not None:
            problems.append(
                ("embedding_dim", f"only for token inputs; task {task.name!r} has numeric inputs")
            )
        if not tokens and params.mask_zero:
            problems.append(
                ("mask_zero", f"only for token inputs; task {task.name!r} has numeric inputs")
            )
        width = (
            encoder.embedding_dim if encoder.type == "transformer" else self._embedding_dim(params)
        )
        if tokens and inputs.vocab_size * width > MAX_LAYER_PARAMS:
            problems.append(
                (
                    "encoder.embedding_dim" if encoder.type == "transformer" else "embedding_dim",
                    f"an embedding of {inputs.vocab_size:,} tokens × {width} would hold more "
                    f"than {MAX_LAYER_PARAMS:,} weights",
                )
            )
        if encoder.type == "rnn":
            features = width if tokens else inputs.features
            directions = 2 if encoder.bidirectional else 1
            for index in range(encoder.num_layers):
                count = _GATES[encoder.cell] * encoder.units * (features + encoder.units + 2)
                if count > MAX_LAYER_PARAMS:
                    problems.append(
                        (
                            "encoder.units",
                            f"layer {index} would hold {count:,} weights, more than "
                            f"{MAX_LAYER_PARAMS:,}; got units={encoder.units}",
                        )
                    )
                    break
                features = encoder.units * directions
        return problems

    @staticmethod
    def _embedding_dim(params):
        return params.embedding_dim or DEFAULT_EMBEDDING_DIM

    def estimate(self, params, task):
        """The layers `build` makes, counted from the fields (see `memory.Part`)."""
        inputs, targets = task.inputs, task.targets
        if params.encoder.type == "rnn":
            parts, width, field = _rnn_parts(params, inputs)
        else:
            parts, width, field = _transformer_parts(params, inputs)
        classes = targets.num_classes if targets.kind == "classification" else targets.output_dim
        head = "classifier" if targets.kind == "classification" else "regressor"
        return [*parts, memory.Part(head, field, memory.dense(width, classes), classes)]

    def build(self, params, task):
        # Keras loads on first use, not on import (specs and the app start without it).
        import keras

        inputs = task.inputs
        sequence = keras.Input(shape=inputs.shape, dtype=inputs.dtype, name="sequence")
        if params.encoder.type == "rnn":
            hidden = _rnn_encoder(params, inputs, sequence)
        else:
            hidden = _transformer_encoder(params, inputs, sequence)
        targets = task.targets
        if targets.kind == "classification":
            head = keras.layers.Dense(
                targets.num_classes, activation="softmax", dtype="float32", name="classifier"
            )
        else:
            head = keras.layers.Dense(targets.output_dim, dtype="float32", name="regressor")
        return keras.Model(sequence, head(hidden), name=params.type)


def _rnn_parts(params, inputs):
    """The embedding and recurrent layers of `_rnn_encoder`; their output width and its field."""
    encoder = params.encoder
    length, parts = inputs.length, []
    features = inputs.features
    if inputs.kind == "tokens":
        features = params.embedding_dim or DEFAULT_EMBEDDING_DIM
        weights = inputs.vocab_size * features
        parts.append(
            memory.Part("token_embedding", "model.embedding_dim", weights, length * features)
        )
    directions = 2 if encoder.bidirectional else 1
    options = {"forget_gate": bool(encoder.forget_gate), "peephole": bool(encoder.peephole)}
    for index in range(encoder.num_layers):
        weights = memory.recurrent_cell(encoder.cell, features, encoder.units, **options)
        kept = memory.recurrent_activations(encoder.cell, length, encoder.units)
        name = f"bidirectional_{index}" if encoder.bidirectional else f"{encoder.cell}_{index}"
        parts.append(
            memory.Part(name, "model.encoder.units", directions * weights, directions * kept)
        )
        features = encoder.units * directions
    return parts, features, "model.encoder.units"


def _transformer_parts(params, inputs):
    """The layers of `_transformer_encoder`; their output width and its field."""
    encoder = params.encoder
    d, field = encoder.embedding_dim, "model.encoder.embedding_dim"
    length = inputs.length + (1 if encoder.pooling == "class_token" else 0)
    if inputs.kind == "tokens":
        parts = [memory.Part("token_embedding", field, inputs.vocab_size * d, length * d)]
    else:
        weights = memory.dense(inputs.features, d)
        parts = [memory.Part("input_projection", field, weights, length * d)]
    if encoder.pooling == "class_token":
        parts.append(memory.Part("class_token", field, d, length * d))
    if encoder.positions == "learned":
        parts.append(memory.Part("position_embedding", field, length * d, length * d))
    for index in range(encoder.num_layers):
        name = f"encoder_block_{index}"
        attention = memory.multi_head_attention(d) + 2 * memory.layer_norm(d)
        parts += [
            memory.Part(name, field, attention, memory.block_activations(length, d, 0)),
            memory.Part(
                name,
                "model.encoder.ff_dim",
                memory.feedforward(d, encoder.ff_dim),
                2 * length * encoder.ff_dim,
            ),
            memory.Part(
                name,
                "model.encoder.num_heads",
                0,
                memory.attention_scores(encoder.num_heads, length, length),
            ),
        ]
    if encoder.norm_first:
        parts.append(memory.Part("encoder_layer_norm", field, memory.layer_norm(d), length * d))
    return parts, d, field


def _rnn_encoder(params, inputs, sequence):
    # Keras loads on first use, not on import (specs and the app start without it).
    import keras

    from keras_seq.layers import CECLSTM

    encoder = params.encoder
    hidden = sequence
    if inputs.kind == "tokens":
        dim = params.embedding_dim or DEFAULT_EMBEDDING_DIM
        hidden = keras.layers.Embedding(
            inputs.vocab_size, dim, mask_zero=params.mask_zero, name="token_embedding"
        )(hidden)  # (batch, time, dim)
    for index in range(encoder.num_layers):
        last = index == encoder.num_layers - 1
        options = {"return_sequences": not last, "dropout": encoder.dropout}
        name = f"{encoder.cell}_{index}"
        if encoder.cell == "cec_lstm":
            layer = CECLSTM(encoder.units, name=name, **cec_arguments(encoder), **options)
        else:
            layer_cls = getattr(keras.layers, CELL_LAYERS[encoder.cell])
            layer = layer_cls(encoder.units, name=name, **options)
        if encoder.bidirectional:
            layer = keras.layers.Bidirectional(layer, name=f"bidirectional_{index}")
        hidden = layer(hidden)  # (batch, time, units) then (batch, units) at the last layer
    return hidden


def _transformer_encoder(params, inputs, sequence):
    # Keras loads on first use, not on import (specs and the app start without it).
    import keras

    from keras_seq.layers import (
        ClassToken,
        ClassTokenPooling,
        LearnedPositionalEmbedding,
        MaskedMeanPooling,
        SinusoidalPositionalEncoding,
        TransformerEncoderBlock,
    )

    encoder = params.encoder
    if inputs.kind == "tokens":
        x = keras.layers.Embedding(
            inputs.vocab_size,
            encoder.embedding_dim,
            mask_zero=params.mask_zero,
            name="token_embedding",
        )(sequence)  # (batch, time, embedding_dim)
    else:
        x = keras.layers.Dense(encoder.embedding_dim, name="input_projection")(sequence)
    num_tokens = inputs.length
    if encoder.pooling == "class_token":
        x = ClassToken(name="class_token")(x)  # (batch, 1 + time, embedding_dim)
        num_tokens += 1
    if encoder.positions == "sinusoidal":
        x = SinusoidalPositionalEncoding(name="position_encoding")(x)
    else:
        x = LearnedPositionalEmbedding(num_tokens, name="position_embedding")(x)
    x = keras.layers.Dropout(encoder.dropout, name="embedding_dropout")(x)
    for index in range(encoder.num_layers):
        x = TransformerEncoderBlock(
            encoder.num_heads,
            encoder.ff_dim,
            dropout=encoder.dropout,
            norm_first=encoder.norm_first,
            name=f"encoder_block_{index}",
        )(x)
    if encoder.norm_first:
        x = keras.layers.LayerNormalization(epsilon=1e-5, name="encoder_layer_norm")(x)
    if encoder.pooling == "mean":
        return MaskedMeanPooling(name="mean_pooling")(x)
    return ClassTokenPooling(name="class_token_pooling")(x)


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
