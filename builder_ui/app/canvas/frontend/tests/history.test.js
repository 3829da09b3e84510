import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { History } from "../src/logic/history.js";

const A = [{ id: "a", layer: "Input" }];
const B = [...A, { id: "b", layer: "Output", inputs: { x: "a" } }];
const C = [...B, { id: "c", layer: "Dense" }];

describe("one undo history", () => {
  it("undoes and redoes edits in order", () => {
    const history = new History();
    history.record(A, B);
    history.record(B, C);
    assert.deepEqual(history.undo(C), B);
    assert.deepEqual(history.undo(B), A);
    assert.equal(history.undo(A), null);
    assert.deepEqual(history.redo(A), B);
    assert.deepEqual(history.redo(B), C);
    assert.equal(history.redo(C), null);
  });

  it("keeps no step for an edit that changed nothing", () => {
    const history = new History();
    assert.equal(history.record(A, JSON.parse(JSON.stringify(A))), false);
    assert.equal(history.canUndo, false);
  });

  it("forgets what was undone once a new edit is made", () => {
    const history = new History();
    history.record(A, B);
    history.undo(B);
    history.record(A, C);
    assert.equal(history.canRedo, false);
    assert.deepEqual(history.undo(C), A);
  });

  it("keeps at most its limit of steps, dropping the oldest", () => {
    const history = new History(2);
    history.record(A, B);
    history.record(B, C);
    history.record(C, A);
    assert.deepEqual(history.undo(A), C);
    assert.deepEqual(history.undo(C), B);
    assert.equal(history.undo(B), null);
  });

  it("holds copies: changing a graph after recording it changes no step", () => {
    const history = new History();
    const before = JSON.parse(JSON.stringify(A));
    history.record(before, B);
    before[0].id = "changed";
    assert.deepEqual(history.undo(B), A);
  });
});
