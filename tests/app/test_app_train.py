"""The Train tab in a real browser: live curves for every run, reloads, cancelling, pushed updates.

Playwright drives Debian's Chromium against `keras-seq ui` (a subprocess) that trains tiny
runs in its real queue. Every page's console is collected: a test fails on a console error or
on Vega's "y-scale's zero is dropped" warning (the sign of a chart fed strings). Screenshots
go to `$KERAS_SEQ_SCREENSHOTS` (default `tests/artifacts/screenshots/`).
"""

from __future__ import annotations

import re
import time

import pytest

from builder_ui.engine.store import RunStore
from tests.app.browser import Watched, needs_chromium
from tests.app.test_app_browser import (
    TRAIN_TIMEOUT_MS,
    UI_TIMEOUT_MS,
    fill_field,
    screenshot,
)

pytestmark = [pytest.mark.large, needs_chromium]

# How long an idle page is watched for requests: a 1 s poll would send about three.
IDLE_WATCH_S = 3.5


@pytest.fixture
def open_train(browser, server):
    """Open the app's Train tab in a new browser session (its own cookies and state)."""
    contexts = []

    def open_one() -> Watched:
        context = browser.new_context(viewport={"width": 1400, "height": 1100})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(UI_TIMEOUT_MS)
        watched = Watched(page)
        page.goto(server.url)
        page.wait_for_selector("#field-task-lag input")
        return watched

    yield open_one
    for context in contexts:
        context.close()


def queue_tiny(page, name: str, epochs: int, n: int = 120) -> str:
    """Build a tiny classifier with `epochs` on the Build tab, queue it; return its run id."""
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Build").click()
    fields = {
        "name": name,
        "task-lag": "5",
        "task-n": str(n),
        "task-num-distractors": "3",
        "model-encoder-units": "4",
        "train-epochs": str(epochs),
    }
    for field, value in fields.items():
        fill_field(page, field, value)
    expect(page.locator("#spec-yaml")).to_contain_text(f"name: {name}")
    # The whole number: "epochs: 2" is also in the "epochs: 200" of the spec before this one.
    expect(page.locator("#spec-yaml")).to_contain_text(re.compile(rf"epochs: {epochs}(?!\d)"))
    expect(page.locator("#spec-errors")).to_contain_text("Valid spec")
    return queue_spec(page)


def queue_spec(page) -> str:
    """Queue the Build tab's spec from the Train tab; return the new run's id."""
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Train").click()
    message = page.locator("#train-message")
    # The runs this page queued before: the message may still name the last of them after the
    # click (a text read before the click can be a passing state, not the old message).
    queued = page.__dict__.setdefault("_queued_runs", [])
    page.locator("#queue-button").click()
    newer = "".join(f"(?!{re.escape(run_id)}\\b)" for run_id in queued)
    expect(message).to_contain_text(re.compile(rf"Queued run {newer}\S+"), timeout=60_000)
    (run_id,) = re.findall(rf"Queued run {newer}(\S+)", message.inner_text())
    queued.append(run_id)
    return run_id


def progress_of(page, run_id: str, status: str):
    return page.locator(f'#ks-progress[data-run="{run_id}"][data-status="{status}"]')


def live_epoch(page, run_id: str) -> int:
    """The epoch the progress line of a training run shows now (once it shows one)."""
    from playwright.sync_api import expect

    live = progress_of(page, run_id, "running")
    expect(live).to_contain_text(re.compile(r"epoch \d+/"), timeout=TRAIN_TIMEOUT_MS)
    text = live.inner_text()
    return int(re.search(r"epoch (\d+)/", text).group(1))


def follow_options(page) -> list[str]:
    """The labels the "Follow run" dropdown offers (opened, read, closed)."""
    page.locator("#follow-run input").click()
    options = page.get_by_role("option")
    options.first.wait_for()
    labels = options.all_inner_texts()
    page.keyboard.press("Escape")
    page.locator("#follow-run input").blur()
    return labels


