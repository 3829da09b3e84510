"""A person's clicks in a real browser: Playwright drives Debian's Chromium against `keras-seq ui`.

An invalid hyperparameter, bad uploads and two sessions training at once (one on another
Keras backend, chosen in the form), each against a real server (a subprocess) and a real run
store; Build → Train → Compare as a person clicks it is the walk-through
(`test_app_walkthrough.py`). The helpers here serve the other browser tests too. Screenshots
of each step are saved under `tests/artifacts/screenshots/` (or `$KERAS_SEQ_SCREENSHOTS`),
kept with the test output. No browser is downloaded: the test uses the Chromium that `make
browser` installs from Debian (`$KERAS_SEQ_CHROMIUM`, default `/usr/bin/chromium`) and is
skipped, saying so, when it is missing.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from builder_ui.engine.store import RunStore
from tests.app.app_server import Server
from tests.app.browser import UI_TIMEOUT_MS, needs_chromium

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(
    os.environ.get("KERAS_SEQ_SCREENSHOTS", ROOT / "tests" / "artifacts" / "screenshots")
)
TRAIN_TIMEOUT_MS = 120_000

pytestmark = [pytest.mark.large, needs_chromium]

# 96 training and 24 validation sequences of 5 one-hot steps, one epoch: about a second.
TINY_FIELDS = {
    "task-lag": "5",
    "task-n": "120",
    "task-num-distractors": "3",
    "model-encoder-units": "4",
    "train-epochs": "1",
}


@pytest.fixture
def open_page(browser, server):
    """Open the app in a new browser session (its own cookies and state)."""
    contexts = []

    def open_one():
        context = browser.new_context(viewport={"width": 1400, "height": 1100})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.goto(server.url)
        page.wait_for_selector("#field-task-lag input")
        return page

    yield open_one
    for context in contexts:
        context.close()


def screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"{name}.png", full_page=True)


def fill_field(page, field: str, value: str) -> None:
    """Type into a form field as a person does, then leave it."""
    box = page.locator(f"#field-{field} input, #field-{field} textarea").first
    if box.get_attribute("type") == "number":
        box.fill(value)  # one input event, as a number spinner sends
    else:
        box.click()
        box.press("Control+a")
        page.keyboard.type(value)  # a text box reports each key
    box.press("Tab")


def build_tiny_spec(page, name: str) -> None:
    from playwright.sync_api import expect

    fill_field(page, "name", name)
    for field, value in TINY_FIELDS.items():
        fill_field(page, field, value)
    expect(page.locator("#spec-yaml")).to_contain_text(f"name: {name}")
    expect(page.locator("#spec-yaml")).to_contain_text("lag: 5")
    expect(page.locator("#spec-yaml")).to_contain_text("epochs: 1")
    expect(page.locator("#spec-errors")).to_contain_text("Valid spec")


def queue_and_wait(page) -> str:
    """Click Queue on the Train tab; return the run id once its progress says done."""
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Train").click()
    page.locator("#queue-button").click()
    message = page.locator("#train-message")
    expect(message).to_contain_text("Queued run", timeout=60_000)
    run_id = re.search(r"Queued run (\S+)", message.inner_text()).group(1)
    done = page.locator(f'#ks-progress[data-run="{run_id}"][data-status="done"]')
    expect(done).to_be_visible(timeout=TRAIN_TIMEOUT_MS)
    return run_id


def runs_in(server: Server) -> list[str]:
    with RunStore(server.runs) as store:
        return [record.id for record in store.list_runs()]


def test_an_invalid_hyperparameter_shows_an_error_beside_the_field(open_page, server):
    from playwright.sync_api import expect

    page = open_page()
    before = runs_in(server)
    fill_field(page, "model-encoder-units", "-3")
    expect(page.locator("#error-model-encoder-units")).to_contain_text(
        "expected an integer ≥ 1, got -3"
    )
    expect(page.locator("#spec-errors")).to_contain_text("model.encoder.units")
    expect(page.locator("#spec-yaml")).to_contain_text("units: -3")
    screenshot(page, "4-invalid-field")

    page.get_by_role("tab", name="Train").click()
    page.locator("#queue-button").click()
    expect(page.locator("#train-message")).to_contain_text("Nothing was queued")
    expect(page.locator("#train-message")).to_contain_text("model.encoder.units")
    screenshot(page, "5-invalid-not-queued")
    assert runs_in(server) == before


def test_bad_uploads_show_a_message_in_the_page_and_store_nothing(open_page, server, tmp_path):
    from playwright.sync_api import expect

    page = open_page()
    page.locator("#upload-panel").click()
    upload = page.locator("#upload-file input[type=file]")
    status = page.locator("#upload-status")

    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,1,2\nb,3,4\nc,5\n")
    upload.set_input_files(ragged)
    expect(status).to_contain_text("ragged.csv, line 3: ragged row", timeout=60_000)
    screenshot(page, "6-upload-ragged")

    page.locator("#upload-file button[aria-label='Clear']").first.click()
    expect(status).to_have_text("")
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"a,1,2\nb,\xe9,2\n")
    upload.set_input_files(latin)
    expect(status).to_contain_text("latin.csv, line 2: not UTF-8 text")

    page.locator("#upload-file button[aria-label='Clear']").first.click()
    big = tmp_path / "big.csv"
    with big.open("wb") as handle:
        handle.write(b"a,1\n" * (3 * 2**20))  # 12 MiB, over the 10 MiB limit
    upload.set_input_files(big)
    expect(page.get_by_text("exceed the maximum allowed size")).to_be_visible()
    screenshot(page, "7-upload-too-large")
    assert not (server.runs / "_uploads").exists()


def test_two_sessions_training_at_once_both_finish_and_both_appear(open_page, server):
    from playwright.sync_api import expect

    first, second = open_page(), open_page()
    build_tiny_spec(first, "session-a")
    build_tiny_spec(second, "session-b")
    # The second asks for another Keras backend in the form: its run gets a process on it.
    second.locator("#field-train-backend input").click()
    second.get_by_role("option", name="jax").first.click()
    expect(second.locator("#spec-yaml")).to_contain_text("backend: jax")
    for page in (first, second):
        page.get_by_role("tab", name="Train").click()
    started = time.monotonic()
    first.locator("#queue-button").click()
    second.locator("#queue-button").click()
    ids = []
    for page in (first, second):
        message = page.locator("#train-message")
        expect(message).to_contain_text("Queued run", timeout=60_000)
        ids.append(re.search(r"Queued run (\S+)", message.inner_text()).group(1))
    for page, run_id in zip((first, second), ids, strict=True):
        done = page.locator(f'#ks-progress[data-run="{run_id}"][data-status="done"]')
        expect(done).to_be_visible(timeout=TRAIN_TIMEOUT_MS)
    assert time.monotonic() - started < TRAIN_TIMEOUT_MS / 1000
    screenshot(second, "8-second-session-train")

    for page in (first, second):
        page.get_by_role("tab", name="Compare").click()
        for run_id, name in zip(ids, ("session-a", "session-b"), strict=True):
            row = page.locator("#results-table").get_by_role("row").filter(has_text=run_id)
            expect(row).to_contain_text(name, timeout=UI_TIMEOUT_MS)
            expect(row).to_contain_text("done")
    screenshot(first, "9-both-sessions-compare")
    with RunStore(server.runs) as store:
        records = store.list_runs(ids=ids)
    assert [r.status for r in records] == ["done", "done"]
    by_name = {record.name: record for record in records}
    assert by_name["session-a"].backend == os.environ.get("KERAS_BACKEND", "tensorflow")
    assert by_name["session-b"].backend == "jax"
    # One slot on this machine: the two runs did not train at the same time.
    later, earlier = sorted(records, key=lambda r: r.started, reverse=True)
    assert later.started >= earlier.finished
