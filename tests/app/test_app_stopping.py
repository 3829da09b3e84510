"""Stopping `keras-seq ui` mid-run loses no training: the run is `interrupted`, keeps its
epochs and checkpoint, and the restarted app offers to resume it on the Train tab.

Real servers (subprocesses), real signals (SIGTERM as a service manager sends, SIGKILL as
the kernel does), a real run store and a real browser (Playwright on Debian's Chromium) for
the restarted page.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from builder_ui.engine import processes
from builder_ui.engine.store import RunStore
from tests.app.app_server import Server
from tests.app.browser import needs_chromium

WAIT_S = 180  # hang guard only: a loaded 2-core machine is far slower than a quiet one

pytestmark = [
    pytest.mark.large,
    pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="SIGKILL is POSIX"),
]

# 15 batches an epoch of 5 one-hot steps, 40 epochs (about 6 s): long enough to stop it
# mid-run, short enough to resume to the end.
FIELDS = [
    ("task.lag", "5"),
    ("task.n", "600"),
    ("task.num_distractors", "3"),
    ("model.encoder.units", "4"),
    ("train.epochs", "40"),
    ("train.batch_size", "32"),
]
EPOCHS = 40


def wait_until(condition, what: str, server: Server | None = None):
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        if server is not None and server.process.poll() is not None:
            pytest.fail(f"the server ended early:\n{server.log()[-3000:]}")
        time.sleep(0.1)
    pytest.fail(f"{what} did not happen within {WAIT_S} s")


def queue_long_run(server: Server) -> str:
    """Queue the spec through the API; return the run id once it has recorded 2 epochs."""
    from gradio_client import Client

    client = Client(server.url, verbose=False)
    text = client.predict("vanilla_rnn", api_name="/load_preset")[0]
    for path, value in FIELDS:
        text, errors, *_ = client.predict(text, path, value, api_name="/set_field")
    assert "Valid spec" in errors, errors
    message, *_ = client.predict(text, api_name="/queue")
    assert message.startswith("✓ Queued run "), message
    run_id = message.split()[3]
    with RunStore(server.runs, recover=False) as store:
        wait_until(lambda: store.get(run_id).epochs_done >= 2, "two recorded epochs", server)
    return run_id


def assert_interrupted_with_checkpoint(runs: Path, run_id: str):
    with RunStore(runs) as store:
        record = store.get(run_id)
        backup = store.artifact_dir(run_id) / "backup"
    assert record.status == "interrupted", record.error
    assert 2 <= record.epochs_done < EPOCHS
    assert "resume" in record.error
    assert backup.is_dir() and (backup / "training_metadata.json").is_file()
    return record


@pytest.fixture
def servers(tmp_path) -> Iterator[list[Server]]:
    started: list[Server] = []
    yield started
    for server in started:
        server.stop()


@needs_chromium
def test_sigterm_to_the_app_interrupts_the_run_and_the_restarted_app_resumes_it(
    tmp_path, servers, browser
):
    from playwright.sync_api import expect

    first = Server(tmp_path)
    servers.append(first)
    first.wait_until_up()
    run_id = queue_long_run(first)
    assert first.stop() == 0  # SIGTERM: a clean stop
    stopped = assert_interrupted_with_checkpoint(first.runs, run_id)

    again = Server(tmp_path)  # the same run store
    servers.append(again)
    again.wait_until_up()
    context = browser.new_context(viewport={"width": 1400, "height": 1100})
    try:
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.goto(again.url)
        page.get_by_role("tab", name="Train").click()
        offer = page.locator("#resume-offer")
        expect(offer).to_contain_text(run_id)
        expect(offer).to_contain_text(f"{stopped.epochs_done} of {EPOCHS} epochs")
        page.locator("#resume-button").click()  # the newest interrupted run is chosen
        message = page.locator("#train-message")
        expect(message).to_contain_text(f"Queued run {run_id}", timeout=WAIT_S * 1000)
        assert re.search(f"from epoch {stopped.epochs_done + 1}", message.inner_text())
        done = page.locator(f'#ks-progress[data-run="{run_id}"][data-status="done"]')
        expect(done).to_be_visible(timeout=WAIT_S * 1000)
    finally:
        context.close()
    with RunStore(again.runs) as store:
        resumed = store.get(run_id)
    assert resumed.status == "done"
    assert [row.epoch for row in resumed.history] == list(range(1, EPOCHS + 1))
    # The epochs finished before the stop are the ones recorded then, untouched.
    assert resumed.history[: stopped.epochs_done] == stopped.history


def test_a_killed_app_leaves_its_run_interrupted_not_failed(tmp_path, servers):
    server = Server(tmp_path)
    servers.append(server)
    server.wait_until_up()
    run_id = queue_long_run(server)
    with RunStore(server.runs, recover=False) as store:
        trainer = store.get(run_id).pid  # the slot's training process
    os.kill(server.process.pid, signal.SIGKILL)
    server.process.wait(timeout=30)
    try:
        # The training process sees the app gone, stops the run resumable, and exits.
        wait_until(lambda: not processes.alive(trainer), "the training process ending")
    finally:
        if processes.alive(trainer):
            os.kill(trainer, signal.SIGKILL)
    assert_interrupted_with_checkpoint(server.runs, run_id)
