"""`graph`: a model assembled from blocks wired port to port (the Build tab's canvas).

    model:
      type: graph
      nodes:
        - {id: tokens, layer: Input}
        - {id: embedding, layer: Embedding, params: {output_dim: 16}, inputs: {x: tokens}}
        - {id: encoder, layer: LSTM, params: {units: 32}, inputs: {x: embedding}}
        - {id: head, layer: Output, inputs: {x: encoder}}

Each node is one block of the catalog (`graph_blocks`): a Keras or keras_seq
layer named by the node's `id`, made with the node's `params` (the layer's own
constructor arguments) and called on the nodes its `inputs` name, port by port.
`Input` is the task's input and `Output` the task's head (a float32 softmax over
the classes, or a linear regressor). On a translation task (token-sequence
targets) one `RecurrentDecoder` block, the whole decoder (`graph_decoder`),
feeds the Output, and the model built is `keras_seq.models.AssembledSeq2Seq`.

Validation comes in two steps, as for every model type. The structure (ids,
blocks, ports, references, cycles, nodes that lead nowhere) is the pydantic
model's, without Keras, so `load_spec` refuses a miswired graph with the path of
the field (`model.nodes[3].inputs.query`). The parameters and shapes need the
layers and the task: `GraphBuilder.check` walks the graph symbolically
(`graph_shapes.walk`), then runs what `model.fit` runs on one batch, still
symbolically (`graph_fit.fit_problems`: each layer's `call` as training calls
it, the Output against the task's targets for the compiled loss), so `prepare`
refuses what a layer or the loss would refuse, in its own words, at the node's
path. `graph_report(document)` gives the canvas all of it at once: every
node's output shape, every edge's shape, the errors by node id and the
parameter count, without training or allocating any weights.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from builder_ui.builders import graph_blocks, graph_fit, graph_shapes, memory, registry, sequence
from builder_ui.builders.base import ModelBuilder
from builder_ui.builders.registry import register_model
from builder_ui.builders.seq2seq import Seq2SeqBuilder
from builder_ui.builders.validation import load_spec, resolve_component
from builder_ui.specs import ExperimentSpec, ModelParams, SpecError, StrictModel

NODE_ID_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"
MAX_NODES = 256

Finite = Annotated[float, Field(allow_inf_nan=False)]
Scalar = bool | int | Finite | str | None
NodeId = Annotated[str, Field(pattern=NODE_ID_PATTERN)]


class GraphNode(StrictModel):
    """One block of the graph.

    Args:
        id: Unique; the Keras layer's name and the variable in exported code.
        layer: A block name of the catalog (`LSTM`, `MultiHeadAttention`, ...).
        params: The layer's own constructor arguments (JSON scalars or lists of them).
        inputs: Port name → node id (a list of ids for a variadic port).
        position: `[x, y]` on the canvas; the builders ignore it.
    """

    id: NodeId
    layer: Annotated[str, Field(min_length=1, max_length=128)]
    params: dict[str, Scalar | list[Scalar]] = Field(default_factory=dict)
    inputs: dict[str, NodeId | list[NodeId]] = Field(default_factory=dict)
    position: Annotated[list[Finite], Field(min_length=2, max_length=2)] | None = None


class GraphParams(ModelParams):
    """A graph of blocks from one `Input` to one `Output` (see the module docstring)."""

    type: Literal["graph"] = "graph"
    nodes: Annotated[list[GraphNode], Field(min_length=2, max_length=MAX_NODES)]

    @model_validator(mode="after")
    def _wired(self) -> GraphParams:
        problems = graph_shapes.structure_problems(plain_nodes(self))
        if problems:
            raise ValidationError.from_exception_data(
                "GraphParams", [_line_error(problem) for problem in problems]
            )
        return self


def _line_error(problem: graph_shapes.NodeProblem) -> InitErrorDetails:
    """A structural problem as a pydantic error at its field (`nodes.3.inputs.query`)."""
    loc: tuple[Any, ...] = ("nodes",)
    if problem.index is not None:
        loc += (problem.index, *[part for part in problem.field.split(".") if part])
    # "{error}" rather than the message itself: pydantic formats the template with ctx.
    error = PydanticCustomError("value_error", "{error}", {"error": problem.message})
    return InitErrorDetails(type=error, loc=loc, input=None)


def plain_nodes(params: GraphParams) -> list[dict[str, Any]]:
    """The nodes as plain dicts (`id`, `layer`, `params`, `inputs`), as the walk reads them."""
    return [node.model_dump(exclude={"position"}) for node in params.nodes]


@register_model("graph")
class GraphBuilder(ModelBuilder):
    """Builds a graph: a functional `keras.Model`, or for a translating task an `AssembledSeq2Seq`.

    A task whose targets are token sequences (`toy_translation`, `parallel_text`)
    needs one `RecurrentDecoder` block feeding the Output (`graph_decoder`): the
    nodes before it become the encoder, a functional model from the source ids to
    its `memory` and `state` ports, under `keras_seq.models.AssembledSeq2Seq`,
    which trains, decodes and is scored (BLEU, exact match) like every seq2seq.
    """

    params = GraphParams
    input_kinds = ("tokens", "numeric", "image")
    target_kinds = ("classification", "regression", "sequence")
    description = "Blocks wired port to port on the canvas: any layers, from Input to Output."

    def check(self, params, task):
        """The layers' refusals of their parameters and inputs, and what `model.fit` would
        refuse on one batch (`graph_fit`), as `(field, message)` at each node's path."""
        nodes = plain_nodes(params)
        walk = graph_shapes.walk(nodes, task, symbolic=True)
        problems = walk.problems or _fit_problems(nodes, task, walk)
        return [(problem.path, problem.message) for problem in problems]

    def estimate(self, params, task):
        """Each node's weights, counted by its layer built symbolically, and its output's size.

        The layers are made in a stateless scope (nothing allocated), so a graph too large
        for the machine is refused before its weights exist. The activations counted are
        each node's output per example: what the backward pass keeps at the least (a
        recurrent layer keeps its states at every step as well). None for a graph with
        problems (`check` reports them).
        """
        walk = graph_shapes.walk(plain_nodes(params), task, symbolic=True)
        if walk.problems:
            return None
        index = {node.id: position for position, node in enumerate(params.nodes)}
        parts = []
        for node_id, layer in walk.layers.items():
            tensor = walk.tensors.get(node_id)
            size = 0 if tensor is None else math.prod(int(d or 1) for d in tensor.shape[1:])
            weights = int(layer.count_params()) if layer.built else 0
            field = f"model.nodes[{index[node_id]}].params"
            parts.append(memory.Part(node_id, field, weights, size))
        return parts

    def build(self, params, task):
        """A functional `keras.Model` whose layers are named by node id (see the class)."""
        # Keras loads on first use, not on import (specs and the app start without it).
        import keras

        nodes = plain_nodes(params)
        decoder = _decoder_node(nodes) if _translates(task) else None
        skip = frozenset() if decoder is None else frozenset({decoder["id"], _output_id(nodes)})
        walk = graph_shapes.walk(nodes, task, symbolic=False, skip=skip)
        if walk.problems:
            raise SpecError([(f"model.{p.path}", p.message) for p in walk.problems])
        if decoder is None:
            return keras.Model(
                walk.tensors[walk.input_id], walk.tensors[walk.output_id], name="graph"
            )
        return _assembled_seq2seq(decoder, walk, task)

    # A translating graph trains and is scored as every seq2seq model.

    def fit_data(self, params, task):
        if _translates(task):
            return _SEQ2SEQ.fit_data(params, task)
        return super().fit_data(params, task)

    def compile_args(self, params, task):
        if _translates(task):
            return _SEQ2SEQ.compile_args(params, task)
        return super().compile_args(params, task)

    def monitor_metric(self, params, task):
        if _translates(task):
            return _SEQ2SEQ.monitor_metric(params, task)
        return super().monitor_metric(params, task)

    def evaluate(self, model, params, prepared):
        if _translates(prepared.task):
            return _SEQ2SEQ.evaluate(model, params, prepared)
        return super().evaluate(model, params, prepared)


