"""The Export tab: a finished run's model as a SavedModel zip, a `.keras` file, Python code,
ONNX or LiteRT.

Each download comes with the snippet that loads or runs it. A translating
run's SavedModel, ONNX and LiteRT files hold its decode loop: for those the
tab shows a decoding choice (beam search, its width and length penalty, or
greedy; beam search of width 4 with length penalty 0.6 by default), hidden
otherwise. Layout and wiring only: the export itself is `builder_ui.results.export`, through
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
    with gr.Row(visible=False, elem_id="export-decoding-row") as decoding_row:
        decoding = gr.Radio(
            choices=[(label, key) for key, label in actions.DECODINGS.items()],
            value=actions.DEFAULT_DECODING,
            label="Decoding (fixed in the file)",
            info="Beam search: 3 to 4 BLEU above greedy in the translation benchmark.",
            elem_id="export-decoding",
        )
        beam_width = gr.Number(
            value=actions.DEFAULT_BEAM_WIDTH,
            precision=0,
            minimum=1,
            label="Beam width",
            elem_id="export-beam-width",
        )
        length_penalty = gr.Number(
            value=actions.DEFAULT_LENGTH_PENALTY,
            minimum=0,
            label="Length penalty α",
            info="lp(Y) = ((5 + |Y|) / 6)^α; 0 ranks by log-probability alone",
            elem_id="export-length-penalty",
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

    def on_choice(run_id: str | None, format_key: str | None) -> Any:
        return gr.update(visible=actions.chooses_decoding(ctx, run_id, format_key))

    for changed, name in ((run, "export_run_chosen"), (fmt, "export_format_chosen")):
        changed.change(on_choice, inputs=[run, fmt], outputs=[decoding_row], api_name=name)

    def on_export(
        run_id: str | None,
        format_key: str,
        method: str = actions.DEFAULT_DECODING,
        width: float | None = actions.DEFAULT_BEAM_WIDTH,
        alpha: float | None = actions.DEFAULT_LENGTH_PENALTY,
    ) -> list:
        try:
            exported = actions.export_run(ctx, run_id, format_key, method, width, alpha)
        except actions.REFUSED as error:
            return [f"✗ {error}", None, ""]
        done = f"✓ `{exported.path.name}`"
        if exported.decoding:
            done += f" ({exported.decoding})"
        return [done, str(exported.path), exported.snippet]

    button.click(
        on_export,
        inputs=[run, fmt, decoding, beam_width, length_penalty],
        outputs=[message, download, snippet],
        api_name="export",
    )
