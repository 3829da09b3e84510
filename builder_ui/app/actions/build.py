"""Build tab actions: the spec text, its checks, presets, the form, the model summary, uploads.

The spec the user builds is YAML text: the single source of truth that the
form and the editor both show. A form edit is `apply_field(text, path,
value)` (new text, then `check`); an editor edit is `check(text)`; the form
is redrawn from `fields(text)`. No Gradio here.
"""

from __future__ import annotations

import html
import json
import math
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import keras
import yaml

from builder_ui import builders
from builder_ui.app import forms
from builder_ui.app.context import AppContext, AppError
from builder_ui.app.uploads import Upload, check_upload
from builder_ui.builders import (
    check_kinds,
    graph_model,
    load_task,
    memory,
    prepare,
    presets,
    validate_spec,
)
from builder_ui.results import model_view
from builder_ui.specs import MAX_SPEC_BYTES, ExperimentSpec, SpecError, parse_yaml


@dataclass
class Check:
    """The spec text checked: parsed, validated, model against task (no data made).

    Attributes:
        text: The YAML text checked.
        document: The parsed document (None when the YAML is malformed).
        spec: The validated spec, when there are no problems.
        problems: `(field path, message)` pairs; empty when valid.
        memory: What training it needs (`MemoryEstimate.describe`), when `check` was asked
            for the whole check and the builder gives an estimate; else "".
    """

    text: str
    document: dict[str, Any] | None
    spec: ExperimentSpec | None
    problems: list[tuple[str, str]] = field(default_factory=list)
    memory: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems

    def errors_by_field(self) -> dict[str, str]:
        """`{path: message}` (messages of one path joined), for errors beside the fields."""
        found: dict[str, str] = {}
        for path, message in self.problems:
            found[path] = f"{found[path]}; {message}" if path in found else message
        return found


def check(text: str, ctx: AppContext | None = None, *, whole: bool = False) -> Check:
    """Parse and validate spec text, and check the model against the task's kinds.

    A `graph` model is also walked symbolically (`builders.graph_model.graph_report`:
    the task's data is made once and kept, no weights are allocated), so that a
    block whose inputs do not fit makes the spec invalid here, not at queue time.

    With `whole`, what queueing checks too (`whole_check`): the task's data, the builder's
    checks on it, and the memory estimate against the budget. The Build tab's live check
    asks for it, so that "Valid spec" means the queue will take it.

    With the app's `ctx`, a data path outside its uploads and `--data-dir` folders is a
    problem too, at its field (`builder_ui.app.data_paths`); nothing is read.
    """

    text = text or ""
    if len(text.encode("utf-8")) > MAX_SPEC_BYTES:
        return Check(text, None, None, [("", f"the spec is larger than {MAX_SPEC_BYTES:,} bytes")])
    try:
        document = parse_yaml(text)
    except SpecError as error:
        return Check(text, None, None, list(error.problems))
    if not isinstance(document, dict):
        return Check(
            text,
            None,
            None,
            [("", "expected a mapping of spec fields (version, name, task, model, train)")],
        )
    try:
        spec = validate_spec(document)
        check_kinds(spec)
        if ctx is not None:
            ctx.data_paths.check(spec)
    except SpecError as error:
        return Check(text, document, None, list(error.problems))
    if spec.model.type == "graph":  # its shapes need the layers: the canvas's own check
        problems = _graph_problems(spec)
        if problems:
            return Check(text, document, None, problems)
    return whole_check(Check(text, document, spec)) if whole else Check(text, document, spec)


def whole_check(result: Check) -> Check:
    """`result` (a valid spec's check) with what queueing checks besides: `prepare` on the
    task's data, then the memory estimate against the budget (`memory.check_budget`).

    The data is made once per task and kept (`_live_task`, the last one), so an edit of the
    model checks in the time of a symbolic build; nothing is trained, no weight allocated.
    """
    try:
        prepared = prepare(result.spec, task=_live_task(result.spec))
        estimate = memory.check_budget(prepared.spec, prepared.builder, prepared.task)
    except SpecError as error:  # a BudgetError (an unreadable budget) too
        return Check(result.text, result.document, None, list(error.problems))
    needs = estimate.describe() if estimate is not None else ""
    return Check(result.text, result.document, result.spec, memory=needs)


