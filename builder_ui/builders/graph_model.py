"""The Keras side of a `graph` model and of every short form of one: check, estimate, build.

    nodes ─▶ walk (`graph_shapes`) ─▶ over-large layers ─▶ one training step (`graph_fit`)
          ─▶ the model: a functional `keras.Model`, or the decoder block's seq2seq

`check_nodes`, `estimate_nodes` and `build_nodes` serve `graph.GraphBuilder` (a graph
written node by node) and `graph.ShortFormBuilder` (the named types, written out as nodes
by `short_forms`) alike; `trainer(task)` says how such a model trains and is scored when a
decoder block writes the task's targets (`translating`, `captioning`, `pointing`).
`graph_report(document)` is what the canvas shows (shapes, edges, errors by node,
parameters and memory, the recurrent kernels); `preset_as_graph` puts a short form's nodes
in its spec ("Open as graph", `keras-seq graph`).

Keras loads with this module: the builders (`graph`) reach it at a model's first check,
estimate or build, after the spec is loaded and the process has chosen its backend.
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import keras
import numpy as np
import yaml
from pydantic import ValidationError

from builder_ui.builders import (
    graph_blocks,
    graph_fit,
    graph_groups,
    graph_kernels,
    graph_shapes,
    memory,
    registry,
    short_forms,
)
from builder_ui.builders.base import ModelBuilder
from builder_ui.builders.captioning import Captioning
from builder_ui.builders.graph_params import MAX_NODES, GraphNode
from builder_ui.builders.graph_structure import NodeProblem, edges_of
from builder_ui.builders.loading import load_spec, resolve_component
from builder_ui.builders.pointing import Pointing
from builder_ui.builders.translating import Translating
from builder_ui.specs import ExperimentSpec, SpecError
from keras_seq.argument_checks import MAX_LAYER_PARAMS
from keras_seq.layers.attention_base import BaseAttention

# What a graph with a decoder block shares with its model type: data, loss, metric, scoring.
_TRAINERS = {"sequence": Translating(), "caption": Captioning(), "pointer": Pointing()}


def trainer(task: Any, default: Any) -> Any:
    """How a model whose decoder block writes `task`'s targets trains and is scored, else
    `default`."""
    return _TRAINERS.get(graph_blocks.decoded_kind(task), default)


def check_nodes(nodes: list[dict[str, Any]], task: Any) -> list[NodeProblem]:
    """The walk's problems, else a layer holding more weights than keras_seq lets one layer
    (`keras_seq.argument_checks.MAX_LAYER_PARAMS`, checked before the trace), else what
    `model.fit` would refuse on one batch (`graph_fit`).

    A short form's graph and one written node by node meet the same limit: Keras's own
    layers (`LSTM`, `Dense`) have none, and the memory budget can be raised past it.
    """
    walk = graph_shapes.walk(nodes, task, symbolic=True)
    if walk.problems:
        return walk.problems
    return _oversized(nodes, walk) or _fit_problems(nodes, task, walk)


def estimate_nodes(
    nodes: list[dict[str, Any]], task: Any, field_of: Callable[..., str]
) -> list[memory.Part] | None:
    """One `memory.Part` per node: its layer's weights and what it keeps for the backward pass.

    The layers are made in a stateless scope (nothing allocated), so a model too large
    for the machine is refused before its weights exist. The weights are the built
    layer's `count_params()`; the activations, what `kept_floats` reads off the
    built layer (its output, a recurrent layer's states at every step, attention scores).
    A decoder block that holds a cache while decoding (`TransformerDecoder`) adds a part
    of its own, `<id>_decoding`, with what its `decoding_floats` says, at the field of
    its `max_length`. None for a graph with problems (`check_nodes` reports them).

    Args:
        nodes: The graph's nodes (`plain_nodes`, or a short form's `Expansion.nodes`).
        task: The task's data (its `inputs` and `targets` specs are read).
        field_of: `(node id, param name or None)` → the spec field a refusal names.
    """
    walk = graph_shapes.walk(nodes, task, symbolic=True)
    if walk.problems:
        return None
    sources = {node["id"]: _sources(node) for node in nodes}
    parts = []
    for node_id, layer in walk.layers.items():
        inputs = [walk.tensors[source].shape for source in sources[node_id]]
        output = walk.tensors[node_id].shape
        weights = int(layer.count_params()) if layer.built else 0
        kept = kept_floats(layer, inputs, output)
        parts.append(memory.Part(node_id, field_of(node_id), weights, kept))
        decoding = getattr(layer, "decoding_floats", None)
        if decoding is not None:
            floats = decoding(int(inputs[0][1] or task.inputs.length))
            parts.append(
                memory.Part(f"{node_id}_decoding", field_of(node_id, "max_length"), 0, 0, floats)
            )
    return parts


def _sources(node: Mapping[str, Any]) -> list[str]:
    """The ids a node reads, port by port (a variadic port's in order)."""
    found = []
    for value in node.get("inputs", {}).values():
        found += value if isinstance(value, list) else [value]
    return found


def build_nodes(
    nodes: list[dict[str, Any]],
    task: Any,
    name: str = "graph",
    locate: Callable[[NodeProblem], NodeProblem] | None = None,
) -> Any:
    """The model of a graph: a functional `keras.Model` named `name`, its layers named by
    node id; for a translating task an `AssembledSeq2Seq` (see `GraphBuilder`).

    Args:
        locate: A problem of `nodes` as one of the spec's own nodes (for expanded groups:
            `ExpandedNodes.original`); by default `nodes` are the spec's.

    Raises:
        SpecError: the walk's problems, at `model.nodes[i]...`.
    """
    # Keras loads on first use, not on import (specs and the app start without it).

    decoder = _decoder_node(nodes) if _decodes(task) else None
    skip = frozenset() if decoder is None else frozenset({decoder["id"], _output_id(nodes)})
    walk = graph_shapes.walk(nodes, task, symbolic=False, skip=skip)
    if walk.problems:
        located = map(locate, walk.problems) if locate else walk.problems
        raise SpecError([(f"model.{p.path}", p.message) for p in located])
    if decoder is None:
        return keras.Model(walk.tensors[walk.input_id], walk.tensors[walk.output_id], name=name)
    return _assembled_seq2seq(decoder, walk, task, name)


def _oversized(nodes: list[dict[str, Any]], walk: graph_shapes.Walk) -> list[NodeProblem]:
    """Layers holding more weights than keras_seq allows one layer (`MAX_LAYER_PARAMS`); each
    direction of a `Bidirectional` is a layer of its own."""
    # Loaded already: the walk made the layers.

    found = []
    for index, node in enumerate(nodes):
        node_id, layer = node["id"], walk.layers.get(node["id"])
        if isinstance(layer, keras.layers.Bidirectional):
            layer = layer.forward_layer
        count = int(layer.count_params()) if layer is not None and layer.built else 0
        if count > MAX_LAYER_PARAMS:
            found.append(
                NodeProblem(
                    index,
                    node_id,
                    "params",
                    f"{node_id} ({type(layer).__name__}) would hold {count:,} weights, more "
                    f"than {MAX_LAYER_PARAMS:,}",
                )
            )
    return found


def _decodes(task: Any) -> bool:
    """Whether the task's targets are written by a decoder block (token sequences, pointers)."""
    return graph_blocks.decoded_kind(task) is not None


def _fit_problems(
    nodes: list[dict[str, Any]], task: Any, walk: graph_shapes.Walk
) -> list[NodeProblem]:
    """`graph_fit.fit_problems` with the loss a graph is compiled with (a translating graph's
    is its decoder's: none to check against the Output)."""
    loss = None if _decodes(task) else ModelBuilder().compile_args(None, task)["loss"]
    return graph_fit.fit_problems(nodes, task, walk, loss)


def _decoder_node(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    return next(node for node in nodes if node["layer"] in graph_blocks.DECODERS)


def _output_id(nodes: list[dict[str, Any]]) -> str:
    return next(node["id"] for node in nodes if node["layer"] == graph_blocks.OUTPUT)


def _assembled_seq2seq(
    decoder: dict[str, Any], walk: graph_shapes.Walk, task: Any, name: str
) -> Any:
    """The decoder block's model (`AssembledSeq2Seq`, `AssembledTransformerSeq2Seq`) over the
    encoder the walk built up to the block's ports."""
    # Keras loads on first use, not on import (specs and the app start without it).

    item = graph_blocks.block(decoder["layer"])
    # The block's layer class through the catalog, which imports it (and Keras) when asked;
    # the task fills in its sizes (the target vocabulary and length, the input features).
    params = graph_shapes.filled_params(item, decoder.get("params", {}), task, [])
    block = item.layer_class()(**params)
    ports = dict(decoder["inputs"])
    if not block.reads_memory:  # the fixed vector: the memory is not read
        ports.pop("memory")
    outputs = {
        port: graph_shapes.port_value(item, port, given, walk.tensors, walk.states)
        for port, given in ports.items()
    }
    encoder = keras.Model(walk.tensors[walk.input_id], outputs, name="encoder")
    return block.assemble(task, encoder, name=name)


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
            is the source's output shape (for a decoder's `state` port reading a
            recurrent block, the shapes of its final state: `h`, and `c`), or None
            where it is unknown.
        errors: Node id → one message naming the node, the port and the
            layer's own words; `"spec"` for a problem outside the nodes.
        params: The total parameter count when the graph has no error, else None.
        blocks: Node id → `{"params", "weights_bytes", "kernel"}` for every node whose
            layer was built (despite errors elsewhere; Input and Output too): its own
            parameter count, their bytes, and whether it runs on a fast kernel
            (`graph_kernels.kernel_badge`: `{"fast", "name", "why"}`, `fast` None for a
            block with none). A member of a repeated group counts all its copies (the
            sums of their params and bytes; copy 1's kernel).
        groups: Group id → `{"shape", "params"}`: its last copy's exit shape (None when
            unknown or the group has no single exit), and the parameters of all copies of
            all its members (None when a copy's layer was not built).

    The keys are the spec's node ids, before the groups are expanded: `shapes[m]` is copy
    1's shape; the edges are those the spec writes, each with the shape flowing along it
    (from a repeated group's exit to a node outside, the last copy's); an error of copy k
    of `m` is `m`'s, its message starting `"copy k: "`.
    """

    shapes: dict[str, str] = field(default_factory=dict)
    edges: list[dict[str, Any]] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    params: int | None = None
    blocks: dict[str, dict[str, Any]] = field(default_factory=dict)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "shapes": dict(self.shapes),
            "edges": [dict(edge) for edge in self.edges],
            "errors": dict(self.errors),
            "params": self.params,
            "blocks": {
                node_id: {**block, "kernel": dict(block["kernel"])}
                for node_id, block in self.blocks.items()
            },
            "groups": {group_id: dict(group) for group_id, group in self.groups.items()},
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


def _raw_groups(document: Any) -> tuple[list[dict[str, Any]], str | None]:
    """The `model.groups` of a document as dicts, or `([], the problem)` when malformed."""
    model = document.get("model") if isinstance(document, Mapping) else None
    groups = model.get("groups", []) if isinstance(model, Mapping) else []
    if groups is None:
        return [], None
    if not isinstance(groups, list):
        return [], f"model.groups: expected a list, got {type(groups).__name__}"
    found = []
    for index, group in enumerate(groups):
        try:
            found.append(graph_groups.GraphGroup.model_validate(group).model_dump())
        except ValidationError as error:
            detail = error.errors(include_url=False)[0]
            where = "".join(
                f"[{part}]" if isinstance(part, int) else f".{part}" for part in detail["loc"]
            )
            return [], f"model.groups[{index}]{where}: {detail['msg']}"
    return found, None


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


def graph_report(
    document: Mapping[str, Any] | ExperimentSpec, *, gpu: bool | None = None
) -> GraphReport:
    """Shapes, edges, errors and parameter count of a graph spec; never raises, never trains.

    Args:
        document: A whole spec (its task gives the input shape), as a dict or
            an `ExperimentSpec`.
        gpu: Whether training gets a GPU, for the blocks' kernel badges; None asks this
            process's backend (`graph_kernels.gpu_available`).
    """
    if isinstance(document, ExperimentSpec):
        document = document.to_dict()
    errors: dict[str, str] = {}
    nodes = _raw_nodes(document)
    groups, malformed = _raw_groups(document)
    try:
        spec = load_spec(document)
    except SpecError as error:
        errors.update(_spec_errors(error, nodes))
    else:
        if spec.model.type != "graph":
            errors["spec"] = f"model.type: expected 'graph', got {spec.model.type!r}"
    task = _task(document, errors)
    if task is not None and task.targets.kind not in registry.model_builder("graph").target_kinds:
        errors.setdefault(
            "spec",
            f"task: a graph predicts classes, values, target sentences, pointers or frames, not "
            f"{task.targets.kind}",
        )
        task = None
    usable = [node for node in nodes if node is not None]
    expansion = _report_expansion(usable, len(nodes), groups, malformed, errors)
    walk = graph_shapes.Walk()
    if task is not None and len(usable) == len(nodes) and usable:
        walk = graph_shapes.walk(expansion.nodes, task, symbolic=True)
        for problem in walk.problems or _fit_problems(expansion.nodes, task, walk):
            problem = expansion.original(problem)
            errors.setdefault(problem.node_id or "spec", problem.message)
    every_shape = {node_id: walk.shape_text(node_id) for node_id in walk.tensors}
    own = {node["id"] for node in usable}
    shapes = {node_id: shape for node_id, shape in every_shape.items() if node_id in own}
    states = {
        node_id: ", ".join(graph_shapes.shape_text(tensor.shape) for tensor in tensors)
        for node_id, tensors in walk.states.items()
    }
    blocks = {node["id"]: graph_blocks.block(node["layer"]) for node in usable}
    # Each edge the spec writes, and the node its target reads there once expanded.
    twins = {node["id"]: node for node in expansion.nodes}
    read = edges_of([twins[node["id"]] for node in usable])
    edges = [
        {
            "source": source,
            "target": target,
            "port": port,
            # A state port reading a recurrent block gets its final state (h, and c).
            "shape": states.get(actual)
            if port in getattr(blocks.get(target), "states", ())
            else every_shape.get(actual),
        }
        for (source, target, port), (actual, _, _) in zip(edges_of(usable), read, strict=True)
    ]
    params = walk.param_count() if not errors and walk.output_id else None
    copies = _block_reports(expansion.nodes, walk, document, gpu)
    return GraphReport(
        shapes,
        edges,
        errors,
        params,
        _members_blocks(copies, expansion),
        _group_reports(groups, expansion, copies, walk),
    )


def _report_expansion(
    usable: list[dict[str, Any]],
    count: int,
    groups: list[dict[str, Any]],
    malformed: str | None,
    errors: dict[str, str],
) -> graph_groups.Expansion:
    """The report's nodes with the groups' copies; the nodes as they are (the problem
    under `"spec"`) when the groups are malformed, refused, or some node is."""
    problems = [] if malformed else graph_groups.problems(usable, groups, MAX_NODES)
    texts = [malformed] if malformed else [f"model.{p.path}: {p.message}" for p in problems]
    for text in texts:
        if text not in errors.get("spec", ""):
            errors["spec"] = f"{errors['spec']}; {text}" if "spec" in errors else text
    if texts or len(usable) != count:
        return graph_groups.expansion(usable, [])
    return graph_groups.expansion(usable, groups)


def _members_blocks(
    copies: dict[str, dict[str, Any]], expansion: graph_groups.Expansion
) -> dict[str, dict[str, Any]]:
    """`GraphReport.blocks` by the spec's node ids: a member's entry sums its copies'
    params and bytes (the kernel is copy 1's)."""
    found = {}
    for node_id, ids in expansion.copies.items():
        if node_id not in copies:
            continue
        entries = [copies[copy] for copy in ids if copy in copies]
        found[node_id] = {
            **copies[node_id],
            "params": sum(entry["params"] for entry in entries),
            "weights_bytes": sum(entry["weights_bytes"] for entry in entries),
        }
    return found


def _group_reports(
    groups: list[dict[str, Any]],
    expansion: graph_groups.Expansion,
    copies: dict[str, dict[str, Any]],
    walk: graph_shapes.Walk,
) -> dict[str, dict[str, Any]]:
    """`GraphReport.groups`: each group's last exit shape and the parameters of its copies."""
    found = {}
    for group in groups:
        if group["id"] not in expansion.exits:  # not expanded: refused, or a node is malformed
            found[group["id"]] = {"shape": None, "params": None}
            continue
        exit_id = expansion.exits[group["id"]]
        ids = [copy for member in group["nodes"] for copy in expansion.copies.get(member, [])]
        known = bool(ids) and all(copy in copies for copy in ids)
        found[group["id"]] = {
            "shape": walk.shape_text(exit_id) if exit_id else None,
            "params": sum(copies[copy]["params"] for copy in ids) if known else None,
        }
    return found


def _weights_bytes(layer: Any) -> int:
    """The bytes of a built layer's weights: each weight's size times its dtype's (float32 4;
    `memory.WEIGHT_BYTES` for a dtype NumPy does not know)."""
    total = 0
    for weight in layer.weights:
        try:
            size = np.dtype(str(weight.dtype)).itemsize
        except TypeError:
            size = memory.WEIGHT_BYTES
        total += math.prod(int(dim) for dim in weight.shape) * size
    return total


def _block_reports(
    nodes: list[dict[str, Any]], walk: graph_shapes.Walk, document: Any, gpu: bool | None
) -> dict[str, dict[str, Any]]:
    """`GraphReport.blocks`: each built node's own parameters, their bytes, its kernel badge.

    The backend is the spec's `train.backend` when it names one, else this process's; the
    precision its `train.mixed_precision`; the GPU, `gpu` or else whether this process's
    backend sees one (`graph_kernels.gpu_available`).
    """
    if not walk.tensors:
        return {}
    train = document.get("train") if isinstance(document, Mapping) else None
    train = train if isinstance(train, Mapping) else {}
    backend = graph_kernels.run_backend(train.get("backend"))
    precision = train.get("mixed_precision") or "auto"
    gpu = graph_kernels.gpu_available() if gpu is None else gpu
    found: dict[str, dict[str, Any]] = {}
    for node in nodes:
        node_id = node["id"]
        if node["layer"] == graph_blocks.INPUT and node_id == walk.input_id:
            count, size = 0, 0
        elif node_id in walk.layers:
            layer = walk.layers[node_id]
            built = layer is not None and layer.built
            count = int(layer.count_params()) if built else 0
            size = _weights_bytes(layer) if built else 0
        else:
            continue
        inputs = [walk.tensors.get(source) for source in _sources(node)]
        known = all(tensor is not None for tensor in inputs)
        masked = (
            any(getattr(tensor, "_keras_mask", None) is not None for tensor in inputs)
            if known
            else None
        )
        item = graph_blocks.block(node["layer"])
        first = node.get("inputs", {}).get(item.ports[0]) if item and item.ports else None
        tensor = walk.tensors.get(first) if isinstance(first, str) else None
        rank = None if tensor is None else len(tensor.shape)  # the query's, for attention
        kernel = graph_kernels.kernel_badge(
            node["layer"],
            node.get("params", {}),
            backend=backend,
            gpu=gpu,
            masked=masked,
            precision=precision,
            input_rank=rank,
        )
        found[node_id] = {"params": count, "weights_bytes": size, "kernel": kernel}
    return found


# Short forms as graphs ------------------------------------------------------------------------


def preset_as_graph(spec: Mapping[str, Any] | ExperimentSpec) -> dict[str, Any]:
    """The spec with its `model:` as the `graph` it is: "Open as graph" and `keras-seq graph`.

    Every built-in model type (`short_forms.EXPANDED_TYPES`) becomes the graph its
    builder builds (its `expansion`, from `short_forms.expand_short_form`: the same
    layers, names, parameter count and outputs). The other sections are kept; a sweep
    is left out: its paths name the short form's fields, which a graph does not have.

    Raises:
        SpecError: at `model.type` for a graph already, or a plugin's model type (its
            builder is not a short form of a graph).
    """
    spec = load_spec(spec)
    model = spec.model
    if model.type == "graph":
        raise SpecError([("model.type", "the model is a graph already")])
    if model.type not in short_forms.EXPANDED_TYPES:
        types = short_forms.EXPANDED_TYPES
        raise SpecError(
            [
                (
                    "model.type",
                    f"only the built-in model types ({', '.join(types)}) open as a graph, "
                    f"got {model.type!r}",
                )
            ]
        )
    task = _task_shapes(json.dumps(spec.task.model_dump(mode="json"), sort_keys=True))
    nodes = list(registry.model_builder(model.type).expansion(model, task).nodes)
    document = spec.to_dict()
    document.pop("sweep", None)
    document["model"] = {"type": "graph", "nodes": nodes}
    return document


def graph_text(spec: Mapping[str, Any] | ExperimentSpec) -> str:
    """`preset_as_graph(spec)` as YAML, as `keras-seq graph` writes it (raises as it does)."""
    return yaml.safe_dump(preset_as_graph(spec), sort_keys=False, allow_unicode=True, width=100)


# --- Read off a built layer: what it keeps for the backward pass ------------------------------


def kept_floats(layer: Any, inputs: Sequence[Sequence[Any]], output: Sequence[Any]) -> int:
    """Floats per example a built layer keeps for the backward pass, read off the layer.

    Its output; for every recurrent layer in it (`keras.layers.RNN`, inside a
    `Bidirectional` too) each step's gates, state and output, `T · (kernel width
    + 2 · units)`; for every `MultiHeadAttention` in it (a Transformer block's)
    the scores and their softmax, `2 · heads · Tq · Tk`; for every keras_seq
    attention (a decoder block's) each step's scores over the memory, `T · S ·
    (units + 2)` (an additive score's hidden layer, the score, its softmax);
    and for every other
    sublayer with weights (a block's projections, norms, feed-forward layers)
    its output at each of the layer's output positions. A dimension Keras does
    not know (None) counts as 1.

    Args:
        layer: The layer, built (symbolically will do: only shapes are read).
        inputs: The shapes of the tensors it was called on, batch axis first.
        output: The shape of its output, batch axis first.
    """

    def size(shape: Sequence[Any]) -> int:
        return math.prod(int(d or 1) for d in shape)

    positions = size(output[1:-1])  # where it writes a vector: steps, patches, 1 for one vector
    # Every layer's recurrence runs over its input's time axis, a decoder block's over the
    # target's steps; attention reads all of its inputs' positions.
    read = max((int(shape[1] or 1) for shape in inputs if len(shape) > 2), default=1)
    steps = int(getattr(layer, "target_length", 0)) or read
    attended = max((size(shape[1:-1]) for shape in inputs if len(shape) > 2), default=1)
    kept = size(output[1:])
    cells = set()
    # Keras has no public walk over a layer's sublayers; `_flatten_layers` is its own.
    for sub in layer._flatten_layers(include_self=True, recursive=True):
        if isinstance(sub, keras.layers.RNN):
            cell = sub.cell
            cells.add(id(cell))
            # A convolutional cell (ConvLSTM2D's) keeps its gates and states at every pixel.
            filters = getattr(cell, "filters", None)
            width, pixels = (int(filters), size(output[-3:-1])) if filters else (cell.units, 1)
            kept += steps * pixels * (int(cell.kernel.shape[-1]) + 2 * int(width))
        elif isinstance(sub, keras.layers.MultiHeadAttention):
            kept += 2 * int(sub.num_heads) * positions * read
        elif isinstance(sub, BaseAttention):
            kept += steps * attended * (int(getattr(sub, "units", None) or 0) + 2)
        elif sub is not layer and id(sub) not in cells and sub.weights:
            kept += positions * _output_width(sub)
    return kept


def _output_width(layer: Any) -> int:
    """The width of a sublayer's output at one position: its bias, scale or kernel's last axis."""
    for name in ("bias", "gamma"):
        weight = getattr(layer, name, None)
        if weight is not None:
            return math.prod(int(d) for d in weight.shape)
    kernel = getattr(layer, "kernel", None)
    return int(kernel.shape[-1]) if kernel is not None else 0
