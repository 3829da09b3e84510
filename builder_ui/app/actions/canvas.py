"""Build tab actions of the graph canvas: spec text <-> the canvas's graph JSON, and its report.

The spec's YAML text stays the one source of truth. The canvas (`builder_ui/app/canvas/`)
shows the `nodes` of a `model: {type: graph}` spec; an edit there sends its nodes back,
and `apply_graph` writes them into the text's `model:` section, leaving every other
section as it was; the caller checks the new text as for any other edit. A change of the
text (typed YAML, a preset, the form) redraws the canvas from `canvas_value(text)`.

The value the canvas gets is `{"nodes", "groups", "report", "source", "revision", "origin"}`:
`groups` is the spec's `model.groups` (`[{"id", "nodes", "repeat", "collapsed"}]`, empty
when none; see `builder_ui.builders.graph_groups`), the report is
`builder_ui.builders.graph_model.graph_report(...).to_json()` (shapes, edges, errors, params,
blocks, groups), `source` is the `fingerprint` of the text it was made from (a listener
of the text's changes that finds its text answered already sends nothing),
`revision` is the canvas edit the
report answers, and `origin` is `"canvas"` when the nodes and groups are the canvas's own
(only the report is new) or `"spec"` when they come from the text (the canvas adopts them).
The canvas sends `{"nodes", "groups", "revision"}` (`groups` may be left out). The block
catalog (`catalog()`) does not change while the app runs: the canvas gets it once, with its
script, not with every answer.
Nothing here raises for a bad spec or a bad graph: problems go into the report's
`errors`, under `"spec"` when they are outside the graph. No Gradio here.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from builder_ui import builders
from builder_ui.app.actions.build import Check, check, dump
from builder_ui.app.context import AppError
from builder_ui.app.uploads import MAX_UPLOAD_BYTES
from builder_ui.builders.graph_import import keras_file_as_nodes
from builder_ui.builders.graph_model import block_catalog, graph_report, preset_as_graph
from builder_ui.engine import slots
from builder_ui.specs import MAX_SPEC_BYTES, SpecError, parse_yaml

GRAPH_TYPE = "graph"
NODE_KEYS = ("id", "layer", "params", "inputs", "position")
GROUP_KEYS = ("id", "nodes", "repeat", "collapsed")
EMPTY_REPORT = {"shapes": {}, "edges": [], "errors": {}, "params": None, "groups": {}}

# The graph "New graph" starts from: the task's input through one recurrent layer to its head,
# with an embedding first when the task gives token ids. Laid out top to bottom, as the canvas
# draws a graph (`ROW` pixels a block).
ROW = 110
_TOKEN_START = [
    {"id": "tokens", "layer": "Input"},
    {
        "id": "embedding",
        "layer": "Embedding",
        "params": {"output_dim": 16},
        "inputs": {"x": "tokens"},
    },
    {"id": "encoder", "layer": "LSTM", "params": {"units": 16}, "inputs": {"x": "embedding"}},
    {"id": "head", "layer": "Output", "inputs": {"x": "encoder"}},
]
_NUMERIC_START = [
    {"id": "sequence", "layer": "Input"},
    {"id": "encoder", "layer": "LSTM", "params": {"units": 16}, "inputs": {"x": "sequence"}},
    {"id": "head", "layer": "Output", "inputs": {"x": "encoder"}},
]
# A translation task: the encoder's states for the attention, its final state to start from.
_TRANSLATION_START = [
    {"id": "source", "layer": "Input"},
    {
        "id": "embedding",
        "layer": "Embedding",
        "params": {"output_dim": 16, "mask_zero": True},
        "inputs": {"x": "source"},
    },
    {
        "id": "encoder",
        "layer": "GRU",
        "params": {"units": 32, "return_sequences": True},
        "inputs": {"x": "embedding"},
    },
    {
        "id": "decoder",
        "layer": "RecurrentDecoder",
        "params": {"cell": "gru", "units": 32, "attention": "bahdanau", "embedding_dim": 16},
        "inputs": {"memory": "encoder", "state": "encoder"},
    },
    {"id": "words", "layer": "Output", "inputs": {"x": "decoder"}},
]
# A pointer task: the encoder's states to point over, its final state (h, c) to start from.
_POINTER_START = [
    {"id": "sequence", "layer": "Input"},
    {
        "id": "encoder",
        "layer": "LSTM",
        "params": {"units": 32, "return_sequences": True},
        "inputs": {"x": "sequence"},
    },
    {
        "id": "decoder",
        "layer": "PointerDecoder",
        "params": {"units": 32, "cell": "lstm"},
        "inputs": {"memory": "encoder", "state": "encoder"},
    },
    {"id": "pointers", "layer": "Output", "inputs": {"x": "decoder"}},
]
# A captioning task: a small CNN's feature map, each cell a region the decoder attends over.
_CAPTION_START = [
    {"id": "images", "layer": "Input"},
    {
        "id": "conv",
        "layer": "Conv2D",
        "params": {"filters": 16, "kernel_size": 3, "padding": "same", "activation": "relu"},
        "inputs": {"x": "images"},
    },
    {"id": "pool", "layer": "MaxPooling2D", "params": {"pool_size": 2}, "inputs": {"x": "conv"}},
    {
        "id": "decoder",
        "layer": "CaptionDecoder",
        "params": {"units": 32, "embedding_dim": 16},
        "inputs": {"memory": "pool"},
    },
    {"id": "words", "layer": "Output", "inputs": {"x": "decoder"}},
]
_OTHER_START = [
    {"id": "inputs", "layer": "Input"},
    {"id": "head", "layer": "Output", "inputs": {"x": "inputs"}},
]


def _document(text: str) -> dict[str, Any] | None:
    """The parsed spec text, or None when it is not a YAML mapping."""
    if len((text or "").encode("utf-8")) > MAX_SPEC_BYTES:
        return None
    try:
        document = parse_yaml(text or "")
    except SpecError:
        return None
    return document if isinstance(document, dict) else None


def unreadable(text: str) -> bool:
    """Whether spec text is not a YAML mapping (a typo the editor shows): nothing to draw."""
    return _document(text) is None


def is_graph(text: str) -> bool:
    """Whether spec text has a `model: {type: graph}` section (the canvas then shows it)."""
    document = _document(text)
    model = document.get("model") if document else None
    return isinstance(model, Mapping) and model.get("type") == GRAPH_TYPE


def normalized_nodes(nodes: Any) -> list[dict[str, Any]]:
    """The nodes as the spec writes them: the contract's keys in order, empty ones left out.

    Anything that is not a list of mappings gives no nodes; values are kept as given (the
    spec's validation, not this, says what is wrong with them). A position is rounded to
    whole pixels.
    """
    if not isinstance(nodes, list):
        return []
    found = []
    for node in nodes:
        if not isinstance(node, Mapping):
            continue
        clean: dict[str, Any] = {}
        for key in NODE_KEYS:
            if key not in node or node[key] in (None, {}):
                continue
            clean[key] = copy.deepcopy(node[key])
        position = clean.get("position")
        if isinstance(position, list) and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in position
        ):
            clean["position"] = [round(v) for v in position]
        found.append(clean)
    return found


def graph_nodes(text: str) -> list[dict[str, Any]] | None:
    """The `model.nodes` of a graph spec's text; None when the text is not a graph spec."""
    if not is_graph(text):
        return None
    return normalized_nodes(_document(text)["model"].get("nodes"))


def normalized_groups(groups: Any) -> list[dict[str, Any]]:
    """The groups as the spec writes them: keys `id`, `nodes`, `repeat`, `collapsed` in that
    order, unknown and null ones left out; anything but a list of mappings gives none.

    Values are kept as given (the spec's validation, not this, says what is wrong with them).
    """
    if not isinstance(groups, list):
        return []
    return [
        {key: copy.deepcopy(group[key]) for key in GROUP_KEYS if group.get(key) is not None}
        for group in groups
        if isinstance(group, Mapping)
    ]


def graph_groups(text: str) -> list[dict[str, Any]] | None:
    """The `model.groups` of a graph spec's text (empty when none); None when the text is not
    a graph spec."""
    if not is_graph(text):
        return None
    return normalized_groups(_document(text)["model"].get("groups"))


@functools.cache
def training_gpu() -> bool:
    """Whether the runs this app queues train on a GPU (the kernel badges' device): its
    training slots, read without a framework (the web process hides its own GPUs)."""
    return slots.detect_slots() != ["CPU"]


def report(text: str) -> dict[str, Any]:
    """The graph report of spec text as JSON; never raises.

    Malformed YAML or a spec that is not a graph gives a report whose only error is
    under `"spec"`.
    """
    document = _document(text)
    if document is None:
        problems = check(text).problems
        message = "; ".join(f"{path}: {m}" if path else m for path, m in problems)
        return {**EMPTY_REPORT, "errors": {"spec": message or "the spec is not a YAML mapping"}}
    if not is_graph(text):
        return {**EMPTY_REPORT, "errors": {"spec": "the spec's model is not a graph"}}
    return graph_report(document, gpu=training_gpu()).to_json()


def canvas_value(
    text: str,
    *,
    revision: int = 0,
    nodes: list[dict[str, Any]] | None = None,
    groups: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """What the canvas shows for spec text: its nodes and groups, and their report.

    Args:
        text: The spec's YAML text.
        revision: The canvas edit this answers (the canvas drops an answer to an older one).
        nodes: The canvas's own nodes, when they are those of `text` (origin "canvas": the
            canvas keeps its nodes and takes the report); otherwise the text's nodes are
            sent (origin "spec"). Text that does not parse sends no nodes (origin
            "unreadable"): the canvas keeps the last good graph, read-only, and shows the
            error, so that no edit is made to a graph the spec no longer holds.
        groups: The canvas's own groups (None: it sent none, as no groups); origin "canvas"
            needs both its nodes and its groups to be those of `text`.
    """
    if unreadable(text):  # the canvas keeps its last good graph, read-only, with the error
        shown, shown_groups, origin = None, None, "unreadable"
    else:
        own, own_groups = graph_nodes(text), graph_groups(text)
        same = own == normalized_nodes(nodes) and own_groups == normalized_groups(groups or [])
        origin = "canvas" if nodes is not None and same else "spec"
        shown = own if own is not None else normalized_nodes(nodes)
        shown_groups = own_groups if own is not None else normalized_groups(groups)
    return {
        "nodes": shown,
        "groups": shown_groups,
        "report": report(text),
        "source": fingerprint(text),
        "revision": int(revision),
        "origin": origin,
    }


def fingerprint(text: str) -> str:
    """A short digest of spec text: which text a canvas value answers."""
    return hashlib.sha256((text or "").encode("utf-8")).hexdigest()[:16]


def answers(value: Any, text: str) -> bool:
    """Whether the canvas holds the answer for exactly this text already (`canvas_value`)."""
    return _value(value).get("source") == fingerprint(text)


def catalog() -> list[dict[str, Any]]:
    """The blocks the canvas offers (`block_catalog()`), sent once with its script."""
    return block_catalog()


def _value(value: Any) -> Mapping[str, Any]:
    """A canvas value (JSON text or a mapping) as a mapping; empty if it is neither."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return {}
    return value if isinstance(value, Mapping) else {}


def sent_nodes(value: Any) -> tuple[list[dict[str, Any]] | None, int]:
    """The `(nodes, revision)` a canvas value holds (JSON text or a mapping); nodes None if none."""
    value = _value(value)
    if not isinstance(value.get("nodes"), list):
        return None, 0
    revision = value.get("revision")
    return normalized_nodes(value["nodes"]), revision if isinstance(revision, int) else 0


def sent_groups(value: Any) -> list[dict[str, Any]] | None:
    """The groups a canvas value holds (JSON text or a mapping), normalized; None if it has
    no `groups` list (a canvas that sends only its nodes)."""
    value = _value(value)
    groups = value.get("groups")
    return normalized_groups(groups) if isinstance(groups, list) else None


def shows_graph(value: Any) -> bool:
    """Whether the canvas shows a graph: its nodes, or the last good one kept read-only while
    the YAML does not parse (`canvas_value`'s origin "unreadable")."""
    value = _value(value)
    return isinstance(value.get("nodes"), list) or value.get("origin") == "unreadable"


def apply_graph(text: str, value: Any) -> tuple[str, Check]:
    """Write the canvas's nodes (and groups) into the spec text's `model:` section and check
    the result.

    The task, train and every other section are kept as they are; so are the model's
    other keys when it is a graph already. A value with a `groups` list sets the model's
    `groups` (none written when it is empty); a value without one keeps the spec's.

    Raises:
        AppError: the YAML is malformed (fix it in the editor first), or the value holds no
            nodes.
    """
    nodes, _ = sent_nodes(value)
    if nodes is None:
        raise AppError("The canvas sent no graph (expected JSON with a list of nodes).")
    document = _document(text)
    if document is None:
        raise AppError("The YAML spec has an error; fix it in the editor first.")
    model = document.get("model")
    kept = dict(model) if isinstance(model, Mapping) and model.get("type") == GRAPH_TYPE else {}
    kept.pop("type", None)
    kept.pop("nodes", None)
    groups = sent_groups(value)
    if groups is not None:
        kept.pop("groups", None)
    document["model"] = {
        "type": GRAPH_TYPE,
        "nodes": nodes,
        **({"groups": groups} if groups else {}),
        **kept,
    }
    new_text = dump(document)
    return new_text, check(new_text)


def start_nodes(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A small working graph for the document's task: Input (→ Embedding) → LSTM → Output.

    An embedding comes first for a task of token ids; a translation task (target token
    sequences) gets a GRU encoder and a `RecurrentDecoder` with Bahdanau attention; a task of
    pointers an LSTM encoder and a `PointerDecoder`; a captioning task (images to token
    sequences) a convolution, a pooling and a `CaptionDecoder`; a task whose input kind is not
    known (or another image task) gets Input → Output, to build on.
    """
    task = document.get("task") if isinstance(document.get("task"), Mapping) else {}
    try:
        params = builders.params_model("task", task.get("type")).model_validate(task)
        kinds = builders.task_builder(task.get("type")).kinds(params)
    except Exception:  # any invalid task: the plain start, the checks name the problem
        kinds = None
    input_kind = kinds[0] if kinds else None
    start = {"tokens": _TOKEN_START, "numeric": _NUMERIC_START}.get(input_kind, _OTHER_START)
    if kinds and kinds[1] == "sequence" and input_kind == "tokens":
        start = _TRANSLATION_START
    elif kinds and kinds[1] == "sequence" and input_kind == "image":
        start = _CAPTION_START
    elif kinds and kinds[1] == "pointer":
        start = _POINTER_START
    return [
        {**copy.deepcopy(node), "position": [40, 30 + ROW * row]} for row, node in enumerate(start)
    ]


def new_graph(text: str) -> tuple[str, Check]:
    """Make the spec's model a new graph (`start_nodes`); the other sections are kept.

    Raises:
        AppError: the YAML is malformed.
    """
    document = _document(text)
    if document is None:
        raise AppError("The YAML spec has an error; fix it in the editor first.")
    return apply_graph(text, {"nodes": start_nodes(document)})


def open_as_graph(text: str) -> tuple[str, Check]:
    """Make the spec's plain-stack model the equivalent graph, layer for layer, on the canvas.

    A `sequence_classifier` or `sequence_regressor` (rnn or transformer encoder), a
    `vision_transformer`, a `seq2seq` (its decoder one `RecurrentDecoder` or
    `TransformerDecoder` block), a `pointer_network`, a `conv_lstm` or a `show_attend_tell`
    (its decoder one `CaptionDecoder` block) becomes the graph
    `builders.graph_model.preset_as_graph` gives (as `keras-seq graph` does): the
    same layers, names, parameter count and outputs, so a preset of the arc can be taken apart
    and rewired. The other sections are kept; the blocks get no positions (the canvas lays them
    out by depth).

    Raises:
        AppError: the YAML is malformed, the spec is invalid, or its model is not a plain
            stack (naming its type).
    """
    document = _document(text)
    if document is None:
        raise AppError("The YAML spec has an error; fix it in the editor first.")
    try:
        graph = preset_as_graph(document)
    except SpecError as error:
        raise AppError(f"This model cannot open as a graph: {error}") from None
    return apply_graph(text, {"nodes": graph["model"]["nodes"]})


def open_keras_file(
    text: str, path: str | None, max_bytes: int = MAX_UPLOAD_BYTES
) -> tuple[str, Check]:
    """Make the spec's model the graph a `.keras` file's functional model is, on the canvas.

    The file's layers become blocks (`builders.graph_import.keras_file_as_nodes`: loaded with
    `safe_mode=True`, its last layer, a Dense head, the Output); the spec's task, train and
    every other section are kept (`apply_graph`); the blocks get no positions (the canvas lays
    them out by depth). Only the architecture comes across: the graph trains from scratch.

    Args:
        text: The spec's YAML text.
        path: The uploaded `.keras` file.
        max_bytes: The largest file read (the app's upload limit, `--max-upload-mb`).

    Raises:
        AppError: the YAML is malformed, no file came, or the file cannot be a graph (naming
            the layer and its class: a `Lambda`, a shared layer, a subclassed model, ...).
    """
    if _document(text) is None:
        raise AppError("The YAML spec has an error; fix it in the editor first.")
    if not path:
        raise AppError("No file was uploaded.")
    try:
        nodes = keras_file_as_nodes(path, max_bytes=max_bytes)
    except SpecError as error:
        raise AppError(f"This file cannot open as a graph: {error}") from None
    return apply_graph(text, {"nodes": nodes})
