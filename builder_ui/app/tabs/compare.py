"""The Compare tab: every run in the store, filtered and sorted; curves overlaid; BLEU by length.

The table is `builder_ui.results.compare`'s (the spec fields that differ between the runs,
the final validation metrics `val_*`, epochs run and planned, parameters, time, throughput,
device), newest first, 200 runs a page. The text, status, sweep and metric-range filters
combine; the text filter acts as you type. Clicking a header, or "Sort by", orders every run
they keep (empty cells last either way) before the table is paged, so page 1 holds the best
run of thousands; a second click on the header flips the order. (Gradio's Dataframe sorts in
the browser and tells the server nothing, so the tab's script hands the click to the server
through a hidden text box; the header menu's own sort still sorts only the page shown.) By
default it shows the columns that differ among the runs shown and that most of them fill
(runs of several model types have a field for every field of every type, mostly empty),
under short headers that show their full path on hover (and in the legend below); id and
name are pinned at the left when the table scrolls sideways; the column picker shows any
other. Rows are compact, so 15 or more are in view at 1400×900. It is read from the store,
so it shows runs from earlier sessions and from the command line, and refreshes when a run
ends, keeping its order. Clicking a row shows how the run ended (a failed run's error and
the last lines of its traceback) and its whole spec, fills the run's name, tags and note for
editing (with Star, Archive and Delete, which asks for a tick first), and adds its run to
(or removes it from) the runs whose learning curves are overlaid. Archived runs are hidden
unless "Show archived" is ticked; the tag menu keeps the runs of one tag. The charts are
Plotly's (zoom, hover, click a legend entry to hide a series): learning curves of one or
several metrics, parallel coordinates of the hyperparameters against the table's metric, and
a scatter of any hyperparameter against any metric, over the runs the filters keep (a brush
dragged along an axis of the parallel coordinates is one more filter: the runs whose lines it
keeps, until the chart is drawn again); the
curves smoothed (TensorBoard's moving average), against epochs or seconds of training, on a
log scale if asked. "What differs" sets the runs picked side by side against the first (the
metric deltas, a graph's blocks and edges added and removed, the fields that differ); "Make a
report" writes the runs the filters keep as one HTML file that opens offline. The view (the
filters, sort, page and columns picked) is kept in the page's URL (`?open=compare&q=…`), so a
reload or a shared link opens the tab as it was.

Layout and wiring only: everything the tab does is in `builder_ui.app.actions`.
"""

from __future__ import annotations

import json
from typing import Any

import gradio as gr

from builder_ui.app import actions
from builder_ui.app.actions import compare as compare_actions
from builder_ui.engine.records import STATUSES
from builder_ui.results.charts import MAX_SMOOTHING

# Compact rows (more of them in view), and the first two columns (id, name) held at the
# left edge when the table scrolls sideways: Gradio 6.31 records `pinned_columns` but
# draws no sticky cells, so this does; the second column starts where the first ends. The
# buttons a selected cell grows (select its row or column, for editing tables) reach into
# the row above and, pinned on top, would take its clicks: this table is read-only.
TABLE_CSS = """
#results-table .virtual-row { min-height: 26px; }
#results-table .virtual-row .cell-wrap { min-height: 26px; padding-top: 1px; padding-bottom: 1px; }
#results-table thead th:nth-child(-n+2), #results-table .virtual-row > .body-cell:nth-child(-n+2) {
  position: sticky; z-index: 3; background: var(--background-fill-primary);
}
#results-table .selection-button { display: none; }
#results-table thead th:nth-child(1), #results-table .virtual-row > .body-cell:nth-child(1) {
  left: 0;
}
#results-table thead th:nth-child(2), #results-table .virtual-row > .body-cell:nth-child(2) {
  left: var(--results-pinned-left, 0px);
}
#results-table thead th { cursor: pointer; }
#results-header-click { display: none; }
#results-url-view { display: none; }
#results-brush { display: none; }
"""

