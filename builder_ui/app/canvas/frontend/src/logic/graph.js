// The canvas's graph model: the spec's `model.nodes`, edited by pure functions.
//
// A node is what the spec writes: {id, layer, params, inputs, position}, where `inputs` maps an
// input port to the id of the block that feeds it (a list of ids on a variadic port, such as
// Add's or Concatenate's `x`) and `position` is [x, y] on the canvas. Every function here takes
// the nodes and returns new ones; none changes its arguments, so a snapshot taken before an edit
// stays the graph it was (the undo history holds them).

export const ID_RE = /^[a-z][a-z0-9_]{0,63}$/;
export const GRID = 10;

export function clone(nodes) {
  return JSON.parse(JSON.stringify(nodes));
}

/** The catalog entry of a layer, or null for a layer the catalog does not know. */
export function blockOf(catalog, layer) {
  return (catalog || []).find((entry) => entry.name === layer) || null;
}

/** A node's input ports: the catalog's, or (for an unknown layer) the ones it uses, or `x`. */
export function portsOf(catalog, node) {
  const entry = blockOf(catalog, node.layer);
  if (entry) return entry.ports;
  const used = Object.keys(node.inputs || {});
  return used.length ? used : ["x"];
}

export function isVariadic(catalog, node, port) {
  const entry = blockOf(catalog, node.layer);
  return Boolean(entry && (entry.variadic || []).includes(port));
}

/** Whether a block gives an output another block can take (the head gives none). */
export function hasOutput(node) {
  return node.layer !== "Output";
}

export function nodeById(nodes, id) {
  return nodes.find((node) => node.id === id) || null;
}

/** Every edge [{source, target, port}], in the order of the nodes and their ports. */
export function edgesOf(nodes) {
  const found = [];
  for (const node of nodes) {
    for (const [port, sources] of Object.entries(node.inputs || {})) {
      for (const source of [].concat(sources)) {
        if (typeof source === "string") found.push({ source, target: node.id, port });
      }
    }
  }
  return found;
}

export function edgeKey(edge) {
  return `${edge.source}->${edge.target}.${edge.port}`;
}

/** `base`, or `base_2`, `base_3`, ...: the first that no block and nothing in `taken` has. */
export function numberedId(base, nodes, taken = new Set()) {
  const used = (id) => taken.has(id) || nodeById(nodes, id) !== null;
  if (!used(base)) return base;
  for (let n = 2; ; n++) if (!used(`${base}_${n}`)) return `${base}_${n}`;
}

/** A new id for a block of `layer`: its name in snake case, numbered past those taken. */
export function freshId(layer, nodes, taken = new Set()) {
  const base = String(layer)
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase()
    .replace(/[^a-z0-9_]/g, "_")
    .replace(/^[^a-z]+/, "");
  return numberedId((base || "block").slice(0, 56), nodes, taken);
}

export function snap(value) {
  return Math.round(value / GRID) * GRID;
}

export function addNode(nodes, layer, position, id = freshId(layer, nodes)) {
  const node = { id, layer, params: {}, inputs: {}, position: [snap(position[0]), snap(position[1])] };
  return [...clone(nodes), node];
}

/** Whether `target` depends on `source` already: an edge source → target would close a loop. */
export function reaches(nodes, from, to) {
  // Walk upstream from `from`: does it depend on `to`?
  const byId = new Map(nodes.map((node) => [node.id, node]));
  const seen = new Set();
  const stack = [from];
  while (stack.length) {
    const id = stack.pop();
    if (id === to) return true;
    if (seen.has(id)) continue;
    seen.add(id);
    const node = byId.get(id);
    for (const sources of Object.values((node && node.inputs) || {})) {
      for (const source of [].concat(sources)) stack.push(source);
    }
  }
  return false;
}

/**
 * Why source → target.port cannot be wired, or null when it can: the rules that hold before
 * any shape is known (the shape check on the server says the rest, on the edge it draws).
 */
export function connectionProblem(nodes, catalog, source, target, port) {
  const from = nodeById(nodes, source);
  const to = nodeById(nodes, target);
  if (!from || !to) return "no such block";
  if (source === target) return "a block cannot feed itself";
  if (!hasOutput(from)) return `${from.id} is the head: nothing comes out of it`;
  if (to.layer === "Input") return "an Input takes no input";
  if (!portsOf(catalog, to).includes(port)) return `${to.layer} has no port ${port}`;
  const current = [].concat((to.inputs || {})[port] || []);
  if (current.includes(source)) return `${source} feeds ${target}.${port} already`;
  if (reaches(nodes, source, target)) return `${target} feeds ${source}: a loop`;
  return null;
}

