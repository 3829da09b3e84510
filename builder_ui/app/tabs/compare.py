"""The Compare tab: every run in the store, filtered and sorted; curves overlaid; BLEU by length.

The table is `builder_ui.results.compare`'s (the spec fields that differ between the
runs, the metrics, parameters, time, throughput, device), newest first; a
click on a column header sorts it. It is read from the store, so it shows
runs from earlier sessions and from the command line, and refreshes when a
run ends. Clicking a row adds its run to (or removes it from) the runs whose
learning curves are overlaid.

Layout and wiring only: everything the tab does is in `builder_ui.app.actions`.
"""

from __future__ import annotations

from typing import Any

import gradio as gr

from builder_ui.app import actions
from builder_ui.engine.store import STATUSES


def _plot_error(message: str) -> list:
    return [f"✗ {message}", gr.skip()]


def compare_tab(ctx: actions.AppContext, store_version: gr.State, tab: gr.Tab) -> None:
    """Lay out the Compare tab and wire its events."""
    with gr.Row(equal_height=True):
        query = gr.Textbox(
            label="Filter: rows where any cell contains",
            placeholder="e.g. lstm, done, 261129-",
            elem_id="results-filter",
            scale=3,
        )
        statuses = gr.CheckboxGroup(
            choices=list(STATUSES), label="Status", elem_id="results-status", scale=4
        )
        refresh = gr.Button("Refresh", elem_id="results-refresh", scale=1)
    table = gr.Dataframe(
        value=actions.results_frame(ctx),
        label="Runs (click a header to sort, a row to select it for the curves)",
        interactive=False,
        elem_id="results-table",
        wrap=True,
        max_height=520,
    )
    with gr.Row(equal_height=True):
        csv_button = gr.Button("Make a CSV of this table", elem_id="results-csv-button")
        csv_file = gr.File(label="CSV", elem_id="results-csv", interactive=False)
    message = gr.Markdown(elem_id="compare-message")
    with gr.Row(equal_height=True):
        runs = gr.Dropdown(
            choices=actions.run_choices(ctx),
            multiselect=True,
            label="Runs to compare",
            allow_custom_value=True,
            elem_id="compare-runs",
            scale=4,
        )
        metric = gr.Dropdown(
            choices=["val_loss", "loss"],
            value="val_loss",
            allow_custom_value=True,
            label="Metric",
            elem_id="compare-metric",
            scale=2,
        )
        plot_button = gr.Button("Overlay learning curves", elem_id="compare-plot-button")
    curves = gr.Plot(label="Learning curves", elem_id="compare-plot")
    bleu_button = gr.Button("BLEU by source sentence length (seq2seq runs)", elem_id="bleu-button")
    with gr.Row(equal_height=False):
        bleu_plot = gr.Plot(label="BLEU by source length", elem_id="bleu-plot")
        bleu_table = gr.Dataframe(
            headers=["run", "bucket", "n", "bleu", "exact_match", "token_accuracy"],
            interactive=False,
            elem_id="bleu-table",
            label="Per bucket",
        )

    def on_refresh(text: str, chosen: list[str], selected: list[str]) -> list:
        try:
            frame = actions.results_frame(ctx, text, chosen)
        except actions.AppError as error:
            return [gr.skip(), f"✗ {error}", gr.skip()]
        choices = actions.run_choices(ctx)
        known = {value for _, value in choices}
        return [
            frame,
            "",
            gr.update(choices=choices, value=[r for r in (selected or []) if r in known]),
        ]

    refresh_inputs = [query, statuses, runs]
    refresh_outputs = [table, message, runs]
    refresh.click(on_refresh, refresh_inputs, refresh_outputs, api_name="results")
    query.submit(on_refresh, refresh_inputs, refresh_outputs, api_name="filter_results")
    statuses.input(on_refresh, refresh_inputs, refresh_outputs, api_name="filter_status")
    tab.select(on_refresh, refresh_inputs, refresh_outputs, api_name="open_compare")
    store_version.change(
        on_refresh,
        refresh_inputs,
        refresh_outputs,
        api_name="store_changed",
        show_progress="hidden",
    )

    def on_select(selected: list[str], event: gr.SelectData) -> Any:
        row = getattr(event, "row_value", None) or []
        run_id = str(row[0]) if row else None
        if not run_id:
            return gr.skip()
        selected = list(selected or [])
        if run_id in selected:
            selected.remove(run_id)
        else:
            selected.append(run_id)
        return gr.update(choices=actions.run_choices(ctx), value=selected)

    table.select(on_select, inputs=[runs], outputs=[runs], api_name="select_run")

    def on_runs(selected: list[str], current: str) -> Any:
        names = actions.metric_choices(ctx, selected or [])
        if not names:
            return gr.skip()
        return gr.update(choices=names, value=current if current in names else names[0])

    runs.change(on_runs, inputs=[runs, metric], outputs=[metric], api_name="runs_metrics")

    def on_plot(selected: list[str], name: str) -> list:
        try:
            return ["", actions.curves_figure(ctx, selected, name)]
        except actions.AppError as error:
            return _plot_error(str(error))

    plot_button.click(
        on_plot, inputs=[runs, metric], outputs=[message, curves], api_name="compare_curves"
    )

    def on_bleu(selected: list[str]) -> list:
        try:
            figure, frame = actions.bleu_by_length(ctx, selected)
        except actions.AppError as error:
            return [f"✗ {error}", gr.skip(), gr.skip()]
        return ["", figure, frame]

    bleu_button.click(
        on_bleu, inputs=[runs], outputs=[message, bleu_plot, bleu_table], api_name="bleu_by_length"
    )

    def on_csv(text: str, chosen: list[str]) -> list:
        try:
            return ["", str(actions.results_csv(ctx, text, chosen))]
        except actions.AppError as error:
            return [f"✗ {error}", gr.skip()]

    csv_button.click(
        on_csv, inputs=[query, statuses], outputs=[message, csv_file], api_name="results_csv"
    )
