"""The Build tab: task, preset, a form and the YAML spec side by side, checks, model summary.

The spec being edited is YAML text, kept for each session on the server
(`gr.State`) and shown in the editor. The form beside it is drawn from that
text (`gr.render`), and drawn again when its fields change (another preset,
task or model type, a block switched on or off) or when the editor loses the
focus after an edit. Every form edit goes through `actions.apply_field`,
which rewrites the YAML and checks it; every editor keystroke is checked too.
Problems are listed under the editor, each with its field path, and shown
again under the field they concern. Edits of one session are applied one at
a time, in order, so quick typing in several fields loses nothing, and the
editor and its problems are drawn by one event from the newest spec
(`show_spec`), whatever order the page gets the edits' answers in.

A `model: {type: graph}` spec is also shown on a canvas (`builder_ui.app.canvas`,
started by "New graph", by "Open this model as a graph" for a plain stack, or by
"Open a .keras file as a graph" for a functional model saved by Keras):
a canvas edit rewrites the YAML's `model:` section
(`actions.canvas.apply_graph`) and is checked like any other edit; every change
of the spec redraws the canvas with its shapes and errors (`spec.change`), except
while a newer canvas edit is on its way (`canvas_synced` holds the last one written).

Nothing is lost unasked, and nothing stale is shown: the spec as last edited
is kept in the browser's local storage (`gr.BrowserState`) with the preset it
started from, and a reload restores it; picking another preset, "New graph"
or a .keras file over a graph, or leaving or reloading the page, while the spec differs from the
preset as loaded asks first (a `confirm()` and a `beforeunload` prompt:
`CONFIRM_PRESET_JS`, `CONFIRM_NEW_GRAPH_JS`, `CONFIRM_OPEN_KERAS_JS`, `LEAVE_GUARD_JS`,
`EDITED_JS`).
The model summary is cleared whenever the spec changes, since it describes the
spec it was built from.

Layout and wiring only: everything the tab does is in `builder_ui.app.actions`.
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass
from typing import Any

import gradio as gr

from builder_ui.app import actions, canvas, uploads
from builder_ui.app.actions import canvas as canvas_actions
from builder_ui.app.forms import NULL, FormField
from builder_ui.app.spec_editor import SpecEditor
from builder_ui.builders import presets
from builder_ui.results import model_view
from builder_ui.specs import SpecError

SECTION_TITLES = {"run": "Run", "task": "Task", "model": "Model", "train": "Training"}
FIELDS_PER_ROW = 3
STORAGE_KEY = "keras_seq_build_spec"  # the browser's local storage entry of the spec

# In the browser, whenever the editor's text changes and after a preset is loaded or restored:
# the text goes into the stored spec, and `window.ksSpecEdited` says whether it differs from the
# preset as loaded (`stored.base`). The editor drops the text's last newline, so trailing space
# is no edit.
EDITED_JS = """
(text, stored) => {
  window.ksSpecEdited = Boolean(
    stored && stored.base != null && (text || "").trimEnd() !== stored.base.trimEnd());
  return [stored ? {...stored, text: text} : stored];
}
"""
# The page asks before it is left or reloaded while the spec has edits (`window.ksSpecEdited`).
# Installed once, when the page loads.
LEAVE_GUARD_JS = """
(text, stored) => {
  window.ksSpecEdited = Boolean(
    stored && stored.base != null && (text || "").trimEnd() !== stored.base.trimEnd());
  if (!window.ksLeaveGuard) {
    window.ksLeaveGuard = true;
    window.addEventListener("beforeunload", (event) => {
      if (window.ksSpecEdited) { event.preventDefault(); event.returnValue = ""; }
    });
  }
}
"""
# Another preset replaces the spec: with edits, only once the user agrees. "No" sends null,
# and the handler then puts the dropdown back.
CONFIRM_PRESET_JS = """
(key, ...rest) => {
  if (window.ksSpecEdited &&
      !window.confirm("Load this preset? Your edits to the spec will be replaced.")) {
    return [null, ...rest];
  }
  return [key, ...rest];
}
"""

# "New graph" over a graph of the user's (the spec edited, its model a graph) replaces it only
# once the user agrees. The answer travels in a hidden checkbox (the spec is server-side state,
# which a script cannot withhold); the editor's text says whether the model is a graph.
CONFIRM_NEW_GRAPH_JS = """
(text, form, agreed, shown) => [
  text,
  form,
  !(window.ksSpecEdited && /^\\s+type:\\s*["']?graph["']?\\s*$/m.test(shown || "")) ||
    window.confirm("Start a new graph? The graph on the canvas will be replaced."),
  shown,
]
"""

# Opening a .keras file over a graph of the user's asks as "New graph" does; the file goes on.
CONFIRM_OPEN_KERAS_JS = """
(text, form, agreed, shown, file) => [
  text,
  form,
  !(window.ksSpecEdited && /^\\s+type:\\s*["']?graph["']?\\s*$/m.test(shown || "")) ||
    window.confirm("Open this file as the model? The graph on the canvas will be replaced."),
  shown,
  file,
]
"""


@dataclass
class BuildTab:
    """The components other tabs use."""

    code: gr.Code
    errors: gr.Markdown
    form_key: gr.State
    editor: SpecEditor


def _shown(value: Any) -> str:
    if value is None:
        return NULL
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value


def _field_component(field: FormField) -> gr.components.Component:
    common = {
        "label": field.label,
        "elem_id": field.elem_id,
        "info": field.description() or None,
        "interactive": True,
    }
    if field.kind in ("int", "float") and not field.optional:
        return gr.Number(value=_number(field.value), **common)
    if field.kind in ("int", "float"):  # a Number cannot show null: a textbox, empty for null
        return gr.Textbox(
            value="" if field.value is None else str(field.value), placeholder=NULL, **common
        )
    if field.kind in ("bool", "toggle"):
        return gr.Checkbox(value=bool(field.value), **common)
    if field.kind == "choice":
        choices = [_shown(choice) for choice in field.choices]
        return gr.Dropdown(
            choices=choices, value=_shown(field.value), allow_custom_value=True, **common
        )
    return gr.Textbox(value="" if field.value is None else str(field.value), **common)


def _types(text: str) -> tuple[Any, Any]:
    task_type, model_type = actions.section_types(text)
    return (
        gr.update(value=task_type) if task_type else gr.skip(),
        gr.update(value=model_type) if model_type else gr.skip(),
    )


def _type_errors(result: actions.Check) -> tuple[str, str]:
    errors = result.errors_by_field()
    return (
        f"⚠ {errors['task.type']}" if "task.type" in errors else "",
        f"⚠ {errors['model.type']}" if "model.type" in errors else "",
    )


def build_tab(ctx: actions.AppContext, root: gr.Blocks) -> BuildTab:
    """Lay out the Build tab and wire its events."""
    initial = actions.preset_text(presets.DEFAULT_PRESET)
    initial_check = actions.check(initial, ctx, whole=True)
    initial_task, initial_model = actions.section_types(initial)
    form_key = gr.State(0)
    spec = gr.State(initial)
    upload_task = gr.State(None)
    # The preset last loaded and its text as loaded: the spec's edits are what differs.
    loaded = gr.State({"preset": presets.DEFAULT_PRESET, "text": initial})
    # The spec as last edited (`text`), with `loaded` (`preset`, `base`), kept across reloads
    # in the browser's local storage.
    stored = gr.BrowserState({"text": None, "base": None, "preset": None}, storage_key=STORAGE_KEY)
    # The revision of the last canvas edit written into the spec (see `on_spec_for_canvas`).
    canvas_synced = gr.State(0)
    initial_graph = canvas_actions.is_graph(initial)

    with gr.Row(equal_height=False):
        with gr.Column(scale=3):
            with gr.Row():
                preset = gr.Dropdown(
                    choices=actions.presets_list(),
                    value=presets.DEFAULT_PRESET,
                    label="Preset: a stage of the arc (or a plugin's model)",
                    elem_id="preset",
                    scale=2,
                )
                task_type = gr.Dropdown(
                    choices=actions.task_types(),
                    value=initial_task,
                    label="Task",
                    elem_id="task-type",
                )
                model_type = gr.Dropdown(
                    choices=actions.model_types(),
                    value=initial_model,
                    label="Model type",
                    elem_id="model-type",
                )
            preset_info = gr.Markdown(
                actions.preset_description(presets.DEFAULT_PRESET), elem_id="preset-info"
            )
            with gr.Row():
                task_error = gr.Markdown(
                    _type_errors(initial_check)[0],
                    elem_id="error-task-type",
                    elem_classes="ks-error",
                )
                model_error = gr.Markdown(
                    _type_errors(initial_check)[1],
                    elem_id="error-model-type",
                    elem_classes="ks-error",
                )
            with gr.Accordion("Use your own data file", open=False, elem_id="upload-panel"):
                upload_kind = gr.Radio(
                    choices=[(label, key) for key, label in uploads.KINDS.items()],
                    value="labelled_sequences",
                    label="What the file holds",
                    elem_id="upload-kind",
                )
                upload_file = gr.File(
                    label=f"CSV, TSV or text file, UTF-8, at most "
                    f"{uploads.MAX_UPLOAD_BYTES // 2**20} MB",
                    file_types=list(uploads.SUFFIXES),
                    type="filepath",
                    elem_id="upload-file",
                )
                upload_status = gr.Markdown(elem_id="upload-status")
                upload_preview = gr.Dataframe(
                    label="Preview (first rows)",
                    interactive=False,
                    visible=False,
                    elem_id="upload-preview",
                    wrap=True,
                )
                use_upload = gr.Button(
                    "Use this file as the task", elem_id="use-upload", interactive=False
                )
            with gr.Row():
                new_graph = gr.Button(
                    "New graph: assemble the model on a canvas",
                    elem_id="new-graph",
                    size="sm",
                )
                new_graph_agreed = gr.Checkbox(value=True, visible=False)  # CONFIRM_NEW_GRAPH_JS
                # A plain stack (a preset of the arc) as the same layers, to rewire.
                open_graph = gr.Button(
                    "Open this model as a graph", elem_id="open-as-graph", size="sm"
                )
                # A functional model saved by Keras, its layers as blocks (its weights stay).
                open_keras = gr.UploadButton(
                    "Open a .keras file as a graph",
                    file_types=[".keras"],
                    file_count="single",
                    type="filepath",
                    elem_id="open-keras",
                    size="sm",
                )
            with gr.Column(visible=initial_graph, elem_id="graph-panel") as graph_panel:
                graph = gr.HTML(
                    canvas_actions.canvas_value(initial) if initial_graph else None,
                    elem_id="graph-canvas",
                    **canvas.html_kwargs(canvas_actions.catalog()),
                )
            form_area = gr.Column(elem_id="spec-form")
        with gr.Column(scale=2):
            code = gr.Code(
                value=initial,
                language="yaml",
                # The editor keeps Tab for indenting: Escape, then Tab, moves on (CodeMirror's way).
                label="Spec (YAML): edit here or in the form. Tab indents; Esc then Tab leaves",
                interactive=True,
                lines=24,
                elem_id="spec-yaml",
            )
            errors = gr.Markdown(
                actions.problems_markdown(initial_check.problems, initial_check.memory),
                elem_id="spec-errors",
            )
    with gr.Row():
        summarize = gr.Button(
            "Build the model: summary and layer graph", elem_id="summarize-button"
        )
    summary_headline = gr.Markdown(elem_id="summary-headline")
    with gr.Row(equal_height=False):
        summary_table = gr.Dataframe(
            headers=list(model_view.TABLE_HEADERS),
            label="Layers",
            interactive=False,
            elem_id="summary-table",
            wrap=True,
            scale=3,
        )
        diagram = gr.HTML(elem_id="model-diagram", min_height=100)

    # Hidden controls that give the form an API endpoint (`/set_field`) for scripts.
    with gr.Row(visible=False):
        api_path = gr.Textbox(label="field path", elem_id="api-field-path")
        api_value = gr.Textbox(label="field value", elem_id="api-field-value")
        api_set = gr.Button("set field", elem_id="api-set-field")
        api_preset_key = gr.Textbox(label="preset", elem_id="api-preset-key")
        api_preset = gr.Button("load preset", elem_id="api-load-preset")

    # The spec being edited, kept on the server for this session: events that change it
    # read it when they run (not when they were sent), one at a time, so fast edits in
    # several fields never overwrite one another.
    serial = {"concurrency_id": "spec_edit", "concurrency_limit": 1}
    # What the editor and the problem lines show is written by the page's events as one value
    # (`shown`: the text, its problems) and drawn by one event (`show_spec`), which reads the
    # newest when it runs, one run at a time: Gradio's page applies the results of different
    # events in no fixed order, and with each edit writing the editor itself a quick second
    # edit was now and then shown under the first's text (which the Train tab then queued).
    shown = gr.State(None)
    spec_outputs = [spec, shown]
    # Scripts (`/set_field`, `/load_preset`) get the text and its problems back instead.
    api_outputs = [spec, code, errors, task_error, model_error]
    draws = itertools.count(1)  # each value of `shown` differs, so each one is drawn

    def problems(result: actions.Check) -> dict[str, str]:
        task_problem, model_problem = _type_errors(result)
        shown = actions.problems_markdown(result.problems, result.memory)
        return {"problems": shown, "task": task_problem, "model": model_problem}

    def checked(text: str, result: actions.Check) -> dict[str, str]:
        """The spec's text and problems after an edit, checked whole (`actions.whole_check`):
        "Valid spec" means the queue takes it, and says what training needs."""
        if result.ok and not result.memory:
            result = actions.whole_check(result)
        return {"text": text, **problems(result)}

    def spec_updates(text: str, result: actions.Check) -> list[Any]:
        return [text, {**checked(text, result), "draw": next(draws)}]

    def api_updates(text: str, result: actions.Check) -> list[Any]:
        view = checked(text, result)
        return [text, text, view["problems"], view["task"], view["model"]]

    def refused(error: Exception, extra: int) -> list[Any]:
        return [gr.skip(), {"problems": f"✗ {error}", "draw": next(draws)}] + [gr.skip()] * extra

    def api_refused(error: Exception, extra: int) -> list[Any]:
        return [gr.skip(), gr.skip(), f"✗ {error}", gr.skip(), gr.skip()] + [gr.skip()] * extra

    def show_spec(view: dict[str, str] | None) -> list[Any]:
        if view is None:
            return [gr.skip()] * 4
        return [view.get(key, gr.skip()) for key in ("text", "problems", "task", "model")]

    shown.change(
        show_spec,
        inputs=[shown],
        outputs=[code, errors, task_error, model_error],
        api_name="show_spec",
        api_visibility="undocumented",
        show_progress="hidden",
        trigger_mode="always_last",
    )

    # -- the form -------------------------------------------------------------------------

    # Whenever the form key moves on (loading the page does too: `on_load`), the form to draw
    # is made here, in a worker thread: its fields and each field's problem, as plain data
    # (Gradio compares a state's values by their contents), with the key, so that every move
    # draws the form again.
    form_view = gr.State(None)

    def on_form_key(text: str, key: int) -> dict[str, Any]:
        result = actions.check(text, ctx)
        fields = [asdict(field) for field in actions.fields(text, result)]
        return {"key": key, "fields": fields, "problems": result.errors_by_field()}

    form_key.change(
        on_form_key,
        inputs=[spec, form_key],
        outputs=[form_view],
        api_name="form_view",
        api_visibility="undocumented",
        show_progress="hidden",
        trigger_mode="always_last",
    )

    with form_area:
        # Lays out the fields it is given, and nothing more: it runs in the server's event
        # loop (`page._renders_on_the_event_loop`), which it holds while it runs.
        @gr.render(inputs=[form_view], triggers=[form_view.change])
        def draw_form(view: dict[str, Any] | None) -> None:
            if view is None:  # the page is loading: `on_load` moves the key on
                return
            fields = [FormField(**item) for item in view["fields"]]
            field_errors = view["problems"]
            if not fields:
                gr.Markdown(
                    "_Fix the YAML (see the problems beside it) to edit the spec in a form._",
                    elem_id="form-unavailable",
                )
                return
            components, error_boxes = [], []
            for section in SECTION_TITLES:
                in_section = [f for f in fields if f.section == section]
                if not in_section:
                    continue
                gr.Markdown(f"#### {SECTION_TITLES[section]}")
                for start in range(0, len(in_section), FIELDS_PER_ROW):
                    with gr.Row(equal_height=False):
                        for field in in_section[start : start + FIELDS_PER_ROW]:
                            with gr.Column(min_width=180):
                                components.append((field, _field_component(field)))
                                error_boxes.append(
                                    gr.Markdown(
                                        _error_line(field_errors.get(field.path)),
                                        elem_id=f"error-{field.elem_id.removeprefix('field-')}",
                                        elem_classes="ks-error",
                                    )
                                )
            paths = [field.path for field, _ in components]

            for field, component in components:

                def on_edit(text: str, value: Any, key: int, _path: str = field.path) -> list:
                    try:
                        new_text, checked, redraw = actions.apply_field(text, _path, value)
                    except actions.REFUSED as error:
                        return refused(error, 1 + len(paths))
                    by_field = checked.errors_by_field()
                    return [
                        *spec_updates(new_text, checked),
                        key + 1 if redraw else key,
                        *[_error_line(by_field.get(path)) for path in paths],
                    ]

                component.input(
                    on_edit,
                    inputs=[spec, component, form_key],
                    outputs=[*spec_outputs, form_key, *error_boxes],
                    api_name=f"form_{field.elem_id.removeprefix('field-').replace('-', '_')}",
                    show_progress="hidden",
                    trigger_mode="always_last",
                    **serial,
                )

    # -- spec text, presets, types ----------------------------------------------------------

    def on_code_input(text: str) -> list:
        """The editor's text checked; the editor itself is left alone (the user types in it)."""
        view = problems(actions.check(text, ctx, whole=True))
        return [text, {**view, "draw": next(draws)}]

    code.input(
        on_code_input,
        inputs=[code],
        outputs=spec_outputs,
        api_name="check_spec",
        show_progress="hidden",
        trigger_mode="always_last",
        **serial,
    )

    def on_code_blur(text: str, key: int) -> list:
        return [key + 1, *_types(text)]

    code.blur(
        on_code_blur,
        inputs=[spec, form_key],
        outputs=[form_key, task_type, model_type],
        api_name="sync_form",
        show_progress="hidden",
        **serial,
    )

    preset_outputs = [
        *[*spec_outputs, form_key, preset_info, task_type, model_type],
        *[preset, loaded, stored],
    ]

    def on_preset(key: str | None, form: int, began: dict) -> list:
        if key is None:  # the user kept the edits: the dropdown shows the preset they began from
            kept = [gr.update(value=began["preset"]), gr.skip(), gr.skip()]
            return [gr.skip()] * (len(spec_outputs) + 4) + kept
        try:
            text = actions.preset_text(key)
        except actions.REFUSED as error:
            return refused(error, 7)
        return [
            *spec_updates(text, actions.check(text, ctx)),
            form + 1,
            actions.preset_description(key),
            *_types(text),
            gr.skip(),
            {"preset": key, "text": text},
            {"text": text, "base": text, "preset": key},
        ]

    # `select`, not `input`: the dropdown reports an input again when the confirm() takes its
    # focus, which would ask twice.
    preset.select(
        on_preset,
        inputs=[preset, form_key, loaded],
        outputs=preset_outputs,
        api_name="choose_preset",
        js=CONFIRM_PRESET_JS,
        **serial,
    ).then(None, inputs=[code, stored], outputs=[stored], js=EDITED_JS, api_name="preset_edited")

    # -- the spec across reloads, and the summary that no longer matches it ----------------

    def on_load(saved: Any, form: int) -> list:
        """Restore the spec this browser kept (if any), and draw the form."""
        text = saved.get("text") if isinstance(saved, dict) else None
        if not isinstance(text, str):
            began = {"text": initial, "base": initial, "preset": presets.DEFAULT_PRESET}
            return [gr.skip()] * len(spec_outputs) + [form + 1] + [gr.skip()] * 5 + [began]
        key = saved.get("preset")
        key = key if key in {k for _, k in actions.presets_list()} else None
        base = saved.get("base") if isinstance(saved.get("base"), str) else text
        return [
            *spec_updates(text, actions.check(text, ctx)),
            form + 1,
            actions.preset_description(key) if key else gr.skip(),
            *_types(text),
            gr.update(value=key) if key else gr.skip(),
            {"preset": key, "text": base},
            {"text": text, "base": base, "preset": key},
        ]

    root.load(
        on_load, inputs=[stored, form_key], outputs=preset_outputs, api_name="restore_spec"
    ).then(None, inputs=[code, stored], js=LEAVE_GUARD_JS, api_name="guard_edits")

    # Kept in the browser as the editor's text changes, with no round trip to the server: a
    # reload right after an edit finds it stored.
    code.change(
        None, inputs=[code, stored], outputs=[stored], js=EDITED_JS, api_name="remember_spec"
    )

    def on_type(section: str):
        def change(text: str, type_name: str, form: int) -> list:
            try:
                new_text, result = actions.apply_type(text, section, type_name)
            except actions.REFUSED as error:
                return refused(error, 1)
            return [*spec_updates(new_text, result), form + 1]

        return change

    task_type.input(
        on_type("task"),
        inputs=[spec, task_type, form_key],
        outputs=[*spec_outputs, form_key],
        api_name="set_task_type",
        **serial,
    )
    model_type.input(
        on_type("model"),
        inputs=[spec, model_type, form_key],
        outputs=[*spec_outputs, form_key],
        api_name="set_model_type",
        **serial,
    )

    def on_api_set(text: str, path: str, value: str, form: int) -> list:
        try:
            new_text, result, _ = actions.apply_field(text, path, value)
        except actions.REFUSED as error:
            return api_refused(error, 1)
        return [*api_updates(new_text, result), form + 1]

    # For scripts: the spec text is given, so that a client can hold it between calls.
    api_set.click(
        on_api_set,
        inputs=[code, api_path, api_value, form_key],
        outputs=[*api_outputs, form_key],
        api_name="set_field",
        **serial,
    )

    def on_api_preset(key: str, form: int) -> list:
        try:
            text = actions.preset_text(key)
        except actions.REFUSED as error:
            return api_refused(error, 1)
        return [*api_updates(text, actions.check(text, ctx)), form + 1]

    api_preset.click(
        on_api_preset,
        inputs=[api_preset_key, form_key],
        outputs=[*api_outputs, form_key],
        api_name="load_preset",
        **serial,
    )

    # -- uploads ----------------------------------------------------------------------------

    def on_upload(path: str | None, kind: str) -> list:
        if not path:
            return ["", gr.update(visible=False, value=None), gr.update(interactive=False), None]
        checked = actions.upload(ctx, path, kind)
        if not checked.ok:
            return [
                f"✗ {checked.message}",
                gr.update(visible=False, value=None),
                gr.update(interactive=False),
                None,
            ]
        preview = {"headers": checked.headers, "data": checked.rows}
        return [
            f"✓ {checked.message}",
            gr.update(visible=True, value=preview),
            gr.update(interactive=True),
            checked.task,
        ]

    upload_outputs = [upload_status, upload_preview, use_upload, upload_task]
    upload_file.upload(
        on_upload, inputs=[upload_file, upload_kind], outputs=upload_outputs, api_name="upload"
    )
    upload_kind.input(
        on_upload,
        inputs=[upload_file, upload_kind],
        outputs=upload_outputs,
        api_name="upload_kind",
    )
    upload_file.clear(
        lambda: ["", gr.update(visible=False, value=None), gr.update(interactive=False), None],
        outputs=upload_outputs,
        api_name="clear_upload",
    )

    def on_use_upload(text: str, task: dict | None, form: int) -> list:
        try:
            if not task:
                raise actions.AppError("Upload a file first.")
            new_text, result = actions.apply_task(text, task)
        except actions.REFUSED as error:
            return refused(error, 2)
        return [*spec_updates(new_text, result), form + 1, gr.update(value=task["type"])]

    use_upload.click(
        on_use_upload,
        inputs=[spec, upload_task, form_key],
        outputs=[*spec_outputs, form_key, task_type],
        api_name="use_upload",
        **serial,
    )

    # -- the graph canvas -------------------------------------------------------------------

    def on_canvas_edit(text: str, value: Any) -> list:
        """A canvas edit: its nodes go into the spec's `model:`, and its report comes back."""
        try:
            new_text, result = canvas_actions.apply_graph(text, value)
        except actions.REFUSED as error:
            return refused(error, 2)
        nodes, revision = canvas_actions.sent_nodes(value)
        groups = canvas_actions.sent_groups(value)
        # The canvas gets the new spec's report from here, at once; the spec's change then
        # finds it answered (`on_spec_for_canvas`).
        answer = canvas_actions.canvas_value(
            new_text, revision=revision, nodes=nodes, groups=groups
        )
        return [*spec_updates(new_text, result), revision, answer]

    getattr(graph, canvas.EDIT_EVENT)(
        on_canvas_edit,
        inputs=[spec, graph],
        outputs=[*spec_outputs, canvas_synced, graph],
        api_name="canvas_edit",
        show_progress="hidden",
        trigger_mode="always_last",
        **serial,
    )

    def on_spec_for_canvas(text: str, value: Any, synced: int) -> list:
        """Show the canvas for a graph spec, and redraw it from the spec that changed.

        While a newer canvas edit than the one this spec holds is on its way, the canvas
        keeps its nodes (that edit's own change redraws it). While the YAML does not parse,
        a canvas that shows a graph keeps it, read-only, with the parse error.
        """
        if canvas_actions.answers(value, text):  # a canvas edit's handler answered it
            return [gr.skip(), gr.skip()]
        nodes, revision = canvas_actions.sent_nodes(value)
        groups = canvas_actions.sent_groups(value)
        if canvas_actions.unreadable(text) and canvas_actions.shows_graph(value):
            answer = canvas_actions.canvas_value(text, revision=max(revision, synced))
            return [gr.update(), answer]
        if not canvas_actions.is_graph(text):
            return [gr.update(visible=False), gr.skip()]
        pending = nodes != canvas_actions.graph_nodes(text) or (
            groups is not None and groups != canvas_actions.graph_groups(text)
        )
        if nodes is not None and revision > synced and pending:
            return [gr.update(visible=True), gr.skip()]
        # The canvas's value may be older than the last edit written (read when this was
        # sent): the answer is stamped with that edit, and a canvas that has a newer one drops it.
        revision = max(revision, synced)
        return [
            gr.update(visible=True),
            canvas_actions.canvas_value(text, revision=revision, nodes=nodes, groups=groups),
        ]

    spec.change(
        on_spec_for_canvas,
        inputs=[spec, graph, canvas_synced],
        outputs=[graph_panel, graph],
        api_name="spec_to_canvas",
        show_progress="hidden",
        **serial,
    )

    def to_graph(make):
        """A button's handler: the spec's model made a graph by `make(text)`, the form redrawn."""

        def handler(text: str, form: int, agreed: bool = True, shown: str = "") -> list:
            if not agreed:  # "New graph" over edits, and the user said no
                return [gr.skip()] * (len(spec_outputs) + 2)
            try:
                new_text, result = make(text)
            except actions.REFUSED as error:
                return refused(error, 2)
            model = gr.update(value=canvas_actions.GRAPH_TYPE)
            return [*spec_updates(new_text, result), form + 1, model]

        return handler

    new_graph.click(
        to_graph(canvas_actions.new_graph),
        inputs=[spec, form_key, new_graph_agreed, code],
        outputs=[*spec_outputs, form_key, model_type],
        api_name="new_graph",
        js=CONFIRM_NEW_GRAPH_JS,
        **serial,
    )
    open_graph.click(  # the same model as a graph: nothing to lose
        to_graph(canvas_actions.open_as_graph),
        inputs=[spec, form_key],
        outputs=[*spec_outputs, form_key, model_type],
        api_name="open_as_graph",
        **serial,
    )

    def on_open_keras(
        text: str, form: int, agreed: bool = True, shown: str = "", path: str | None = None
    ) -> list:
        """A `.keras` file chosen: its model as the spec's graph (`open_keras_file`)."""
        if not path:
            return [gr.skip()] * (len(spec_outputs) + 2)
        return to_graph(
            lambda current: canvas_actions.open_keras_file(current, path, ctx.max_upload_bytes)
        )(text, form, agreed, shown)

    open_keras.upload(  # replaces the model: asks first over a graph of one's own, as New graph
        on_open_keras,
        inputs=[spec, form_key, new_graph_agreed, code, open_keras],
        outputs=[*spec_outputs, form_key, model_type],
        api_name="open_keras_file",
        js=CONFIRM_OPEN_KERAS_JS,
        **serial,
    )

    # -- summary ----------------------------------------------------------------------------

    def on_summarize(text: str) -> list:
        try:
            summary = actions.summarize(text, ctx)
        except SpecError as error:
            lines = actions.problems_markdown(error.problems)
            return [f"**The model cannot be built yet.**\n\n{lines}", gr.skip(), gr.skip()]
        table = {"headers": summary.headers, "data": summary.rows}
        return [summary.headline, table, summary.diagram]

    summarize.click(
        on_summarize,
        inputs=[code],
        outputs=[summary_headline, summary_table, diagram],
        api_name="summarize",
    )

    def on_spec_for_summary(headline: str = "") -> list:
        """A changed spec clears the summary of the model built before, if one is shown (an
        empty table sent at every edit costs the page a redraw of it)."""
        if not headline:
            return [gr.skip(), gr.skip(), gr.skip()]
        return ["", {"headers": list(model_view.TABLE_HEADERS), "data": []}, ""]

    spec.change(
        on_spec_for_summary,
        inputs=[summary_headline],
        outputs=[summary_headline, summary_table, diagram],
        api_name="clear_summary",
        show_progress="hidden",
    )

    def updates(text: str) -> list[Any]:
        return spec_updates(text, actions.check(text, ctx))

    return BuildTab(code, errors, form_key, SpecEditor(code, spec, shown, updates, serial))


def _error_line(message: str | None) -> str:
    return f"⚠ {message}" if message else ""
