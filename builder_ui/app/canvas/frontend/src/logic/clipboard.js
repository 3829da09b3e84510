// Copy and paste of blocks as YAML: the spec's own `nodes:` list, so that what is copied from the
// canvas pastes into a YAML spec, and blocks copied from a spec (or another tab's canvas) paste
// onto the canvas.

import { dump, load } from "js-yaml";

import { clone, freshId, ID_RE, nodeById, numberedId, snap } from "./graph.js";

export const PASTE_OFFSET = 40;
export const MAX_PASTE_BLOCKS = 200; // bound the work a paste makes (the spec's own limit is lower)
export const MAX_PASTE_CHARS = 512 * 1024;

/** The YAML text of the blocks `ids` (their edges to blocks outside them kept, by id). */
export function copyText(nodes, ids) {
  const chosen = new Set(ids);
  const picked = clone(nodes.filter((node) => chosen.has(node.id)));
  return picked.length ? dump(picked, { noRefs: true, lineWidth: 100 }) : "";
}

/** The blocks in pasted text: a YAML list of nodes, `nodes:` or `model: {nodes: ...}`; else null. */
export function blocksIn(text) {
  if (typeof text !== "string" || !text.trim() || text.length > MAX_PASTE_CHARS) return null;
  let value;
  try {
    value = load(text, { json: true });
  } catch {
    return null;
  }
  if (value && !Array.isArray(value) && typeof value === "object") {
    value = value.model && typeof value.model === "object" ? value.model.nodes : value.nodes;
  }
  if (!Array.isArray(value) || !value.length || value.length > MAX_PASTE_BLOCKS) return null;
  const ok = value.every(
    (node) => node && typeof node === "object" && typeof node.layer === "string" && typeof node.id === "string"
  );
  return ok ? value : null;
}

/**
 * The graph with `blocks` pasted in: each keeps its id, numbered where it is taken; edges among
 * the pasted blocks follow the new ids; an edge from a block outside them is kept when the graph
 * has that block, else dropped. Pasted positions move by PASTE_OFFSET so copies do not hide the
 * originals. Returns {nodes, ids} (the pasted blocks' ids).
 */
export function paste(nodes, blocks, offset = PASTE_OFFSET) {
  const renamed = new Map(); // a pasted id → its new id (the first block of that id, for edges)
  const taken = new Set();
  const newIds = blocks.map((block) => {
    // A copy keeps its name, numbered when the graph has it (encoder → encoder_2).
    const id = ID_RE.test(block.id)
      ? numberedId(block.id.slice(0, 56), nodes, taken)
      : freshId(block.layer, nodes, taken);
    if (!renamed.has(block.id)) renamed.set(block.id, id);
    taken.add(id);
    return id;
  });
  const remap = (source) => (renamed.has(source) ? renamed.get(source) : nodeById(nodes, source) ? source : null);
  const added = blocks.map((block, index) => {
    const inputs = {};
    for (const [port, sources] of Object.entries(block.inputs || {})) {
      if (Array.isArray(sources)) {
        const kept = sources.map(remap).filter(Boolean);
        if (kept.length) inputs[port] = kept;
      } else {
        const kept = remap(sources);
        if (kept) inputs[port] = kept;
      }
    }
    const p = Array.isArray(block.position) ? block.position : [40 + 20 * index, 40 + 80 * index];
    return {
      id: newIds[index],
      layer: block.layer,
      params: clone(block.params || {}),
      inputs,
      position: [snap(Number(p[0]) + offset || 0), snap(Number(p[1]) + offset || 0)],
    };
  });
  return { nodes: [...clone(nodes), ...added], ids: added.map((node) => node.id) };
}