# Runs in the browser once the tab is drawn: adds TABLE_CSS, and sets each header's
# `title` (its hover tooltip) to its full path from this component's value, again whenever
# the table or the value is re-rendered (Gradio re-sets `title` to the header's text).
TABLE_JS = (
    f"""
if (!document.getElementById('results-table-style')) {{
  const style = document.createElement('style');
  style.id = 'results-table-style';
  style.textContent = {json.dumps(TABLE_CSS)};
  document.head.appendChild(style);
}}
"""
    + """
const apply = () => {
  const table = document.getElementById('results-table');
  const first = table && table.querySelector('thead th');
  if (first) {
    const left = `${first.getBoundingClientRect().width}px`;
    if (table.style.getPropertyValue('--results-pinned-left') !== left) {
      table.style.setProperty('--results-pinned-left', left);
    }
  }
  let paths = {};
  try { paths = JSON.parse(props.value || '{}'); } catch (error) { return; }
  for (const th of document.querySelectorAll('#results-table thead th')) {
    const text = (th.querySelector('.header') || th).textContent.trim();
    const full = paths[text];
    if (full && th.getAttribute('title') !== full) th.setAttribute('title', full);
  }
};
const root = document.getElementById('results-table') || document.body;
new MutationObserver(apply).observe(root, {
  subtree: true, childList: true, characterData: true, attributes: true,
  attributeFilter: ['title'],
});
watch('value', apply);
apply();
// A click on a header (not on its menu button) asks the server to sort every run by that
// column: its full path goes to a hidden text box, whose change the server hears.
if (!window.ksHeaderSort) {
  window.ksHeaderSort = true;
  document.addEventListener('click', (event) => {
    const th = event.target.closest && event.target.closest('#results-table thead th');
    if (!th || event.target.closest('button')) return;
    let paths = {};
    try { paths = JSON.parse(props.value || '{}'); } catch (error) { return; }
    const text = (th.querySelector('.header') || th).textContent.trim();
    const box = document.querySelector('#results-header-click textarea');
    if (!box || !text) return;
    box.value = JSON.stringify({column: paths[text] || text, at: Date.now()});
    box.dispatchEvent(new Event('input', {bubbles: true}));
  }, true);
}
// Brushing an axis of the parallel coordinates filters the table to the runs whose lines the
// brushes keep: a line is kept when its value on every brushed axis lies in one of that axis's
// ranges (Plotly's `constraintrange`, in the axis's own units: codes, log10). The runs go to a
// hidden text box as `{"run_ids": [...]}` (the trace's `meta.run_ids`, one per line), or empty
// once no axis is brushed; the server hears its change.
if (!window.ksParcoordsBrush) {
  window.ksParcoordsBrush = true;
  const inside = (value, range) => {
    const ranges = Array.isArray(range[0]) ? range : [range];
    return ranges.some(([low, high]) => value >= low && value <= high);
  };
  const kept = (trace) => {
    const ids = (trace.meta || {}).run_ids;
    const brushed = (trace.dimensions || []).filter(
      (dimension) => dimension.constraintrange && dimension.constraintrange.length
    );
    if (!ids || !brushed.length) return null;
    return ids.filter((id, line) => brushed.every(
      (dimension) => inside(dimension.values[line], dimension.constraintrange)
    ));
  };
  const send = (runIds) => {
    const box = document.querySelector('#results-brush textarea');
    const text = runIds === null ? '' : JSON.stringify({run_ids: runIds});
    if (!box || box.value === text) return;
    box.value = text;
    box.dispatchEvent(new Event('input', {bubbles: true}));
  };
  const watch = () => {
    const chart = document.querySelector('#hparams-plot .js-plotly-plot');
    if (!chart || chart.ksBrushWatched || typeof chart.on !== 'function') return;
    chart.ksBrushWatched = true;
    chart.on('plotly_restyle', () => {
      const trace = (chart.data || []).find((candidate) => candidate.type === 'parcoords');
      if (trace) send(kept(trace));
    });
  };
  // The chart's own box (drawn with this tab), not the page: the Train tab's pushed progress
  // would wake a page-wide observer at every batch.
  const chartBox = document.getElementById('hparams-plot') || document.body;
  new MutationObserver(watch).observe(chartBox, {subtree: true, childList: true});
  watch();
}
"""
)

SORT_ORDERS = list(compare_actions.SORT_ORDERS)
# Writes the view's query parameters (`actions.compare.view_query`, as JSON: null removes
# one) into the page's URL without reloading it, so that a reload or a copied link shows the
# same view (`on_load` reads them back).
URL_JS = """
(text) => {
    if (!text) return;
    window.kerasSeqCompareView = true;
    const url = new URL(window.location.href);
    for (const [key, value] of Object.entries(JSON.parse(text))) {
        if (value === null) url.searchParams.delete(key);
        else url.searchParams.set(key, value);
    }
    window.history.replaceState(window.history.state, "", url);
}
"""
# Another tab chosen: the URL no longer opens Compare (the page wires it to the other tabs).
# Not before Compare has written a view: the first tab's select, as the page starts, would
# remove a link's view before the page's load reads it.
LEAVE_JS = """
() => {
    if (!window.kerasSeqCompareView) return;
    const url = new URL(window.location.href);
    if (url.searchParams.get("open") !== "compare") return;
    url.searchParams.delete("open");
    window.history.replaceState(window.history.state, "", url);
}
"""
# Columns to group runs by besides the hyperparameters that differ.
GROUP_COLUMNS = ["status", "sweep", "tags"]
# The queue every refresh of the table waits in, one at a time (see `refresh_on`).
REFRESH_QUEUE = "compare-table"


