"""The walk of a `graph` model: each block's layer made and called, in topological order.

    nodes ─▶ structure (ids, blocks, ports, references, cycles, dangling) ─▶ topological order
          ─▶ per node: parameters checked against the constructor ─▶ layer made ─▶ layer called

The structure comes first (`graph_structure`, without Keras: what the spec's pydantic
model refuses). `walk(nodes, task, symbolic=True)` calls every layer on
`keras.KerasTensor`s inside a `keras.StatelessScope` that does not initialise
variables, so a layer's weights get a shape but no memory (an Embedding of
10⁶ × 1000 costs nothing), and gives each node's output shape or the layer's
own error for what it was given; `walk(..., symbolic=False)` is the same walk
building the real model (`builder_ui.builders.graph.GraphBuilder.build`).
A walk never raises for a bad graph: problems are `NodeProblem`s.

The canvas asks again after every change, so a symbolic walk keeps each node's
outcome (output tensor, layer, problems) by its block, parameters, input
shapes and the task's sizes (`OUTCOMES`): after an edit only the nodes whose
inputs or parameters changed are made and called again.
"""

from __future__ import annotations

import collections
import contextlib
import json
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import keras
from keras.src.backend.common import global_state

from builder_ui.builders import graph_blocks
from builder_ui.builders.graph_blocks import DECODERS, INPUT, OUTPUT, decoded_kind, decoders_for
from builder_ui.builders.graph_structure import (
    NodeProblem,
    _sources,
    node_label,
    structure_problems,
    topological_order,
)
from builder_ui.specs.errors import shown

MAX_MESSAGE = 400  # characters of a layer's own error message kept
CACHE_SIZE = 1024  # symbolic outcomes kept (see `_OutcomeCache`)


@dataclass
class Walk:
    """What a walk gave: each node's output tensor and layer, and its problems."""

    tensors: dict[str, Any] = field(default_factory=dict)
    layers: dict[str, Any] = field(default_factory=dict)
    problems: list[NodeProblem] = field(default_factory=list)
    input_id: str | None = None
    output_id: str | None = None
    # Recurrent node id → its final state tensors, for the decoder blocks' `state` ports.
    states: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    def shape_text(self, node_id: str) -> str | None:
        tensor = self.tensors.get(node_id)
        return None if tensor is None else shape_text(tensor.shape)

    def param_count(self) -> int:
        return int(sum(layer.count_params() for layer in self.layers.values() if layer.built))


def shape_text(shape: Sequence[Any]) -> str:
    """`(None, 20, 32)`: a shape as text, the batch as None."""
    return str(tuple(None if dim is None else int(dim) for dim in shape))


