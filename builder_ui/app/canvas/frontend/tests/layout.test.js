import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { NODE_SIZE, placed, tidyPositions } from "../src/logic/layout.js";

// source → embedding → encoder → decoder (memory and state from the encoder) → words
const SEQ2SEQ = [
  { id: "source", layer: "Input" },
  { id: "embedding", layer: "Embedding", inputs: { x: "source" } },
  { id: "encoder", layer: "GRU", inputs: { x: "embedding" } },
  { id: "side", layer: "Dense", inputs: { x: "embedding" } },
  { id: "decoder", layer: "RecurrentDecoder", inputs: { memory: "encoder", state: "side" } },
  { id: "words", layer: "Output", inputs: { x: "decoder" } },
];

function overlaps(a, b) {
  const [ax, ay] = a;
  const [bx, by] = b;
  return ax < bx + NODE_SIZE.width && bx < ax + NODE_SIZE.width && ay < by + NODE_SIZE.height && by < ay + NODE_SIZE.height;
}

describe("tidy", () => {
  const positions = tidyPositions(SEQ2SEQ);

  it("puts every block below the blocks that feed it", () => {
    for (const node of SEQ2SEQ) {
      for (const source of Object.values(node.inputs || {})) {
        assert.ok(positions[source][1] + NODE_SIZE.height <= positions[node.id][1], `${source} above ${node.id}`);
      }
    }
  });

  it("sets side branches side by side, and no block on another", () => {
    assert.equal(positions.encoder[1], positions.side[1]);
    const ids = Object.keys(positions);
    for (let i = 0; i < ids.length; i++) {
      for (let j = i + 1; j < ids.length; j++) {
        assert.ok(!overlaps(positions[ids[i]], positions[ids[j]]), `${ids[i]} and ${ids[j]} overlap`);
      }
    }
  });

  it("places on the grid", () => {
    for (const [x, y] of Object.values(positions)) {
      assert.equal(x % 10, 0);
      assert.equal(y % 10, 0);
    }
  });

  it("lays out only a graph with unplaced blocks, and keeps the placed ones where they are", () => {
    const all = SEQ2SEQ.map((node, i) => ({ ...node, position: [7 * i, 500 + i] }));
    assert.equal(placed(all), all);
    const some = all.map((node) => (node.id === "side" ? { ...node, position: undefined } : node));
    const result = placed(some);
    assert.deepEqual(result.find((n) => n.id === "encoder").position, [14, 502]);
    assert.ok(Array.isArray(result.find((n) => n.id === "side").position));
  });
});
