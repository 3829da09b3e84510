"""The Lab tab: the bottleneck lab's experiments, one click each, and their figures.

Layout and wiring only: the experiments are `builder_ui.lab`, run in a child
process by `builder_ui.lab.runner.LabRunner` (`ctx.lab`); their runs appear
in the Compare tab like any other.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import gradio as gr

from builder_ui.app import actions
from builder_ui.lab import experiments

HEADERS = ["#", "experiment", "the papers' claim", "quick (min)", "last verdict"]
POLL_SECONDS = 3.0


def _rows(results: list[Any]) -> list[list[Any]]:

    verdicts = {result.number: result.verdict for result in results}
    return [
        [e.number, e.title, e.claim, e.quick_minutes, verdicts.get(e.number, "—")]
        for e in experiments()
    ]


class _Shown:
    """What the tab shows of one experiment; copies each figure out for the page once."""

    def __init__(self, ctx: actions.AppContext):
        self.ctx = ctx
        self.copies: dict[tuple[str, int, int], str] = {}

    def __call__(self, number: int | None, results: list[Any]) -> list[Any]:
        """The status line, the figure and the finding of experiment `number`."""
        status = self.ctx.lab.status()
        if number is None:
            return [status.message, None, ""]
        finding = next(
            (f"**{r.verdict}.** {r.finding}" for r in results if r.number == int(number)), ""
        )
        figure = self.ctx.lab.figure(int(number), results)
        if figure is None:
            return [status.message, None, finding]
        return [status.message, self._copy(figure), finding]

    def _copy(self, figure: Path) -> str:
        # The page is sent only files the app copied out for it (no `allowed_paths`); a
        # figure is copied again only when a new run rewrote it.
        stat = figure.stat()
        key = (str(figure), stat.st_mtime_ns, stat.st_size)
        if key not in self.copies or not Path(self.copies[key]).is_file():
            shown = self.ctx.download_path(figure.name)
            shutil.copyfile(figure, shown)
            self.copies[key] = str(shown)
        return self.copies[key]


def lab_tab(ctx: actions.AppContext, tab: gr.Tab) -> None:
    """Lay out the Lab tab and wire its events."""

    gr.Markdown(
        "Each experiment shows one structural limit of sequence models and the design that "
        "removed it. **Run** trains its models at quick sizes (a few minutes on 2 cores) "
        "through the engine; they appear in the Compare tab, and the figure appears here "
        "when done. The full lab is `keras-seq lab`."
    )
    shown = _Shown(ctx)
    table = gr.Dataframe(
        value=_rows(ctx.lab.results()),
        headers=HEADERS,
        interactive=False,
        wrap=True,
        elem_id="lab-table",
    )
    with gr.Row(equal_height=True):
        choice = gr.Dropdown(
            choices=[(f"{e.number}. {e.title}", e.number) for e in experiments()],
            value=1,
            label="Experiment",
            elem_id="lab-experiment",
            scale=4,
        )
        run = gr.Button("Run (quick)", variant="primary", elem_id="lab-run", scale=1)
    status = gr.Markdown(elem_id="lab-status")
    figure = gr.Image(label="Figure", type="filepath", interactive=False, elem_id="lab-figure")
    finding = gr.Markdown(elem_id="lab-finding")
    timer = gr.Timer(POLL_SECONDS, active=False)

    def on_run(number: int | None) -> list[Any]:
        try:
            ctx.lab.start(number)
        except ValueError as error:
            return [f"✗ {error}", *shown(number, ctx.lab.results())[1:], gr.Timer(active=False)]
        return [*shown(number, ctx.lab.results()), gr.Timer(active=True)]

    run.click(
        on_run,
        inputs=[choice],
        outputs=[status, figure, finding, timer],
        api_name="lab_run",
    )

    def on_poll(number: int | None) -> list[Any]:
        running = ctx.lab.status().state == "running"
        results = ctx.lab.results()  # read once per tick
        return [*shown(number, results), _rows(results), gr.Timer(active=running)]

    timer.tick(
        on_poll,
        inputs=[choice],
        outputs=[status, figure, finding, table, timer],
        api_name="lab_poll",
    )

    def on_open(number: int | None) -> list[Any]:
        results = ctx.lab.results()
        return [*shown(number, results), _rows(results)]

    choice.change(
        lambda number: shown(number, ctx.lab.results()),
        inputs=[choice],
        outputs=[status, figure, finding],
        api_name="lab_show",
    )
    tab.select(
        on_open,
        inputs=[choice],
        outputs=[status, figure, finding, table],
        api_name="open_lab",
    )
