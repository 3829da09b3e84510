"""Groups of a `graph` model's nodes, and "repeat ×N": a stack of N copies written once.

    model:
      type: graph
      nodes: [...]
      groups:
        - id: encoder_stack     # like a node id; no node's id, no other group's
          nodes: [block, norm]  # member node ids, each node in one group at most
          repeat: 4             # 1..64, default 1
          collapsed: false      # how the canvas shows the group; the builders ignore it

The builders expand the groups before anything else (`expand`), so the checks, the
build, the estimate, the report and the exports all see the expanded nodes:

- Copy 1 is the members themselves (their ids unchanged); copy k (2..N) of member `m`
  is a node `m_k`, with the same layer and params. A copy whose id is taken (by a node
  of the spec or another copy) is refused.
- An edge inside the group is per copy: copy k's member reads copy k's version of its
  in-group sources.
- An edge entering the group from outside into a port named `x` is chained: copy 1
  reads the outside source, copy k ≥ 2 the previous copy's exit. An edge into any
  other port (a decoder block's `context`, `memory`) is shared: every copy reads the
  same outside source. In a variadic `x` list only the entries from outside are
  chained; the in-group entries stay per copy.
- The group's exit is the member whose output feeds nodes outside the group; the
  outside nodes that read it read the last copy's exit instead.
- A group with `repeat: 1` changes nothing: it only groups nodes on the canvas.

Refused (`problems`, each at its group's field): a member that is no node, a node in
two groups, a group id that is not unique, or is a node's; more nodes than the graph
may hold once expanded (counted before expanding); and, with repeat > 1, taken copy
ids, no outside edge into an `x` port of a member ("nothing enters the group's port x
to chain its copies"), no exit ("leads nowhere") or several.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Annotated, Any

from pydantic import Field

from builder_ui.builders.graph_structure import NodeProblem
from builder_ui.specs import StrictModel

MAX_REPEAT = 64
MAX_GROUPS = 64
CHAINED_PORT = "x"  # the port whose outside edges chain the copies; the others are shared
# A node's id, and the most nodes a graph may hold once expanded (`graph` takes both from here).
NODE_ID_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"
MAX_NODES = 256


class GraphGroup(StrictModel):
    """A group of nodes, repeated `repeat` times (see the module docstring).

    Args:
        id: The group's name: a node-id-like name, distinct from every node's id.
        nodes: Its member node ids (at least one).
        repeat: How many copies of the members the model holds, 1 to 64.
        collapsed: Whether the canvas shows it folded; the builders ignore it.
    """

    id: Annotated[str, Field(pattern=NODE_ID_PATTERN)]
    nodes: Annotated[
        list[Annotated[str, Field(pattern=NODE_ID_PATTERN)]],
        Field(min_length=1, max_length=MAX_NODES),
    ]
    repeat: Annotated[int, Field(ge=1, le=MAX_REPEAT)] = 1
    collapsed: bool = False


@dataclass(frozen=True)
class GroupProblem:
    """A problem with one group: its index in `groups`, the location under it, the message.

    `loc` is relative to the group (`("nodes", 1)`, `("repeat",)`, `()` for the group
    as a whole).
    """

    index: int
    loc: tuple[str | int, ...]
    message: str

    @property
    def path(self) -> str:
        """The path under `model` (`groups[0].nodes[1]`)."""
        text = f"groups[{self.index}]"
        for part in self.loc:
            text += f"[{part}]" if isinstance(part, int) else f".{part}"
        return text


@dataclass(frozen=True)
class Expansion:
    """The expanded nodes, and where each came from.

    Attributes:
        nodes: The nodes with every group's copies (copies follow their group's last member).
        origin: Per expanded node, `(index of the node it copies, copy number)`; copy 1
            is the node itself.
        exits: Group id → the id of its last copy's exit (None for a group with no exit
            or several, which only `repeat: 1` allows).
        copies: Node id → the ids of its copies, copy 1 first (one for a node in no group).
        ids: The ids of the nodes given (before expanding), in order.
    """

    nodes: list[dict[str, Any]] = field(default_factory=list)
    origin: list[tuple[int, int]] = field(default_factory=list)
    exits: dict[str, str | None] = field(default_factory=dict)
    copies: dict[str, list[str]] = field(default_factory=dict)
    ids: list[str] = field(default_factory=list)

    def original(self, problem: NodeProblem) -> NodeProblem:
        """A problem of an expanded node as one of the node it copies (`"copy 3: ..."`)."""
        if problem.index is None or problem.index >= len(self.origin):
            return problem
        index, copy = self.origin[problem.index]
        message = problem.message if copy == 1 else f"copy {copy}: {problem.message}"
        return NodeProblem(index, self.ids[index], problem.field, message)


def copy_id(node_id: str, copy: int) -> str:
    """The id of copy `copy` of a member (`block`, `block_2`, `block_3`, ...)."""
    return node_id if copy == 1 else f"{node_id}_{copy}"


def _sources(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def _field(group: Mapping[str, Any], key: str, default: Any) -> Any:
    value = group.get(key, default)
    return default if value is None else value


def _exits(nodes: Sequence[Mapping[str, Any]], members: set[str]) -> list[str]:
    """The members read by nodes outside the group, in the order of the nodes."""
    read = {
        source
        for node in nodes
        if node.get("id") not in members
        for value in (node.get("inputs") or {}).values()
        for source in _sources(value)
    }
    return [node["id"] for node in nodes if node.get("id") in members and node["id"] in read]


def _chained(nodes: Sequence[Mapping[str, Any]], members: set[str]) -> bool:
    """Whether an outside node feeds a member's `x` port."""
    return any(
        source not in members
        for node in nodes
        if node.get("id") in members
        for source in _sources((node.get("inputs") or {}).get(CHAINED_PORT, []))
    )


