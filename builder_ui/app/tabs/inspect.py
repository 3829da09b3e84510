"""The Inspect tab: a finished run's predictions, attention, gradient flow and positions.

Nothing stale stays: choosing another run clears every output of the one
before, and the message (an error) belongs to the sub-tab that made it, so
opening another sub-tab clears it.

Layout and wiring only: everything the tab does is in `builder_ui.app.actions`
(and `builder_ui.results.inspection`).
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from builder_ui.app import actions
from builder_ui.results.inspection import DECODING_METHODS, Decoding, model_kind

HINTS = {
    "seq2seq": "Type a sentence in the source language (e.g. *the black cat sleeps .*); "
    "the translation and where each output word attended are shown.",
    "pointer": "Type numbers to sort, separated by spaces (e.g. *0.7 0.1 0.5 0.3 0.9*).",
    "vit": "A ViT reads images: leave the input empty and choose a validation example.",
    "frames": "A next-frame model reads videos: leave the input empty and choose a validation "
    "example; its predicted frames are drawn under the true ones.",
    "captioner": "A captioner reads images: leave the input empty and choose a validation "
    "example; its caption and where it looked for each word are shown.",
    "classifier": "Type a sequence: words for text, token ids for id inputs, or one value per "
    "step (a symbol index per step for one-hot inputs), separated by spaces.",
    "regressor": "Type one value per step separated by spaces; several features per step as `a,b`.",
    "other": "Leave the input empty to use a validation example.",
}

# The outputs of a run emptied: message, summary, table (no rows), and the four figures.
CLEAR_RUN_JS = """
() => ["", "", {"headers": ["output", "value"], "data": []}, null, null, null, null]
"""


def inspect_tab(ctx: actions.AppContext, tab: gr.Tab) -> None:
    """Lay out the Inspect tab and wire its events."""
    with gr.Row(equal_height=True):
        run = gr.Dropdown(
            choices=actions.run_choices(ctx, ["done"]),
            label="Finished run",
            allow_custom_value=True,
            elem_id="inspect-run",
            scale=4,
        )
        refresh = gr.Button("Refresh runs", elem_id="inspect-refresh", scale=1)
    hint = gr.Markdown(elem_id="inspect-hint")
    message = gr.Markdown(elem_id="inspect-message")
    with gr.Tab("Predictions and attention") as predictions_tab:
        with gr.Row(equal_height=True):
            text = gr.Textbox(
                label="Input (empty: the validation example below)",
                elem_id="inspect-input",
                scale=4,
            )
            example = gr.Number(
                value=0, precision=0, label="Validation example", elem_id="inspect-example"
            )
            predict_button = gr.Button("Predict", variant="primary", elem_id="predict-button")
        defaults = Decoding()
        with gr.Accordion(
            "Decoding", open=False, visible=False, elem_id="decoding-options"
        ) as decoding_box:
            with gr.Row(equal_height=True):
                method = gr.Radio(
                    list(DECODING_METHODS),
                    value=defaults.method,
                    label="Method",
                    elem_id="decoding-method",
                )
                beam_width = gr.Number(
                    value=defaults.beam_width,
                    precision=0,
                    label="Beam width (beam)",
                    elem_id="decoding-beam-width",
                )
                length_penalty = gr.Number(
                    value=defaults.length_penalty,
                    label="Length penalty α (beam)",
                    elem_id="decoding-length-penalty",
                )
                coverage_penalty = gr.Number(
                    value=defaults.coverage_penalty,
                    label="Coverage penalty β (beam)",
                    elem_id="decoding-coverage-penalty",
                )
            with gr.Row(equal_height=True):
                temperature = gr.Number(
                    value=defaults.temperature,
                    label="Temperature T (sample)",
                    elem_id="decoding-temperature",
                )
                top_k = gr.Number(
                    value=defaults.top_k,
                    precision=0,
                    label="Top-k, 0 for all (sample)",
                    elem_id="decoding-top-k",
                )
                top_p = gr.Number(
                    value=defaults.top_p,
                    label="Top-p, 1 for all (sample)",
                    elem_id="decoding-top-p",
                )
                seed = gr.Number(
                    value=defaults.seed, precision=0, label="Seed (sample)", elem_id="decoding-seed"
                )
        decoding_fields = [
            method,
            beam_width,
            length_penalty,
            coverage_penalty,
            temperature,
            top_k,
            top_p,
            seed,
        ]
        summary = gr.Markdown(elem_id="predict-summary")
        with gr.Row(equal_height=False):
            table = gr.Dataframe(
                headers=["output", "value"],
                interactive=False,
                elem_id="predict-table",
                label="Output",
            )
            figure = gr.Plot(label="Attention, pointers, gaze or frames", elem_id="predict-plot")
    with gr.Tab("Gradient flow") as gradient_tab:
        gr.Markdown(
            "‖∂L/∂x_t‖ of a last-step loss at every earlier step, through each recurrent layer "
            "with its trained weights: a falling line is a vanishing gradient, a flat one the "
            "LSTM's constant error carousel."
        )
        with gr.Row(equal_height=True):
            steps = gr.Number(value=50, precision=0, label="Steps", elem_id="gradient-steps")
            gradient_button = gr.Button("Measure", elem_id="gradient-button")
        gradient_plot = gr.Plot(elem_id="gradient-plot")
    with gr.Tab("Positional encoding") as positional_tab:
        gr.Markdown(
            "The sinusoids of Vaswani et al. (2017): the run's own when it has a sinusoidal "
            "encoding, else one of the size given here."
        )
        with gr.Row(equal_height=True):
            dim = gr.Number(value=64, precision=0, label="Dimensions d", elem_id="pe-dim")
            length = gr.Number(value=50, precision=0, label="Positions", elem_id="pe-length")
            positional_button = gr.Button("Draw", elem_id="pe-button")
        positional_plot = gr.Plot(elem_id="pe-plot")
    with gr.Tab("ViT position similarity") as vit_tab:
        gr.Markdown(
            "Cosine similarity between the learned position embeddings of a ViT's patches, "
            "on the patch grid (Dosovitskiy et al. 2020, figure 7)."
        )
        vit_button = gr.Button("Draw", elem_id="vit-button")
        vit_plot = gr.Plot(elem_id="vit-plot")

    def on_refresh(current: str | None) -> Any:
        choices = actions.run_choices(ctx, ["done"])
        known = {value for _, value in choices}
        return gr.update(choices=choices, value=current if current in known else None)

    refresh.click(on_refresh, inputs=[run], outputs=[run], api_name="inspect_runs")
    tab.select(on_refresh, inputs=[run], outputs=[run], api_name="open_inspect")

    def on_run(run_id: str | None) -> list:
        if not run_id:
            return ["", gr.update(visible=False)]
        try:
            record = ctx.record(run_id)
        except actions.REFUSED as error:
            return [f"✗ {error}", gr.update(visible=False)]
        kind = model_kind(record.spec)
        return [HINTS[kind], gr.update(visible=kind in ("seq2seq", "captioner"))]

    run.change(on_run, inputs=[run], outputs=[hint, decoding_box], api_name="inspect_hint")

    # What the previous run gave (its message, predictions and figures) goes with it. Cleared
    # in the browser, at once: a clear from the server could land after the next prediction.
    outputs_of_a_run = [message, summary, table, figure, gradient_plot, positional_plot, vit_plot]
    run.change(
        None,
        outputs=outputs_of_a_run,
        js=CLEAR_RUN_JS,
        api_name="inspect_clear",
        show_progress="hidden",
    )
    sub_tabs = {
        "predictions": predictions_tab,
        "gradient": gradient_tab,
        "positional": positional_tab,
        "vit": vit_tab,
    }
    for name, sub_tab in sub_tabs.items():
        sub_tab.select(None, outputs=[message], js="() => ['']", api_name=f"open_inspect_{name}")

    def on_predict(run_id: str, typed: str, index: Any, *decoding: Any) -> list:
        try:
            prediction = actions.predict(
                ctx,
                run_id,
                typed,
                0 if index is None else index,
                Decoding(*decoding),
            )
        except actions.REFUSED as error:
            return [f"✗ {error}", gr.skip(), gr.skip(), gr.skip()]
        rows = {"headers": prediction.headers, "data": prediction.rows}
        return ["", prediction.summary, rows, prediction.figure]

    predict_button.click(
        on_predict,
        inputs=[run, text, example, *decoding_fields],
        outputs=[message, summary, table, figure],
        api_name="predict",
    )
    text.submit(
        on_predict,
        inputs=[run, text, example, *decoding_fields],
        outputs=[message, summary, table, figure],
        api_name="predict_submit",
    )

    def figure_event(make):
        def run_it(*args: Any) -> list:
            try:
                return ["", make(*args)]
            except actions.REFUSED as error:
                return [f"✗ {error}", gr.skip()]

        return run_it

    gradient_button.click(
        figure_event(lambda run_id, n: actions.gradient_flow(ctx, run_id, n)),
        inputs=[run, steps],
        outputs=[message, gradient_plot],
        api_name="gradient_flow",
    )
    positional_button.click(
        figure_event(lambda run_id, d, n: actions.positional_encoding(ctx, run_id, d, n)),
        inputs=[run, dim, length],
        outputs=[message, positional_plot],
        api_name="positional_encoding",
    )
    vit_button.click(
        figure_event(lambda run_id: actions.vit_similarity(ctx, run_id)),
        inputs=[run],
        outputs=[message, vit_plot],
        api_name="vit_similarity",
    )
