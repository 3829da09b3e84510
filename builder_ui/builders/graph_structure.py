"""A `graph` model's structure, checked without Keras: ids, blocks, ports, references, cycles.

    nodes ─▶ ids and blocks ─▶ ports and references ─▶ one Input, one Output ─▶ flow

`structure_problems(nodes)` is what the spec's pydantic model (`graph_params.GraphParams`) refuses,
each problem a `NodeProblem` at its node's field; `edges_of` and `topological_order` are
the wiring that the walk (`graph_shapes`) follows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from builder_ui.builders import graph_blocks
from builder_ui.builders.graph_blocks import INPUT, OUTPUT


@dataclass(frozen=True)
class NodeProblem:
    """A problem with one node: its index in `nodes`, id, the field under it, the message.

    `field` is relative to the node (`"inputs.query"`, `"params.units"`,
    `""` for the node as a whole); `index` is None for a problem of the
    whole graph (no Input node).
    """

    index: int | None
    node_id: str | None
    field: str
    message: str

    @property
    def path(self) -> str:
        """The path under `model` (`nodes[3].inputs.query`)."""
        if self.index is None:
            return "nodes"
        return f"nodes[{self.index}]" + (f".{self.field}" if self.field else "")


def node_label(node: Mapping[str, Any]) -> str:
    return f"{node.get('id')} ({node.get('layer')})"


def _sources(value: Any) -> list[str]:
    return list(value) if isinstance(value, list) else [value]


def _port_problems(index: int, node: Mapping[str, Any], ids: set[str]) -> list[NodeProblem]:
    """Unknown ports, lists in one-input ports, short lists, missing references, open ports."""
    item = graph_blocks.block(node["layer"])
    problems = []
    label, node_id = node_label(node), node["id"]
    for port, value in node.get("inputs", {}).items():
        where = f"inputs.{port}"
        if port not in item.all_ports:
            known = ", ".join(item.all_ports) or "none"
            problems.append(
                NodeProblem(
                    index,
                    node_id,
                    where,
                    f"{label} has no port {port!r}; its ports: {known}",
                )
            )
            continue
        if port in item.variadic:
            if not isinstance(value, list) or len(value) < 2:
                problems.append(
                    NodeProblem(
                        index,
                        node_id,
                        where,
                        f"{label} port {port}: expected a list of 2 or more node ids "
                        f"(it joins several tensors), got {value!r}",
                    )
                )
                continue
        elif isinstance(value, list) and (port not in item.states or not value):
            problems.append(
                NodeProblem(
                    index,
                    node_id,
                    where,
                    f"{label} port {port} takes one input, got {len(value)}: {value!r}; "
                    "join them first (Add or Concatenate)",
                )
            )
            continue
        for source in _sources(value):
            if source not in ids:
                problems.append(
                    NodeProblem(index, node_id, where, f"{label} port {port}: no node {source!r}")
                )
    for port in item.ports:
        if port not in node.get("inputs", {}):
            problems.append(
                NodeProblem(
                    index, node_id, f"inputs.{port}", f"{label} port {port} is not connected"
                )
            )
    return problems


def _node_problems(index: int, node: Mapping[str, Any], seen: dict[str, int]) -> list[NodeProblem]:
    """Duplicate ids, unknown blocks, and what Input and Output may not have."""
    node_id, layer = node["id"], node["layer"]
    if node_id in seen:
        return [
            NodeProblem(
                index, node_id, "id", f"duplicate id {node_id!r} (also node {seen[node_id]})"
            )
        ]
    seen[node_id] = index
    if graph_blocks.block(layer) is None:
        names = ", ".join(graph_blocks.block_names())
        return [
            NodeProblem(
                index,
                node_id,
                "layer",
                f"{node_label(node)}: unknown block; expected one of {names}",
            )
        ]
    if layer in (INPUT, OUTPUT) and node.get("params"):
        why = "its shape comes from the task" if layer == INPUT else "the task sets its size"
        return [
            NodeProblem(index, node_id, "params", f"{node_label(node)} takes no params ({why})")
        ]
    if layer == INPUT and node.get("inputs"):
        return [NodeProblem(index, node_id, "inputs", f"{node_label(node)} takes no inputs")]
    return []


def _count_problems(nodes: Sequence[Mapping[str, Any]], layer: str) -> list[NodeProblem]:
    found = [index for index, node in enumerate(nodes) if node["layer"] == layer]
    if not found:
        return [NodeProblem(None, None, "", f"expected exactly one {layer} node, got none")]
    return [
        NodeProblem(
            index,
            nodes[index]["id"],
            "layer",
            f"{node_label(nodes[index])}: expected exactly one {layer} node, got {len(found)} "
            f"({', '.join(nodes[i]['id'] for i in found)})",
        )
        for index in found[1:]
    ]


def edges_of(nodes: Sequence[Mapping[str, Any]]) -> list[tuple[str, str, str]]:
    """`(source, target, port)` of every reference, in node and port order."""
    return [
        (source, node["id"], port)
        for node in nodes
        for port, value in node.get("inputs", {}).items()
        for source in _sources(value)
        if isinstance(source, str)
    ]


def topological_order(nodes: Sequence[Mapping[str, Any]]) -> tuple[list[int], list[int]]:
    """Node indices in an order where every node follows its inputs, and those on cycles.

    Edges to unknown ids are ignored; among ready nodes the spec's order is kept.
    """
    index_of = {node["id"]: index for index, node in enumerate(nodes)}
    waiting = {index: set() for index in range(len(nodes))}
    for source, target, _ in edges_of(nodes):
        if source in index_of:
            waiting[index_of[target]].add(index_of[source])
    order, done = [], set()
    progress = True
    while progress:
        progress = False
        for index in range(len(nodes)):
            if index not in done and waiting[index] <= done:
                order.append(index)
                done.add(index)
                progress = True
    return order, [index for index in range(len(nodes)) if index not in done]


def _reach(start: set[str], links: dict[str, set[str]]) -> set[str]:
    seen, todo = set(start), list(start)
    while todo:
        for other in links.get(todo.pop(), ()):
            if other not in seen:
                seen.add(other)
                todo.append(other)
    return seen


def _flow_problems(nodes: Sequence[Mapping[str, Any]]) -> list[NodeProblem]:
    """Cycles, nodes that do not lead to Output, an Output that Input does not reach."""
    _, stuck = topological_order(nodes)
    problems = []
    forward: dict[str, set[str]] = {}
    for source, target, _ in edges_of(nodes):
        forward.setdefault(source, set()).add(target)
    # Stuck nodes are on a cycle or after one; those on it reach themselves.
    cyclic = [
        i for i in stuck if nodes[i]["id"] in _reach(forward.get(nodes[i]["id"], set()), forward)
    ]
    if cyclic:
        names = ", ".join(nodes[index]["id"] for index in cyclic)
        for index in cyclic:
            problems.append(
                NodeProblem(
                    index,
                    nodes[index]["id"],
                    "inputs",
                    f"{node_label(nodes[index])} is on a cycle (through {names}); a graph model "
                    "feeds forward only",
                )
            )
        return problems
    backward: dict[str, set[str]] = {}
    for source, target, _ in edges_of(nodes):
        backward.setdefault(target, set()).add(source)
    outputs = {node["id"] for node in nodes if node["layer"] == OUTPUT}
    inputs = {node["id"] for node in nodes if node["layer"] == INPUT}
    leads_out = _reach(outputs, backward)
    from_input = _reach(inputs, forward)
    for index, node in enumerate(nodes):
        if node["id"] not in leads_out and node["layer"] != OUTPUT:
            problems.append(
                NodeProblem(
                    index,
                    node["id"],
                    "",
                    f"{node_label(node)} does not lead to the Output node; connect its output "
                    "or delete it",
                )
            )
        elif node["layer"] == OUTPUT and node["id"] not in from_input and inputs:
            problems.append(
                NodeProblem(
                    index,
                    node["id"],
                    "inputs.x",
                    f"{node_label(node)} is not reached from the Input",
                )
            )
    return problems


def structure_problems(nodes: Sequence[Mapping[str, Any]]) -> list[NodeProblem]:
    """Everything wrong with the graph's structure, found without Keras.

    Each node is a mapping with `id`, `layer` and optionally `inputs`, `params`.
    """
    seen: dict[str, int] = {}
    problems = []
    for index, node in enumerate(nodes):
        problems += _node_problems(index, node, seen)
    if problems:
        return problems
    ids = set(seen)
    for index, node in enumerate(nodes):
        problems += _port_problems(index, node, ids)
    problems += _count_problems(nodes, INPUT) + _count_problems(nodes, OUTPUT)
    if problems:
        return problems
    return _flow_problems(nodes)
