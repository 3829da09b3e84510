"""Short forms: the named model types that are graphs of blocks written in a few fields.

    model: {type: sequence_classifier, encoder: {type: rnn, cell: gru, units: 16}}
      ─▶ expand_short_form(model, task) ─▶ Expansion(nodes, fields)
      ─▶ the graph builder's walk: build, check, memory estimate (`graph.ShortFormBuilder`)
      ─▶ or the spec's `model:` as that graph (`graph_model.preset_as_graph`: "Open as graph",
         `keras-seq graph`)

`sequence_classifier`, `sequence_regressor` (either encoder),
`vision_transformer`, `seq2seq`, `pointer_network`, `conv_lstm` and
`show_attend_tell` are described here once, as
the nodes of a `graph` model
(`builder_ui.builders.graph`): one node per layer, its id the layer's name
(`token_embedding`, `gru_0`, `encoder_block_1`, `classifier`), its params the
layer's own constructor arguments. Their builders build that graph, check it
and count its memory, so the model a short form trains is the graph it opens
as on the canvas, layer for layer, and the same as the `keras_seq.models`
factory a library user would call (`transformer_classifier`,
`vision_transformer`, `recurrent_model`; tests/builder_ui/builders/
test_graph_equivalence.py compares the three with the same weights).

What a short form carries beyond its layers is in its nodes too:

- the head: the `Output` block, a float32 softmax over the classes
  (`classifier`) or a linear `regressor`, sized by the task;
- masks: `mask_zero` on the token `Embedding`; Keras carries the mask through
  the positions and the blocks to `MaskedMeanPooling`;
- the pooling: `MaskedMeanPooling`, or a `ClassToken` before the positions and
  `ClassTokenPooling` after the blocks;
- ViT's position table, which starts from N(0, 0.02²) as in the paper's code:
  its initializer as Keras serializes it (`{class_name: RandomNormal, config:
  {stddev: 0.02}}`), a value a node's params may hold.

A `seq2seq` is its encoder block by block and its decoder one composite
block (`RecurrentDecoder` or `TransformerDecoder`, `graph_decoder`), which
makes the model that trains (`AssembledSeq2Seq`, `AssembledTransformerSeq2Seq`,
the same weights and outputs as `RNNSeq2Seq` and `TransformerSeq2Seq`). A
`conv_lstm` is the layers of `conv_lstm_predictor` or `frame_lstm_predictor`. A
`show_attend_tell` is its image encoder block by block and one `CaptionDecoder`
reading the feature map (`AssembledShowAttendTell`, the same weights and outputs
as `ShowAttendTell`).

Nothing here imports Keras.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from builder_ui.builders.graph_blocks import (
    CAPTION_DECODER,
    INPUT,
    OUTPUT,
    POINTER_DECODER,
    RECURRENT_DECODER,
    TRANSFORMER_DECODER,
)

# The model types `expand_short_form` writes out.
EXPANDED_TYPES = (
    "sequence_classifier",
    "sequence_regressor",
    "vision_transformer",
    "seq2seq",
    "pointer_network",
    "conv_lstm",
    "show_attend_tell",
)


# Each `encoder.cell` (and `architecture.cell` of a seq2seq) is this block.
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
# An `rnn` encoder's token vectors are this long unless `embedding_dim` says otherwise
# (`keras_seq.models.recurrent_model`'s default too).
DEFAULT_EMBEDDING_DIM = 16
# The post-LN or pre-LN Transformer's norms (`keras_seq.models.transformer_classifier`).
LAYER_NORM_EPSILON = 1e-5
# ViT's norms and the start of its position table (Dosovitskiy et al. 2020, in their code;
# `keras_seq.models.vision_transformer`).
VIT_LAYER_NORM_EPSILON = 1e-6
VIT_POSITION_STDDEV = 0.02


@dataclass(frozen=True)
class Expansion:
    """A short form written out as a graph.

    Attributes:
        nodes: The graph's nodes (`id`, `layer`, `params`, `inputs`), Input first.
        fields: Node id → the short form's field (from the spec's root,
            `model.encoder.units`) that sets the node's size: where a refusal
            of the node, or the memory estimate, points.
    """

    nodes: tuple[dict[str, Any], ...]
    fields: Mapping[str, str] = field(default_factory=dict)

    def field_of(self, node_id: str | None, param: str | None = None) -> str:
        """The field behind a node, or behind one of its params where the expansion names
        it (`decoder.max_length`); `model` for a node no field sizes."""
        if node_id is None:
            return "model"
        return self.fields.get(f"{node_id}.{param}") or self.fields.get(node_id, "model")


def cec_arguments(encoder: Any) -> dict[str, Any]:
    """The `cec_lstm` options an encoder gives (None: not given), as `CECLSTM` arguments."""
    given = {key: getattr(encoder, key, None) for key in CEC_OPTIONS}
    return {key: value for key, value in given.items() if value is not None}


def expand_short_form(model: Any, task: Any) -> Expansion:
    """The graph of a `sequence_classifier`, `sequence_regressor`, `vision_transformer`,
    `seq2seq` (either architecture), `pointer_network`, `conv_lstm` or `show_attend_tell`.

    Args:
        model: The validated `model:` section (its pydantic params); a `conv_lstm` of
            layout `flat` with its `units` filled in (the builder matches them).
        task: The task's specs (`inputs`, `targets`): token ids go through an
            `Embedding`, numeric steps through a `Dense` projection (Transformer) or
            straight into the first recurrent layer; frames set the shapes of a
            `conv_lstm`'s head.

    Returns:
        An `Expansion`: Input, the layers in the order the factory makes them, Output.

    Raises:
        ValueError: a model type that has no expansion (see `EXPANDED_TYPES`).
    """
    input_kind = task.inputs.kind
    if model.type == "vision_transformer":
        source, nodes, fields = "images", *_vit_nodes(model)
        head = "classifier"
    elif model.type == "conv_lstm":
        source, nodes, fields = "frames", *_next_frame_nodes(model, task)
        head = "next_frames"
    elif model.type == "pointer_network":
        source, nodes, fields = "sequence", *_pointer_nodes(model)
        head = "pointers"
    elif model.type == "show_attend_tell":
        source, nodes, fields = "images", *_caption_nodes(model, task)
        head = "words"
    elif model.type == "seq2seq":
        rnn = model.architecture.type == "rnn"
        expand = _rnn_seq2seq_nodes if rnn else _transformer_seq2seq_nodes
        source, nodes, fields = "source", *expand(model)
        head = "words"
    elif model.type in ("sequence_classifier", "sequence_regressor"):
        tokens = input_kind == "tokens"
        if model.encoder.type == "rnn":
            nodes, fields = _rnn_nodes(model, tokens)
        else:
            nodes, fields = _transformer_nodes(model, tokens)
        source = "sequence"
        head = "classifier" if model.type == "sequence_classifier" else "regressor"
    else:
        raise ValueError(
            f"model type {model.type!r} has no expansion into a graph; expected one of "
            f"{', '.join(EXPANDED_TYPES)}"
        )
    nodes = [node(source, INPUT, None), *nodes, node(head, OUTPUT, nodes[-1]["id"])]
    fields = {**fields, head: fields[nodes[-2]["id"]]}  # the head's width is the encoder's
    return Expansion(tuple(nodes), fields)


def node(node_id: str, layer: str, source: str | None, **params: Any) -> dict[str, Any]:
    """One node reading `source` through its port `x` (none for the Input)."""
    found: dict[str, Any] = {"id": node_id, "layer": layer}
    if params:
        found["params"] = params
    if source is not None:
        found["inputs"] = {"x": source}
    return found


def _rnn_nodes(model: Any, tokens: bool) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The embedding (token ids only), then one node per recurrent layer; the last returns
    one vector per sequence."""
    encoder, nodes, fields, x = model.encoder, [], {}, "sequence"
    if tokens:
        dim = model.embedding_dim or DEFAULT_EMBEDDING_DIM
        embedding = {"output_dim": dim, **({"mask_zero": True} if model.mask_zero else {})}
        nodes.append(node("token_embedding", "Embedding", x, **embedding))
        fields["token_embedding"] = "model.embedding_dim"
        x = "token_embedding"
    for index in range(encoder.num_layers):
        params: dict[str, Any] = {"units": encoder.units, "dropout": encoder.dropout}
        params["return_sequences"] = index < encoder.num_layers - 1
        if encoder.cell == "cec_lstm":
            params.update(cec_arguments(encoder))
        node_id = f"{encoder.cell}_{index}"
        if encoder.bidirectional:
            params["bidirectional"] = True
            node_id = f"bidirectional_{index}"
        nodes.append(node(node_id, CELL_LAYERS[encoder.cell], x, **params))
        fields[node_id] = "model.encoder.units"
        x = node_id
    return nodes, fields