# What a translating graph shares with every seq2seq: its data, loss, metric and scoring.
_SEQ2SEQ = Seq2SeqBuilder()


def _translates(task: Any) -> bool:
    return task.targets.kind == "sequence"


def _fit_problems(
    nodes: list[dict[str, Any]], task: Any, walk: graph_shapes.Walk
) -> list[graph_shapes.NodeProblem]:
    """`graph_fit.fit_problems` with the loss a graph is compiled with (a translating graph's
    is its decoder's: none to check against the Output)."""
    loss = None if _translates(task) else ModelBuilder().compile_args(None, task)["loss"]
    return graph_fit.fit_problems(nodes, task, walk, loss)


def _decoder_node(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    return next(node for node in nodes if node["layer"] == graph_blocks.DECODER)


def _output_id(nodes: list[dict[str, Any]]) -> str:
    return next(node["id"] for node in nodes if node["layer"] == graph_blocks.OUTPUT)


def _assembled_seq2seq(decoder: dict[str, Any], walk: graph_shapes.Walk, task: Any) -> Any:
    """`AssembledSeq2Seq` over the encoder the walk built up to the decoder's ports."""
    # Keras loads on first use, not on import (specs and the app start without it).
    import keras

    from keras_seq.models import AssembledSeq2Seq

    targets = {"target_vocab_size": task.targets.vocab_size, "target_length": task.targets.length}
    # The block's layer class through the catalog, which imports it (and Keras) when asked.
    block_class = graph_blocks.block(graph_blocks.DECODER).layer_class()
    arguments = block_class(**targets, **decoder.get("params", {})).model_arguments()
    ports = dict(decoder["inputs"])
    if arguments["attention"] is None:  # the fixed vector: the memory is not read
        ports.pop("memory")
    outputs = {port: walk.tensors[source] for port, source in ports.items()}
    encoder = keras.Model(walk.tensors[walk.input_id], outputs, name="encoder")
    return AssembledSeq2Seq(
        task.inputs.vocab_size, task.targets.vocab_size, encoder, name="graph", **arguments
    )


def translates(spec: Mapping[str, Any]) -> bool:
    """Whether a spec document's model turns token sequences into token sequences.

    A `seq2seq` model, or a `graph` with a `RecurrentDecoder` block; read from the
    document alone (no task is loaded), for the views that translate or score BLEU.
    """
    model = spec.get("model") if isinstance(spec, Mapping) else None
    if not isinstance(model, Mapping):
        return False
    if model.get("type") == "seq2seq":
        return True
    nodes = model.get("nodes") if model.get("type") == "graph" else None
    return isinstance(nodes, list) and any(
        isinstance(node, Mapping) and node.get("layer") == graph_blocks.DECODER for node in nodes
    )


def block_catalog() -> list[dict[str, Any]]:
    """Every block as JSON-ready data, in palette order (imports Keras for the signatures).

    `ports` lists every port (required ones first, in call order);
    `optional_ports` and `variadic` say which of them are optional or take a list.
    """
    return [
        {
            "name": item.name,
            "group": item.group,
            "description": item.description,
            "ports": list(item.all_ports),
            "variadic": list(item.variadic),
            "optional_ports": list(item.optional_ports),
            "params": [param.to_json() for param in graph_blocks.parameters(item)],
        }
        for item in graph_blocks.blocks()
    ]


@dataclass(frozen=True)
class GraphReport:
    """What the canvas shows for a graph: shapes, edges, errors by node, parameter count.

    Attributes:
        shapes: Node id → its output shape as text (`"(None, 20, 32)"`).
        edges: `{"source", "target", "port", "shape"}` per connection; `shape`
            is the source's output shape, or None where it is unknown.
        errors: Node id → one message naming the node, the port and the
            layer's own words; `"spec"` for a problem outside the nodes.
        params: The total parameter count when the graph has no error, else None.
    """

    shapes: dict[str, str] = field(default_factory=dict)
    edges: list[dict[str, Any]] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    params: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "shapes": dict(self.shapes),
            "edges": [dict(edge) for edge in self.edges],
            "errors": dict(self.errors),
            "params": self.params,
        }


