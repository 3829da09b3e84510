"""The Train tab's search form: method, trials, ASHA and up to four parameters, as the spec's
`sweep:` section.

The form and the Build tab's YAML follow each other (`builder_ui.app.actions.search_form`): a
change in the form writes the spec's `sweep:` section (a range stays a range `{low, high, log}`
that random and bayes draw from; in a grid it becomes its list of `count` values); a spec
that changes otherwise (typed, a preset, a link) fills the form, unless the form
already says the same (so a range typed in the form stays a range). A form that is not yet a
search (a range with its ends the wrong way round) says why under it and leaves the spec as
it was. "Queue the spec from the Build tab" then queues the search.

Layout and wiring only, for the Train tab to place (a module of its own beside the tabs, which
do not import each other).
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from builder_ui.app import actions
from builder_ui.app.actions import search_form as forms
from builder_ui.app.spec_editor import SpecEditor

METHOD_HELP = (
    "grid: every combination · random: that many combinations drawn with the seed · bayes: "
    "that many chosen one after another by Optuna's TPE from the results so far"
)


def search_form(editor: SpecEditor) -> None:
    """Lay out the form in an accordion and wire it to the Build tab's spec (`editor`)."""
    spec_code = editor.code
    with gr.Accordion(
        "Search: try several values (writes the spec's sweep: section)",
        open=False,
        elem_id="search-form",
    ):
        with gr.Row(equal_height=True):
            enabled = gr.Checkbox(label="Search", elem_id="search-on", scale=1)
            method = gr.Radio(
                list(forms.METHODS), value="grid", label="Method", info=METHOD_HELP,
                elem_id="search-method", scale=4,
            )  # fmt: skip
            trials = gr.Number(
                label="Trials (random, bayes)", precision=0, elem_id="search-trials", scale=1
            )
            seed = gr.Number(value=0, label="Seed", precision=0, elem_id="search-seed", scale=1)
        with gr.Row(equal_height=True):
            asha = gr.Checkbox(label="ASHA: stop weak trials early", elem_id="search-asha", scale=2)
            grace = gr.Number(
                value=1, label="Grace period (epochs)", precision=0, elem_id="search-grace",
                scale=1,
            )  # fmt: skip
            reduction = gr.Number(
                value=3, label="Reduction factor (keep 1 in η)", precision=0,
                elem_id="search-reduction", scale=1,
            )  # fmt: skip
        row_fields: list[Any] = []
        for number in range(1, forms.MAX_ROWS + 1):
            with gr.Row(equal_height=True):
                row_fields += [
                    gr.Dropdown(
                        choices=[], value=None, allow_custom_value=True,
                        label=f"Parameter {number}: field", elem_id=f"search-path-{number}",
                        scale=3,
                    ),
                    gr.Dropdown(
                        list(forms.KINDS), value="values", label="Values or a range",
                        elem_id=f"search-kind-{number}", scale=2,
                    ),
                    gr.Textbox(
                        label="Values", placeholder="e.g. 16, 32, 64",
                        elem_id=f"search-values-{number}", scale=2,
                    ),
                    gr.Number(label="Low", elem_id=f"search-low-{number}", scale=1),
                    gr.Number(label="High", elem_id=f"search-high-{number}", scale=1),
                    gr.Number(
                        label="Count (grid)", precision=0, elem_id=f"search-count-{number}",
                        scale=1,
                    ),
                ]  # fmt: skip
        message = gr.Markdown(elem_id="search-message")
    settings = [enabled, method, trials, seed, asha, grace, reduction]
    controls = [*settings, *row_fields]

    def form_of_controls(values: list[Any]) -> forms.SearchForm:
        return forms.form_from_fields(*values[: len(settings)], values[len(settings) :])

    # What the controls show, and what the field menus offer (the spec's paths when last
    # read), kept beside them: a spec's change reads these two instead of the 32 controls,
    # each of which the page would otherwise mark busy at every later event.
    shown = gr.State(form_of_controls([control.value for control in controls]))
    offered = gr.State(None)

    def on_form(text: str, *values: Any) -> list:
        """The form changed: write it into the spec (or say why not, the spec untouched)."""
        form = form_of_controls(list(values))
        try:
            new_text = forms.with_search(text, form)
        except actions.REFUSED as error:
            return [gr.skip(), gr.skip(), f"✗ {error}", form]
        return [*editor.updates(new_text), "", form]

    def on_spec(text: str, form: forms.SearchForm, offered: list[str] | None) -> list:
        """The spec changed: fill the form from it, unless the form says the same already.

        A spec whose paths are those the menus offer leaves the menus alone, so that an edit
        elsewhere (a canvas block's parameter) sends the page nothing to redraw here.
        """
        unchanged = [gr.skip()] * (len(controls) + 3)
        try:
            read = forms.read_search(text, form)
        except actions.REFUSED:  # a YAML being typed: the form waits for one that parses
            return unchanged
        found = read.form
        if read.shown:  # only each field menu's choices, which follow the spec
            if read.paths == offered:
                return unchanged
            menus = [gr.update(choices=read.paths)] + [gr.skip()] * (forms.ROW_FIELDS - 1)
            kept = [gr.skip()] * len(settings)
            return [*kept, *menus * forms.MAX_ROWS, "", gr.skip(), read.paths]
        updates = [found.enabled, found.method, found.num_trials, found.seed, found.asha]
        updates += [found.grace_period, found.reduction_factor]
        for row in forms.rows_of(found):
            updates += [gr.update(value=row.path or None, choices=read.paths), row.kind]
            updates += [row.values, row.low, row.high, row.count]
        return [*updates, "", found, read.paths]

    # `input`: the user's own changes (the form filled from the spec sends none, so it never
    # writes the spec back over the text as typed).
    gr.on(
        [control.input for control in controls],
        on_form,
        inputs=[editor.spec, *controls],
        outputs=[*editor.outputs, message, shown],
        api_name="search_form",
        trigger_mode="always_last",
        show_progress="hidden",
        **editor.serial,
    )
    spec_code.change(
        on_spec,
        inputs=[spec_code, shown, offered],
        outputs=[*controls, message, shown, offered],
        api_name="search_form_of_spec",
        show_progress="hidden",
    )
