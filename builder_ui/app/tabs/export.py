"""The Export tab: a finished run's model as a SavedModel zip, a `.keras` file, Python code,
ONNX or LiteRT.

Each download comes with the snippet that loads or runs it. Layout and
wiring only: the export itself is `builder_ui.results.export`, through
`builder_ui.actions.export_run`.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from builder_ui.app import actions


def export_tab(ctx: actions.AppContext, tab: gr.Tab) -> None:
    """Lay out the Export tab and wire its events."""
    with gr.Row(equal_height=True):
        run = gr.Dropdown(
            choices=actions.run_choices(ctx, ["done"]),
            label="Finished run",
            allow_custom_value=True,
            elem_id="export-run",
            scale=4,
        )
        refresh = gr.Button("Refresh runs", elem_id="export-refresh", scale=1)
    fmt = gr.Radio(
        choices=[(label, key) for key, label in actions.EXPORT_FORMATS.items()],
        value="keras",
        label="Format",
        elem_id="export-format",
    )
    button = gr.Button("Export", variant="primary", elem_id="export-button")
    message = gr.Markdown(elem_id="export-message")
    download = gr.File(label="Download", interactive=False, elem_id="export-file")
    snippet = gr.Code(
        language="python", label="Load or run it", interactive=False, elem_id="export-snippet"
    )

    def on_refresh(current: str | None) -> Any:
        choices = actions.run_choices(ctx, ["done"])
        known = {value for _, value in choices}
        return gr.update(choices=choices, value=current if current in known else None)

    refresh.click(on_refresh, inputs=[run], outputs=[run], api_name="export_runs")
    tab.select(on_refresh, inputs=[run], outputs=[run], api_name="open_export")

    def on_export(run_id: str | None, format_key: str) -> list:
        try:
            exported = actions.export_run(ctx, run_id, format_key)
        except actions.REFUSED as error:
            return [f"✗ {error}", None, ""]
        return [f"✓ `{exported.path.name}`", str(exported.path), exported.snippet]

    button.click(
        on_export,
        inputs=[run, fmt],
        outputs=[message, download, snippet],
        api_name="export",
    )
