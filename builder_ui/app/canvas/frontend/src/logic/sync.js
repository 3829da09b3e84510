// What the canvas does with a value from Python (the protocol of builder_ui/app/canvas).
//
// The canvas owns the nodes while the user edits: each edit bumps `revision` and sends
// {nodes, revision}. Python writes them into the YAML and answers with the report for that
// revision (origin "canvas"), or with the YAML's nodes when the YAML changed (origin "spec"),
// or with no nodes while the YAML does not parse (origin "unreadable": the canvas keeps the
// last good graph, read-only, and no edit can write over a spec Python could not read).
// Answers can be overtaken: one to an older edit is dropped, a newer edit's is on its way.

/**
 * What to do with `value`, given the canvas's `revision` (its newest edit):
 *   {kind: "ignore"}                      not a canvas value, or an answer to an older edit;
 *   {kind: "freeze", error}               the YAML does not parse;
 *   {kind: "adopt", nodes, groups, report, revision}  the YAML's own graph (it may be the
 *                                         canvas's); `groups` is [] when it has none;
 *   {kind: "report", report}              the report of the canvas's newest edit.
 */
export function incoming(revision, value) {
  if (!value || typeof value !== "object" || !value.report || typeof value.report !== "object") {
    return { kind: "ignore" };
  }
  const theirs = typeof value.revision === "number" ? value.revision : 0;
  if (value.origin === "unreadable") {
    const error = (value.report.errors || {}).spec || "the YAML does not parse";
    return { kind: "freeze", error };
  }
  if (value.origin === "spec") {
    if (theirs < revision) return { kind: "ignore" }; // the newer edit's own answer is on its way
    const nodes = Array.isArray(value.nodes) ? value.nodes : [];
    const groups = Array.isArray(value.groups) ? value.groups : [];
    return { kind: "adopt", nodes, groups, report: value.report, revision: Math.max(revision, theirs) };
  }
  if (theirs === revision) return { kind: "report", report: value.report };
  return { kind: "ignore" };
}

/** Whether two graphs hold the same blocks (ids), whatever their order: a new graph to fit. */
export function sameBlocks(a, b) {
  const ids = (nodes) => nodes.map((node) => node.id).sort().join("\n");
  return ids(a) === ids(b);
}
