// One undo history for every edit the canvas makes: a stack of graphs before each edit.
//
// The graph is the list of spec nodes (see graph.js); a snapshot is its JSON text, so that an
// edit which changes nothing (a block dragged back where it was) leaves no step to undo.

export const HISTORY_LIMIT = 200;

export class History {
  constructor(limit = HISTORY_LIMIT) {
    this.limit = limit;
    this.past = [];
    this.future = [];
  }

  /** Record `before` as the graph an edit changed; false (nothing kept) when it is `after`. */
  record(before, after) {
    const was = JSON.stringify(before);
    if (was === JSON.stringify(after)) return false;
    this.past.push(was);
    if (this.past.length > this.limit) this.past.shift();
    this.future = [];
    return true;
  }

  get canUndo() {
    return this.past.length > 0;
  }

  get canRedo() {
    return this.future.length > 0;
  }

  /** The graph before the last edit, given the one shown now; null when there is none. */
  undo(current) {
    if (!this.past.length) return null;
    this.future.push(JSON.stringify(current));
    return JSON.parse(this.past.pop());
  }

  /** The graph the last undo took back, given the one shown now; null when there is none. */
  redo(current) {
    if (!this.future.length) return null;
    this.past.push(JSON.stringify(current));
    return JSON.parse(this.future.pop());
  }
}
