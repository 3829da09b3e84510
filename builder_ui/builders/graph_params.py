"""The fields of a `graph` model (`model: {type: graph, nodes: [...], groups: [...]}`).

`GraphParams` is the pydantic model of a graph's spec: its nodes (`GraphNode`: an id, a
block of the catalog, the layer's constructor arguments, the ports it reads) and its groups
(`graph_groups`). It refuses what can be refused without Keras: the structure
(`graph_structure.structure_problems`: ids, blocks, ports, references, cycles, nodes that
lead nowhere) and the groups, each at the path of its field (`model.nodes[3].inputs.query`).
`expanded_nodes` gives the nodes as the walk reads them, every group's copies written out.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_serializer, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from builder_ui.builders import graph_groups
from builder_ui.builders.graph_groups import MAX_GROUPS, GraphGroup
from builder_ui.builders.graph_structure import NodeProblem, structure_problems
from builder_ui.specs import ModelParams, StrictModel

NODE_ID_PATTERN = graph_groups.NODE_ID_PATTERN  # r"^[a-z][a-z0-9_]{0,63}$"
MAX_NODES = graph_groups.MAX_NODES  # 256

Finite = Annotated[float, Field(allow_inf_nan=False)]
Scalar = bool | int | Finite | str | None
NodeId = Annotated[str, Field(pattern=NODE_ID_PATTERN)]


class KerasObject(StrictModel):
    """An initializer as Keras serializes it, for a parameter named `*_initializer`.

    `{class_name: RandomNormal, config: {stddev: 0.02}}` is
    `keras.initializers.RandomNormal(stddev=0.02)`: the layer reads it with
    `keras.initializers.get`, as it reads a name (`glorot_uniform`).
    """

    class_name: Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_]{0,63}$")]
    config: dict[str, Scalar | list[Scalar]] = Field(default_factory=dict)


class GraphNode(StrictModel):
    """One block of the graph.

    Args:
        id: Unique; the Keras layer's name and the variable in exported code.
        layer: A block name of the catalog (`LSTM`, `MultiHeadAttention`, ...).
        params: The layer's own constructor arguments (JSON scalars or lists of them;
            for an initializer also a `KerasObject`).
        inputs: Port name → node id (a list of ids for a variadic port).
        position: `[x, y]` on the canvas; the builders ignore it.
    """

    id: NodeId
    layer: Annotated[str, Field(min_length=1, max_length=128)]
    params: dict[str, Scalar | list[Scalar] | KerasObject] = Field(default_factory=dict)
    inputs: dict[str, NodeId | list[NodeId]] = Field(default_factory=dict)
    position: Annotated[list[Finite], Field(min_length=2, max_length=2)] | None = None

    @model_validator(mode="after")
    def _objects_only_for_initializers(self) -> GraphNode:
        for name, value in self.params.items():
            if isinstance(value, KerasObject) and not name.endswith("_initializer"):
                raise ValueError(
                    f"params.{name}: a {{class_name, config}} mapping is only for an "
                    f"initializer (a parameter named *_initializer); give {name} a value"
                )
        return self


class GraphParams(ModelParams):
    """A graph of blocks from one `Input` to one `Output`, its `groups` repeated (see the
    module docstring and `graph_groups`)."""

    type: Literal["graph"] = "graph"
    nodes: Annotated[list[GraphNode], Field(min_length=2, max_length=MAX_NODES)]
    groups: Annotated[list[GraphGroup], Field(max_length=MAX_GROUPS, default_factory=list)]

    @model_serializer(mode="wrap")
    def _groups_when_given(self, handler: Any) -> dict[str, Any]:
        # A graph without groups is written as before them (its sweep id unchanged).
        data = handler(self)
        if not self.groups:
            data.pop("groups", None)
        return data

    @model_validator(mode="after")
    def _wired(self) -> GraphParams:
        nodes = [node.model_dump(exclude={"position"}) for node in self.nodes]
        groups = [group.model_dump() for group in self.groups]
        errors = [_group_error(p) for p in graph_groups.problems(nodes, groups, MAX_NODES)]
        problems = structure_problems(nodes)
        if not errors and not problems and groups:
            # The unexpanded graph is sound: so are its copies, but say so at the members.
            expanded = graph_groups.expansion(nodes, groups)
            problems = [
                expanded.original(problem) for problem in structure_problems(expanded.nodes)
            ]
        if errors or problems:
            raise ValidationError.from_exception_data(
                "GraphParams", errors + [_line_error(problem) for problem in problems]
            )
        return self


def _line_error(problem: NodeProblem) -> InitErrorDetails:
    """A structural problem as a pydantic error at its field (`nodes.3.inputs.query`)."""
    loc: tuple[Any, ...] = ("nodes",)
    if problem.index is not None:
        loc += (problem.index, *[part for part in problem.field.split(".") if part])
    # "{error}" rather than the message itself: pydantic formats the template with ctx.
    error = PydanticCustomError("value_error", "{error}", {"error": problem.message})
    return InitErrorDetails(type=error, loc=loc, input=None)


def _group_error(problem: graph_groups.GroupProblem) -> InitErrorDetails:
    """A group's problem as a pydantic error at its field (`groups.0.nodes.1`)."""
    error = PydanticCustomError("value_error", "{error}", {"error": problem.message})
    return InitErrorDetails(type=error, loc=("groups", problem.index, *problem.loc), input=None)


def expanded_nodes(params: GraphParams) -> graph_groups.Expansion:
    """The nodes as plain dicts with every group's copies, and where each came from."""
    nodes = [node.model_dump(exclude={"position"}) for node in params.nodes]
    return graph_groups.expansion(nodes, [group.model_dump() for group in params.groups])


def plain_nodes(params: GraphParams) -> list[dict[str, Any]]:
    """The nodes as plain dicts (`id`, `layer`, `params`, `inputs`), as the walk reads them:
    the groups expanded (`graph_groups`), copy k of a repeated member `m` a node `m_k`."""
    return expanded_nodes(params).nodes