def test_the_curves_draw_for_every_run_with_a_legend_and_no_console_error(open_train):
    """The second run's chart draws as the first did (the bug: only the first one drew)."""
    from playwright.sync_api import expect

    watched = open_train()
    page = watched.page
    sources = []
    for number in (1, 2):
        run_id = queue_tiny(page, f"curves-{number}", epochs=3)
        expect(progress_of(page, run_id, "done")).to_be_visible(timeout=TRAIN_TIMEOUT_MS)
        chart = page.locator("#run-curves img")
        expect(chart).to_be_visible()
        box = chart.bounding_box()
        assert box["width"] > 300 and box["height"] > 150
        # The image is the figure drawn for this run: it loaded (not broken).
        assert chart.evaluate("img => img.complete && img.naturalWidth > 0")
        sources.append(chart.get_attribute("src"))
        screenshot(page, f"train-curves-{number}")
    assert watched.problems() == []
    assert watched.failed == []  # no request aborted (the 1 s timer's ticks were)
    assert sources[0] != sources[1]  # each run drawn from its own data


def test_a_reload_or_a_new_tab_lists_and_follows_the_training_run(open_train, server):
    """After a reload, and in a second tab, the training run is listed, followed and live;
    cancelled, it shows the share it trained."""
    from playwright.sync_api import expect

    watched = open_train()
    page = watched.page
    long_run = queue_tiny(page, "long-run", epochs=200, n=400)
    expect(progress_of(page, long_run, "running")).to_be_visible(timeout=TRAIN_TIMEOUT_MS)
    # The progress moves on with no request from the page: it is pushed.
    watched.joins.clear()
    first = live_epoch(page, long_run)
    expect(progress_of(page, long_run, "running")).not_to_contain_text(
        f"epoch {first}/200", timeout=TRAIN_TIMEOUT_MS
    )
    assert watched.joins == [] and watched.failed == [], (watched.join_events, watched.failed)
    watched.reload()
    page.get_by_role("tab", name="Train").click()
    live = progress_of(page, long_run, "running")
    expect(live).to_be_visible(timeout=UI_TIMEOUT_MS)
    expect(live).to_contain_text(re.compile(r"epoch \d+/200, batch \d+/\d+"))
    expect(live).to_contain_text(re.compile(r"[\d.,]+ batches/s"))
    expect(live).to_contain_text(re.compile(r"about .* left"))
    assert any(long_run in label for label in follow_options(page))
    screenshot(page, "train-after-reload")

    second = open_train().page
    second.get_by_role("tab", name="Train").click()
    expect(progress_of(second, long_run, "running")).to_be_visible(timeout=UI_TIMEOUT_MS)
    assert any(long_run in label for label in follow_options(second))

    # Queued while the long run trains, the next run is followed once the long one ends.
    short_run = queue_tiny(page, "after-long", epochs=2)
    expect(progress_of(page, long_run, "running")).to_be_visible()
    page.locator("#cancel-button").click()
    expect(page.locator("#train-message")).to_contain_text("stops after its current batch")
    expect(progress_of(page, short_run, "done")).to_be_visible(timeout=TRAIN_TIMEOUT_MS)
    expect(progress_of(second, short_run, "done")).to_be_visible(timeout=UI_TIMEOUT_MS)
    # "Follow run" names the run followed (the progress line's).
    expect(second.locator("#follow-run input")).to_have_value(re.compile(short_run))
    screenshot(second, "train-second-tab-followed")

    # The cancelled run shows the share it trained, in the queue and followed again: not 100%.
    with RunStore(server.runs) as store:
        record = store.get(long_run)
    assert record.status == "cancelled" and 1 <= record.epochs_done < 200
    row = page.locator("#queue-table").get_by_role("row").filter(has_text=long_run)
    expect(row).to_contain_text("cancelled")
    expect(row).not_to_contain_text("100%")
    expect(row).to_contain_text(re.compile(rf"(?<!\d){record.epochs_done}/200"))  # not the next
    page.locator("#follow-run input").click()
    page.get_by_role("option", name=re.compile(long_run)).first.click()
    cancelled = progress_of(page, long_run, "cancelled")
    expect(cancelled).to_contain_text(f"{record.epochs_done} of 200 epochs")
    width = cancelled.locator("div[style*='width:']").first.get_attribute("style")
    assert "width:100" not in width
    screenshot(page, "train-cancelled")
    assert watched.problems() == []


