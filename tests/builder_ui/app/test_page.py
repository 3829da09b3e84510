"""The page keeps Gradio's files in the app's own private folder, removed when the app closes."""

from __future__ import annotations

import asyncio
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import gradio as gr
import pytest
from gradio.state_holder import SessionState

from builder_ui.app.page import build_app
from tests.app.app_server import free_port


def test_gradios_cache_is_private_to_the_app_and_removed_at_close(tmp_path):
    app = build_app(tmp_path / "runs", slots=["CPU"])
    ctx = app.keras_seq_context
    try:
        cache = Path(app.GRADIO_CACHE)
        assert cache == ctx.gradio_cache and cache.is_relative_to(ctx.scratch)
        assert cache != Path(tempfile.gettempdir()) / "gradio"
        assert stat.S_IMODE(ctx.scratch.stat().st_mode) == 0o700  # mkdtemp: this user only
    finally:
        ctx.close()
    assert not ctx.scratch.exists()


def test_no_event_marks_a_layout_block_busy(tmp_path):
    """Gradio's page re-sends each component an event marks busy its status at every later
    event, walking a marked layout block's whole subtree: what made a canvas edit 150 ms
    slower when one event marked the tabs. The page's own config is what its frontend reads
    (`show_progress_on` None: every output)."""
    app = build_app(tmp_path / "runs", slots=["CPU"])
    try:
        config = app.get_config_file()
        for dependency in config["dependencies"]:
            marked = dependency["show_progress_on"]
            if marked is None:
                marked = dependency["outputs"]
            layout = [i for i in marked if isinstance(app.blocks[i], gr.blocks.BlockContext)]
            assert layout == [], dependency["api_name"]
    finally:
        app.keras_seq_context.close()


def test_the_forms_render_runs_in_the_servers_event_loop(tmp_path):
    """A render in a worker thread changed the session's dictionaries of blocks and events
    while the event loop read and extended them for the session's other events: now and then
    "dictionary changed size during iteration" (gradio-app/gradio#9410), and the page's form
    never appeared. Run through Gradio's own `process_api`, the form's render must run in the
    thread that runs the event loop."""
    app = build_app(tmp_path / "runs", slots=["CPU"])
    try:
        (render,) = [fn for fn in app.fns.values() if fn.renderable is not None]
        draw, threads = render.renderable.fn, []

        def recorded(*args, **kwargs):
            threads.append(threading.current_thread())
            return draw(*args, **kwargs)

        render.renderable.fn = recorded

        async def render_once() -> threading.Thread:
            state = SessionState(app)
            (view,) = render.inputs
            state[view._id] = {"key": 1, "fields": [], "problems": {}}
            await app.process_api(render, [None], state=state)
            return threading.current_thread()

        # In a thread of its own: another test's browser (Playwright) may hold this one's loop.
        loop_threads = []
        runner = threading.Thread(target=lambda: loop_threads.append(asyncio.run(render_once())))
        runner.start()
        runner.join(timeout=120)  # a hang guard
        assert loop_threads and threads == loop_threads
    finally:
        app.keras_seq_context.close()


def test_one_event_of_the_page_writes_the_spec_editor(tmp_path):
    """Gradio's page applies the results of different events in no fixed order: when every
    edit wrote the editor, a field edited right after another was now and then shown under
    the other's text (and queued so by the Train tab). Only `show_spec`, which reads the
    newest spec when it runs, one run at a time, may write it; the scripts' hidden buttons
    (`/set_field`, `/load_preset`) return the text instead."""
    app = build_app(tmp_path / "runs", slots=["CPU"])
    try:
        config = app.get_config_file()
        (editor,) = [
            c["id"] for c in config["components"] if c["props"].get("elem_id") == "spec-yaml"
        ]
        writers = {d["api_name"] for d in config["dependencies"] if editor in d["outputs"]}
        assert writers == {"show_spec", "set_field", "load_preset"}
        (show,) = [d for d in config["dependencies"] if d["api_name"] == "show_spec"]
        assert show["trigger_mode"] == "always_last"
    finally:
        app.keras_seq_context.close()


# Two threads importing keras_seq and one of its modules at once leave each a partly
# initialised module (Python's per-module import locks): what the app's background warm-up
# did to the first request that loaded a keras_seq module.
RACE = """
import sys, threading
from builder_ui.app import page

failures = []
def request():  # what a handler does on first use
    try:
        from keras_seq.tasks.base import TaskData  # noqa: F401
        import keras_seq.metrics.by_length  # noqa: F401
    except ImportError as error:
        failures.append(repr(error))

app, url = page.start(sys.argv[1], port=int(sys.argv[2]), slots=["CPU"])
try:
    handlers = [threading.Thread(target=request) for _ in range(2)]
    for thread in handlers:
        thread.start()
    for thread in handlers:
        thread.join()
    print("failures:", failures)
finally:
    page.stop(app)
"""


@pytest.mark.large
def test_keras_seq_is_loaded_before_the_app_serves_so_no_request_races_its_import(tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", RACE, str(tmp_path / "runs"), str(free_port())],
        capture_output=True,
        text=True,
        timeout=300,  # a hang guard
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "failures: []" in result.stdout.splitlines(), result.stdout


def test_a_port_in_use_is_named_before_the_app_is_built(tmp_path, monkeypatch):
    import socket

    from builder_ui.app import page, serving

    def built(*args, **kwargs):
        raise AssertionError("the app was built for a port in use")

    monkeypatch.setattr(page, "build_app", built)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(serving.ListenError) as caught:
            page.launch(host="127.0.0.1", port=port, runs_dir=tmp_path / "runs")
    assert str(caught.value) == (
        f"port {port} on 127.0.0.1 is in use by another program; choose another with --port"
    )
    serving.check_listen("127.0.0.1", port)  # free once closed
