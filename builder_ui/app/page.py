"""The Gradio model builder: Build → Train → Compare → Inspect → Export, over the engine.

    keras-seq ui [--host 127.0.0.1] [--port 7860] [--runs DIR] [--auth USER:PASS]
                 [--data-dir DIR ...] [--max-upload-mb 10] [--trusted-proxy ADDR ...]
                 [--no-warm-up]

One page, one tab per step (each laid out in its `builder_ui/app/tabs/`
module, wired to the others here); every event calls `builder_ui.app.actions`,
which holds all that the app does, and has an explicit `api_name`, so
`gradio_client` can drive the app as a person would. The run store and the
training queue are shared by every browser session; the spec being edited
belongs to each session.

Serving: loopback unless the CLI was given `--auth`; never a share link;
a data file limited to `uploads.MAX_UPLOAD_BYTES` (`--max-upload-mb`), a whole
request to that and its form's framing; data read only from the uploads and
`--data-dir` folders (`builder_ui.app.data_paths`); failed logins throttled per
TCP peer (or per client a `--trusted-proxy` forwards);
no `allowed_paths`, so the
server sends only what the app itself returns (downloads are copied into a
temporary directory first); a Host check without `--auth` and security
headers on every answer (`builder_ui.app.serving`). Keras and keras_seq load with this module
(the first spec check builds a model); `keras-seq ui` hides the GPUs from the server process
before they do, so that only the training processes take GPU memory.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import gradio as gr

# Keras and every keras_seq module load with this module, before the server takes a request
# (the first model summary needs them): loaded in a background thread instead, they raced the
# handlers' own imports of keras_seq modules, and Python's per-module import locks left each
# thread a partly initialised module ("cannot import name 'TaskData' from partially
# initialized module 'keras_seq.tasks.base'").
import keras_seq  # noqa: F401
from builder_ui.app import actions, serving, uploads
from builder_ui.app.tabs.about import about_tab
from builder_ui.app.tabs.build import build_tab
from builder_ui.app.tabs.compare import LEAVE_JS as LEAVE_COMPARE_JS
from builder_ui.app.tabs.compare import compare_tab
from builder_ui.app.tabs.export import export_tab
from builder_ui.app.tabs.inspect import inspect_tab
from builder_ui.app.tabs.lab import lab_tab
from builder_ui.app.tabs.train import train_tab

TITLE = "keras_seq builder"
MAX_FILE_SIZE = uploads.MAX_UPLOAD_BYTES
# Events run at once, across sessions (the queue trains one run per device anyway).
CONCURRENCY = 4

CSS = """
.ks-error p { color: #b91c1c; margin: 0; font-size: 0.9em; }
#spec-errors p, #spec-errors li { font-size: 0.95em; }
/* Text at WCAG AA contrast (4.5:1 on white; axe-core checks the Build tab): Gradio's grey help
   text and footer, the YAML editor's line numbers and its token colours. */
.info-text, .info-text code, footer .show-api, footer .built-with, footer .settings {
  color: #52525b !important;
}
#spec-yaml .cm-gutterElement { color: #52525b; }
/* CodeMirror's generated classes for Gradio's YAML colours (#d08770, #88c0d0, #5e81ac): should
   Gradio rename them, the Build tab's axe-core test names the new ones. */
#spec-yaml .ͼ2l { color: #9a4a2f; }
#spec-yaml .ͼ1z { color: #2f6f7e; }
#spec-yaml .ͼ1q { color: #3e5f8a; }
"""


def build_app(
    runs_dir: str | Path,
    *,
    slots: list[str] | None = None,
    data_dirs: Sequence[str | Path] = (),
    max_upload_bytes: int = MAX_FILE_SIZE,
) -> gr.Blocks:
    """Build the app over the run store in `runs_dir` (made if missing).

    Args:
        runs_dir: The run store's directory.
        slots: Device slots of the training queue (default: one per GPU, or the CPU).
        data_dirs: Folders a spec may read data from, besides the uploads.
        max_upload_bytes: The largest data file an upload may be.

    Returns:
        The `gr.Blocks`; its `keras_seq_context` attribute is the `actions.AppContext`
        (close it after the server stops).
    """
    ctx = actions.AppContext(
        runs_dir, slots=slots, data_dirs=data_dirs, max_upload_bytes=max_upload_bytes
    )
    # Gradio reads its cache folder from the environment when the page and the server are made.
    os.environ["GRADIO_TEMP_DIR"] = str(ctx.gradio_cache)
    with gr.Blocks(title=TITLE, analytics_enabled=False) as app:
        gr.Markdown(f"# {TITLE}", elem_id="title")
        gr.Markdown(
            f"Runs are kept in `{ctx.runs_dir}` (SQLite, shared with `keras-seq runs`).",
            elem_id="runs-dir",
        )
        with gr.Tabs(elem_id="tabs") as tabs:
            with gr.Tab("Build", id="build", elem_id="tab-build") as build_page:
                build = build_tab(ctx, app)
            with gr.Tab("Train", id="train", elem_id="tab-train") as train_page:
                train = train_tab(ctx, build.editor, app)
            with gr.Tab("Compare", id="compare", elem_id="tab-compare") as compare:
                compare_tab(ctx, train.store_version, compare, app, tabs)
            with gr.Tab("Inspect", id="inspect", elem_id="tab-inspect") as inspect:
                inspect_tab(ctx, inspect)
            with gr.Tab("Export", id="export", elem_id="tab-export") as export:
                export_tab(ctx, export)
            with gr.Tab("Lab", id="lab", elem_id="tab-lab") as lab:
                lab_tab(ctx, lab)
            with gr.Tab("About", id="about", elem_id="tab-about") as about:
                about_tab(about)
        # Another tab chosen: a reload opens the page's first tab, not Compare's view.
        for other in (build_page, train_page, inspect, export, lab, about):
            other.select(None, None, None, js=LEAVE_COMPARE_JS)
    _progress_on_components(app)
    _renders_on_the_event_loop(app)
    app.queue(default_concurrency_limit=CONCURRENCY)
    app.keras_seq_context = ctx
    return app


def _progress_on_components(app: gr.Blocks) -> None:
    """Register each event's progress on its output components, never on layout blocks.

    Gradio's page re-sends every registered component its loading status after each event
    message, walking the whole subtree of a registered layout block and copying every value
    in it: one event that output the `gr.Tabs` cost every later event of the page the whole
    page copied (150 ms of each canvas edit). Hidden progress keeps Gradio's own default.
    """
    for fn in app.fns.values():
        if fn.show_progress_on is None and any(_layout(block) for block in fn.outputs):
            fn.show_progress_on = [block for block in fn.outputs if not _layout(block)]


def _layout(block: gr.blocks.Block) -> bool:
    return isinstance(block, gr.blocks.BlockContext)


def _renders_on_the_event_loop(app: gr.Blocks) -> None:
    """Run every `gr.render` in the server's event loop instead of a worker thread.

    A render adds its components and events to the session's dictionaries of blocks and
    functions, which Gradio's event loop reads and extends for the session's other events
    at the same time (an input that an earlier update replaced is added anew at each event):
    in a worker thread, a render failed now and then with "dictionary changed size during
    iteration" (gradio-app/gradio#9410, #9991), and the page's form never appeared, or an
    event beside it failed and an edit was lost. In the loop nothing runs beside it. A render
    must therefore be quick: the form's only lays out fields made in a worker thread before.
    """
    for fn in app.fns.values():
        if fn.renderable is not None:
            fn.fn = _in_the_event_loop(fn.fn)


def _in_the_event_loop(draw: Callable[..., Any]) -> Callable[..., Any]:
    """`draw` as a coroutine function, which Gradio awaits in its loop (a plain function it
    sends to a worker thread)."""

    async def drawn(*args: Any, **kwargs: Any) -> Any:
        return draw(*args, **kwargs)

    return drawn


def start(
    runs_dir: str | Path,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    auth: tuple[str, str] | None = None,
    slots: list[str] | None = None,
    data_dirs: Sequence[str | Path] = (),
    max_upload_bytes: int = MAX_FILE_SIZE,
    trusted_proxies: Sequence[str] = (),
    warm_up: bool = True,
) -> tuple[gr.Blocks, str]:
    """Build the app and serve it in a background thread; returns `(app, local URL)`.

    Stop it with `stop(app)`. The GPUs are left to the training processes when
    `engine.slots.keep_gpus_for_training()` ran before this module was imported (it loads
    Keras; `keras-seq ui` does so): summaries and inspections then run on the CPU.
    `X-Forwarded-For` is believed only from `trusted_proxies` (addresses or
    networks; `serving.trusted_proxies`). With `warm_up` the training processes
    start now, so the first run starts at once; without, when the first run is
    queued (a quicker start for browsing results).
    """
    app = build_app(runs_dir, slots=slots, data_dirs=data_dirs, max_upload_bytes=max_upload_bytes)
    if warm_up:  # the training processes load Keras meanwhile, for the first run
        app.keras_seq_context.jobs.warm_up()
    cap = serving.request_cap(max_upload_bytes)
    with serving.trusted_proxies(trusted_proxies):
        _, local_url, _ = app.launch(
            server_name=host,
            server_port=port,
            share=False,
            auth=auth,
            show_error=True,
            max_file_size=max_upload_bytes,
            ssr_mode=False,
            mcp_server=False,
            enable_monitoring=False,
            run_history=False,
            quiet=True,
            prevent_thread_lock=True,
            css=CSS,
            app_kwargs={"middleware": serving.middleware(host, auth, max_request_bytes=cap)},
        )
    return app, local_url


def stop(app: gr.Blocks) -> None:
    """Close the server, cancel the queued runs and stop the one training."""
    try:
        app.close()
    finally:
        ctx = getattr(app, "keras_seq_context", None)
        if ctx is not None:
            ctx.close()


def launch(
    host: str,
    port: int,
    runs_dir: str | Path,
    auth: tuple[str, str] | None = None,
    data_dirs: Sequence[str | Path] = (),
    max_upload_bytes: int = MAX_FILE_SIZE,
    trusted_proxies: Sequence[str] = (),
    warm_up: bool = True,
) -> None:
    """Serve the app on `host:port` (never through a public share link); block until stopped.

    Ctrl+C or SIGTERM (also while starting) interrupts the run training at
    once (it ends `interrupted`, resumable: the Train tab offers it when the app
    starts again), closes the server, cancels the queued runs, and returns.

    Raises:
        serving.ListenError: The port is in use, or the host cannot be listened
            on: checked first, before the app is built.
    """
    serving.check_listen(host, port)
    app = None

    def interrupt(signum: int, frame: object) -> None:
        # The run in flight stops now, not after the server has closed (seconds later).
        ctx = getattr(app, "keras_seq_context", None)
        if ctx is not None:
            ctx.jobs.interrupt_training()
        _interrupt(signum, frame)

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, interrupt)
        signal.signal(signal.SIGINT, interrupt)
    try:
        app, local_url = start(
            runs_dir,
            host=host,
            port=port,
            auth=auth,
            data_dirs=data_dirs,
            max_upload_bytes=max_upload_bytes,
            trusted_proxies=trusted_proxies,
            warm_up=warm_up,
        )
        print(f"{TITLE} running on {local_url} (Ctrl+C to stop)", flush=True)
        app.block_thread()  # returns on KeyboardInterrupt, after closing the server
    except KeyboardInterrupt:
        if app is not None:
            app.close()
    finally:
        ctx = getattr(app, "keras_seq_context", None)
        if ctx is not None:
            ctx.close()


def _interrupt(signum: int, frame: object) -> None:
    """Turn SIGTERM (and Ctrl+C) into KeyboardInterrupt so that the server shuts down cleanly."""
    raise KeyboardInterrupt