def _transformer_nodes(model: Any, tokens: bool) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """`keras_seq.models.transformer_classifier`'s layers, block for block (numeric steps
    through a `Dense` projection instead of the embedding)."""
    encoder = model.encoder
    d = encoder.embedding_dim
    if tokens:
        embedding = {"output_dim": d, **({"mask_zero": True} if model.mask_zero else {})}
        nodes = [node("token_embedding", "Embedding", "sequence", **embedding)]
    else:
        nodes = [node("input_projection", "Dense", "sequence", units=d)]

    def then(node_id: str, layer: str, **params: Any) -> None:
        nodes.append(node(node_id, layer, nodes[-1]["id"], **params))

    if encoder.pooling == "class_token":
        then("class_token", "ClassToken")  # (batch, 1 + time, d)
    if encoder.positions == "sinusoidal":
        then("position_encoding", "SinusoidalPositionalEncoding")
    else:
        then("position_embedding", "LearnedPositionalEmbedding")  # max_length: its input's
    then("embedding_dropout", "Dropout", rate=encoder.dropout)
    for index in range(encoder.num_layers):
        then(
            f"encoder_block_{index}",
            "TransformerEncoderBlock",
            num_heads=encoder.num_heads,
            ff_dim=encoder.ff_dim,
            dropout=encoder.dropout,
            norm_first=encoder.norm_first,
        )
    if encoder.norm_first:  # pre-LN blocks leave their output unnormalised
        then("encoder_layer_norm", "LayerNormalization", epsilon=LAYER_NORM_EPSILON)
    if encoder.pooling == "mean":
        then("mean_pooling", "MaskedMeanPooling")
    else:
        then("class_token_pooling", "ClassTokenPooling")
    return nodes, {item["id"]: "model.encoder.embedding_dim" for item in nodes}