@dataclass(frozen=True)
class _TaskShapes:
    """What the walk reads of a task: its name and its input and target specs."""

    name: str
    inputs: Any
    targets: Any


@functools.lru_cache(maxsize=8)
def _task_shapes(task_json: str) -> _TaskShapes:
    """The task's specs, made once per task (the canvas asks again on every change)."""
    params = resolve_component("task", json.loads(task_json))
    data = registry.task_builder(params.type).load(params)
    return _TaskShapes(data.name, data.inputs, data.targets)


def _node_index(path: str) -> int | None:
    match = re.match(r"^model\.nodes\[(\d+)\]", path)
    return int(match.group(1)) if match else None


def _raw_nodes(document: Any) -> list[dict[str, Any]]:
    """The nodes of a document that are each well formed (for shapes despite other errors)."""
    model = document.get("model") if isinstance(document, Mapping) else None
    nodes = model.get("nodes") if isinstance(model, Mapping) else None
    if not isinstance(nodes, list):
        return []
    found = []
    for node in nodes:
        try:
            found.append(GraphNode.model_validate(node).model_dump(exclude={"position"}))
        except ValidationError:
            found.append(None)
    return found


def _spec_errors(error: SpecError, nodes: list[Any]) -> dict[str, str]:
    errors: dict[str, str] = {}
    for path, message in error.problems:
        index = _node_index(path)
        node = nodes[index] if index is not None and index < len(nodes) else None
        key = node["id"] if node else "spec"
        text = message if node else f"{path}: {message}" if path else message
        if key not in errors:
            errors[key] = text
        elif key == "spec":
            errors[key] += f"; {text}"
    return errors