/** Wire source → target.port: added to a variadic port, replacing the source of any other. */
export function connect(nodes, catalog, source, target, port) {
  const next = clone(nodes);
  const node = nodeById(next, target);
  node.inputs = node.inputs || {};
  if (isVariadic(catalog, node, port)) {
    node.inputs[port] = [...[].concat(node.inputs[port] || []), source];
  } else {
    node.inputs[port] = source;
  }
  return next;
}

/** Remove edges [{source, target, port}]; a port left with no source is dropped. */
export function disconnect(nodes, edges) {
  const next = clone(nodes);
  for (const edge of edges) {
    const node = nodeById(next, edge.target);
    if (!node || !(node.inputs || {})[edge.port]) continue;
    const current = node.inputs[edge.port];
    if (Array.isArray(current)) {
      const index = current.indexOf(edge.source);
      const rest = current.filter((_, i) => i !== index);
      if (rest.length) node.inputs[edge.port] = rest;
      else delete node.inputs[edge.port];
    } else if (current === edge.source) {
      delete node.inputs[edge.port];
    }
  }
  return next;
}

/** Remove blocks, and every edge from them. */
export function removeNodes(nodes, ids) {
  const gone = new Set(ids);
  const next = clone(nodes).filter((node) => !gone.has(node.id));
  for (const node of next) {
    for (const [port, sources] of Object.entries(node.inputs || {})) {
      if (Array.isArray(sources)) {
        const rest = sources.filter((s) => !gone.has(s));
        if (rest.length) node.inputs[port] = rest;
        else delete node.inputs[port];
      } else if (gone.has(sources)) {
        delete node.inputs[port];
      }
    }
  }
  return next;
}

/** Why `id` cannot be a block's new id, or null. */
export function idProblem(nodes, old, id) {
  if (!ID_RE.test(id)) return `"${id}" is not an id: a lowercase letter, then a-z, 0-9, _`;
  if (id !== old && nodeById(nodes, id)) return `there is already a block ${id}`;
  return null;
}

export function renameNode(nodes, old, id) {
  const next = clone(nodes);
  for (const node of next) {
    if (node.id === old) node.id = id;
    for (const [port, sources] of Object.entries(node.inputs || {})) {
      node.inputs[port] = Array.isArray(sources)
        ? sources.map((s) => (s === old ? id : s))
        : sources === old
          ? id
          : sources;
    }
  }
  return next;
}

/** Set a parameter; `undefined` takes it out (the layer's default applies). */
export function setParam(nodes, id, name, value) {
  const next = clone(nodes);
  const node = nodeById(next, id);
  node.params = { ...(node.params || {}) };
  if (value === undefined) delete node.params[name];
  else node.params[name] = value;
  return next;
}

/** Move blocks to new positions {id: [x, y]}, snapped to the grid. */
export function moveNodes(nodes, positions) {
  return clone(nodes).map((node) =>
    positions[node.id] ? { ...node, position: positions[node.id].map(snap) } : node
  );
}

/** A parameter's text from its field as the spec holds it; undefined for empty (the default). */
export function parseParam(param, text) {
  const value = String(text).trim();
  if (value === "") return undefined;
  if (param.kind === "int" && /^-?[0-9]+$/.test(value)) return parseInt(value, 10);
  if (param.kind === "float" && !Number.isNaN(Number(value))) return Number(value);
  if (value.startsWith("{") || value.startsWith("[")) {
    try {
      return JSON.parse(value); // an initializer as Keras serializes it, or a shape
    } catch {
      return value; // kept as typed: the report names the parameter
    }
  }
  return value; // kept as typed: the report names the parameter
}

/** A parameter's value as its field shows it. */
export function shownParam(value) {
  if (value === undefined || value === null) return "";
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

/** Catalog entries whose name, group or description holds every word of `query`. */
export function searchCatalog(catalog, query) {
  const words = String(query || "").toLowerCase().split(/\s+/).filter(Boolean);
  const scored = [];
  for (const entry of catalog || []) {
    const name = entry.name.toLowerCase();
    const text = `${name} ${entry.group || ""} ${entry.description || ""}`.toLowerCase();
    if (!words.every((word) => text.includes(word))) continue;
    // Names that start with the query first, then names that hold it, then the rest.
    const first = words[0] || "";
    const rank = name.startsWith(first) ? 0 : name.includes(first) ? 1 : 2;
    scored.push([rank, entry]);
  }
  return scored.sort((a, b) => a[0] - b[0]).map(([, entry]) => entry);
}