def test_an_idle_page_sends_no_requests_and_aborts_none(open_train):
    """With nothing training the Train tab does not poll (the bug: a 1 s timer per tab)."""
    watched = open_train()
    page = watched.page
    page.get_by_role("tab", name="Train").click()
    page.wait_for_selector("#ks-progress")
    time.sleep(2.0)  # the first refresh after loading, then it stops
    watched.joins.clear()
    watched.failed.clear()
    time.sleep(IDLE_WATCH_S)
    assert watched.joins == [] and watched.failed == [], (watched.join_events, watched.failed)
    assert watched.problems() == []


# Seed 6 makes TPE's first (random start-up) choice the learning rate that learns (a
# seeded sampler: the same order on every machine); the two weak ones come after it and ASHA
# stops both at epoch 1, as in the engine's ASHA test (tests/builder_ui/engine/test_search.py).
SEARCH_YAML = """\
version: 2
name: tpe-asha
task: {type: long_lag, lag: 5, n: 400, num_distractors: 4}
model:
  type: sequence_classifier
  encoder: {type: rnn, cell: gru, units: 4}
train: {epochs: 3, batch_size: 16, learning_rate: 0.01, seed: 2}
sweep:
  method: bayes
  num_trials: 3
  seed: 6
  metric: val_loss
  parameters:
    train.learning_rate: [0.03, 1.0e-06, 1.0e-07]
  scheduler: {type: asha, grace_period: 1, reduction_factor: 3}
"""


