// "Tidy": a layered layout of the graph, top to bottom, by dagre (the Sugiyama method:
// layers by longest path, crossings cut by the barycentre heuristic, coordinates by
// Brandes-Köpf), which is what React Flow's and Svelte Flow's own examples use.

import dagre from "@dagrejs/dagre";

import { edgesOf, snap } from "./graph.js";

export const NODE_SIZE = { width: 190, height: 64 };
const SPACING = { nodesep: 50, ranksep: 70, marginx: 30, marginy: 30 };

function hasPosition(node) {
  const p = node.position;
  return Array.isArray(p) && p.length === 2 && p.every((v) => typeof v === "number" && isFinite(v));
}

/**
 * Positions {id: [x, y]} (top-left corners, on the grid) for `nodes` laid out in layers.
 * `sizes` may give a block's measured {width, height}; others take NODE_SIZE.
 */
export function tidyPositions(nodes, sizes = {}) {
  const graph = new dagre.graphlib.Graph();
  graph.setGraph({ rankdir: "TB", ...SPACING });
  graph.setDefaultEdgeLabel(() => ({}));
  for (const node of nodes) graph.setNode(node.id, { ...NODE_SIZE, ...(sizes[node.id] || {}) });
  for (const edge of edgesOf(nodes)) {
    if (graph.hasNode(edge.source)) graph.setEdge(edge.source, edge.target);
  }
  dagre.layout(graph);
  const positions = {};
  for (const node of nodes) {
    const { x, y, width, height } = graph.node(node.id);
    positions[node.id] = [snap(x - width / 2), snap(y - height / 2)];
  }
  return positions;
}

/**
 * The nodes, each with a position: those the spec places keep theirs; when any lacks one (a
 * preset opened as a graph, YAML written by hand) the whole graph is tidied, except that the
 * placed ones stay where they are.
 */
export function placed(nodes, sizes = {}) {
  if (nodes.every(hasPosition)) return nodes;
  const positions = tidyPositions(nodes, sizes);
  return nodes.map((node) => (hasPosition(node) ? node : { ...node, position: positions[node.id] }));
}