def layer_words(error: BaseException) -> str:
    """A layer's own message from an exception Keras raised while calling it, cut short."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error))
    match = re.search(
        r"Exception encountered when calling [^\n]*\n(.*?)(\n\s*Arguments received|$)", text, re.S
    )
    if match and match.group(1).strip():
        text = match.group(1)
    text = " ".join(text.split())
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


def _param_problems(index: int, node: Mapping[str, Any], item: Any) -> list[NodeProblem]:
    """Parameters that the layer's constructor does not take, required ones left out, and
    booleans given as anything but true or false (a Keras layer takes `mask_zero: "yes"`, or
    `"false"`, as true; keras_seq's layers refuse them, `keras_seq.argument_checks.boolean`)."""
    offered = {param.name: param for param in graph_blocks.parameters(item)}
    given = node.get("params", {})
    label = node_label(node)
    problems = [
        NodeProblem(
            index,
            node["id"],
            f"params.{name}",
            f"{label}: Received an invalid value for argument `{name}`, expected True or "
            f"False, got {shown(value)}.",
        )
        for name, value in given.items()
        if name in offered and offered[name].kind == "bool" and not isinstance(value, bool)
    ]
    problems += [
        NodeProblem(
            index,
            node["id"],
            f"params.{name}",
            f"{label}: unknown parameter {name!r}; its parameters: {', '.join(offered)}",
        )
        for name in given
        if name not in offered
    ]
    problems += [
        NodeProblem(index, node["id"], f"params.{name}", f"{label}: parameter {name!r} is required")
        for name, param in offered.items()
        if param.required and name not in given
    ]
    return problems


def filled_params(
    item: Any, params: dict[str, Any], task: Any, inputs: list[Any]
) -> dict[str, Any]:
    """The parameters with those the graph gives filled in (see `Block.filled`)."""
    params = dict(params)
    if "input_dim" in item.filled and "input_dim" not in params:
        vocab = getattr(task.inputs, "vocab_size", None)
        if vocab is None:
            raise ValueError(
                "argument `input_dim` is required: the task's inputs are not token ids, so "
                "there is no vocabulary size to take it from"
            )
        params["input_dim"] = vocab
    if "max_length" in item.filled and "max_length" not in params:
        length = inputs[0].shape[1] if len(inputs[0].shape) > 1 else None
        if length is None:
            raise ValueError("argument `max_length` is required: its input has no fixed length")
        params["max_length"] = int(length)
    decoded = decoders_for(task)
    for name, spec, attribute in (
        ("target_vocab_size", task.targets, "vocab_size"),
        ("target_length", task.targets, "length"),
        ("input_features", task.inputs, "features"),
    ):
        if name in item.filled:
            if name in params:
                raise ValueError(f"argument `{name}` comes from the task; leave it out")
            if item.name not in decoded:
                raise ValueError(
                    f"argument `{name}`: the task's targets are {task.targets.kind}, which a "
                    f"{item.name} does not write"
                )
            params[name] = int(getattr(spec, attribute))
    return params


def make_layer(item: Any, node_id: str, params: dict[str, Any]) -> Any:
    """The block's layer named `node_id` (a recurrent one wrapped in Bidirectional if asked)."""
    params = dict(params)
    bidirectional = params.pop("bidirectional", False) if item.recurrent else False
    merge_mode = params.pop("merge_mode", "concat") if item.recurrent else None
    cls = item.layer_class()
    if not bidirectional:
        return cls(name=node_id, **params)
    return keras.layers.Bidirectional(
        cls(name=f"{node_id}_layer", **params), merge_mode=merge_mode, name=node_id
    )


def _head(node_id: str, task: Any) -> Any:
    targets = task.targets
    if targets.kind in ("classification", "sequence"):
        classes = targets.num_classes if targets.kind == "classification" else targets.vocab_size
        return keras.layers.Dense(classes, activation="softmax", dtype="float32", name=node_id)
    if targets.kind == "frames":  # each pixel's value in [0, 1], read by binary cross-entropy
        return keras.layers.Activation("sigmoid", dtype="float32", name=node_id)
    if targets.kind == "pointer":  # the PointerDecoder's distributions are the outputs
        return keras.layers.Identity(dtype="float32", name=node_id)
    return keras.layers.Dense(targets.output_dim, dtype="float32", name=node_id)


def call_block(
    item: Any,
    layer: Any,
    node: Mapping[str, Any],
    tensors: dict[str, Any],
    states: Mapping[str, tuple[Any, ...]] | None = None,
) -> Any:
    """Call a node's layer on the tensors of the nodes its ports read, port by port.

    A `state` port (`Block.states`) reading a recurrent node gets that layer's final state
    tensors (`states`), and a list of nodes gets all of theirs in order: a list.
    """
    inputs = node.get("inputs", {})
    if item.variadic:
        return layer([tensors[source] for source in inputs[item.variadic[0]]])
    positional = [port_value(item, port, inputs[port], tensors, states) for port in item.ports]
    keywords = {
        port: port_value(item, port, inputs[port], tensors, states)
        for port in item.optional_ports
        if port in inputs
    }
    return layer(*positional, **keywords)


def port_value(
    item: Any,
    port: str,
    given: str | list[str],
    tensors: Mapping[str, Any],
    states: Mapping[str, tuple[Any, ...]] | None = None,
) -> Any:
    """What a port reads: its node's tensor; for a `state` port (`Block.states`), the final
    state tensors of the recurrent nodes it reads, a list, in order."""
    states = states or {}
    if port not in item.states or (not isinstance(given, list) and given not in states):
        return tensors[given]
    found: list[Any] = []
    for source in _sources(given):
        found += list(states[source]) if source in states else [tensors[source]]
    return found


def state_sources(nodes: Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """The recurrent nodes whose final state a decoder block's `state` port reads.

    Their layers are made with `return_state=True`: the node's tensor is still its output
    sequence, and the port gets the state the layer ends in (`h`, and `c` for an LSTM; a
    bidirectional layer's two directions joined, `[h→_S; h←_1]`), as `RNNSeq2Seq` and
    `PointerNetwork` start their decoders.
    """
    recurrent = {
        node["id"]
        for node in nodes
        if (item := graph_blocks.block(node["layer"])) is not None and item.recurrent
    }
    found = set()
    for node in nodes:
        item = graph_blocks.block(node["layer"])
        for port in item.states if item is not None else ():
            found.update(
                s for s in _sources(node.get("inputs", {}).get(port, [])) if s in recurrent
            )
    return frozenset(found)


def _split_state(node_id: str, layer: Any, outputs: Any) -> tuple[Any, tuple[Any, ...]]:
    """A `return_state` layer's outputs as (its sequence, its final state tensors), a
    bidirectional layer's directions joined state by state (named `<id>_state_<i>`)."""
    sequence, *states = outputs
    if isinstance(layer, keras.layers.Bidirectional):
        half = len(states) // 2
        pairs = zip(states[:half], states[half:], strict=True)
        states = [
            keras.layers.Concatenate(name=f"{node_id}_state_{index}")([forward, backward])
            for index, (forward, backward) in enumerate(pairs)
        ]
    return sequence, tuple(states)


def given_shapes(item: Any, node: Mapping[str, Any], tensors: dict[str, Any]) -> str:
    """`query (None, 6, 4); value (None, 6, 8)`: the shapes a node's ports are given."""
    parts = []
    for port, value in node.get("inputs", {}).items():
        shapes = ", ".join(shape_text(tensors[source].shape) for source in _sources(value))
        parts.append(f"{port} {shapes}")
    return "; ".join(parts)


@dataclass(frozen=True)
class _Outcome:
    """One node's result: its output tensor (or None), its layer, and its problems."""

    tensor: Any
    layer: Any
    problems: tuple[tuple[str, str], ...] = ()
    states: tuple[Any, ...] = ()


def _compute(
    node: Mapping[str, Any],
    task: Any,
    tensors: dict[str, Any],
    states: Mapping[str, tuple[Any, ...]],
    returns_state: bool,
) -> _Outcome:
    """Make and call one node's layer on its inputs' tensors (with `return_state=True` when
    a decoder reads its final state, `state_sources`)."""
    item, node_id = graph_blocks.block(node["layer"]), node["id"]
    if node["layer"] == OUTPUT:
        layer = _head(node_id, task)
    else:
        problems = _param_problems(0, node, item)
        if problems:
            return _Outcome(None, None, tuple((p.field, p.message) for p in problems))
        sources = [s for value in node.get("inputs", {}).values() for s in _sources(value)]
        try:
            params = filled_params(
                item, node.get("params", {}), task, [tensors[s] for s in sources]
            )
            if returns_state:
                params["return_state"] = True
            layer = make_layer(item, node_id, params)
        except (ValueError, TypeError) as error:
            return _Outcome(None, None, (("params", f"{node_label(node)}: {layer_words(error)}"),))
    try:
        outputs = call_block(item, layer, node, tensors, states)
        if returns_state:
            sequence, final = _split_state(node_id, layer, outputs)
            return _Outcome(sequence, layer, states=final)
        return _Outcome(outputs, layer)
    except Exception as error:  # the layer's own refusal of its inputs, whatever its type
        ports = list(node.get("inputs", {}))
        where = f"inputs.{ports[0]}" if len(ports) == 1 else "inputs"
        given = given_shapes(item, node, tensors)
        return _Outcome(
            None, None, ((where, f"{node_label(node)} on {given}: {layer_words(error)}"),)
        )


def _signature(tensor: Any) -> tuple[Any, ...]:
    """What a layer's output depends on in a tensor: its shape, dtype and mask's shape."""
    mask = getattr(tensor, "_keras_mask", None)
    return (tuple(tensor.shape), str(tensor.dtype), None if mask is None else tuple(mask.shape))


def _cache_key(
    node: Mapping[str, Any],
    task: Any,
    tensors: dict[str, Any],
    states: Mapping[str, tuple[Any, ...]],
    returns_state: bool,
) -> str:
    """A node's layer, parameters, input signatures (and states read) and the task's sizes,
    and whether it returns its state, as one key."""
    inputs = {
        port: [
            [_signature(tensor) for tensor in states.get(source, ())]
            + [_signature(tensors[source])]
            for source in _sources(value)
        ]
        for port, value in node.get("inputs", {}).items()
    }
    targets = task.targets
    sizes = (
        getattr(task.inputs, "vocab_size", None),
        targets.kind,
        getattr(targets, "num_classes", None),
        getattr(targets, "output_dim", None),
        getattr(targets, "vocab_size", None),
        getattr(targets, "length", None),
    )
    parts = (node["id"], node["layer"], node.get("params", {}), inputs, sizes, returns_state)
    return json.dumps(parts, sort_keys=True, default=repr)


class _OutcomeCache:
    """The last symbolic outcomes by `_cache_key`: the canvas asks after every small change.

    A node whose block, parameters and input shapes are unchanged gives the same
    output shape and parameter count, so only the nodes downstream of a change
    are called again. Outcomes of real builds are never cached.
    """

    def __init__(self, size: int):
        self.size = size
        self.items: collections.OrderedDict[str, _Outcome] = collections.OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: str) -> _Outcome | None:
        with self.lock:
            found = self.items.get(key)
            if found is not None:
                self.items.move_to_end(key)
            return found

    def put(self, key: str, outcome: _Outcome) -> None:
        with self.lock:
            self.items[key] = outcome
            while len(self.items) > self.size:
                self.items.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.items.clear()


OUTCOMES = _OutcomeCache(CACHE_SIZE)


def _step(
    index: int,
    node: Mapping[str, Any],
    task: Any,
    walk: Walk,
    cached: bool,
    returns_state: frozenset[str] = frozenset(),
) -> None:
    """One node's outcome (from the cache when `cached` and known), recorded in `walk`."""
    node_id = node["id"]
    if node["layer"] == INPUT:
        inputs = task.inputs
        # A translator reads sources of any length (Translator, its exports), as every
        # seq2seq model does, and a pointer network sequences of any length; other graphs
        # (a captioner's images too) keep the task's (a Flatten needs it).
        free = decoded_kind(task) in ("sequence", "pointer")
        shape = (None, *inputs.shape[1:]) if free else inputs.shape
        walk.tensors[node_id] = keras.Input(shape=shape, dtype=inputs.dtype, name=node_id)
        walk.input_id = node_id
        return
    sources = [source for value in node.get("inputs", {}).values() for source in _sources(value)]
    if any(source not in walk.tensors for source in sources):
        return  # an input has no tensor: its own problem is already recorded
    state = node_id in returns_state
    key = _cache_key(node, task, walk.tensors, walk.states, state) if cached else None
    outcome = OUTCOMES.get(key) if cached else None
    if outcome is None:
        outcome = _compute(node, task, walk.tensors, walk.states, state)
        if cached:
            OUTCOMES.put(key, outcome)
    walk.problems += [NodeProblem(index, node_id, f, message) for f, message in outcome.problems]
    if outcome.tensor is not None:
        walk.tensors[node_id] = outcome.tensor
        if state:
            walk.states[node_id] = outcome.states
        walk.layers[node_id] = outcome.layer
        if node["layer"] == OUTPUT:
            walk.output_id = node_id


def task_problems(nodes: Sequence[Mapping[str, Any]], task: Any) -> list[NodeProblem]:
    """What the task asks of the graph's shape: one decoder block of its targets' kind
    (`DECODERS_FOR`: `RecurrentDecoder` or `TransformerDecoder` for token sequences,
    `CaptionDecoder` for captions of images, `PointerDecoder` for input positions) feeding
    the Output, and none otherwise."""
    kind = task.targets.kind
    allowed = decoders_for(task)
    decoders = [index for index, node in enumerate(nodes) if node["layer"] in DECODERS]
    problems = [
        NodeProblem(
            index,
            nodes[index]["id"],
            "layer",
            f"{node_label(nodes[index])}: the task's targets are {kind}, which a "
            f"{nodes[index]['layer']} does not write"
            + (f"; use a {' or '.join(allowed)}" if allowed else ""),
        )
        for index in decoders
        if nodes[index]["layer"] not in allowed
    ]
    decoders = [index for index in decoders if nodes[index]["layer"] in allowed]
    if not allowed:
        return problems
    what = {
        "sequence": "translates (its targets are token sequences)",
        "caption": "captions images (its targets are token sequences)",
        "pointer": "points at input positions (its targets are pointers)",
    }[decoded_kind(task)]
    if not decoders:
        needed = (
            f"task {task.name!r} {what}: the graph needs one decoder block "
            f"({' or '.join(allowed)}), its memory port fed by the encoder, feeding the Output"
        )
        return [*problems, NodeProblem(None, None, "", needed)]
    problems += [
        NodeProblem(
            index,
            nodes[index]["id"],
            "layer",
            f"{node_label(nodes[index])}: expected exactly one decoder block, got {len(decoders)}",
        )
        for index in decoders[1:]
    ]
    decoder, decoder_layer = nodes[decoders[0]]["id"], nodes[decoders[0]]["layer"]
    if decoded_kind(task) == "sequence" and task.inputs.kind != "tokens":
        problems.append(
            NodeProblem(
                None,
                None,
                "",
                f"a translating graph reads token ids, not {task.inputs.kind} inputs",
            )
        )
    outputs = "the target words" if kind == "sequence" else "the input positions"
    for index, node in enumerate(nodes):
        reads = [
            port for port, value in node.get("inputs", {}).items() if decoder in _sources(value)
        ]
        if node["layer"] == OUTPUT and node.get("inputs", {}).get("x") != decoder:
            problems.append(
                NodeProblem(
                    index,
                    node["id"],
                    "inputs.x",
                    f"{node_label(node)}: in a graph with a decoder the Output reads the "
                    f"{decoder_layer} ({decoder}) directly: its distribution is over "
                    f"{outputs} at each step",
                )
            )
        elif reads and node["layer"] != OUTPUT:
            problems.append(
                NodeProblem(
                    index,
                    node["id"],
                    f"inputs.{reads[0]}",
                    f"{node_label(node)} port {reads[0]}: only the Output may read the "
                    f"{decoder_layer} ({decoder}); the decoder's steps are the model's last "
                    "layer before it",
                )
            )
    return problems


def walk(
    nodes: Sequence[Mapping[str, Any]],
    task: Any,
    *,
    symbolic: bool = True,
    skip: frozenset[str] = frozenset(),
) -> Walk:
    """Make and call every node's layer in topological order (see the module docstring).

    Args:
        nodes: The graph's nodes (mappings with `id`, `layer`, `params`, `inputs`).
        task: Anything with the task's `inputs` and `targets` specs.
        symbolic: Call the layers inside a stateless scope that leaves their
            weights unallocated (for shapes and checks); False builds for real.
        skip: Ids of nodes not made or called (a translating graph's build
            makes its decoder and Output as the model's, not as blocks).
    """
    result = Walk(problems=structure_problems(nodes))
    if any(problem.field in ("id", "layer") for problem in result.problems):
        return result
    result.problems += task_problems(nodes, task)
    # A dangling node still gets its shape (the canvas shows it); a miswired one cannot.
    broken = {problem.node_id for problem in result.problems if problem.field} | set(skip)
    order, _ = topological_order(nodes)
    todo = [index for index in order if nodes[index]["id"] not in broken]
    returns_state = state_sources(nodes)
    if not symbolic:
        for index in todo:
            _step(index, nodes[index], task, result, False, returns_state)
        return result
    with unallocated():
        for index in todo:
            _step(index, nodes[index], task, result, True, returns_state)
    return result


@contextlib.contextmanager
def unallocated():
    """A `keras.StatelessScope` whose variables stay shapes only, and are then forgotten.

    Keras keeps a list of the variables created uninitialised in a stateless
    scope and initialises them all when the next such scope closes; the
    variables made here are taken off that list, so that no later scope ever
    allocates the weights of a graph that was only being checked.
    """
    key = "uninitialized_variables"
    kept = {id(variable) for variable in global_state.get_global_attribute(key) or []}
    try:
        with keras.StatelessScope(initialize_variables=False):
            yield
    finally:
        current = global_state.get_global_attribute(key) or []
        global_state.set_global_attribute(key, [v for v in current if id(v) in kept])