def _task(document: Any, errors: dict[str, str]) -> _TaskShapes | None:
    task = document.get("task") if isinstance(document, Mapping) else None
    try:
        return _task_shapes(json.dumps(task, sort_keys=True))
    except SpecError as error:
        errors.setdefault("spec", str(error))
    except (TypeError, ValueError, OSError) as error:
        errors.setdefault("spec", f"task: {error}")
    return None


def graph_report(document: Mapping[str, Any] | ExperimentSpec) -> GraphReport:
    """Shapes, edges, errors and parameter count of a graph spec; never raises, never trains.

    Args:
        document: A whole spec (its task gives the input shape), as a dict or
            an `ExperimentSpec`.
    """
    if isinstance(document, ExperimentSpec):
        document = document.to_dict()
    errors: dict[str, str] = {}
    nodes = _raw_nodes(document)
    try:
        spec = load_spec(document)
    except SpecError as error:
        errors.update(_spec_errors(error, nodes))
    else:
        if spec.model.type != "graph":
            errors["spec"] = f"model.type: expected 'graph', got {spec.model.type!r}"
    task = _task(document, errors)
    if task is not None and task.targets.kind not in GraphBuilder.target_kinds:
        errors.setdefault(
            "spec",
            f"task: a graph predicts classes, values or target sentences, not {task.targets.kind}",
        )
        task = None
    usable = [node for node in nodes if node is not None]
    walk = graph_shapes.Walk()
    if task is not None and len(usable) == len(nodes) and usable:
        walk = graph_shapes.walk(usable, task, symbolic=True)
        for problem in walk.problems or _fit_problems(usable, task, walk):
            errors.setdefault(problem.node_id or "spec", problem.message)
    shapes = {node_id: walk.shape_text(node_id) for node_id in walk.tensors}
    edges = [
        {"source": source, "target": target, "port": port, "shape": shapes.get(source)}
        for source, target, port in graph_shapes.edges_of(usable)
    ]
    params = walk.param_count() if not errors and walk.output_id else None
    return GraphReport(shapes, edges, errors, params)


# Plain stacks as graphs ---------------------------------------------------------------------


def _node(node_id: str, layer: str, source: str | None, **params: Any) -> dict[str, Any]:
    node: dict[str, Any] = {"id": node_id, "layer": layer}
    if params:
        node["params"] = params
    if source is not None:
        node["inputs"] = {"x": source}
    return node


def _rnn_nodes(model: Any, tokens: bool) -> list[dict[str, Any]]:
    """`sequence._rnn_encoder` as nodes: the embedding, then one node per recurrent layer."""
    encoder, nodes, x = model.encoder, [], "sequence"
    if tokens:
        dim = model.embedding_dim or sequence.DEFAULT_EMBEDDING_DIM
        nodes.append(_node("token_embedding", "Embedding", x, output_dim=dim))
        if model.mask_zero:
            nodes[-1]["params"]["mask_zero"] = True
        x = "token_embedding"
    for index in range(encoder.num_layers):
        params: dict[str, Any] = {"units": encoder.units, "dropout": encoder.dropout}
        params["return_sequences"] = index < encoder.num_layers - 1
        if encoder.cell == "cec_lstm":
            params.update(forget_gate=bool(encoder.forget_gate), peephole=bool(encoder.peephole))
            params.update(sequence.cec_arguments(encoder))
        node_id = f"{encoder.cell}_{index}"
        if encoder.bidirectional:
            params["bidirectional"] = True
            node_id = f"bidirectional_{index}"
        nodes.append(_node(node_id, sequence.CELL_LAYERS[encoder.cell], x, **params))
        x = node_id
    return nodes