# The last task the live check made: (its spec as JSON, its data).
_live: list[Any] = [None, None]
_live_lock = threading.Lock()


def _live_task(spec: ExperimentSpec) -> Any:
    """The task's data for the live check (`load_task`), kept while the task is unchanged."""
    key = json.dumps(spec.task.model_dump(mode="json"), sort_keys=True)
    with _live_lock:
        if _live[0] == key:
            return _live[1]
    task = load_task(spec)
    with _live_lock:
        _live[:] = [key, task]
    return task


def _graph_problems(spec: ExperimentSpec) -> list[tuple[str, str]]:
    """A graph's parameter and shape errors, in the layers' own words, at each node's path."""
    report = graph_model.graph_report(spec)
    index = {node.id: i for i, node in enumerate(spec.model.nodes)}
    return [
        (f"model.nodes[{index[key]}]" if key in index else "model", message)
        for key, message in report.errors.items()
    ]


def problems_markdown(problems: Sequence[tuple[str, str]], memory: str = "") -> str:
    """The problems as Markdown, one bullet per field path; a tick when there are none (with
    what training needs, when `memory` says)."""
    if not problems:
        needs = f" Training needs {memory}." if memory else ""
        return f"✓ **Valid spec.** Every field checks out; the model fits the task.{needs}"
    lines = [f"✗ **{len(problems)} problem{'s' if len(problems) > 1 else ''}:**"]
    for path, message in problems:
        where = f"`{path}`: " if path else ""
        lines.append(f"- {where}{html.escape(message, quote=False)}")
    return "\n".join(lines)


def dump(document: Mapping[str, Any]) -> str:
    """A spec document as the YAML the editor shows (the order of its fields kept)."""
    return yaml.safe_dump(dict(document), sort_keys=False, allow_unicode=True, width=100)


def presets_list() -> list[tuple[str, str]]:
    """`(label, key)` of every preset: the arc's stages, then plugin model types."""
    return [(preset.label, preset.key) for preset in presets.all_presets()]


def preset_text(key: str) -> str:
    """The YAML of a preset."""
    try:
        return dump(presets.spec(key))
    except KeyError as error:
        raise AppError(str(error.args[0])) from None


def preset_description(key: str) -> str:
    try:
        preset = presets.get(key)
    except KeyError:
        return ""
    return f"**{preset.label}** — {preset.description}"


def task_types() -> list[str]:

    return builders.task_types()


def model_types() -> list[tuple[str, str]]:
    """`(label, type)` of the registered model types, with their one-line description."""

    return [
        (f"{name} — {info['description']}" if info["description"] else name, name)
        for name, info in builders.describe_types().items()
    ]


def fields(text: str, result: Check | None = None) -> list[forms.FormField]:
    """The form's fields for spec text (none while the YAML is malformed); `result`, the text's
    `check` if the caller has made it already (its document is the same with any context)."""
    result = check(text) if result is None else result
    return forms.form_fields(result.document) if result.document is not None else []


def section_types(text: str) -> tuple[str | None, str | None]:
    """The `task.type` and `model.type` of spec text (None where missing or malformed)."""
    result = check(text)
    document = result.document or {}
    task = document.get("task") if isinstance(document.get("task"), Mapping) else {}
    model = document.get("model") if isinstance(document.get("model"), Mapping) else {}
    return task.get("type"), model.get("type")


def _document(text: str) -> dict[str, Any]:
    result = check(text)
    if result.document is None:
        raise AppError(
            "The YAML spec has an error; fix it in the editor first: "
            + "; ".join(f"{p}: {m}" if p else m for p, m in result.problems)
        )
    return result.document