def _vit_nodes(model: Any) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """`keras_seq.models.vision_transformer`'s layers, block for block (pre-LN, GELU)."""
    positions = {"class_name": "RandomNormal", "config": {"stddev": VIT_POSITION_STDDEV}}
    size = {"patch_size": model.patch_size, "embedding_dim": model.embedding_dim}
    nodes = [
        node("patch_embedding", "PatchEmbedding", "images", **size),  # (batch, N, D)
        node("class_token", "ClassToken", "patch_embedding"),  # (batch, N + 1, D)
        node(
            "position_embedding",
            "LearnedPositionalEmbedding",
            "class_token",
            embeddings_initializer=positions,
        ),
        node("embedding_dropout", "Dropout", "position_embedding", rate=model.dropout),
    ]
    for index in range(model.num_layers):
        block = {"num_heads": model.num_heads, "ff_dim": model.ff_dim, "dropout": model.dropout}
        block.update(norm_first=True, activation="gelu", layer_norm_epsilon=VIT_LAYER_NORM_EPSILON)
        nodes.append(
            node(f"encoder_block_{index}", "TransformerEncoderBlock", nodes[-1]["id"], **block)
        )
    nodes.append(
        node(
            "encoder_layer_norm",
            "LayerNormalization",
            nodes[-1]["id"],
            epsilon=VIT_LAYER_NORM_EPSILON,
        )
    )
    nodes.append(node("class_token_pooling", "ClassTokenPooling", nodes[-1]["id"]))
    return nodes, {item["id"]: "model.embedding_dim" for item in nodes}


