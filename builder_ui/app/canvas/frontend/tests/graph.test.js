import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  addNode,
  connect,
  connectionProblem,
  disconnect,
  edgesOf,
  freshId,
  idProblem,
  moveNodes,
  parseParam,
  removeNodes,
  renameNode,
  searchCatalog,
  setParam,
} from "../src/logic/graph.js";

const CATALOG = [
  { name: "Input", group: "Inputs and outputs", description: "The task's input.", ports: [], variadic: [] },
  { name: "Output", group: "Inputs and outputs", description: "The task's head.", ports: ["x"], variadic: [] },
  { name: "LSTM", group: "Recurrent", description: "Long short-term memory.", ports: ["x"], variadic: [] },
  { name: "Dense", group: "Layers", description: "A fully connected layer.", ports: ["x"], variadic: [] },
  { name: "Add", group: "Merge", description: "Sums its inputs.", ports: ["x"], variadic: ["x"] },
  { name: "RecurrentDecoder", group: "Decoders", description: "Attends over memory.", ports: ["memory", "state"], variadic: [] },
];

// Input → LSTM → Output
const CHAIN = [
  { id: "tokens", layer: "Input", position: [0, 0] },
  { id: "lstm", layer: "LSTM", params: { units: 8 }, inputs: { x: "tokens" }, position: [0, 100] },
  { id: "head", layer: "Output", inputs: { x: "lstm" }, position: [0, 200] },
];

describe("edges and ids", () => {
  it("lists every edge, a variadic port's sources one by one", () => {
    const nodes = [...CHAIN, { id: "sum", layer: "Add", inputs: { x: ["tokens", "lstm"] } }];
    assert.deepEqual(edgesOf(nodes), [
      { source: "tokens", target: "lstm", port: "x" },
      { source: "lstm", target: "head", port: "x" },
      { source: "tokens", target: "sum", port: "x" },
      { source: "lstm", target: "sum", port: "x" },
    ]);
  });

  it("names a new block in snake case, numbered past the ids taken", () => {
    assert.equal(freshId("RecurrentDecoder", CHAIN), "recurrent_decoder");
    assert.equal(freshId("LSTM", CHAIN), "lstm_2");
    assert.equal(freshId("LSTM", CHAIN, new Set(["lstm_2"])), "lstm_3");
  });

  it("refuses an id that is not a spec id, or one taken", () => {
    assert.match(idProblem(CHAIN, "lstm", "Bad-Id"), /not an id/);
    assert.match(idProblem(CHAIN, "lstm", "head"), /already a block head/);
    assert.equal(idProblem(CHAIN, "lstm", "encoder"), null);
  });
});

describe("edits leave their input as it was", () => {
  it("adds a block on the grid, with no inputs", () => {
    const before = JSON.stringify(CHAIN);
    const next = addNode(CHAIN, "Dense", [123, 47]);
    assert.deepEqual(next.at(-1), { id: "dense", layer: "Dense", params: {}, inputs: {}, position: [120, 50] });
    assert.equal(JSON.stringify(CHAIN), before);
  });

  it("replaces the source of a single port and appends to a variadic one", () => {
    let nodes = [...addNode(CHAIN, "Dense", [0, 0]), { id: "sum", layer: "Add", inputs: { x: ["lstm"] } }];
    nodes = connect(nodes, CATALOG, "dense", "head", "x");
    nodes = connect(nodes, CATALOG, "dense", "sum", "x");
    assert.equal(nodes.find((n) => n.id === "head").inputs.x, "dense");
    assert.deepEqual(nodes.find((n) => n.id === "sum").inputs.x, ["lstm", "dense"]);
  });

  it("disconnects one source of a variadic port and drops a port left empty", () => {
    const nodes = [...CHAIN, { id: "sum", layer: "Add", inputs: { x: ["tokens", "lstm"] } }];
    const once = disconnect(nodes, [{ source: "tokens", target: "sum", port: "x" }]);
    assert.deepEqual(once.find((n) => n.id === "sum").inputs, { x: ["lstm"] });
    const twice = disconnect(once, [{ source: "lstm", target: "sum", port: "x" }]);
    assert.deepEqual(twice.find((n) => n.id === "sum").inputs, {});
  });

  it("removes blocks and every edge from them", () => {
    const nodes = [...CHAIN, { id: "sum", layer: "Add", inputs: { x: ["tokens", "lstm"] } }];
    const next = removeNodes(nodes, ["lstm"]);
    assert.deepEqual(next.map((n) => n.id), ["tokens", "head", "sum"]);
    assert.deepEqual(next.find((n) => n.id === "head").inputs, {});
    assert.deepEqual(next.find((n) => n.id === "sum").inputs, { x: ["tokens"] });
  });

  it("renames a block and the edges from it", () => {
    const next = renameNode(CHAIN, "lstm", "encoder");
    assert.deepEqual(next.map((n) => n.id), ["tokens", "encoder", "head"]);
    assert.equal(next[2].inputs.x, "encoder");
  });

  it("sets a parameter, and takes it out for the default", () => {
    const set = setParam(CHAIN, "lstm", "dropout", 0.1);
    assert.deepEqual(set[1].params, { units: 8, dropout: 0.1 });
    assert.deepEqual(setParam(set, "lstm", "units", undefined)[1].params, { dropout: 0.1 });
    assert.deepEqual(CHAIN[1].params, { units: 8 });
  });

  it("moves blocks onto the grid", () => {
    assert.deepEqual(moveNodes(CHAIN, { lstm: [33, 118] })[1].position, [30, 120]);
  });
});