def _sort_menu(view: actions.ResultsView) -> Any:
    """The "Sort by" menu: newest first, or one of the columns shown."""
    return gr.update(choices=[("newest first", ""), *view.sort_choices], value=view.sort_by or "")


def _plot_error(message: str) -> list:
    return [f"✗ {message}", gr.skip()]


def _view_updates(view: actions.ResultsView) -> list:
    """The table and the controls that follow it: picker, metric, sweep, page, tag, charts."""
    metrics = view.metrics or ["val_accuracy"]
    return [
        view.table,
        gr.update(choices=view.columns, value=view.shown),
        gr.update(choices=metrics, value=view.metric or "val_accuracy"),
        gr.update(choices=["", *view.sweeps]),
        gr.update(value=view.page, maximum=view.pages),
        view.legend,
        gr.update(choices=["", *view.tags]),
        gr.update(choices=view.hyperparameters),
        gr.update(choices=metrics),
        _sort_menu(view),
        json.dumps(view.header_paths),
    ]


def runs_after_refresh(choices: list[tuple[str, str]], selected: list[str] | None) -> Any:
    """The runs picker's update after a refresh: the store's runs as its choices, and a value
    only when a selected run is no longer among them (deleted elsewhere).

    `selected` is what the picker held when the refresh started. Sending it back whole
    would undo a run picked (a table row clicked) while the refresh ran, as the refreshes
    that follow a change in the store do while a run trains.
    """
    known = {value for _, value in choices}
    selected = list(selected or [])
    kept = [run_id for run_id in selected if run_id in known]
    if kept == selected:
        return gr.update(choices=choices)
    return gr.update(choices=choices, value=kept)


def _filters(
    text: str | None,
    chosen: list[str] | None,
    sweep_id: str | None,
    metric_name: str | None,
    low: str | None,
    high: str | None,
    tag: str | None = None,
    archived: bool = False,
    brush: str | None = None,
) -> actions.ResultsFilters:
    """The filter controls' values (in `filter_inputs` order) as `actions.ResultsFilters`.

    Raises:
        AppError: a metric bound that is not a number (named, with what was typed), or a
            brush message that is not one.
    """
    return actions.ResultsFilters(
        text or "",
        tuple(chosen or ()),
        sweep_id or None,
        metric_name,
        actions.parse_bound(low, "Metric at least"),
        actions.parse_bound(high, "Metric at most"),
        tag or None,
        bool(archived),
        actions.parse_brush(brush),
    )


def _notes_updates(notes: compare_actions.RunNotes | None) -> list:
    """The clicked run's fields and buttons (in `notes_outputs` order); blank for none."""
    if notes is None:
        return ["", "", "", "", gr.update(value="☆ Star"), gr.update(value="Archive"), False]
    return [
        notes.run_id,
        notes.name,
        notes.tags,
        notes.note,
        gr.update(value="★ Unstar" if notes.starred else "☆ Star"),
        gr.update(value="Unarchive" if notes.archived else "Archive"),
        False,
    ]