def problems(
    nodes: Sequence[Mapping[str, Any]],
    groups: Sequence[Mapping[str, Any]],
    max_nodes: int = MAX_NODES,
) -> list[GroupProblem]:
    """Everything wrong with the groups of a graph (see the module docstring); no Keras.

    Args:
        nodes: The graph's nodes (mappings with `id` and `inputs`).
        groups: The groups as mappings (`GraphGroup` dumps, or the spec's).
        max_nodes: The most nodes the expanded graph may hold.
    """
    ids = [node.get("id") for node in nodes]
    known = set(ids)
    found: list[GroupProblem] = []
    group_of: dict[str, str] = {}
    seen_groups: dict[str, int] = {}
    total = len(nodes)
    for index, group in enumerate(groups):
        group_id = group.get("id")
        if group_id in seen_groups:
            found.append(
                GroupProblem(
                    index,
                    ("id",),
                    f"duplicate group id {group_id!r} (also group {seen_groups[group_id]})",
                )
            )
        elif group_id in known:
            found.append(
                GroupProblem(
                    index,
                    ("id",),
                    f"group id {group_id!r} is also a node's id; give the group a name of its own",
                )
            )
        seen_groups.setdefault(group_id, index)
        members = _field(group, "nodes", [])
        for position, member in enumerate(members):
            if member not in known:
                found.append(
                    GroupProblem(
                        index, ("nodes", position), f"group {group_id} names no node {member!r}"
                    )
                )
            elif member in group_of:
                where = (
                    "twice in this group"
                    if group_of[member] == group_id
                    else f"in group {group_of[member]} already"
                )
                found.append(
                    GroupProblem(
                        index,
                        ("nodes", position),
                        f"node {member!r} is {where}; a node is in one group at most",
                    )
                )
            else:
                group_of[member] = group_id
        # Bound the work before expanding: each group adds (repeat - 1) copies of its members.
        before = total
        total += len(members) * (_field(group, "repeat", 1) - 1)
        if total > max_nodes >= before:
            found.append(
                GroupProblem(
                    index,
                    ("repeat",),
                    f"group {group_id} repeated {_field(group, 'repeat', 1)} times makes the "
                    f"graph {total} nodes or more, more than {max_nodes}",
                )
            )
    if found:
        return found
    taken = set(known)
    for index, group in enumerate(groups):
        repeat = _field(group, "repeat", 1)
        if repeat == 1:
            continue
        group_id, members = group["id"], list(group["nodes"])
        member_set = set(members)
        copies = [copy_id(m, k) for k in range(2, repeat + 1) for m in members]
        clashes = sorted({c for c in copies if c in taken} | _duplicates(copies))
        taken.update(copies)
        if clashes:
            found.append(
                GroupProblem(
                    index,
                    ("repeat",),
                    f"group {group_id} repeated {repeat} times names its copies "
                    f"{', '.join(clashes)}, ids taken already; rename those nodes or the members",
                )
            )
        if not _chained(nodes, member_set):
            found.append(
                GroupProblem(
                    index,
                    (),
                    f"nothing enters the group's port {CHAINED_PORT} to chain its copies: no "
                    f"node outside group {group_id} feeds the {CHAINED_PORT} port of "
                    f"{', '.join(members)}",
                )
            )
        exits = _exits(nodes, member_set)
        if not exits:
            found.append(
                GroupProblem(
                    index,
                    (),
                    f"group {group_id} leads nowhere: no node outside it reads "
                    f"{', '.join(members)}; connect its exit",
                )
            )
        elif len(exits) > 1:
            found.append(
                GroupProblem(
                    index,
                    (),
                    f"group {group_id} repeated {repeat} times has several exits "
                    f"({', '.join(exits)}); only one member may feed nodes outside the group",
                )
            )
    return found


