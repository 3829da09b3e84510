"""The Train tab: queue the spec (or several presets), follow a run live, cancel it.

A `gr.Timer` polls the queue and the followed run once a second: the queue
table, the progress bar (from the in-memory progress the training thread
reports after every batch) and the learning curves (from the store, one point
per finished epoch). A poll that finds nothing new changes nothing on the
page. The poll also publishes a version of the store (runs and finished runs
counted) that the Compare tab watches to refresh its table.

Layout and wiring only: everything the tab does is in `builder_ui.app.actions`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from builder_ui.app import actions
from builder_ui.specs import SpecError

POLL_SECONDS = 1.0


@dataclass
class TrainTab:
    """The components other tabs use."""

    store_version: gr.State


def _store_version(ctx: actions.AppContext) -> str:
    records = ctx.store.list_runs()
    finished = sum(1 for r in records if r.status not in ("queued", "running"))
    return f"{len(records)}:{finished}"


def train_tab(ctx: actions.AppContext, spec_code: gr.Code) -> TrainTab:
    """Lay out the Train tab and wire its events; `spec_code` is the Build tab's spec editor."""
    session_runs = gr.State([])
    signature = gr.State("")
    store_version = gr.State(_store_version(ctx))

    with gr.Row(equal_height=True):
        queue_button = gr.Button(
            "Queue the spec from the Build tab", variant="primary", elem_id="queue-button", scale=2
        )
        queue_presets = gr.Dropdown(
            choices=actions.presets_list(),
            multiselect=True,
            label="…or queue several presets",
            elem_id="queue-presets",
            scale=3,
        )
        queue_epochs = gr.Textbox(
            value="",
            label="Epochs",
            placeholder="each preset's own",
            elem_id="queue-epochs",
            scale=1,
        )
        queue_presets_button = gr.Button("Queue presets", elem_id="queue-presets-button", scale=1)
    message = gr.Markdown(elem_id="train-message")
    queue_table = gr.Dataframe(
        value=actions.queue_frame(ctx),
        label="Queue: one run trains per device; the others wait their turn",
        interactive=False,
        elem_id="queue-table",
        wrap=True,
    )
    with gr.Row(equal_height=True):
        follow = gr.Dropdown(
            choices=actions.queue_choices(ctx),
            value=None,
            label="Follow run",
            allow_custom_value=True,
            elem_id="follow-run",
            scale=3,
        )
        cancel_button = gr.Button("Cancel this run", variant="stop", elem_id="cancel-button")
    progress = gr.HTML(actions.progress_html(ctx, None), elem_id="run-progress")
    with gr.Accordion("Resume an interrupted run", open=False, elem_id="resume-panel"):
        gr.Markdown(
            "A run whose process was killed (the app stopped, the machine ran out of memory) "
            "keeps its finished epochs and continues from the next one."
        )
        with gr.Row(equal_height=True):
            interrupted = gr.Dropdown(
                choices=actions.interrupted_choices(ctx),
                label="Interrupted run",
                allow_custom_value=True,
                elem_id="resume-run",
                scale=3,
            )
            resume_button = gr.Button("Resume", elem_id="resume-button")
    curves = gr.LinePlot(
        value=actions.curves_frame(ctx, None),
        x="epoch",
        y="value",
        color="metric",
        label="Learning curves (every epoch)",
        elem_id="run-curves",
        height=320,
    )
    timer = gr.Timer(POLL_SECONDS)

    def after_submit(submitted: actions.Submitted, mine: list[str]) -> list:
        mine = [*mine, *submitted.run_ids]
        followed = submitted.run_ids[0]
        return [
            f"✓ {submitted.message}",
            mine,
            gr.update(choices=actions.queue_choices(ctx), value=followed),
            actions.queue_frame(ctx),
            actions.progress_html(ctx, followed),
        ]

    submit_outputs = [message, session_runs, follow, queue_table, progress]

    def submit(queue: Callable[[], Any], mine: list[str]) -> list:
        """Queue with `queue()`; a refusal is shown and changes nothing else."""
        try:
            submitted = queue()
        except SpecError as error:
            return [
                "**Nothing was queued.**\n\n" + actions.problems_markdown(error.problems),
                *[gr.skip()] * 4,
            ]
        except actions.AppError as error:
            return [f"✗ {error}", *[gr.skip()] * 4]
        return after_submit(submitted, mine)

    def on_queue(text: str, mine: list[str]) -> list:
        return submit(lambda: actions.queue_spec(ctx, text), mine)

    queue_button.click(
        on_queue, inputs=[spec_code, session_runs], outputs=submit_outputs, api_name="queue"
    )

    def on_queue_presets(keys: list[str], epochs: Any, mine: list[str]) -> list:
        def queue():
            text = str(epochs or "").strip()
            if text and not (text.isdigit() and int(text) >= 1):
                raise actions.AppError(f"Epochs: expected a positive integer, got {text!r}.")
            return actions.queue_presets(ctx, keys, int(text) if text else None)

        return submit(queue, mine)

    queue_presets_button.click(
        on_queue_presets,
        inputs=[queue_presets, queue_epochs, session_runs],
        outputs=submit_outputs,
        api_name="queue_presets",
    )

    def on_cancel(run_id: str | None) -> list:
        try:
            said = actions.cancel(ctx, run_id)
        except actions.AppError as error:
            return [f"✗ {error}", gr.skip(), gr.skip()]
        return [f"■ {said}", actions.queue_frame(ctx), actions.progress_html(ctx, run_id)]

    cancel_button.click(
        on_cancel, inputs=[follow], outputs=[message, queue_table, progress], api_name="cancel"
    )

    def on_resume(run_id: str | None, mine: list[str]) -> list:
        try:
            said = actions.resume(ctx, run_id)
        except actions.AppError as error:
            return [f"✗ {error}", *[gr.skip()] * 5]
        return [
            f"✓ {said}",
            [*mine, run_id],
            gr.update(choices=actions.queue_choices(ctx), value=run_id),
            actions.queue_frame(ctx),
            actions.progress_html(ctx, run_id),
            gr.update(choices=actions.interrupted_choices(ctx), value=None),
        ]

    resume_button.click(
        on_resume,
        inputs=[interrupted, session_runs],
        outputs=[*submit_outputs, interrupted],
        api_name="resume",
    )

    def on_store_change(current: str | None) -> Any:
        choices = actions.interrupted_choices(ctx)
        known = {value for _, value in choices}
        return gr.update(choices=choices, value=current if current in known else None)

    store_version.change(
        on_store_change,
        inputs=[interrupted],
        outputs=[interrupted],
        api_name="interrupted_runs",
        show_progress="hidden",
    )

    def on_follow(run_id: str | None) -> list:
        return [actions.progress_html(ctx, run_id), actions.curves_frame(ctx, run_id)]

    follow.input(on_follow, inputs=[follow], outputs=[progress, curves], api_name="follow")

    def on_tick(run_id: str | None, mine: list[str], seen: str, version: str) -> list:
        if not run_id and mine:
            run_id = mine[-1]
        table = actions.queue_frame(ctx)
        bar = actions.progress_html(ctx, run_id)
        lines = actions.curves_frame(ctx, run_id)
        choices = actions.queue_choices(ctx)
        parts = [table.to_json(), bar, str(len(lines)), str(run_id), repr(choices)]
        digest = hashlib.sha1("\x00".join(parts).encode()).hexdigest()
        new_version = _store_version(ctx)
        version_update = new_version if new_version != version else gr.skip()
        if digest == seen:
            return [gr.skip()] * 5 + [version_update]
        follow_update = gr.update(choices=choices, value=run_id) if run_id else gr.skip()
        return [table, bar, lines, follow_update, digest, version_update]

    timer.tick(
        on_tick,
        inputs=[follow, session_runs, signature, store_version],
        outputs=[queue_table, progress, curves, follow, signature, store_version],
        api_name="poll",
        show_progress="hidden",
        concurrency_limit=None,
    )
    return TrainTab(store_version)