def compare_tab(
    ctx: actions.AppContext,
    store_version: gr.State,
    tab: gr.Tab,
    root: gr.Blocks,
    tabs: gr.Tabs,
) -> None:
    """Lay out the Compare tab and wire its events.

    `root` is the page (its load reads a view from the URL) and `tabs` the tab bar (a link
    with a view opens this tab); the page has its other tabs run `LEAVE_JS`.
    """
    first = actions.results_view(ctx)
    with gr.Row(equal_height=True):
        query = gr.Textbox(
            label="Filter: rows where any cell contains",
            placeholder="e.g. lstm, done, 261129-",
            elem_id="results-filter",
            scale=2,
        )
        statuses = gr.CheckboxGroup(
            choices=list(STATUSES), label="Status", elem_id="results-status", scale=6
        )
        refresh = gr.Button("Refresh", elem_id="results-refresh", scale=0, min_width=90)
    with gr.Row(equal_height=True):
        sweep = gr.Dropdown(
            choices=["", *first.sweeps], value="", label="Sweep", elem_id="results-sweep", scale=1
        )
        tag_filter = gr.Dropdown(
            choices=["", *first.tags], value="", label="Tag", elem_id="results-tag", scale=1
        )
        # Never None (an empty store has no metric yet): gradio_client needs a default value.
        table_metric = gr.Dropdown(
            choices=first.metrics or ["val_accuracy"],
            value=first.metric or "val_accuracy",
            label="Metric column",
            elem_id="results-metric",
            scale=2,
        )
        # Text boxes, not gr.Number: an empty Number reads as 0, which would be a bound.
        metric_min = gr.Textbox(
            value="",  # not None: gradio_client then needs no value for it
            label="Metric at least",
            placeholder="e.g. 0.9",
            elem_id="results-metric-min",
            scale=1,
        )
        metric_max = gr.Textbox(
            value="",  # not None: gradio_client then needs no value for it
            label="Metric at most",
            placeholder="e.g. 1",
            elem_id="results-metric-max",
            scale=1,
        )
        sort_by = gr.Dropdown(
            choices=[("newest first", ""), *first.sort_choices],
            value="",
            label="Sort by (every run)",
            elem_id="results-sort",
            scale=2,
        )
        sort_order = gr.Dropdown(
            SORT_ORDERS, value="descending", label="Order", elem_id="results-sort-order", scale=1
        )
        show_archived = gr.Checkbox(
            value=False,
            label="Show archived",
            elem_id="results-show-archived",
            scale=1,
            min_width=140,
        )
    picked = gr.State(None)  # the columns a person picked, or None for the defaults
    table = gr.Dataframe(
        value=first.table,
        label=(
            "Runs (click a header to sort every run, a row for its spec and curves; hover a "
            "header for its full path)"
        ),
        interactive=False,
        elem_id="results-table",
        wrap=False,
        max_height=640,
        max_chars=40,
        pinned_columns=len(compare_actions.PINNED_COLUMNS),  # id and name
    )
    # Nothing to see: its value is the headers' full paths, which TABLE_JS puts in `title`.
    header_paths = gr.HTML(
        value=json.dumps(first.header_paths),
        html_template="",
        js_on_load=TABLE_JS,
        elem_id="results-header-paths",
    )
    # Hidden: TABLE_JS writes the clicked header's column here (see `on_header_click`).
    header_click = gr.Textbox(elem_id="results-header-click", show_label=False, container=False)
    # Hidden: each refresh writes the view's query parameters here, and URL_JS into the URL.
    url_view = gr.Textbox(elem_id="results-url-view", show_label=False, container=False)
    # Hidden: TABLE_JS writes the runs a brush on the parallel coordinates keeps here.
    # Its value "" (no brush) is also the default an API call of `/results` may leave out.
    brush = gr.Textbox(value="", elem_id="results-brush", show_label=False, container=False)
    with gr.Row(equal_height=False):
        page = gr.Number(
            value=1,
            minimum=1,
            maximum=first.pages,
            precision=0,
            label="Page",
            elem_id="results-page",
            scale=0,
            min_width=120,
        )
        csv_button = gr.Button(
            "Make a CSV",
            elem_id="results-csv-button",
            variant="secondary",
            size="md",
            scale=0,
            min_width=200,
        )
        csv_file = gr.File(label="CSV", elem_id="results-csv", interactive=False, height=90)
        report_button = gr.Button(
            "Make a report (HTML)",
            elem_id="results-report-button",
            variant="secondary",
            size="md",
            scale=0,
            min_width=200,
        )
        report_file = gr.File(
            label="Report: opens with no server",
            elem_id="results-report",
            interactive=False,
            height=90,
        )
    legend = gr.Markdown(first.legend, elem_id="results-legend")
    with (
        gr.Accordion("Columns: pick any other", open=False, elem_id="results-columns-panel"),
        gr.Row(equal_height=True),
    ):
        columns = gr.Dropdown(
            choices=first.columns,
            value=first.shown,
            multiselect=True,
            label="Columns shown",
            elem_id="results-columns",
            scale=6,
        )
        default_button = gr.Button("Default columns", elem_id="results-default-columns", scale=1)
    message = gr.Markdown(elem_id="compare-message")
    chosen = gr.State("")  # the id of the run whose row was clicked last
    with gr.Accordion("The clicked run: name, tags, note", open=False) as notes_panel:
        with gr.Row(equal_height=True):
            run_name = gr.Textbox(label="Name", elem_id="run-name", scale=2)
            run_tags = gr.Textbox(
                label="Tags (comma or space between)",
                placeholder="e.g. baseline, lstm",
                elem_id="run-tags",
                scale=2,
            )
        run_note = gr.Textbox(label="Note", lines=2, max_lines=8, elem_id="run-note")
        with gr.Row(equal_height=True):
            save_button = gr.Button("Save name, tags, note", elem_id="run-save", variant="primary")
            star_button = gr.Button("☆ Star", elem_id="run-star")
            archive_button = gr.Button("Archive", elem_id="run-archive")
            confirm_delete = gr.Checkbox(
                value=False, label="Yes, delete this run and its files", elem_id="run-confirm"
            )
            delete_button = gr.Button("Delete", elem_id="run-delete", variant="stop")
    with gr.Accordion("The clicked run: how it ended, and its spec", open=False) as spec_panel:
        outcome = gr.Markdown(elem_id="results-outcome")
        spec_code = gr.Code(language="yaml", interactive=False, elem_id="results-spec")
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
            value=["val_loss"],
            multiselect=True,
            allow_custom_value=True,
            label="Curve metrics (logged each epoch; one panel each)",
            elem_id="compare-metric",
            scale=2,
        )
        plot_button = gr.Button("Overlay learning curves", elem_id="compare-plot-button")
        diff_button = gr.Button("What differs (against the first picked)", elem_id="diff-button")
    diff_table = gr.Dataframe(
        interactive=False,
        wrap=True,
        label="What differs between the runs picked; Δ: minus the first run's value",
        elem_id="compare-diff",
        visible=False,
    )
    with gr.Row(equal_height=True):
        smoothing = gr.Slider(
            0,
            MAX_SMOOTHING,
            value=0,
            step=0.01,
            label="Smoothing (TensorBoard's moving average; 0: none)",
            elem_id="compare-smoothing",
            scale=3,
        )
        x_axis = gr.Radio(
            [("epoch", "epoch"), ("seconds of training", "time")],
            value="epoch",
            label="x axis",
            elem_id="compare-x-axis",
            scale=2,
        )
        log_y = gr.Checkbox(value=False, label="Log scale", elem_id="compare-log-y", scale=1)
        by_group = gr.Checkbox(
            value=False,
            label="By group (the Group by menu below): mean ± std",
            elem_id="compare-curves-grouped",
            scale=2,
        )
    curves = gr.Plot(label="Learning curves", elem_id="compare-plot")
    with gr.Row(equal_height=True):
        hparams_button = gr.Button(
            "Parallel coordinates: hyperparameters against the metric column",
            elem_id="hparams-button",
            scale=3,
        )
        scatter_x = gr.Dropdown(
            choices=first.hyperparameters,
            value=None,
            label="Scatter: hyperparameter (x)",
            elem_id="scatter-x",
            scale=3,
        )
        scatter_y = gr.Dropdown(
            choices=first.metrics or ["val_accuracy"],
            value=first.metric or "val_accuracy",
            label="Scatter: metric (y)",
            elem_id="scatter-y",
            scale=2,
        )
        scatter_button = gr.Button("Scatter", elem_id="scatter-button", scale=1)
        importance_button = gr.Button(
            "Parameter importance (the Sweep filter's sweep)", elem_id="importance-button", scale=2
        )
    with gr.Row(equal_height=False):
        hparams_plot = gr.Plot(label="Hyperparameters against the metric", elem_id="hparams-plot")
        scatter_plot = gr.Plot(label="Hyperparameter against metric", elem_id="scatter-plot")
    importance_plot = gr.Plot(label="Parameter importance", elem_id="importance-plot")
    with gr.Row(equal_height=True):
        group_by = gr.Dropdown(
            choices=[*GROUP_COLUMNS, *first.hyperparameters],
            value=None,
            allow_custom_value=True,
            label="Group the runs shown by (e.g. everything but the seed)",
            elem_id="group-by",
            scale=3,
        )
        group_button = gr.Button(
            "Group: each metric's mean and std", elem_id="group-button", scale=1
        )
    groups_table = gr.Dataframe(
        interactive=False,
        label="Groups: runs, and each metric's mean and std over them",
        elem_id="groups-table",
        visible=False,
    )
    bleu_button = gr.Button("BLEU by source sentence length (seq2seq runs)", elem_id="bleu-button")
    with gr.Row(equal_height=False):
        # Until a chart is drawn, a line saying what it needs (an empty Plot draws a blank box).
        bleu_empty = gr.Markdown(
            "BLEU by length: choose finished seq2seq runs above, then press the button.",
            elem_id="bleu-empty",
        )
        bleu_plot = gr.Plot(label="BLEU by source length", elem_id="bleu-plot", visible=False)
        bleu_table = gr.Dataframe(
            headers=["run", "bucket", "n", "bleu", "exact_match", "token_accuracy"],
            interactive=False,
            elem_id="bleu-table",
            label="Per bucket",
        )

    def on_refresh(text: str, chosen: list[str], selected: list[str], *values: Any) -> list:
        *filter_values, page_number, columns_picked, sort_column, order = values
        try:
            filters = _filters(text, chosen, *filter_values)
            view = actions.results_view(
                ctx,
                filters,
                columns=columns_picked,
                page=page_number,
                sort_by=sort_column or None,
                descending=order != "ascending",
            )
        except actions.REFUSED as error:
            return [gr.skip(), f"✗ {error}"] + [gr.skip()] * (len(refresh_outputs) - 2)
        table_update, *control_updates = _view_updates(view)
        _, _, low, high, *_ = filter_values  # as typed: the link keeps the text
        shown = compare_actions.CompareView(
            text=filters.query,
            statuses=tuple(filters.statuses),
            sweep=filters.sweep or "",
            metric=view.metric,
            low=low or "",
            high=high or "",
            tag=filters.tag or "",
            archived=filters.show_archived,
            sort_by=view.sort_by or "",
            order=order or "descending",
            page=view.page,
            columns=tuple(columns_picked) if columns_picked else None,
        )
        return [
            table_update,
            "",
            runs_after_refresh(actions.run_choices(ctx), selected),
            *control_updates,
            json.dumps(compare_actions.view_query(shown)),
            gr.update(choices=[*GROUP_COLUMNS, *view.hyperparameters]),
        ]

    # The first three inputs and outputs are those `/results` had before the other filters
    # came, so a gradio_client call written for it still works.
    filter_inputs = [query, statuses, sweep, table_metric, metric_min, metric_max]
    filter_inputs += [tag_filter, show_archived, brush]
    refresh_inputs = [query, statuses, runs, *filter_inputs[2:], page, picked, sort_by, sort_order]
    refresh_outputs = [table, message, runs, columns, table_metric, sweep, page, legend]
    refresh_outputs += [tag_filter, scatter_x, scatter_y, sort_by, header_paths, url_view]
    refresh_outputs += [group_by]
    url_view.change(None, [url_view], None, js=URL_JS)

    def refresh_on(event: Any, api_name: str, **options: Any) -> None:
        """`event` refreshes the table. Every refresh is one queue (`concurrency_id`): they
        run one at a time in the order they came, so the last one shown is the one made
        with the filters as they are now (a status ticked, then the text typed at once,
        must not end with the status's refresh, made with the text before)."""
        event(
            on_refresh,
            refresh_inputs,
            refresh_outputs,
            api_name=api_name,
            concurrency_id=REFRESH_QUEUE,
            **options,
        )

    refresh_on(refresh.click, "results")
    refresh_on(query.submit, "filter_results")
    # As you type: while one refresh runs, the keys typed meanwhile make one more, with the
    # text as it is then (`always_last`); an emptied box shows every run again. `change`,
    # not `input`: Gradio sends no `input` for a box emptied by select-all and Backspace (no
    # handler writes this box, so every change is the user's).
    refresh_on(
        query.change, "filter_results_live", trigger_mode="always_last", show_progress="hidden"
    )
    refresh_on(statuses.input, "filter_status")
    refresh_on(sweep.input, "filter_sweep")
    refresh_on(table_metric.input, "results_metric")
    for bound, name in ((metric_min, "metric_min"), (metric_max, "metric_max")):
        refresh_on(bound.submit, f"results_{name}")
        refresh_on(bound.blur, f"results_{name}_left")
    refresh_on(page.input, "results_page")
    refresh_on(tag_filter.input, "filter_tag")
    # `change`: the page's script writes it (a brush drawn or cleared), and so does a new
    # parallel-coordinates chart, which has no brush.
    refresh_on(brush.change, "filter_brush", trigger_mode="always_last")
    refresh_on(show_archived.input, "show_archived")
    refresh_on(sort_by.input, "results_sort")
    refresh_on(sort_order.input, "results_sort_order")

    def on_header_click(request: str, *values: Any) -> list:
        """A header clicked: sort every run by its column, ascending, or flip the order of the
        column sorted by already; a column that cannot be sorted by changes nothing."""
        try:
            column = str(json.loads(request or "{}").get("column") or "")
        except (ValueError, AttributeError):
            column = ""
        *others, sort_column, order = values
        if not column or column == "id":
            return [gr.skip()] * (len(refresh_outputs) + 1)
        if column == sort_column:
            order = "ascending" if order == "descending" else "descending"
        else:
            order = "ascending"
        return [order, *on_refresh(*others, column, order)]

    # `change`, not `input`: a value set by a script is not a keystroke (and no handler
    # writes this box, so every change is a click).
    header_click.change(
        on_header_click,
        [header_click, *refresh_inputs],
        [sort_order, *refresh_outputs],
        api_name="results_header_sort",
        concurrency_id=REFRESH_QUEUE,
    )
    refresh_on(
        columns.input(lambda shown: list(shown or []) or None, [columns], [picked]).then,
        "results_columns",
    )
    refresh_on(default_button.click(lambda: None, None, [picked]).then, "default_columns")
    refresh_on(tab.select, "open_compare")
    # A link with a view (`?open=compare&q=lstm&sort=val_loss…`, which each refresh writes
    # into the URL): the tab opens with those filters, sort, page and columns.
    load_controls = [query, statuses, metric_min, metric_max, show_archived, sort_order, picked]

    def on_load(request: gr.Request) -> list:
        view = compare_actions.view_of(dict(request.query_params) if request else {})
        if view is None:
            return [gr.skip()] * (1 + len(load_controls) + len(refresh_outputs))
        values = [view.text, list(view.statuses), [], view.sweep, view.metric, view.low]
        values += [view.high, view.tag, view.archived, None, view.page, view.columns]
        values += [view.sort_by]
        updates = on_refresh(*values, view.order)
        # The refresh sets the sweep's and tag's choices; the link sets their values too.
        for control, value in ((sweep, view.sweep), (tag_filter, view.tag)):
            index = refresh_outputs.index(control)
            if isinstance(updates[index], dict):
                updates[index] = {**updates[index], "value": value or ""}
        controls = [view.text, list(view.statuses), view.low, view.high, view.archived]
        controls += [view.order, view.columns]
        return [gr.Tabs(selected="compare"), *controls, *updates]

    root.load(
        on_load,
        None,
        [tabs, *load_controls, *refresh_outputs],
        api_name="open_compare_view",
        concurrency_id=REFRESH_QUEUE,
    )

    # A refresh that follows an edit or a change in the store leaves the message alone, so
    # that what the user's own click said ("✗ Tags: …") is not cleared a moment later.
    # Nor does it touch the URL: it may come while another tab is shown.
    quiet_outputs = [output for output in refresh_outputs if output not in (message, url_view)]

    def on_quiet_refresh(*values: Any) -> list:
        updates = on_refresh(*values)
        pairs = zip(refresh_outputs, updates, strict=True)
        return [update for output, update in pairs if output not in (message, url_view)]

    store_version.change(
        on_quiet_refresh,
        refresh_inputs,
        quiet_outputs,
        api_name="store_changed",
        show_progress="hidden",
        concurrency_id=REFRESH_QUEUE,
    )

    def curve_metrics(selected: list[str], current: list[str] | str) -> Any:
        """The curve-metric menu for the runs `selected`: what they logged, keeping `current`."""
        names = actions.metric_choices(ctx, selected or [])
        if not names:
            return gr.skip()
        current = [current] if isinstance(current, str) else list(current or [])
        kept = [name for name in current if name in names]
        return gr.update(choices=names, value=kept or names[:1])

    notes_outputs = [chosen, run_name, run_tags, run_note, star_button, archive_button]
    notes_outputs += [confirm_delete]

    def on_select(selected: list[str], current: list[str] | str, event: gr.SelectData) -> Any:
        row = getattr(event, "row_value", None) or []
        run_id = str(row[0]) if row else None  # `id` is always the first column shown
        if not run_id:
            return [gr.skip()] * (6 + len(notes_outputs))
        selected = list(selected or [])
        if run_id in selected:
            selected.remove(run_id)
        else:
            selected.append(run_id)
        try:
            spec = actions.run_spec_yaml(ctx, run_id)
            notes = compare_actions.run_notes(ctx, run_id)
            ended = compare_actions.run_outcome(ctx, run_id)
        except actions.REFUSED as error:
            spec, notes, ended = f"# {error}", None, ""
        return [
            gr.update(choices=actions.run_choices(ctx), value=selected),
            curve_metrics(selected, current),
            ended,
            spec,
            gr.update(open=True, label=f"How run {run_id} ended, and its spec"),
            gr.update(open=True, label=f"Run {run_id}: name, tags, note"),
            *_notes_updates(notes),
        ]

    table.select(
        on_select,
        inputs=[runs, metric],
        outputs=[runs, metric, outcome, spec_code, spec_panel, notes_panel, *notes_outputs],
        api_name="select_run",
    )

    def on_edit(change):
        """A handler that makes `change(run_id, *values)` and shows the run's fields after it."""

        def handler(run_id: str, *values: Any) -> list:
            try:
                notes = change(run_id, *values)
            except actions.REFUSED as error:
                return [f"✗ {error}"] + [gr.skip()] * len(notes_outputs)
            if isinstance(notes, str):  # deleted: nothing left to show
                return [f"✓ {notes}", *_notes_updates(None)]
            return [f"✓ Saved run {notes.run_id}.", *_notes_updates(notes)]

        return handler

    edits = (
        (save_button, compare_actions.save_annotations, [run_name, run_tags, run_note], "save"),
        (star_button, compare_actions.toggle_star, [], "star"),
        (archive_button, compare_actions.toggle_archive, [], "archive"),
        (delete_button, compare_actions.delete_run, [confirm_delete], "delete"),
    )
    for button, change, inputs, name in edits:
        button.click(
            on_edit(lambda run_id, *values, change=change: change(ctx, run_id, *values)),
            inputs=[chosen, *inputs],
            outputs=[message, *notes_outputs],
            api_name=f"run_{name}",
        ).then(
            on_quiet_refresh,
            refresh_inputs,
            quiet_outputs,
            show_progress="hidden",
            concurrency_id=REFRESH_QUEUE,
        )

    # Picked in the menu: the curve metrics follow (a row click updates both at once, and a
    # refresh leaves them, so neither costs a second round trip).
    runs.input(curve_metrics, inputs=[runs, metric], outputs=[metric], api_name="runs_metrics")

    def on_plot(
        selected: list[str],
        names: list[str] | str,
        weight: float,
        x: str,
        log: bool,
        grouped: bool,
        grouped_by: str | None,
    ) -> list:
        try:
            figure = compare_actions.curves_chart(
                ctx,
                selected,
                names,
                smoothing=float(weight or 0),
                x_axis=x,
                log_y=log,
                group_by=grouped_by if grouped else None,
            )
        except actions.REFUSED as error:
            return _plot_error(str(error))
        return ["", figure]

    curve_inputs = [runs, metric, smoothing, x_axis, log_y, by_group, group_by]
    plot_button.click(
        on_plot, inputs=curve_inputs, outputs=[message, curves], api_name="compare_curves"
    )
    # The drawing options redraw the curves shown (once some are).
    for control in (smoothing, x_axis, log_y, by_group):
        control.input(
            on_plot,
            inputs=curve_inputs,
            outputs=[message, curves],
            trigger_mode="always_last",
            show_progress="hidden",
        )

    def on_diff(selected: list[str]) -> list:
        try:
            frame = compare_actions.differences(ctx, selected)
        except actions.REFUSED as error:
            return [f"✗ {error}", gr.update(visible=False)]
        return ["", gr.update(value=frame, visible=True)]

    diff_button.click(
        on_diff, inputs=[runs], outputs=[message, diff_table], api_name="compare_differences"
    )

    def on_group(column: str, *values: Any) -> list:
        try:
            frame = compare_actions.grouped(ctx, _filters(*values), column)
        except actions.REFUSED as error:
            return [f"✗ {error}", gr.update(visible=False)]
        return ["", gr.update(value=frame, visible=True)]

    group_button.click(
        on_group,
        inputs=[group_by, *filter_inputs],
        outputs=[message, groups_table],
        api_name="group_runs",
    )

    def on_bleu(selected: list[str]) -> list:
        """The chart and its table; for runs without BLEU, a line saying so where the chart was."""
        try:
            figure, frame = compare_actions.bleu_chart(ctx, selected)
        except actions.REFUSED as error:
            hidden = gr.update(value=None, visible=False)
            return [f"✗ {error}", hidden, None, gr.update(value=f"✗ {error}", visible=True)]
        return ["", gr.update(value=figure, visible=True), frame, gr.update(visible=False)]

    bleu_button.click(
        on_bleu,
        inputs=[runs],
        outputs=[message, bleu_plot, bleu_table, bleu_empty],
        api_name="bleu_by_length",
    )

    def on_hparams(*values: Any) -> list:
        """The chart of the runs the other filters keep; a brush on the last one is cleared."""
        try:
            filters = _filters(*values)
            return ["", compare_actions.hparams_chart(ctx, filters, filters.metric), ""]
        except actions.REFUSED as error:
            return [*_plot_error(str(error)), gr.skip()]

    hparams_button.click(
        on_hparams,
        inputs=filter_inputs,
        outputs=[message, hparams_plot, brush],
        api_name="hparams_chart",
    )

    def on_scatter(x: str, y: str, *values: Any) -> list:
        try:
            return ["", compare_actions.scatter_chart(ctx, _filters(*values), x, y)]
        except actions.REFUSED as error:
            return _plot_error(str(error))

    scatter_button.click(
        on_scatter,
        inputs=[scatter_x, scatter_y, *filter_inputs],
        outputs=[message, scatter_plot],
        api_name="scatter_chart",
    )

    def on_importance(sweep_id: str | None) -> list:
        try:
            return ["", compare_actions.importance_chart(ctx, sweep_id)]
        except actions.REFUSED as error:
            return _plot_error(str(error))

    importance_button.click(
        on_importance,
        inputs=[sweep],
        outputs=[message, importance_plot],
        api_name="importance_chart",
    )

    def on_download(write: Any):
        """A handler that writes the runs the filters keep, in the table's order, to a file
        (`write(ctx, filters=, sort_by=, descending=)` gives its path) and offers it."""

        def handler(*values: Any) -> list:
            *filter_values, sort_column, order = values
            try:
                path = write(
                    ctx,
                    filters=_filters(*filter_values),
                    sort_by=sort_column or None,
                    descending=order != "ascending",
                )
            except actions.REFUSED as error:
                return [f"✗ {error}", gr.skip()]
            return ["", str(path)]

        return handler

    downloads = (
        (csv_button, actions.results_csv, csv_file, "results_csv"),
        (report_button, compare_actions.results_report, report_file, "results_report"),
    )
    for button, write, offered, name in downloads:
        button.click(
            on_download(write),
            inputs=[*filter_inputs, sort_by, sort_order],
            outputs=[message, offered],
            api_name=name,
        )
