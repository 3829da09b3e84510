import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { load } from "js-yaml";

import { blocksIn, copyText, paste } from "../src/logic/clipboard.js";

const GRAPH = [
  { id: "tokens", layer: "Input", position: [0, 0] },
  { id: "embedding", layer: "Embedding", params: { output_dim: 8 }, inputs: { x: "tokens" }, position: [0, 100] },
  { id: "lstm", layer: "LSTM", params: { units: 8 }, inputs: { x: "embedding" }, position: [0, 200] },
  { id: "head", layer: "Output", inputs: { x: "lstm" }, position: [0, 300] },
];

describe("copy as YAML", () => {
  it("writes the chosen blocks as the spec's nodes list", () => {
    const text = copyText(GRAPH, ["embedding", "lstm"]);
    assert.deepEqual(load(text), [GRAPH[1], GRAPH[2]]);
    assert.match(text, /^- id: embedding\n/);
  });

  it("writes nothing when nothing is chosen", () => {
    assert.equal(copyText(GRAPH, []), "");
  });
});

describe("reading pasted text", () => {
  it("takes a nodes list, a `nodes:` mapping or a whole spec", () => {
    const list = "- id: d\n  layer: Dense\n";
    assert.deepEqual(blocksIn(list), [{ id: "d", layer: "Dense" }]);
    assert.deepEqual(blocksIn(`nodes:\n${list.replace(/^/gm, "  ")}`), [{ id: "d", layer: "Dense" }]);
    assert.deepEqual(blocksIn(`model:\n  type: graph\n  nodes:\n${list.replace(/^/gm, "    ")}`), [
      { id: "d", layer: "Dense" },
    ]);
  });

  it("refuses what is not blocks: prose, broken YAML, nodes without a layer, too much", () => {
    assert.equal(blocksIn("hello"), null);
    assert.equal(blocksIn("- id: [unclosed"), null);
    assert.equal(blocksIn("- id: d\n"), null);
    assert.equal(blocksIn(""), null);
    assert.equal(blocksIn(`- id: d\n  layer: Dense\n${" ".repeat(600 * 1024)}`), null);
  });
});

describe("paste", () => {
  it("gives copies fresh ids, rewires them among themselves and keeps links into the graph", () => {
    const blocks = blocksIn(copyText(GRAPH, ["embedding", "lstm"]));
    const { nodes, ids } = paste(GRAPH, blocks);
    assert.deepEqual(ids, ["embedding_2", "lstm_2"]);
    const [embedding, lstm] = nodes.slice(-2);
    assert.deepEqual(embedding.inputs, { x: "tokens" }); // tokens is in the graph: kept
    assert.deepEqual(lstm.inputs, { x: "embedding_2" }); // the copy feeds the copy
    assert.deepEqual(lstm.position, [40, 240]);
    assert.equal(nodes.length, GRAPH.length + 2);
  });

  it("numbers a taken id after the block's own name, not its layer's", () => {
    const { ids } = paste(GRAPH, [{ id: "encoder", layer: "LSTM" }, { id: "encoder", layer: "LSTM" }]);
    assert.deepEqual(ids, ["encoder", "encoder_2"]);
    assert.deepEqual(paste(GRAPH, [{ id: "lstm", layer: "GRU" }]).ids, ["lstm_2"]);
  });

  it("keeps free ids and drops links to blocks the graph does not have (another tab's)", () => {
    const blocks = [
      { id: "extra", layer: "Dense", params: { units: 4 }, inputs: { x: "elsewhere" }, position: [10, 10] },
    ];
    const { nodes, ids } = paste(GRAPH, blocks);
    assert.deepEqual(ids, ["extra"]);
    assert.deepEqual(nodes.at(-1).inputs, {});
  });
});
