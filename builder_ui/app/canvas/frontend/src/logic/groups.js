// Groups of blocks: the spec's `model.groups`, [{id, nodes, repeat, collapsed}].
//
// A group names blocks that belong together; `repeat: N` makes the builders stack N copies of
// them (the Python side, builder_ui/builders/graph_groups.py, says how copies are wired), and
// `collapsed` shows the group on the canvas as one block. Pure functions, as in graph.js.

import { edgesOf, numberedId } from "./graph.js";

export const MAX_REPEAT = 64;

export function groupOf(groups, id) {
  return groups.find((group) => group.nodes.includes(id)) || null;
}

/** Group the blocks `ids` (taken out of any group they were in); returns {groups, id}. */
export function addGroup(groups, nodes, ids, name = "group") {
  const chosen = new Set(ids);
  const taken = new Set(groups.map((group) => group.id));
  const id = numberedId(name, nodes, taken);
  const kept = groups
    .map((group) => ({ ...group, nodes: group.nodes.filter((member) => !chosen.has(member)) }))
    .filter((group) => group.nodes.length);
  const members = nodes.map((node) => node.id).filter((nodeId) => chosen.has(nodeId));
  return { groups: [...kept, { id, nodes: members, repeat: 1, collapsed: false }], id };
}

export function ungroup(groups, id) {
  return groups.filter((group) => group.id !== id);
}

/** A group's count, a whole number from 1 to MAX_REPEAT; null for anything else. */
export function parseRepeat(text) {
  const value = String(text).trim();
  if (!/^[0-9]+$/.test(value)) return null;
  const count = parseInt(value, 10);
  return count >= 1 && count <= MAX_REPEAT ? count : null;
}

export function setGroup(groups, id, change) {
  return groups.map((group) => (group.id === id ? { ...group, ...change } : group));
}

/** The groups once blocks are gone or renamed: members follow, empty groups go. */
export function followNodes(groups, nodes, renamed = {}) {
  const ids = new Set(nodes.map((node) => node.id));
  return groups
    .map((group) => ({
      ...group,
      nodes: group.nodes.map((member) => renamed[member] || member).filter((member) => ids.has(member)),
    }))
    .filter((group) => group.nodes.length);
}

/**
 * How a collapsed group shows: its ports (the member ports wired from outside, or a member's
 * first free port when none is), its exit (the member that feeds blocks outside it, else its
 * last), and which member each of its wires really joins.
 */
export function collapsedView(nodes, group, portsOf) {
  const members = new Set(group.nodes);
  const edges = edgesOf(nodes);
  const entering = [];
  for (const edge of edges) {
    if (members.has(edge.target) && !members.has(edge.source)) {
      const key = `${edge.target}.${edge.port}`;
      if (!entering.includes(key)) entering.push(key);
    }
  }
  if (!entering.length) {
    const first = nodes.find((node) => node.id === group.nodes[0]);
    const ports = first ? portsOf(first) : [];
    if (ports.length) entering.push(`${first.id}.${ports[0]}`);
  }
  const leaving = edges.filter((edge) => members.has(edge.source) && !members.has(edge.target));
  const exit = leaving.length ? leaving[0].source : group.nodes[group.nodes.length - 1];
  return { ports: entering, exit };
}
