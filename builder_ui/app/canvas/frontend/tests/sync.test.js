import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { incoming, sameBlocks } from "../src/logic/sync.js";

const REPORT = { shapes: {}, edges: [], errors: {}, params: 10 };
const NODES = [{ id: "a", layer: "Input" }];

describe("answers from Python", () => {
  it("takes the report of the newest edit", () => {
    assert.deepEqual(incoming(3, { origin: "canvas", revision: 3, report: REPORT, nodes: NODES }), {
      kind: "report",
      report: REPORT,
    });
  });

  it("drops the report of an older edit: the newer one's is on its way", () => {
    assert.equal(incoming(4, { origin: "canvas", revision: 3, report: REPORT, nodes: NODES }).kind, "ignore");
  });

  it("adopts the YAML's graph, unless it answers an older edit", () => {
    const adopt = incoming(2, { origin: "spec", revision: 5, report: REPORT, nodes: NODES });
    assert.deepEqual(adopt, { kind: "adopt", nodes: NODES, groups: [], report: REPORT, revision: 5 });
    const groups = [{ id: "g", nodes: ["a"], repeat: 3, collapsed: false }];
    const grouped = incoming(2, { origin: "spec", revision: 5, report: REPORT, nodes: NODES, groups });
    assert.deepEqual(grouped.groups, groups);
    assert.equal(incoming(6, { origin: "spec", revision: 5, report: REPORT, nodes: NODES }).kind, "ignore");
  });

  it("freezes with the parse error while the YAML does not parse", () => {
    const value = { origin: "unreadable", revision: 0, nodes: null, report: { ...REPORT, errors: { spec: "line 3" } } };
    assert.deepEqual(incoming(9, value), { kind: "freeze", error: "line 3" });
  });

  it("ignores what is not a canvas value (its own edit echoed, nothing)", () => {
    assert.equal(incoming(1, { nodes: NODES, revision: 1 }).kind, "ignore");
    assert.equal(incoming(1, null).kind, "ignore");
    assert.equal(incoming(1, "text").kind, "ignore");
  });

  it("tells a new graph from the same blocks moved or rewired", () => {
    assert.equal(sameBlocks(NODES, [{ id: "a", layer: "Input", position: [1, 2] }]), true);
    assert.equal(sameBlocks(NODES, [...NODES, { id: "b", layer: "Output" }]), false);
  });
});