def _duplicates(values: Sequence[str]) -> set[str]:
    seen: set[str] = set()
    return {value for value in values if value in seen or seen.add(value)}


def expansion(nodes: Sequence[Mapping[str, Any]], groups: Sequence[Mapping[str, Any]]) -> Expansion:
    """The nodes with every group's copies, and where each came from (see `Expansion`).

    The groups are assumed valid (`problems` gives none); the nodes are not changed.
    """
    members_of = {group["id"]: set(group["nodes"]) for group in groups}
    group_of = {member: group["id"] for group in groups for member in group["nodes"]}
    last = {
        group["id"]: max(i for i, node in enumerate(nodes) if node["id"] in members_of[group["id"]])
        for group in groups
    }
    exits: dict[str, str | None] = {}
    # What a node outside a group reads instead of the group's exit: the last copy's exit.
    renamed: dict[str, str] = {}
    for group in groups:
        found = _exits(nodes, members_of[group["id"]])
        repeat = _field(group, "repeat", 1)
        exit_id = found[0] if len(found) == 1 else None
        exits[group["id"]] = None if exit_id is None else copy_id(exit_id, repeat)
        if exit_id is not None and repeat > 1:
            renamed[exit_id] = copy_id(exit_id, repeat)
    result = Expansion(exits=exits, ids=[node["id"] for node in nodes])
    for index, node in enumerate(nodes):
        own = members_of.get(group_of.get(node["id"]), set())
        result.nodes.append(_copy(node, node["id"], own, lambda s, port: renamed.get(s, s)))
        result.origin.append((index, 1))
        result.copies[node["id"]] = [node["id"]]
        for group in groups:
            if last[group["id"]] == index:
                _add_copies(nodes, group, renamed, result)
    return result


def expand(
    nodes: Sequence[Mapping[str, Any]], groups: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The nodes with every group's copies (see the module docstring); groups assumed valid."""
    return expansion(nodes, groups).nodes


def _copy(
    node: Mapping[str, Any],
    new_id: str,
    members: set[str],
    outside: Callable[[str, str], str],
    copy: int = 1,
) -> dict[str, Any]:
    """A node under `new_id`: a source in `members` read as its copy `copy`, one outside
    as `outside(source, port)` says; the other keys as they are."""
    found = {**deepcopy(dict(node)), "id": new_id}
    if "inputs" in node:
        inputs = {}
        for port, value in (node["inputs"] or {}).items():
            sources = [
                copy_id(s, copy) if s in members else outside(s, port) for s in _sources(value)
            ]
            inputs[port] = sources if isinstance(value, list) else sources[0]
        found["inputs"] = inputs
    return found


def _add_copies(
    nodes: Sequence[Mapping[str, Any]],
    group: Mapping[str, Any],
    renamed: Mapping[str, str],
    result: Expansion,
) -> None:
    """Copies 2..N of a group's members, after its last member, copy by copy."""
    repeat = _field(group, "repeat", 1)
    members = set(group["nodes"])
    exit_ids = _exits(nodes, members)
    if repeat == 1 or len(exit_ids) != 1:
        return
    ordered = [(index, node) for index, node in enumerate(nodes) if node["id"] in members]
    for copy in range(2, repeat + 1):
        previous = copy_id(exit_ids[0], copy - 1)

        def outside(source: str, port: str, previous: str = previous) -> str:
            # Into x: chained to the previous copy's exit; into another port: shared.
            return previous if port == CHAINED_PORT else renamed.get(source, source)

        for index, node in ordered:
            twin = _copy(node, copy_id(node["id"], copy), members, outside, copy)
            result.nodes.append(twin)
            result.origin.append((index, copy))
            result.copies[node["id"]].append(twin["id"])