describe("which wires may be drawn, and why not", () => {
  const nodes = [...addNode(CHAIN, "Dense", [0, 0]), { id: "decoder", layer: "RecurrentDecoder", inputs: {} }];
  const cases = [
    ["lstm", "dense", "x", null],
    ["lstm", "decoder", "memory", null],
    ["dense", "dense", "x", /cannot feed itself/],
    ["head", "dense", "x", /head: nothing comes out/],
    ["lstm", "tokens", "x", /Input takes no input/],
    ["lstm", "decoder", "x", /no port x/],
    ["tokens", "lstm", "x", /feeds lstm.x already/],
    ["head", "lstm", "x", /head: nothing comes out/],
    ["lstm", "nowhere", "x", /no such block/],
  ];
  for (const [source, target, port, expected] of cases) {
    it(`${source} → ${target}.${port}`, () => {
      const problem = connectionProblem(nodes, CATALOG, source, target, port);
      if (expected === null) assert.equal(problem, null);
      else assert.match(problem, expected);
    });
  }

  it("refuses a wire that closes a loop", () => {
    const withDense = connect(nodes, CATALOG, "lstm", "dense", "x");
    assert.match(connectionProblem(withDense, CATALOG, "dense", "lstm", "x"), /lstm feeds dense: a loop/);
  });
});

describe("parameters as typed", () => {
  it("reads numbers, JSON and text, and empty as the default", () => {
    assert.equal(parseParam({ kind: "int" }, " 16 "), 16);
    assert.equal(parseParam({ kind: "float" }, "0.25"), 0.25);
    assert.deepEqual(parseParam({ kind: "str" }, '{"class_name": "Zeros", "config": {}}'), {
      class_name: "Zeros",
      config: {},
    });
    assert.equal(parseParam({ kind: "int" }, "1.5"), "1.5"); // kept: the report names it
    assert.equal(parseParam({ kind: "int" }, ""), undefined);
  });
});

describe("the palette's search", () => {
  it("finds blocks by name first, then by group and description", () => {
    assert.deepEqual(searchCatalog(CATALOG, "de").map((e) => e.name), ["Dense", "RecurrentDecoder"]);
    // Names that hold it first, then a description that does ("Sums its inputs.").
    assert.deepEqual(searchCatalog(CATALOG, "put").map((e) => e.name), ["Input", "Output", "Add"]);
    assert.deepEqual(searchCatalog(CATALOG, "dense").map((e) => e.name), ["Dense"]);
    assert.deepEqual(searchCatalog(CATALOG, "merge").map((e) => e.name), ["Add"]);
    assert.deepEqual(searchCatalog(CATALOG, "memory attends").map((e) => e.name), ["RecurrentDecoder"]);
    assert.equal(searchCatalog(CATALOG, "").length, CATALOG.length);
  });
});
