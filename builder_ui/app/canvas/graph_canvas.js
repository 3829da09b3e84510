// The Build tab's graph canvas: a `gr.HTML` component's `js_on_load` (plain JavaScript, SVG and
// pointer events, no library). Gradio runs it with `element` (the component's root), `props`
// (`props.value` is the graph as JSON), `trigger` (sends an event to Python) and `watch`.
//
// The value: {nodes, report, catalog, revision, origin}. The canvas owns `nodes` while the user
// edits; each edit bumps `revision` and sends {nodes, revision} with trigger("graph_edit").
// Python writes the nodes into the spec's YAML and answers with the report (shapes, edges,
// errors) for that revision (origin "canvas"), or with new nodes when the YAML changed
// (origin "spec"). A report for an older revision is dropped: a newer edit is on its way.
// While the YAML does not parse (origin "unreadable", no nodes) the canvas keeps the last good
// graph, read-only, and says why: no edit can write over a spec Python could not read.
(function () {
  "use strict";
  const SVG = "http://www.w3.org/2000/svg";
  // Blocks flow top to bottom: input ports on a block's top edge, its output at the bottom.
  const NODE_W = 170;
  const NODE_H = 46;
  const LABELS_H = 12; // the port names, inside the top edge, on a block of named ports
  const ROW_H = 110;
  const GRID = 10;
  const ID_RE = /^[a-z][a-z0-9_]{0,63}$/;
  const HELP =
    "Mouse: drag a block from the palette onto the canvas; drag a block to move it; drag " +
    "from a block's output dot (bottom) to an input port (top) to connect; click a block " +
    "to edit its parameters. Keyboard: Tab to a palette block and press Enter to add it; " +
    "select a block (Tab) and move it with the arrow keys (Shift: faster); press C, then " +
    "Tab to a port of another block and press Enter to connect it (Escape cancels). " +
    "Delete or Backspace removes the focused block, edge, or a port's link. Ctrl+Z " +
    "undoes, Ctrl+Shift+Z (or Ctrl+Y) redoes.";

  const root = element.querySelector(".ksg-root") || element;
  const state = {
    nodes: [],
    report: { shapes: {}, edges: [], errors: {}, params: null },
    catalog: [],
    revision: 0,
    answered: 0, // the revision whose report is drawn
    resync: null, // the timer that asks again when the answer to the newest edit is late
    triedRevision: 0, // the edit the resends are for, and how many were made
    tries: 0,
    selected: null, // a node id
    frozen: null, // the parse error while the YAML does not parse (the canvas is read-only)
    selectedEdge: null, // {target, port, source}
    connectFrom: null, // a node id while connecting with the keyboard
    undo: [],
    redo: [],
  };

  // -- layout -----------------------------------------------------------------------------

  root.innerHTML = "";
  const toolbar = el("div", { class: "ksg-toolbar" });
  const undoButton = button("Undo", "ksg-undo", "Undo (Ctrl+Z)", () => undo());
  const redoButton = button("Redo", "ksg-redo", "Redo (Ctrl+Shift+Z)", () => redo());
  const deleteButton = button("Delete", "ksg-delete", "Delete the selection (Delete)", () =>
    deleteSelection()
  );
  const connectButton = button("Connect…", "ksg-connect", "Connect the selected block (C)", () =>
    startConnect(state.selected)
  );
  toolbar.append(undoButton, redoButton, deleteButton, connectButton);
  const summary = el("span", { class: "ksg-summary" });
  toolbar.append(summary);
  const help = el("p", { class: "ksg-help" }, HELP);
  const main = el("div", { class: "ksg-main" });
  const palette = el("div", { class: "ksg-palette", role: "list", "aria-label": "Blocks" });
  // Focusable from the script only: the keys still reach the canvas once a focused block is gone.
  const stage = el("div", { class: "ksg-stage", tabindex: "-1" });
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "ksg-svg");
  svg.setAttribute("role", "application");
  svg.setAttribute("aria-label", "Model graph");
  const edgeLayer = svgEl("g", { class: "ksg-edges" });
  const nodeLayer = svgEl("g", { class: "ksg-nodes" });
  // The edges' shape labels, drawn over the blocks so that a block never hides one.
  const labelLayer = svgEl("g", { class: "ksg-labels" });
  const wire = svgEl("path", { class: "ksg-wire", d: "" });
  svg.append(edgeLayer, nodeLayer, labelLayer, wire);
  stage.append(svg);
  main.append(palette, stage);
  const panel = el("div", { class: "ksg-panel", "aria-live": "polite" });
  const status = el("div", { class: "ksg-status", role: "status" });
  root.append(toolbar, help, main, panel, status);

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    if (text != null) node.textContent = text;
    return node;
  }

  function svgEl(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    if (text != null) node.textContent = text;
    return node;
  }

  function button(label, cls, title, onClick) {
    const b = el("button", { type: "button", class: cls, title: title }, label);
    b.addEventListener("click", onClick);
    return b;
  }

  // -- the catalog and the graph --------------------------------------------------------

  function block(name) {
    return state.catalog.find((entry) => entry.name === name) || null;
  }

  function portsOf(node) {
    const entry = block(node.layer);
    if (entry) return entry.ports;
    return Object.keys(node.inputs || {}).length ? Object.keys(node.inputs) : ["x"];
  }

  function isVariadic(node, port) {
    const entry = block(node.layer);
    return Boolean(entry && (entry.variadic || []).includes(port));
  }

  function nodeById(id) {
    return state.nodes.find((node) => node.id === id) || null;
  }

  function namedPorts(node) {
    const ports = portsOf(node);
    return node.layer !== "Input" && (ports.length > 1 || (ports.length === 1 && ports[0] !== "x"));
  }

  function nodeHeight(node) {
    return NODE_H + (namedPorts(node) ? LABELS_H : 0);
  }

  function position(node) {
    const p = Array.isArray(node.position) ? node.position : [40, 40];
    return [Number(p[0]) || 0, Number(p[1]) || 0];
  }

  function portX(node, index) {
    return (NODE_W * (index + 1)) / (portsOf(node).length + 1);
  }

  function portPoint(node, port) {
    const [x, y] = position(node);
    return [x + portX(node, Math.max(0, portsOf(node).indexOf(port))), y];
  }

  function outPoint(node) {
    const [x, y] = position(node);
    return [x + NODE_W / 2, y + nodeHeight(node)];
  }

  // Every edge: [{source, target, port}], in the order of the nodes and their ports.
  function edges() {
    const found = [];
    for (const node of state.nodes) {
      for (const [port, sources] of Object.entries(node.inputs || {})) {
        for (const source of [].concat(sources)) {
          if (typeof source === "string") found.push({ source, target: node.id, port });
        }
      }
    }
    return found;
  }

  function edgeShape(edge) {
    const known = (state.report.edges || []).find(
      (e) => e.source === edge.source && e.target === edge.target && e.port === edge.port
    );
    if (known && known.shape) return known.shape;
    const shape = (state.report.shapes || {})[edge.source];
    return shape || "?";
  }

  function freshId(layer) {
    let base = String(layer)
      .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
      .toLowerCase()
      .replace(/[^a-z0-9_]/g, "_")
      .replace(/^[^a-z]+/, "");
    base = (base || "block").slice(0, 56);
    if (!nodeById(base)) return base;
    for (let n = 2; ; n++) if (!nodeById(`${base}_${n}`)) return `${base}_${n}`;
  }

  function freeSpot() {
    const width = Math.max(stage.clientWidth, 2 * NODE_W + 80);
    const columns = Math.max(1, Math.floor((width - 40) / (NODE_W + 50)));
    for (let slot = 0; slot < 400; slot++) {
      const x = 30 + (slot % columns) * (NODE_W + 50);
      const y = 30 + Math.floor(slot / columns) * ROW_H;
      const taken = state.nodes.some((node) => {
        const [nx, ny] = position(node);
        return Math.abs(nx - x) < NODE_W + 20 && Math.abs(ny - y) < ROW_H - 10;
      });
      if (!taken) return [x, y];
    }
    return [30, 30];
  }

  // -- edits: each one is undoable and is sent to Python --------------------------------

  function snapshot() {
    return JSON.stringify(state.nodes);
  }

  // While the YAML does not parse, every edit is refused (the last good graph stays as drawn).
  function refusedWhileFrozen() {
    if (!state.frozen) return false;
    status.textContent =
      "⚠ Read-only while the YAML does not parse: fix it in the editor and the canvas " +
      "follows again (it keeps the last good graph).";
    status.classList.toggle("ksg-bad-spec", true);
    return true;
  }

  function edit(change, message) {
    if (refusedWhileFrozen()) return;
    const before = snapshot();
    change();
    if (snapshot() === before) return;
    state.undo.push(before);
    if (state.undo.length > 200) state.undo.shift();
    state.redo = [];
    commit(message);
  }

  function commit(message) {
    state.revision += 1;
    draw();
    say(message || "");
    send();
  }

  function send() {
    props.value = { nodes: JSON.parse(snapshot()), revision: state.revision };
    trigger("graph_edit");
    expectAnswer();
  }

  // Answers can be overtaken: one to an older edit is dropped, since a newer edit's is on its
  // way. Should that one never come (an answer lost between two quick edits on a busy
  // server), the canvas sends its nodes again until the report it draws is its newest edit's.
  // At most RESYNC_TRIES times for one edit (the server refuses edits while the YAML is broken).
  const RESYNC_MS = 2000;
  const RESYNC_TRIES = 3;
  function expectAnswer() {
    if (state.resync) clearTimeout(state.resync);
    if (state.triedRevision !== state.revision) {
      state.triedRevision = state.revision;
      state.tries = 0;
    }
    state.resync = setTimeout(() => {
      state.resync = null;
      if (state.answered < state.revision && state.tries < RESYNC_TRIES) {
        state.tries += 1;
        send();
      }
    }, RESYNC_MS);
  }

  function undo() {
    if (refusedWhileFrozen()) return;
    if (!state.undo.length) return say("Nothing to undo.");
    state.redo.push(snapshot());
    state.nodes = JSON.parse(state.undo.pop());
    keepSelection();
    commit("Undone.");
    keepFocus();
  }

  function redo() {
    if (refusedWhileFrozen()) return;
    if (!state.redo.length) return say("Nothing to redo.");
    state.undo.push(snapshot());
    state.nodes = JSON.parse(state.redo.pop());
    keepSelection();
    commit("Redone.");
    keepFocus();
  }

  // The keys keep reaching the canvas when the focused element went with an undo or a redo.
  function keepFocus() {
    if (root.contains(document.activeElement)) return;
    if (state.selected) focusNode(state.selected);
    if (!root.contains(document.activeElement)) stage.focus({ preventScroll: true });
  }

  function keepSelection() {
    if (state.selected && !nodeById(state.selected)) state.selected = null;
    state.selectedEdge = null;
  }

  function addBlock(layer, at) {
    const id = freshId(layer);
    const spot = at || freeSpot();
    edit(() => {
      state.nodes.push({
        id,
        layer,
        params: {},
        inputs: {},
        position: [snap(spot[0]), snap(spot[1])],
      });
      state.selected = id;
    }, `Added ${id} (${layer}).`);
    focusNode(id);
  }

  function snap(value) {
    return Math.max(0, Math.round(value / GRID) * GRID);
  }

  function moveNode(id, x, y) {
    const node = nodeById(id);
    if (node) node.position = [snap(x), snap(y)];
  }

  function connect(source, target, port) {
    const node = nodeById(target);
    if (!node || source === target) return say("A block cannot feed itself.");
    edit(() => {
      node.inputs = node.inputs || {};
      if (isVariadic(node, port)) {
        const list = [].concat(node.inputs[port] || []);
        list.push(source);
        node.inputs[port] = list;
      } else {
        node.inputs[port] = source;
      }
    }, `Connected ${source} → ${target}.${port}.`);
  }

  function disconnect(target, port, source) {
    const node = nodeById(target);
    if (!node || !(node.inputs || {})[port]) return;
    edit(() => {
      const current = node.inputs[port];
      if (Array.isArray(current) && source != null) {
        const index = current.indexOf(source);
        const rest = current.filter((_, i) => i !== index);
        if (rest.length) node.inputs[port] = rest;
        else delete node.inputs[port];
      } else {
        delete node.inputs[port];
      }
      state.selectedEdge = null;
    }, `Disconnected ${target}.${port}.`);
    keepFocus();
  }

  function removeNode(id) {
    edit(() => {
      state.nodes = state.nodes.filter((node) => node.id !== id);
      for (const node of state.nodes) {
        for (const [port, sources] of Object.entries(node.inputs || {})) {
          if (Array.isArray(sources)) {
            const rest = sources.filter((s) => s !== id);
            if (rest.length) node.inputs[port] = rest;
            else delete node.inputs[port];
          } else if (sources === id) {
            delete node.inputs[port];
          }
        }
      }
      if (state.selected === id) state.selected = null;
    }, `Deleted ${id}.`);
    keepFocus();
  }

  function renameNode(old, id) {
    if (id === old) return;
    if (!ID_RE.test(id)) return say(`"${id}" is not an id: a lowercase letter, then a-z, 0-9, _.`);
    if (nodeById(id)) return say(`There is already a block ${id}.`);
    edit(() => {
      for (const node of state.nodes) {
        if (node.id === old) node.id = id;
        for (const [port, sources] of Object.entries(node.inputs || {})) {
          node.inputs[port] = Array.isArray(sources)
            ? sources.map((s) => (s === old ? id : s))
            : sources === old
              ? id
              : sources;
        }
      }
      state.selected = id;
    }, `Renamed ${old} to ${id}.`);
  }

  function setParam(id, name, value) {
    const node = nodeById(id);
    if (!node) return;
    edit(() => {
      node.params = node.params || {};
      if (value === undefined) delete node.params[name];
      else node.params[name] = value;
    }, `${id}: ${name} = ${value === undefined ? "default" : JSON.stringify(value)}.`);
  }

  function deleteSelection() {
    if (state.selectedEdge) {
      const e = state.selectedEdge;
      return disconnect(e.target, e.port, e.source);
    }
    if (state.selected) return removeNode(state.selected);
    say("Select a block or an edge first.");
  }

  function startConnect(id) {
    if (!id || !nodeById(id)) return say("Select a block first, then connect it.");
    state.connectFrom = id;
    svg.classList.add("ksg-connecting");
    say(`Connecting ${id}: Tab to an input port of another block and press Enter (Escape cancels).`);
    const first = nodeLayer.querySelector(`.ksg-port:not([data-node="${id}"])`);
    if (first) first.focus();
  }

  function stopConnect() {
    state.connectFrom = null;
    svg.classList.remove("ksg-connecting");
  }

  function say(message) {
    status.textContent = message;
    status.classList.toggle("ksg-bad-spec", false);
  }

  // -- drawing ----------------------------------------------------------------------------

  function draw() {
    drawNodes();
    drawEdges();
    drawPanel();
    const errors = state.report.errors || {};
    const bad = Object.keys(errors).length;
    const params = state.report.params;
    summary.textContent = bad
      ? `${bad} problem${bad > 1 ? "s" : ""}`
      : params != null
        ? `${Number(params).toLocaleString("en")} parameters`
        : "";
    summary.setAttribute("class", bad ? "ksg-summary ksg-message" : "ksg-summary");
    undoButton.disabled = !state.undo.length;
    redoButton.disabled = !state.redo.length;
    let width = stage.clientWidth || 600;
    let height = 420;
    for (const node of state.nodes) {
      const [x, y] = position(node);
      width = Math.max(width, x + NODE_W + 180); // room for a lane and its labels
      height = Math.max(height, y + nodeHeight(node) + 60);
    }
    svg.setAttribute("width", width);
    svg.setAttribute("height", height);
    root.dataset.ready = "true";
    root.dataset.revision = String(state.revision);
  }

  function drawNodes() {
    const focused = document.activeElement;
    const keep = focused && nodeLayer.contains(focused) ? focusKey(focused) : null;
    nodeLayer.textContent = "";
    const errors = state.report.errors || {};
    for (const node of state.nodes) {
      const [x, y] = position(node);
      const h = nodeHeight(node);
      const g = svgEl("g", {
        class: "ksg-node",
        tabindex: "0",
        "data-id": node.id,
        "data-layer": node.layer,
        transform: `translate(${x},${y})`,
        role: "button",
        "aria-label": `${node.id}, ${node.layer}${errors[node.id] ? ", error: " + errors[node.id] : ""}`,
      });
      if (node.id === state.selected) g.classList.add("ksg-selected");
      if (errors[node.id]) {
        g.classList.add("ksg-bad");
        g.setAttribute("data-error", errors[node.id]);
        g.append(svgEl("title", {}, errors[node.id]));
      }
      const top = namedPorts(node) ? LABELS_H : 0;
      g.append(svgEl("rect", { class: "ksg-box", width: NODE_W, height: h, rx: 6 }));
      g.append(svgEl("text", { class: "ksg-title", x: 8, y: top + 18 }, node.id));
      const shape = (state.report.shapes || {})[node.id];
      const line = shape ? `${node.layer} → ${shape}` : node.layer;
      g.append(svgEl("text", { class: "ksg-layer", x: 8, y: top + 34 }, line));
      if (node.layer !== "Input") {
        portsOf(node).forEach((port, index) => {
          const px = portX(node, index);
          const p = svgEl("g", {
            class: "ksg-port",
            tabindex: "0",
            "data-node": node.id,
            "data-port": port,
            role: "button",
            "aria-label": `${node.id} input ${port}`,
          });
          p.append(svgEl("circle", { cx: px, cy: 0, r: 6 }));
          if (top) p.append(svgEl("text", { x: px, y: 16, "text-anchor": "middle" }, port));
          g.append(p);
        });
      }
      if (node.layer !== "Output") {
        const o = svgEl("g", {
          class: "ksg-out",
          tabindex: "0",
          "data-node": node.id,
          role: "button",
          "aria-label": `${node.id} output: connect`,
        });
        o.append(svgEl("circle", { cx: NODE_W / 2, cy: h, r: 7 }));
        g.append(o);
      }
      nodeLayer.append(g);
    }
    if (keep) restoreFocus(keep);
  }

  function focusKey(target) {
    return {
      cls: target.getAttribute("class"),
      id: target.getAttribute("data-id"),
      node: target.getAttribute("data-node"),
      port: target.getAttribute("data-port"),
    };
  }

  function restoreFocus(key) {
    let target = null;
    if (key.cls && key.cls.includes("ksg-node")) target = nodeLayer.querySelector(`.ksg-node[data-id="${key.id}"]`);
    else if (key.port) target = nodeLayer.querySelector(`.ksg-port[data-node="${key.node}"][data-port="${key.port}"]`);
    else if (key.node) target = nodeLayer.querySelector(`.ksg-out[data-node="${key.node}"]`);
    if (target) target.focus();
  }

  function focusNode(id) {
    const g = nodeLayer.querySelector(`.ksg-node[data-id="${id}"]`);
    if (g) g.focus();
  }

  // An edge goes straight down as a curve, unless a block stands in its way or it climbs to a
  // block placed higher: then it runs down a lane right of every block it would cross.
  function edgeRoute(source, target, x1, y1, x2, y2, lanes) {
    const top = Math.min(y1, y2);
    const bottom = Math.max(y1, y2);
    const left = Math.min(x1, x2) - 10;
    const right = Math.max(x1, x2) + 10;
    const inWay = state.nodes.filter((node) => {
      const [nx, ny] = position(node);
      const crossesRows = ny < bottom && ny + nodeHeight(node) > top;
      const crossesColumns = nx < right && nx + NODE_W > left;
      const ends = node.id === source.id || node.id === target.id;
      return crossesRows && crossesColumns && !ends;
    });
    const climbs = y2 < y1 + 20;
    if (!climbs && !inWay.length) {
      const bend = Math.max(30, Math.abs(y2 - y1) / 2);
      return {
        d: `M${x1},${y1} C${x1},${y1 + bend} ${x2},${y2 - bend} ${x2},${y2}`,
        label: [(x1 + x2) / 2 + 8, (y1 + y2) / 2 + 4],
      };
    }
    const around = climbs ? [...inWay, source, target] : inWay;
    let lane = Math.max(x1, x2, ...around.map((node) => position(node)[0] + NODE_W)) + 24;
    const key = Math.round(lane);
    lane += 12 * (lanes.get(key) || 0); // edges sharing a lane side by side
    lanes.set(key, (lanes.get(key) || 0) + 1);
    const drop = 22;
    return {
      d:
        `M${x1},${y1} C${x1},${y1 + drop} ${lane},${y1 + drop} ${lane},${y1 + 2 * drop} ` +
        `L${lane},${y2 - 2 * drop} C${lane},${y2 - drop} ${x2},${y2 - drop} ${x2},${y2}`,
      label: [lane + 6, (y1 + y2) / 2 + 4],
    };
  }

  // Labels that would overlap one already placed move down a line until they fit.
  function labelSpot(x, y, text, taken) {
    const width = 6 * String(text).length + 4;
    const height = 13;
    let spot = y;
    for (let tries = 0; tries < 12; tries++) {
      const hit = taken.some(
        (box) => x < box.x + box.w && box.x < x + width && spot - height < box.y && box.y - height < spot
      );
      if (!hit) break;
      spot += height;
    }
    taken.push({ x, y: spot, w: width });
    return spot;
  }

  function drawEdges() {
    edgeLayer.textContent = "";
    labelLayer.textContent = "";
    const lanes = new Map();
    const taken = [];
    for (const edge of edges()) {
      const source = nodeById(edge.source);
      const target = nodeById(edge.target);
      if (!source || !target) continue;
      const [x1, y1] = outPoint(source);
      const [x2, y2] = portPoint(target, edge.port);
      const route = edgeRoute(source, target, x1, y1, x2, y2, lanes);
      const shape = edgeShape(edge);
      const g = svgEl("g", {
        class: "ksg-edge",
        tabindex: "0",
        "data-source": edge.source,
        "data-target": edge.target,
        "data-port": edge.port,
        role: "button",
        "aria-label": `edge ${edge.source} to ${edge.target}.${edge.port}, shape ${shape}`,
      });
      const e = state.selectedEdge;
      if (e && e.source === edge.source && e.target === edge.target && e.port === edge.port) {
        g.classList.add("ksg-selected");
      }
      g.append(svgEl("path", { d: route.d }));
      g.append(svgEl("title", {}, shape)); // the edge's own text: its tooltip and its shape
      const [lx, ly] = route.label;
      const label = { class: "ksg-edge-label", x: lx, y: labelSpot(lx, ly, shape, taken) };
      labelLayer.append(svgEl("text", label, shape));
      edgeLayer.append(g);
    }
  }

  // The panel is rebuilt only when what it shows changes (the selected block, its params, its
  // error), so a report that arrives while someone types in a field leaves the field alone; when
  // it is rebuilt, the focused field keeps what was typed in it and where the caret was.
  function drawPanel() {
    const node = nodeById(state.selected);
    const errors = state.report.errors || {};
    const key = JSON.stringify([
      state.selected,
      node ? node.layer : null,
      node ? node.params || {} : null,
      node ? errors[node.id] || null : errors.spec || null,
      (state.catalog || []).length,
    ]);
    if (key === state.panelKey && panel.childNodes.length) return;
    const sameNode = state.panelNode === state.selected;
    state.panelKey = key;
    state.panelNode = state.selected;
    const active = document.activeElement;
    const keepField = active && panel.contains(active) ? active.id : null;
    const typed = keepField && sameNode && "value" in active ? active.value : null;
    let caret = null;
    try {
      caret = typed !== null ? [active.selectionStart, active.selectionEnd] : null;
    } catch (error) {
      caret = null; // a number field has no caret to read
    }
    panel.textContent = "";
    if (!node) {
      const specError = (state.report.errors || {}).spec;
      panel.append(el("p", { class: "ksg-help" }, "Select a block to edit its parameters."));
      if (specError) panel.append(el("p", { class: "ksg-message", id: "ksg-spec-error" }, `⚠ ${specError}`));
      return;
    }
    const entry = block(node.layer);
    panel.append(el("h4", {}, `${node.id}: ${node.layer}`));
    if (entry && entry.description) panel.append(el("p", { class: "ksg-help" }, entry.description));
    const error = (state.report.errors || {})[node.id];
    if (error) panel.append(el("p", { class: "ksg-message", id: "ksg-node-error" }, `⚠ ${error}`));
    const fields = el("div", { class: "ksg-fields" });
    fields.append(idField(node));
    for (const param of (entry && entry.params) || []) fields.append(paramField(node, param));
    panel.append(fields);
    if (keepField) {
      const again = panel.querySelector(`#${CSS.escape(keepField)}`);
      if (again) {
        if (typed !== null && again.tagName === "INPUT" && again.type !== "checkbox") again.value = typed;
        again.focus();
        try {
          if (caret && caret[0] !== null) again.setSelectionRange(caret[0], caret[1]);
        } catch (error) {
          // a number field has no caret to set
        }
      }
    }
  }

  function idField(node) {
    const label = el("label", { class: "ksg-field" });
    label.append(el("span", {}, "id"));
    const input = el("input", { type: "text", id: "ksg-param--id", value: node.id });
    input.value = node.id;
    input.addEventListener("change", () => renameNode(node.id, input.value.trim()));
    label.append(input);
    return label;
  }

  function paramField(node, param) {
    const label = el("label", { class: "ksg-field" });
    const required = param.required ? " *" : "";
    label.append(el("span", {}, `${param.name}${required}`));
    const current = (node.params || {})[param.name];
    const id = `ksg-param-${param.name}`;
    let input;
    if (param.kind === "bool") {
      input = el("input", { type: "checkbox", id });
      input.checked = current === undefined ? Boolean(param.default) : Boolean(current);
      input.addEventListener("change", () => setParam(node.id, param.name, input.checked));
    } else if (param.kind === "choice") {
      input = el("select", { id });
      const choices = param.choices || [];
      if (!param.required) input.append(el("option", { value: "" }, `default (${shown(param.default)})`));
      for (const choice of choices) input.append(el("option", { value: JSON.stringify(choice) }, shown(choice)));
      input.value = current === undefined ? "" : JSON.stringify(current);
      input.addEventListener("change", () =>
        setParam(node.id, param.name, input.value === "" ? undefined : JSON.parse(input.value))
      );
    } else {
      const numeric = param.kind === "int" || param.kind === "float";
      input = el("input", { type: numeric ? "number" : "text", id });
      if (param.kind === "int") input.step = "1";
      if (param.kind === "float") input.step = "any";
      input.placeholder = param.default == null ? (param.required ? "required" : "none") : shown(param.default);
      // An initializer may be a {class_name, config} mapping, a shape a list: shown, and
      // edited, as JSON.
      input.value =
        current === undefined || current === null
          ? ""
          : typeof current === "object"
            ? JSON.stringify(current)
            : String(current);
      input.addEventListener("change", () => setParam(node.id, param.name, parsed(param, input.value)));
    }
    input.setAttribute("aria-label", `${param.name} of ${node.id}`);
    if (param.help) input.title = param.help;
    label.append(input);
    if (param.help) label.append(el("span", { class: "ksg-field-help" }, param.help));
    return label;
  }

  function shown(value) {
    return value === null || value === undefined ? "none" : String(value);
  }

  function parsed(param, text) {
    const value = text.trim();
    if (value === "") return undefined;
    if (param.kind === "int" && /^-?[0-9]+$/.test(value)) return parseInt(value, 10);
    if (param.kind === "float" && value !== "" && !Number.isNaN(Number(value))) return Number(value);
    if (value.startsWith("{") || value.startsWith("[")) {
      try {
        return JSON.parse(value); // an initializer as Keras serializes it, or a shape
      } catch (error) {
        return value; // kept as typed: the report names the parameter
      }
    }
    return value; // kept as typed: the report names the parameter
  }

  // -- the value from Python ----------------------------------------------------------------

  function receive(value) {
    if (!value || typeof value !== "object" || !value.report) return;
    if (Array.isArray(value.catalog) && value.catalog.length) {
      if (JSON.stringify(value.catalog) !== JSON.stringify(state.catalog)) {
        state.catalog = value.catalog;
        drawPalette();
      }
    }
    if (value.origin === "unreadable") {
      state.frozen = (value.report.errors || {}).spec || "the YAML does not parse";
      root.classList.toggle("ksg-frozen", true);
      draw();
      status.textContent =
        `⚠ The YAML does not parse (${state.frozen}). The canvas shows the last good ` +
        "graph, read-only, until the YAML is fixed.";
      status.classList.toggle("ksg-bad-spec", true);
      return;
    }
    if (state.frozen) {
      state.frozen = null;
      root.classList.toggle("ksg-frozen", false);
      say("");
    }
    const sameReport = JSON.stringify(value.report) === JSON.stringify(state.report);
    const incoming = JSON.stringify(placed(value.nodes || []));
    if (sameReport && (value.origin !== "spec" || incoming === snapshot())) {
      if (value.revision === state.revision) state.answered = state.revision;
      return; // as drawn
    }
    if (value.origin === "spec") {
      // A spec older than the canvas's newest edit: that edit's own answer is on its way.
      if (typeof value.revision === "number" && value.revision < state.revision) return;
      if (incoming !== snapshot()) {
        if (state.nodes.length) state.undo.push(snapshot());
        state.redo = [];
        state.nodes = JSON.parse(incoming);
        keepSelection();
      }
      if (typeof value.revision === "number") state.revision = Math.max(state.revision, value.revision);
      state.report = value.report;
      state.answered = state.revision;
    } else if (value.revision === state.revision) {
      state.report = value.report;
      state.answered = state.revision;
    } else {
      return; // the report of an older edit: the newer one's is on its way (or `expectAnswer`)
    }
    draw();
    const specError = (state.report.errors || {}).spec;
    if (specError) {
      status.textContent = `⚠ ${specError}`;
      status.classList.toggle("ksg-bad-spec", true);
    }
  }

  // Nodes the spec gives no position (a preset written by hand) are laid out by depth: a row
  // per step from the input, left to right within a row.
  function placed(nodes) {
    const copy = JSON.parse(JSON.stringify(nodes));
    const byId = new Map(copy.map((node) => [node.id, node]));
    const depth = new Map();
    const depthOf = (node, seen) => {
      if (depth.has(node.id)) return depth.get(node.id);
      if (seen.has(node.id)) return 0; // a cycle: the report names it
      seen.add(node.id);
      let deepest = -1;
      for (const sources of Object.values(node.inputs || {})) {
        for (const source of [].concat(sources)) {
          const parent = byId.get(source);
          if (parent) deepest = Math.max(deepest, depthOf(parent, seen));
        }
      }
      depth.set(node.id, deepest + 1);
      return deepest + 1;
    };
    const used = new Map();
    for (const node of copy) {
      const p = node.position;
      if (Array.isArray(p) && p.length === 2 && p.every((v) => typeof v === "number")) continue;
      const row = depthOf(node, new Set());
      const column = used.get(row) || 0;
      used.set(row, column + 1);
      node.position = [40 + column * (NODE_W + 50), 30 + row * ROW_H];
    }
    return copy;
  }

  function drawPalette() {
    palette.textContent = "";
    let group = null;
    for (const entry of state.catalog) {
      if (entry.group !== group) {
        group = entry.group;
        palette.append(el("div", { class: "ksg-group", role: "presentation" }, group));
      }
      const item = el(
        "button",
        {
          type: "button",
          class: "ksg-entry",
          role: "listitem",
          "data-block": entry.name,
          title: `${entry.description || entry.name} (drag onto the canvas, or press Enter)`,
        },
        entry.name
      );
      item.addEventListener("keydown", (event) => {
        if (event.key === "Enter" || event.key === " ") {
          event.preventDefault();
          addBlock(entry.name);
        }
      });
      item.addEventListener("pointerdown", (event) => dragFromPalette(event, entry.name));
      palette.append(item);
    }
  }

  // -- pointer gestures ---------------------------------------------------------------------

  function toCanvas(event) {
    const box = svg.getBoundingClientRect();
    return [event.clientX - box.left, event.clientY - box.top];
  }

  function overCanvas(event) {
    const box = stage.getBoundingClientRect();
    return (
      event.clientX >= box.left && event.clientX <= box.right &&
      event.clientY >= box.top && event.clientY <= box.bottom
    );
  }

  function follow(onMove, onUp) {
    const move = (event) => onMove(event);
    const up = (event) => {
      document.removeEventListener("pointermove", move);
      document.removeEventListener("pointerup", up);
      onUp(event);
    };
    document.addEventListener("pointermove", move);
    document.addEventListener("pointerup", up);
  }

  function dragFromPalette(event, layer) {
    if (event.button !== 0) return;
    event.preventDefault();
    if (refusedWhileFrozen()) return;
    const ghost = el("div", { class: "ksg-ghost" }, layer);
    ghost.style.left = `${event.clientX + 4}px`;
    ghost.style.top = `${event.clientY + 4}px`;
    document.body.append(ghost);
    follow(
      (move) => {
        ghost.style.left = `${move.clientX + 4}px`;
        ghost.style.top = `${move.clientY + 4}px`;
      },
      (up) => {
        ghost.remove();
        if (overCanvas(up)) {
          const [x, y] = toCanvas(up);
          addBlock(layer, [x - NODE_W / 2, y - NODE_H / 2]);
        }
      }
    );
  }

  svg.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    const out = event.target.closest(".ksg-out");
    const port = event.target.closest(".ksg-port");
    const nodeG = event.target.closest(".ksg-node");
    const edgeG = event.target.closest(".ksg-edge");
    if (out) return dragWire(event, out.getAttribute("data-node"));
    if (port && state.connectFrom) {
      event.preventDefault();
      const from = state.connectFrom;
      stopConnect();
      return connect(from, port.getAttribute("data-node"), port.getAttribute("data-port"));
    }
    if (port) return;
    if (edgeG) {
      state.selectedEdge = {
        source: edgeG.getAttribute("data-source"),
        target: edgeG.getAttribute("data-target"),
        port: edgeG.getAttribute("data-port"),
      };
      state.selected = null;
      draw();
      return;
    }
    if (nodeG) return dragNode(event, nodeG.getAttribute("data-id"));
    state.selected = null;
    state.selectedEdge = null;
    draw();
  });

  function dragNode(event, id) {
    event.preventDefault();
    if (refusedWhileFrozen()) return;
    const node = nodeById(id);
    const before = snapshot();
    const [sx, sy] = toCanvas(event);
    const [nx, ny] = position(node);
    state.selected = id;
    state.selectedEdge = null;
    draw();
    focusNode(id);
    let moved = false;
    follow(
      (move) => {
        const [mx, my] = toCanvas(move);
        if (!moved && Math.abs(mx - sx) + Math.abs(my - sy) < 3) return;
        moved = true;
        moveNode(id, nx + mx - sx, ny + my - sy);
        drawNodes();
        drawEdges();
      },
      () => {
        if (!moved || snapshot() === before) return;
        state.undo.push(before);
        state.redo = [];
        commit(`Moved ${id}.`);
        focusNode(id);
      }
    );
  }

  function dragWire(event, source) {
    event.preventDefault();
    if (refusedWhileFrozen()) return;
    const node = nodeById(source);
    const [x1, y1] = outPoint(node);
    follow(
      (move) => {
        const [x2, y2] = toCanvas(move);
        wire.setAttribute("d", `M${x1},${y1} L${x2},${y2}`);
      },
      (up) => {
        wire.setAttribute("d", "");
        const hit = document.elementFromPoint(up.clientX, up.clientY);
        const port = hit && hit.closest ? hit.closest(".ksg-port") : null;
        if (port) connect(source, port.getAttribute("data-node"), port.getAttribute("data-port"));
      }
    );
  }

  // -- the keyboard -------------------------------------------------------------------------

  root.addEventListener("focusin", (event) => {
    const nodeG = event.target.closest && event.target.closest(".ksg-node");
    if (nodeG && event.target === nodeG && state.selected !== nodeG.getAttribute("data-id")) {
      state.selected = nodeG.getAttribute("data-id");
      state.selectedEdge = null;
      nodeLayer.querySelectorAll(".ksg-node").forEach((g) => g.classList.toggle("ksg-selected", g === nodeG));
      drawPanel();
    }
    const edgeG = event.target.closest && event.target.closest(".ksg-edge");
    if (edgeG) {
      state.selectedEdge = {
        source: edgeG.getAttribute("data-source"),
        target: edgeG.getAttribute("data-target"),
        port: edgeG.getAttribute("data-port"),
      };
    }
  });

  root.addEventListener("keydown", (event) => {
    const target = event.target;
    const typing = target.matches && target.matches("input, select, textarea");
    const key = event.key;
    if ((event.ctrlKey || event.metaKey) && !typing && (key === "z" || key === "Z" || key === "y")) {
      event.preventDefault();
      if (key === "y" || event.shiftKey) redo();
      else undo();
      return;
    }
    if (typing) return;
    if (key === "Escape" && state.connectFrom) {
      stopConnect();
      say("Connecting cancelled.");
      focusNode(state.selected);
      return;
    }
    const port = target.closest && target.closest(".ksg-port");
    const out = target.closest && target.closest(".ksg-out");
    const nodeG = target.closest && target.closest(".ksg-node");
    const edgeG = target.closest && target.closest(".ksg-edge");
    if (port && (key === "Enter" || key === " ")) {
      event.preventDefault();
      if (!state.connectFrom) return say("Press C on a block first, then Enter on a port to connect.");
      const from = state.connectFrom;
      stopConnect();
      const to = port.getAttribute("data-node");
      connect(from, to, port.getAttribute("data-port"));
      return focusNode(to);
    }
    if (out && (key === "Enter" || key === " " || key === "c" || key === "C")) {
      event.preventDefault();
      return startConnect(out.getAttribute("data-node"));
    }
    if (key === "Delete" || key === "Backspace") {
      event.preventDefault();
      if (port) return disconnect(port.getAttribute("data-node"), port.getAttribute("data-port"));
      if (edgeG) {
        return disconnect(
          edgeG.getAttribute("data-target"),
          edgeG.getAttribute("data-port"),
          edgeG.getAttribute("data-source")
        );
      }
      if (nodeG) return removeNode(nodeG.getAttribute("data-id"));
      return;
    }
    if (!nodeG || target !== nodeG) return;
    const id = nodeG.getAttribute("data-id");
    if (key === "c" || key === "C") {
      event.preventDefault();
      return startConnect(id);
    }
    const steps = { ArrowLeft: [-1, 0], ArrowRight: [1, 0], ArrowUp: [0, -1], ArrowDown: [0, 1] };
    if (steps[key]) {
      event.preventDefault();
      const step = event.shiftKey ? 5 * GRID : GRID;
      const [x, y] = position(nodeById(id));
      edit(() => moveNode(id, x + steps[key][0] * step, y + steps[key][1] * step), `Moved ${id}.`);
      focusNode(id);
    }
  });

  // -- start ----------------------------------------------------------------------------------

  watch("value", () => receive(props.value));
  receive(props.value);
  draw();
})();