def apply_field(text: str, path: str, value: Any) -> tuple[str, Check, bool]:
    """Set one form field in the spec text.

    Returns:
        `(new text, its check, whether the form's fields changed)`; the last
        is true after choosing another `type` or turning a block on or off.

    Raises:
        AppError: malformed YAML, or `path` is not a field of the spec.
    """
    document = _document(text)
    before = forms.structure(document)
    try:
        changed = forms.set_field(document, path, value)
    except forms.FieldError as error:
        raise AppError(str(error)) from None
    new_text = dump(changed)
    return new_text, check(new_text), forms.structure(changed) != before


def apply_type(text: str, section: str, type_name: str) -> tuple[str, Check]:
    """Choose the task or model type: that section becomes the type's defaults."""

    document = _document(text)
    known = builders.task_types() if section == "task" else builders.model_types()
    if type_name not in known:
        raise AppError(f"{section}.type: expected one of {', '.join(known)}, got {type_name!r}")
    if isinstance(document.get(section), Mapping) and document[section].get("type") == type_name:
        return text, check(text)
    new_text = dump(forms.set_type(document, section, type_name))
    return new_text, check(new_text)


def apply_task(text: str, task: Mapping[str, Any]) -> tuple[str, Check]:
    """Put a whole `task:` section (e.g. from an upload) into the spec text."""
    document = _document(text)
    document["task"] = dict(task)
    new_text = dump(document)
    return new_text, check(new_text)


# ---------------------------------------------------------------------------
# Build: model summary and uploads


@dataclass
class ModelSummary:
    """A spec's model, built (not trained): its layers, parameter count and diagram.

    Attributes:
        params: Parameters in total; trainable: the trainable ones.
        headline: One line of Markdown.
        headers, rows: The layer table (name, type, output shape, parameters, inputs).
        diagram: The layer graph as HTML.
        memory: The memory estimate of training it (`builder_ui.builders.memory`),
            one line, or "" when its builder gives none; the headline shows it too.
    """

    params: int
    trainable: int
    headline: str
    headers: list[str]
    rows: list[list[Any]]
    diagram: str
    memory: str = ""


def summarize(text: str, ctx: AppContext | None = None) -> ModelSummary:
    """Make the task's data, run every check, and build the model to describe it.

    With the app's `ctx`, its data paths are checked (`check`) before any data is read.

    Raises:
        SpecError: any problem, with its field path (the data and the builder's checks too).
    """
    result = check(text, ctx)
    if not result.ok:
        raise SpecError(result.problems)
    prepared = prepare(result.spec)
    spec = prepared.spec
    # Before the build: a model over the memory budget is refused before its weights exist.
    estimate = memory.check_budget(spec, prepared.builder, prepared.task)
    needs = f"training needs {estimate.describe()}" if estimate else "no memory estimate"
    model = prepared.builder.build(spec.model, prepared.task)
    if not model.built:
        model(keras.tree.map_structure(lambda array: array[:1], prepared.x_train))
    layers = model_view.describe(model)
    graph = model_view.is_graph(model)
    params = int(model.count_params())
    trainable = int(sum(math.prod(w.shape) for w in model.trainable_weights))
    task = prepared.task
    headline = (
        f"**{model.name}** ({type(model).__name__}): **{params:,} parameters** "
        f"({trainable:,} trainable) · {needs} · task `{task.name}`: "
        f"{prepared.num_train:,} training and "
        f"{prepared.num_val:,} validation examples · monitors `{prepared.monitor_metric}`"
    )
    return ModelSummary(
        params,
        trainable,
        headline,
        list(model_view.TABLE_HEADERS),
        model_view.table(layers),
        model_view.diagram_html(layers, graph=graph, title=f"{model.name}: layer graph"),
        needs,
    )


def upload(ctx: AppContext, path: str | os.PathLike | None, kind: str) -> Upload:
    """Check an uploaded data file and keep it for runs (see `builder_ui.app.uploads`)."""
    return check_upload(path, kind, ctx.uploads_root, ctx.max_upload_bytes)