def _rnn_seq2seq_nodes(model: Any) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """An RNN `seq2seq` (`keras_seq.models.RNNSeq2Seq`): its encoder block by block, and its
    decoder one `RecurrentDecoder` block.

    The encoder is its layers (the source reversal, the embedding, each recurrent layer,
    the dropout between them). The decoder's attention reads the last layer's states at
    its `memory` port; its `state` port reads every encoder layer, so each decoder layer
    starts from the final state of the encoder layer below it (`h`, and `c` for an LSTM;
    `[h→_S; h←_1]` when bidirectional), as `RNNSeq2Seq` starts it.
    """
    arch, x = model.architecture, "source"
    nodes: list[dict[str, Any]] = []
    if model.reverse_source:
        nodes.append(node("source_reversal", "ReverseWithinLength", x))
        x = "source_reversal"
    nodes.append(
        node("source_embedding", "Embedding", x, output_dim=arch.embedding_dim, mask_zero=True)
    )
    x = "source_embedding"
    if model.dropout:
        nodes.append(node("embedding_dropout", "Dropout", x, rate=model.dropout))
        x = "embedding_dropout"
    units = arch.units // 2 if arch.bidirectional else arch.units
    encoders = []
    for index in range(model.num_layers):
        if index and model.dropout:
            nodes.append(node(f"encoder_dropout_{index}", "Dropout", x, rate=model.dropout))
            x = nodes[-1]["id"]
        params: dict[str, Any] = {"units": units, "return_sequences": True}
        if arch.bidirectional:
            params["bidirectional"] = True
        nodes.append(node(f"encoder_{index}", CELL_LAYERS[arch.cell], x, **params))
        x = nodes[-1]["id"]
        encoders.append(x)
    decoder = {"cell": arch.cell, "units": arch.units, "num_layers": model.num_layers}
    decoder.update(attention=arch.attention, embedding_dim=arch.embedding_dim)
    if arch.attention_units is not None:
        decoder["attention_units"] = arch.attention_units
    if arch.input_feeding:
        decoder["input_feeding"] = True
    if model.dropout:
        decoder["dropout"] = model.dropout
    state = encoders[0] if len(encoders) == 1 else encoders
    nodes.append(
        {
            "id": "decoder",
            "layer": RECURRENT_DECODER,
            "params": decoder,
            "inputs": {"memory": x, "state": state},
        }
    )
    fields = {item["id"]: "model.architecture.units" for item in nodes}
    fields["source_embedding"] = "model.architecture.embedding_dim"
    return nodes, fields


def _transformer_seq2seq_nodes(model: Any) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """A Transformer `seq2seq` (`keras_seq.models.TransformerSeq2Seq`): its encoder block by
    block, and its decoder one `TransformerDecoder` block reading the encoder's memory.

    The source embedding is scaled by √d_model (`Rescaling`, Vaswani et al. 2017 §3.4);
    `mask_zero` on it gives the encoder blocks the model's source mask (`source != PAD`).
    The decoder's memory refusal names `max_length` (its key/value cache).
    """
    arch, x = model.architecture, "source"
    width = "model.architecture.embedding_dim"
    nodes: list[dict[str, Any]] = []

    def then(node_id: str, layer: str, **params: Any) -> None:
        nonlocal x
        nodes.append(node(node_id, layer, x, **params))
        x = node_id

    if model.reverse_source:
        then("source_reversal", "ReverseWithinLength")
    then("source_embedding", "Embedding", output_dim=arch.embedding_dim, mask_zero=True)
    then("source_scale", "Rescaling", scale=math.sqrt(arch.embedding_dim))
    if arch.positions == "learned":
        then("source_position_embedding", "LearnedPositionalEmbedding", max_length=arch.max_length)
    else:
        then("position_encoding", "SinusoidalPositionalEncoding")
    if model.dropout:
        then("embedding_dropout", "Dropout", rate=model.dropout)
    block = {"num_heads": arch.num_heads, "ff_dim": arch.ff_dim, "norm_first": arch.norm_first}
    if model.dropout:
        block["dropout"] = model.dropout
    for index in range(model.num_layers):
        then(f"encoder_block_{index}", "TransformerEncoderBlock", **block)
    if arch.norm_first:
        then("encoder_layer_norm", "LayerNormalization", epsilon=LAYER_NORM_EPSILON)
    decoder = {
        "num_layers": model.num_layers,
        "embedding_dim": arch.embedding_dim,
        "num_heads": arch.num_heads,
        "ff_dim": arch.ff_dim,
        "norm_first": arch.norm_first,
        "max_length": arch.max_length,
        "positions": arch.positions,
    }
    if model.dropout:
        decoder["dropout"] = model.dropout
    nodes.append(
        {"id": "decoder", "layer": TRANSFORMER_DECODER, "params": decoder, "inputs": {"memory": x}}
    )
    fields = {item["id"]: width for item in nodes}
    fields["source_position_embedding"] = "model.architecture.max_length"
    fields["decoder.max_length"] = "model.architecture.max_length"
    return nodes, fields