def paste_spec(page, text: str) -> None:
    """Replace the Build tab's YAML with `text`, as pasted, and wait for it to be valid."""
    from playwright.sync_api import expect

    page.locator("#spec-yaml .cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text)
    expect(page.locator("#spec-errors")).to_contain_text("Valid spec")


def test_a_tpe_search_with_asha_queued_from_the_train_tab_shows_its_pruned_trials(
    open_train, server
):
    """A search typed as YAML, queued with one click: trials chosen one by one, two pruned."""
    pytest.importorskip("optuna")
    from playwright.sync_api import expect

    watched = open_train()
    page = watched.page
    paste_spec(page, SEARCH_YAML)

    page.get_by_role("tab", name="Train").click()
    message = page.locator("#train-message")
    page.locator("#queue-button").click()
    expect(message).to_contain_text("Queued search", timeout=60_000)
    expect(message).to_contain_text("TPE chooses 3 trials on val_loss")
    first = re.search(r"the first (\S+?);", message.inner_text()).group(1)
    progress = page.locator("#run-progress")
    expect(progress).to_contain_text(re.compile(r"search \S+: 1 of 3 trials chosen"))
    screenshot(page, "train-search-1-first-trial")

    # The first trial completes; each next one is chosen as the one before ends.
    table = page.locator("#queue-table")
    expect(table.get_by_role("row").filter(has_text="pruned")).to_have_count(
        2, timeout=TRAIN_TIMEOUT_MS
    )
    expect(table.get_by_role("row").filter(has_text=first)).to_contain_text("done")
    # "Follow the newest run" moved on to the trials the search chose after the first.
    expect(page.locator("#follow-run input")).to_have_value(re.compile(r"tpe-asha-2 · pruned"))
    screenshot(page, "train-search-2-pruned")
    with RunStore(server.runs, recover=False) as store:
        searched = [r for r in store.list_runs() if r.name.startswith("tpe-asha")]
    assert sorted(r.status for r in searched) == ["done", "pruned", "pruned"]
    pruned = {r.id for r in searched if r.status == "pruned"}

    # Compare lists them, and its status filter picks the pruned ones.
    page.get_by_role("tab", name="Compare").click()
    results = page.locator("#results-table")
    for run_id in pruned | {first}:
        expect(results.get_by_role("row").filter(has_text=run_id)).to_be_visible()
    page.locator("#results-status").get_by_label("pruned").check()
    for run_id in pruned:
        expect(results.get_by_role("row").filter(has_text=run_id)).to_be_visible()
    expect(results.get_by_role("row").filter(has_text=first)).to_have_count(0)
    screenshot(page, "train-search-3-compare-pruned")
    assert watched.problems() == []


# The YAML's block list and block mapping, as the editor's text reads (its lines run together).
UNITS_SWEPT = re.compile(r"model\.encoder\.units:\s*- 4\s*- 8\s*- 12")
UNITS_RANGE = re.compile(r"model\.encoder\.units:\s*low: 4\s*high: 12\s*log: false")


def test_the_search_form_and_the_yaml_follow_each_other(open_train):
    """A spec's search fills the form; the form's changes (a range too: a range for bayes,
    its count values for a grid) write the YAML, a bad range says why and leaves the YAML
    alone, and unticking Search removes the search."""
    from playwright.sync_api import expect

    watched = open_train()
    page = watched.page
    paste_spec(page, SEARCH_YAML)
    page.get_by_role("tab", name="Train").click()
    page.locator("#search-form").get_by_text("Search: try several values").click()
    expect(page.locator("#search-on input")).to_be_checked()
    expect(page.locator("#search-method").get_by_label("bayes")).to_be_checked()
    expect(page.locator("#search-trials input")).to_have_value("3")
    expect(page.locator("#search-seed input")).to_have_value("6")
    expect(page.locator("#search-asha input")).to_be_checked()
    expect(page.locator("#search-path-1 input")).to_have_value("train.learning_rate")
    expect(page.locator("#search-values-1 textarea")).to_have_value(
        re.compile(r"^0\.03, 1\.0e-06, 1\.0e-07$")
    )

    # A second parameter as a range: bayes draws from it, so the YAML gets the range.
    path = page.locator("#search-path-2 input")
    path.click()
    page.get_by_role("option", name="model.encoder.units", exact=True).click()
    page.locator("#search-kind-2 input").click()
    page.get_by_role("option", name="linear range", exact=True).click()
    for field, value in (("low", "4"), ("high", "12"), ("count", "3")):
        box = page.locator(f"#search-{field}-2 input")
        box.fill(value)
        box.press("Tab")
    yaml_text = page.locator("#spec-yaml")
    expect(yaml_text).to_contain_text(UNITS_RANGE)
    expect(yaml_text).to_contain_text("metric: val_loss")  # not in the form: kept
    expect(page.locator("#search-kind-2 input")).to_have_value("linear range")
    expect(page.locator("#search-low-2 input")).to_have_value("4")
    page.keyboard.press("Escape")  # the next field's menu, opened by the last Tab
    screenshot(page, "train-search-form")

    # Its ends the wrong way round: said under the form, the YAML unchanged.
    low = page.locator("#search-low-2 input")
    low.fill("20")
    low.press("Tab")
    expect(page.locator("#search-message")).to_contain_text(
        "Search parameter 2 (model.encoder.units): low must be below high"
    )
    expect(yaml_text).to_contain_text(UNITS_RANGE)
    low.fill("4")
    low.press("Tab")
    expect(page.locator("#search-message")).not_to_contain_text("✗")

    # Grid tries every combination: no trial count in the YAML, the range as its 3 values.
    page.locator("#search-method").get_by_label("grid").check()
    expect(yaml_text).to_contain_text("method: grid")
    expect(yaml_text).not_to_contain_text("num_trials")
    expect(yaml_text).to_contain_text(UNITS_SWEPT)
    page.locator("#search-on input").uncheck()
    expect(yaml_text).not_to_contain_text("sweep:")
    expect(page.locator("#spec-errors")).to_contain_text("Valid spec")
    assert watched.problems() == []