def _transformer_nodes(model: Any, tokens: bool, length: int) -> list[dict[str, Any]]:
    """`sequence._transformer_encoder` as nodes, block for block."""
    encoder = model.encoder
    if tokens:
        first = _node("token_embedding", "Embedding", "sequence", output_dim=encoder.embedding_dim)
        if model.mask_zero:
            first["params"]["mask_zero"] = True
    else:
        first = _node("input_projection", "Dense", "sequence", units=encoder.embedding_dim)
    nodes = [first]
    if encoder.pooling == "class_token":
        nodes.append(_node("class_token", "ClassToken", nodes[-1]["id"]))
        length += 1
    if encoder.positions == "sinusoidal":
        nodes.append(_node("position_encoding", "SinusoidalPositionalEncoding", nodes[-1]["id"]))
    else:
        nodes.append(
            _node(
                "position_embedding",
                "LearnedPositionalEmbedding",
                nodes[-1]["id"],
                max_length=length,
            )
        )
    nodes.append(_node("embedding_dropout", "Dropout", nodes[-1]["id"], rate=encoder.dropout))
    for index in range(encoder.num_layers):
        block = {"num_heads": encoder.num_heads, "ff_dim": encoder.ff_dim}
        block.update(dropout=encoder.dropout, norm_first=encoder.norm_first)
        nodes.append(
            _node(f"encoder_block_{index}", "TransformerEncoderBlock", nodes[-1]["id"], **block)
        )
    if encoder.norm_first:
        nodes.append(
            _node("encoder_layer_norm", "LayerNormalization", nodes[-1]["id"], epsilon=1e-5)
        )
    if encoder.pooling == "mean":
        nodes.append(_node("mean_pooling", "MaskedMeanPooling", nodes[-1]["id"]))
    else:
        nodes.append(_node("class_token_pooling", "ClassTokenPooling", nodes[-1]["id"]))
    return nodes


# `keras_seq.models.vision_transformer`'s default, which the `vision_transformer` builder keeps.
VIT_LAYER_NORM_EPSILON = 1e-6


def _vit_nodes(model: Any) -> list[dict[str, Any]]:
    """`keras_seq.models.vision_transformer` as nodes, block for block (pre-LN, GELU).

    Its position embedding starts from a normal of standard deviation 0.02, which a
    node's JSON params cannot say: the graph's starts from the layer's default.
    """
    size = {"patch_size": model.patch_size, "embedding_dim": model.embedding_dim}
    nodes = [
        _node("patch_embedding", "PatchEmbedding", "images", **size),
        _node("class_token", "ClassToken", "patch_embedding"),
        _node("position_embedding", "LearnedPositionalEmbedding", "class_token"),
        _node("embedding_dropout", "Dropout", "position_embedding", rate=model.dropout),
    ]
    for index in range(model.num_layers):
        block = {"num_heads": model.num_heads, "ff_dim": model.ff_dim, "dropout": model.dropout}
        block.update(norm_first=True, activation="gelu", layer_norm_epsilon=VIT_LAYER_NORM_EPSILON)
        nodes.append(
            _node(f"encoder_block_{index}", "TransformerEncoderBlock", nodes[-1]["id"], **block)
        )
    nodes.append(
        _node(
            "encoder_layer_norm",
            "LayerNormalization",
            nodes[-1]["id"],
            epsilon=VIT_LAYER_NORM_EPSILON,
        )
    )
    nodes.append(_node("class_token_pooling", "ClassTokenPooling", nodes[-1]["id"]))
    return nodes


