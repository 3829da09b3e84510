import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { addGroup, collapsedView, followNodes, groupOf, parseRepeat, setGroup, ungroup } from "../src/logic/groups.js";

// tokens → embedding → block → norm → head, and a decoder-like `side` reading block and tokens.
const NODES = [
  { id: "tokens", layer: "Input" },
  { id: "embedding", layer: "Embedding", inputs: { x: "tokens" } },
  { id: "block", layer: "TransformerEncoderBlock", inputs: { x: "embedding" } },
  { id: "norm", layer: "LayerNormalization", inputs: { x: "block" } },
  { id: "head", layer: "Output", inputs: { x: "norm" } },
];
const ports = (node) => (node.layer === "Input" ? [] : ["x"]);

describe("groups", () => {
  it("groups blocks in the graph's order, under a fresh name", () => {
    const { groups, id } = addGroup([], NODES, ["norm", "block"]);
    assert.equal(id, "group");
    assert.deepEqual(groups, [{ id: "group", nodes: ["block", "norm"], repeat: 1, collapsed: false }]);
    assert.equal(addGroup(groups, NODES, ["embedding"]).id, "group_2");
  });

  it("takes blocks out of their old group, which goes when it is empty", () => {
    const first = addGroup([], NODES, ["block"]).groups;
    const { groups } = addGroup(first, NODES, ["block", "norm"]);
    assert.deepEqual(groups.map((g) => [g.id, g.nodes]), [["group_2", ["block", "norm"]]]);
    assert.equal(groupOf(groups, "norm").id, "group_2");
    assert.equal(groupOf(groups, "head"), null);
  });

  it("ungroups, sets a count or a fold, and follows deleted and renamed blocks", () => {
    const { groups } = addGroup([], NODES, ["block", "norm"]);
    assert.deepEqual(ungroup(groups, "group"), []);
    assert.equal(setGroup(groups, "group", { repeat: 4 })[0].repeat, 4);
    const fewer = NODES.filter((node) => node.id !== "norm");
    assert.deepEqual(followNodes(groups, fewer)[0].nodes, ["block"]);
    const renamed = NODES.map((node) => (node.id === "block" ? { ...node, id: "layer" } : node));
    assert.deepEqual(followNodes(groups, renamed, { block: "layer" })[0].nodes, ["layer", "norm"]);
    assert.deepEqual(followNodes(groups, NODES.slice(0, 2)), []);
  });

  it("reads a count from 1 to 64 and nothing else", () => {
    assert.equal(parseRepeat(" 6 "), 6);
    for (const bad of ["0", "65", "2.5", "-1", "x", ""]) assert.equal(parseRepeat(bad), null, bad);
  });

  it("shows a collapsed group by the ports wired into it and the member that leaves it", () => {
    const group = { id: "group", nodes: ["block", "norm"], repeat: 2, collapsed: true };
    assert.deepEqual(collapsedView(NODES, group, ports), { ports: ["block.x"], exit: "norm" });
    const alone = [{ id: "a", layer: "Dense" }, { id: "b", layer: "Dense", inputs: { x: "a" } }];
    assert.deepEqual(collapsedView(alone, { id: "g", nodes: ["a", "b"] }, ports), { ports: ["a.x"], exit: "b" });
  });
});
