"""The Train tab: queue the spec (or several presets), follow a run live, cancel it.

Updates are pushed: each page load opens one stream (an async generator, the
`watch` event) that sends the page what changed, as it changes: the queue
table, the "Follow run" choices, the progress line (from the in-memory
progress the training processes report after every batch: epoch, batch,
throughput, time left), the learning curves (a matplotlib figure from the
store, drawn again only when an epoch ends) and the store's version, which the
Compare tab watches to refresh its table. The stream wakes when the progress
board moves (`ProgressBoard.version`) and reads the store once a second while
something waits or trains anywhere, every few seconds otherwise (to see runs
started by another tool); it sends a part only when it differs from what the
page has, so an idle page gets nothing but a rare keep-alive, and it makes no
request of its own (the bug this replaces: a 1 s timer per tab whose every tick
was a request, and the browser aborted about one a second). What the page
follows lives on the server (`actions.TrainViews`, by session), where the
handlers write it and the stream reads it. Unless a run is pinned (chosen in
"Follow run"), the tab follows the newest training run, so it moves on from
preset to preset and trial to trial. API clients read the same view with the
`poll` endpoint.

Layout and wiring only: everything the tab does is in `builder_ui.app.actions`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from builder_ui.app import actions
from builder_ui.app.search_panel import search_form
from builder_ui.app.spec_editor import SpecEditor
from builder_ui.specs import SpecError

# The stream reads the store at most this often, however fast batches come.
MIN_REFRESH_S = 0.5
# ...and at least this often while something waits or trains, or else.
BUSY_REFRESH_S = 1.0
IDLE_REFRESH_S = 5.0
# A page that got nothing for this long gets an empty message: how a closed page is noticed.
KEEPALIVE_S = 10.0
# How often the stream looks at the progress board (a counter: no I/O).
WAKE_S = 0.1

_logger = logging.getLogger(__name__)


@dataclass
class TrainTab:
    """The components other tabs use."""

    store_version: gr.State


def train_tab(ctx: actions.AppContext, editor: SpecEditor, page: gr.Blocks) -> TrainTab:
    """Lay out the Train tab and wire its events.

    Args:
        ctx: The app's context.
        editor: The Build tab's spec (its editor is what "Queue the spec" queues).
        page: The whole app, whose load opens the tab's stream.
    """
    spec_code = editor.code
    views = actions.TrainViews()
    store_version = gr.State(actions.store_version(ctx))
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
    search_form(editor)
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
        newest = gr.Checkbox(
            value=True,
            label="Follow the newest run (choosing one pins it)",
            elem_id="follow-newest",
            scale=1,
        )
        cancel_button = gr.Button("Cancel this run", variant="stop", elem_id="cancel-button")
    progress = gr.HTML(actions.progress_html(ctx, None), elem_id="run-progress")
    resumable = actions.interrupted_choices(ctx)
    # Open, with the newest chosen, when the app starts with interrupted runs (after a stop).
    with gr.Accordion("Resume an interrupted run", open=bool(resumable), elem_id="resume-panel"):
        gr.Markdown(
            "A run whose process was killed (the app stopped, the machine ran out of memory) "
            "keeps its finished epochs and continues from the next one."
        )
        # A callable value is read again at each page load.
        gr.Markdown(lambda: actions.resume_offer(ctx), elem_id="resume-offer")
        with gr.Row(equal_height=True):
            interrupted = gr.Dropdown(
                choices=resumable,
                value=resumable[0][1] if resumable else None,
                label="Interrupted run",
                allow_custom_value=True,
                elem_id="resume-run",
                scale=3,
            )
            resume_button = gr.Button("Resume", elem_id="resume-button")
    curves = gr.Plot(label="Learning curves (every epoch)", elem_id="run-curves")

    def sent(snap: actions.Snapshot, view: actions.TrainView, parts: tuple[str, ...]) -> dict:
        """Gradio updates of `parts` of `snap` (the stream's outputs), recorded as sent."""
        snap.news(view, parts)
        updates = {
            "table": snap.table,
            "progress": snap.progress,
            "follow": gr.update(choices=snap.choices, value=snap.run_id),
            "store_version": snap.store_version,
        }
        if "curves" in parts:
            updates["curves"] = actions.live_curves_figure(ctx, snap.run_id)
        return {name: updates[name] for name in parts}

    def after_submit(submitted: actions.Submitted, view: actions.TrainView, pinned: bool) -> list:
        with view.lock:
            view.mine.extend(submitted.run_ids)
            if pinned:  # a resumed run: shown until the user picks another
                view.run_id, view.newest, view.auto_run = submitted.run_ids[0], False, ""
            else:  # the newest, as `TrainView.follows` chooses it with the page's runs now
                view.run_id, view.newest = None, True
        shown = sent(actions.snapshot(ctx, view), view, ("follow", "table", "progress"))
        return [
            f"✓ {submitted.message}",
            shown["follow"],
            shown["table"],
            shown["progress"],
            not pinned,
        ]

    submit_outputs = [message, follow, queue_table, progress, newest]

    def submit(queue: Callable[[], Any], request: gr.Request) -> list:
        """Queue with `queue()`; a refusal is shown and changes nothing else."""
        try:
            submitted = queue()
        except SpecError as error:
            return [
                "**Nothing was queued.**\n\n" + actions.problems_markdown(error.problems),
                *[gr.skip()] * 4,
            ]
        except actions.REFUSED as error:
            return [f"✗ {error}", *[gr.skip()] * 4]
        return after_submit(submitted, views.of(request.session_hash), pinned=False)

    def on_queue(text: str, request: gr.Request) -> list:
        return submit(lambda: actions.queue_spec(ctx, text), request)

    queue_button.click(on_queue, inputs=[spec_code], outputs=submit_outputs, api_name="queue")

    def on_queue_presets(keys: list[str], epochs: Any, request: gr.Request) -> list:
        def queue():
            text = str(epochs or "").strip()
            if text and not (text.isdigit() and int(text) >= 1):
                raise actions.AppError(f"Epochs: expected a positive integer, got {text!r}.")
            return actions.queue_presets(ctx, keys, int(text) if text else None)

        return submit(queue, request)

    queue_presets_button.click(
        on_queue_presets,
        inputs=[queue_presets, queue_epochs],
        outputs=submit_outputs,
        api_name="queue_presets",
    )

    def on_cancel(run_id: str | None) -> list:
        try:
            said = actions.cancel(ctx, run_id)
        except actions.REFUSED as error:
            return [f"✗ {error}", gr.skip(), gr.skip()]
        return [f"■ {said}", actions.queue_frame(ctx), actions.progress_html(ctx, run_id)]

    cancel_button.click(
        on_cancel,
        inputs=[follow],
        outputs=[message, queue_table, progress],
        api_name="cancel",
    )

    def on_resume(run_id: str | None, request: gr.Request) -> list:
        try:
            submitted = actions.resume(ctx, run_id)
        except actions.REFUSED as error:
            return [f"✗ {error}", *[gr.skip()] * 5]
        return [
            *after_submit(submitted, views.of(request.session_hash), pinned=True),
            gr.update(choices=actions.interrupted_choices(ctx), value=None),
        ]

    resume_button.click(
        on_resume,
        inputs=[interrupted],
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

    def on_follow(run_id: str | None, request: gr.Request) -> list:
        """A run chosen by hand is pinned: the tab stays on it until "newest" is ticked."""
        view = views.of(request.session_hash)
        with view.lock:
            if (run_id or None) == view.run_id:
                # The run shown already: the menu was opened and left (a blur sends its
                # value again), which pins nothing.
                return [gr.skip()] * 3
            view.run_id, view.newest, view.auto_run = run_id or None, False, ""
        shown = sent(actions.snapshot(ctx, view), view, ("progress", "curves"))
        return [shown["progress"], shown["curves"], False]

    follow.input(on_follow, inputs=[follow], outputs=[progress, curves, newest], api_name="follow")

    def on_newest(ticked: bool, request: gr.Request) -> list:
        view = views.of(request.session_hash)
        with view.lock:
            view.newest = ticked
            view.auto_run = ""
            if not ticked:  # the run shown now stays: it is pinned
                return [gr.skip()] * 3
            view.run_id = None  # chosen afresh: the newest
        shown = sent(actions.snapshot(ctx, view), view, ("follow", "progress", "curves"))
        return [shown["follow"], shown["progress"], shown["curves"]]

    newest.input(
        on_newest,
        inputs=[newest],
        outputs=[follow, progress, curves],
        api_name="follow_newest",
    )

    stream_parts = ("table", "progress", "curves", "follow", "store_version")
    stream_outputs = [queue_table, progress, curves, follow, store_version]

    def refreshed(view: actions.TrainView) -> tuple[bool, dict | None]:
        """Whether something waits or trains, and the parts the page has not got (or None)."""
        snap = actions.snapshot(ctx, view)
        new = snap.news(view)
        if not new:
            return snap.busy, None
        return snap.busy, sent(snap, view, tuple(part for part in stream_parts if part in new))

    async def watch(request: gr.Request) -> AsyncIterator[list]:
        """The page's stream: what changed, when it changes, until the page goes."""
        session = request.session_hash
        view = views.of(session)
        board = ctx.jobs.board
        seen, earliest, due = -1, 0.0, 0.0
        last_sent = time.monotonic()
        try:
            while True:
                now = time.monotonic()
                if (board.version != seen and now >= earliest) or now >= due:
                    seen = board.version
                    try:
                        busy, shown = await asyncio.to_thread(refreshed, view)
                    except Exception:  # a failed read (a locked store) must not end the stream
                        _logger.exception("The Train tab could not refresh; it tries again")
                        with view.lock:  # what was not sent is sent at the next refresh
                            view.sent.clear()
                        busy, shown = True, None
                    earliest = now + MIN_REFRESH_S
                    due = now + (BUSY_REFRESH_S if busy else IDLE_REFRESH_S)
                    if shown is not None:
                        yield [shown.get(name, gr.skip()) for name in stream_parts]
                        last_sent = time.monotonic()
                        continue
                if now - last_sent >= KEEPALIVE_S:
                    yield [gr.skip()] * len(stream_parts)
                    last_sent = now
                await asyncio.sleep(WAKE_S)
        finally:
            views.forget(session)

    page.load(
        watch,
        outputs=stream_outputs,
        api_name="watch",
        api_visibility="undocumented",
        show_progress="hidden",
        concurrency_limit=None,
    )

    def poll(run_id: str = "") -> dict:
        """What the Train tab shows: the queue, and the progress of `run_id` (or the newest).

        Returns:
            `run_id` (the run shown), `queue` (`headers`, `data`), `progress`
            (HTML), `follow` (the "Follow run" choices as `[label, run id]`)
            and `busy` (whether something waits or trains).
        """
        view = actions.TrainView(run_id=run_id or None, newest=not run_id)
        snap = actions.snapshot(ctx, view)
        table = json.loads(snap.table.to_json(orient="split"))
        return {
            "run_id": snap.run_id,
            "queue": {"headers": table["columns"], "data": table["data"]},
            "progress": snap.progress,
            "follow": [list(choice) for choice in snap.choices],
            "busy": snap.busy,
        }

    gr.api(poll, api_name="poll")
    return TrainTab(store_version)