def _seq2seq_nodes(model: Any) -> list[dict[str, Any]]:
    """An RNN `seq2seq` (`keras_seq.models.RNNSeq2Seq`) as an encoder graph and one decoder block.

    The encoder is its layers, block for block (the source reversal, the embedding,
    each recurrent layer, the dropout between them); `FinalStatePooling` hands the
    last layer's final state `[h→_S; h←_1]` to the `RecurrentDecoder` block, whose
    attention reads the last layer's states. With one GRU or simple-RNN layer that
    is the model exactly (same weights, same probabilities). An edge carries one
    tensor, so an LSTM decoder starts with `c_0 = 0` rather than the encoder's `c`,
    and with several layers every decoder layer starts from the top layer's state.
    """
    arch, x = model.architecture, "source"
    nodes = []
    if model.reverse_source:
        nodes.append(_node("source_reversal", "ReverseWithinLength", x))
        x = "source_reversal"
    nodes.append(
        _node("source_embedding", "Embedding", x, output_dim=arch.embedding_dim, mask_zero=True)
    )
    x = "source_embedding"
    if model.dropout:
        nodes.append(_node("embedding_dropout", "Dropout", x, rate=model.dropout))
        x = "embedding_dropout"
    units = arch.units // 2 if arch.bidirectional else arch.units
    for index in range(model.num_layers):
        if index and model.dropout:
            nodes.append(_node(f"encoder_dropout_{index}", "Dropout", x, rate=model.dropout))
            x = nodes[-1]["id"]
        params: dict[str, Any] = {"units": units, "return_sequences": True}
        if arch.bidirectional:
            params["bidirectional"] = True
        nodes.append(_node(f"encoder_{index}", sequence.CELL_LAYERS[arch.cell], x, **params))
        x = nodes[-1]["id"]
    final = {"bidirectional": True} if arch.bidirectional else {}
    nodes.append(_node("encoder_state", "FinalStatePooling", x, **final))
    decoder = {"cell": arch.cell, "units": arch.units, "num_layers": model.num_layers}
    decoder.update(attention=arch.attention, embedding_dim=arch.embedding_dim)
    if arch.attention_units is not None:
        decoder["attention_units"] = arch.attention_units
    if arch.input_feeding:
        decoder["input_feeding"] = True
    if model.dropout:
        decoder["dropout"] = model.dropout
    nodes.append(
        {
            "id": "decoder",
            "layer": graph_blocks.DECODER,
            "params": decoder,
            "inputs": {"memory": x, "state": "encoder_state"},
        }
    )
    return nodes


PLAIN_STACK_TYPES = ("sequence_classifier", "sequence_regressor", "vision_transformer", "seq2seq")


def preset_as_graph(spec: Mapping[str, Any] | ExperimentSpec) -> dict[str, Any]:
    """The `graph` document of a plain stack (`sequence_classifier`, `sequence_regressor`, ViT)
    or of an RNN `seq2seq`, whose decoder becomes one `RecurrentDecoder` block.

    The graph builds the same layers in the same order (same parameter count,
    same outputs with the same weights), named as the stack names them; for a
    seq2seq, see `_seq2seq_nodes` for where an LSTM or a deep decoder starts
    differently. A sweep is left out: its paths name the stack's fields, which a
    graph does not have.

    Raises:
        SpecError: at `model.type` for any other model type, at
            `model.architecture` for a Transformer seq2seq.
    """
    spec = load_spec(spec)
    model = spec.model
    if model.type == "seq2seq" and model.architecture.type != "rnn":
        raise SpecError(
            [
                (
                    "model.architecture",
                    "only an RNN seq2seq opens as a graph (its decoder is the RecurrentDecoder "
                    "block); a Transformer decoder is not a block yet",
                )
            ]
        )
    if model.type not in PLAIN_STACK_TYPES:
        raise SpecError(
            [
                (
                    "model.type",
                    f"only a {', '.join(PLAIN_STACK_TYPES[:-1])} or {PLAIN_STACK_TYPES[-1]} "
                    f"opens as a graph, got {model.type!r}",
                )
            ]
        )
    source = "sequence"
    if model.type == "vision_transformer":
        source, nodes = "images", _vit_nodes(model)
    elif model.type == "seq2seq":
        source, nodes = "source", _seq2seq_nodes(model)
    else:
        task = _task_shapes(json.dumps(spec.task.model_dump(mode="json"), sort_keys=True))
        tokens = task.inputs.kind == "tokens"
        if model.encoder.type == "rnn":
            nodes = _rnn_nodes(model, tokens)
        else:
            nodes = _transformer_nodes(model, tokens, task.inputs.length)
    head = {"sequence_regressor": "regressor", "seq2seq": "words"}.get(model.type, "classifier")
    nodes = [_node(source, "Input", None), *nodes, _node(head, "Output", nodes[-1]["id"])]
    document = spec.to_dict()
    document.pop("sweep", None)
    document["model"] = {"type": "graph", "nodes": nodes}
    return document