def _next_frame_nodes(model: Any, task: Any) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """A `conv_lstm` (`keras_seq.models.conv_lstm_predictor`, or `frame_lstm_predictor` for
    layout `flat`), its layers named as the factory names them.

    conv: each `ConvLSTM2D` layer's final hidden map `H_T` (`FinalStatePooling` of its
    output sequence), joined, goes through a `Conv2D` to `T_out · C` maps, which are split
    into the `T_out` frames and put time first. flat: each frame flattened, an `LSTM`, a
    `Dense` to every pixel of every future frame. The Output is the per-pixel sigmoid the
    factory's last convolution or dense layer applies (the frames are read with binary
    cross-entropy).
    """
    length, height, width, channels = task.inputs.shape
    future = task.targets.length
    nodes: list[dict[str, Any]] = []
    x = "frames"

    def then(node_id: str, layer: str, **params: Any) -> None:
        nonlocal x
        nodes.append(node(node_id, layer, x, **params))
        x = node_id

    if model.layout == "flat":
        field = "model.units"
        then("flatten_frames", "Reshape", target_shape=[length, height * width * channels])
        then("lstm", "LSTM", units=model.units)
        then("frame_head", "Dense", units=future * height * width * channels)
        then("frames_split", "Reshape", target_shape=[future, height, width, channels])
        return nodes, {item["id"]: field for item in nodes}
    finals = []
    for index in range(model.num_layers):
        then(
            f"conv_lstm_{index}",
            "ConvLSTM2D",
            filters=model.filters,
            kernel_size=model.kernel_size,
            padding="same",
            return_sequences=True,
        )
        nodes.append(node(f"conv_lstm_{index}_final", "FinalStatePooling", x))
        finals.append(nodes[-1]["id"])
    if len(finals) > 1:
        nodes.append({"id": "final_states", "layer": "Concatenate", "inputs": {"x": finals}})
    x = nodes[-1]["id"]
    then(
        "frame_head",
        "Conv2D",
        filters=future * channels,
        kernel_size=model.head_kernel_size,
        padding="same",
    )
    then("frames_split", "Reshape", target_shape=[height, width, future, channels])
    then("frames_time_major", "Permute", dims=[3, 1, 2, 4])
    fields = {item["id"]: "model.filters" for item in nodes}
    fields["frame_head"] = "model.head_kernel_size"
    return nodes, fields


def _pointer_nodes(model: Any) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """A `pointer_network` (`keras_seq.models.PointerNetwork`): its encoder, a recurrent block
    named `encoder`, and one `PointerDecoder` block reading its states (`memory`) and the
    final state it returns (`state`: `h`, and `c` for the LSTMs) to start from."""
    cell = {"lstm": "LSTM", "gru": "GRU", "cec_lstm": "CECLSTM"}[model.cell]
    nodes = [
        node("encoder", cell, "sequence", units=model.units, return_sequences=True),
        {
            "id": "decoder",
            "layer": POINTER_DECODER,
            "params": {
                "units": model.units,
                "cell": model.cell,
                "exclude_chosen": model.exclude_chosen,
            },
            "inputs": {"memory": "encoder", "state": "encoder"},
        },
    ]
    return nodes, {item["id"]: "model.units" for item in nodes}


def _caption_nodes(model: Any, task: Any) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """A `show_attend_tell` (`keras_seq.models.ShowAttendTell`): its image encoder, the CNN's
    blocks (3×3 `Conv2D` with ReLU, 2×2 `MaxPooling2D`) or a `PatchEmbedding` reshaped to its
    grid, then one `CaptionDecoder` reading the feature map, each cell a region."""
    nodes: list[dict[str, Any]] = []
    x = "images"
    if model.encoder == "cnn":
        for index in range(model.conv_layers):
            nodes.append(
                node(
                    f"conv_{index}",
                    "Conv2D",
                    x,
                    filters=model.filters,
                    kernel_size=3,
                    padding="same",
                    activation="relu",
                )
            )
            nodes.append(node(f"pool_{index}", "MaxPooling2D", f"conv_{index}", pool_size=2))
            x = f"pool_{index}"
    else:
        step = model.patch_size
        nodes.append(
            node("patches", "PatchEmbedding", x, patch_size=step, embedding_dim=model.filters)
        )
        grid = [task.inputs.height // step, task.inputs.width // step, model.filters]
        nodes.append(node("patch_grid", "Reshape", "patches", target_shape=grid))
        x = "patch_grid"
    decoder = (
        "region_positions",
        "cell",
        "units",
        "attention_units",
        "embedding_dim",
        "attention_penalty",
        "dropout",
    )
    nodes.append(
        {
            "id": "decoder",
            "layer": CAPTION_DECODER,
            "params": {name: getattr(model, name) for name in decoder},
            "inputs": {"memory": x},
        }
    )
    fields = {item["id"]: "model.filters" for item in nodes}
    fields["decoder"] = "model.units"
    return nodes, fields
