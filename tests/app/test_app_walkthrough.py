"""The whole builder walk-through in one browser session, as issue 16 defines "done".

Build a model, train three configurations of it, reload the page while the third trains,
compare the three (text filter, status filter, sort by a metric, parallel coordinates,
overlaid curves), inspect one (choosing another clears its predictions) and export it. This
is the browser test that trains through the page from Build to Compare; the other browser
tests of viewing and comparing runs read stores written without training. Every step's
visible result is checked, and the page may log no console error and show no red "Error"
badge from start to end (what Gradio's client logs as the reload cuts the old page's stream
is kept apart: see `tests.app.browser.Watched`). Screenshots go to
`tests/artifacts/screenshots/walkthrough-*`.
"""

from __future__ import annotations

import io
import re
import zipfile

import pytest

from builder_ui.engine.store import RunStore
from tests.app.browser import Watched, needs_chromium
from tests.app.test_app_browser import (
    TRAIN_TIMEOUT_MS,
    UI_TIMEOUT_MS,
    build_tiny_spec,
    fill_field,
    screenshot,
)
from tests.app.test_app_compare import body_row, filter_by, no_error_badges, rows, settled, sort_by
from tests.app.test_app_train import progress_of as progress
from tests.app.test_app_train import queue_spec as queue

pytestmark = [pytest.mark.large, needs_chromium]

# The third configuration trains long enough for a reload in the middle of it.
LONG_EPOCHS = 30


def choose(page, dropdown: str, option: str) -> None:
    """Pick `option` in the dropdown `#dropdown`, as a person does."""
    page.locator(f"#{dropdown} input").click()
    page.get_by_role("option", name=option).first.click()


def test_build_train_three_reload_compare_inspect_export(browser, server):
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(UI_TIMEOUT_MS)
    watched = Watched(page)
    page.goto(server.url)
    page.wait_for_selector("#field-task-lag input")

    # Build: a tiny classifier, its summary and diagram.
    build_tiny_spec(page, "walk-narrow")
    page.locator("#summarize-button").click()
    expect(page.locator("#summary-headline")).to_contain_text("parameters", timeout=60_000)
    expect(page.locator("#model-diagram")).to_contain_text("simple_0")
    screenshot(page, "walkthrough-1-build")

    # Train three configurations: two short, the third long enough to reload during it.
    narrow = queue(page)
    expect(progress(page, narrow, "done")).to_be_visible(timeout=TRAIN_TIMEOUT_MS)
    expect(page.locator("#queue-table")).to_contain_text(narrow)
    page.get_by_role("tab", name="Build").click()
    fill_field(page, "name", "walk-wide")
    fill_field(page, "model-encoder-units", "8")
    expect(page.locator("#spec-yaml")).to_contain_text("units: 8")
    wide = queue(page)
    page.get_by_role("tab", name="Build").click()
    fill_field(page, "name", "walk-long")
    fill_field(page, "train-epochs", str(LONG_EPOCHS))
    expect(page.locator("#spec-yaml")).to_contain_text(f"epochs: {LONG_EPOCHS}")
    long = queue(page)
    live = progress(page, long, "running")
    expect(live).to_contain_text(re.compile(r"epoch \d+/"), timeout=TRAIN_TIMEOUT_MS)

    # Reload in the middle of training: the run goes on and is followed live again.
    watched.reload()
    page.get_by_role("tab", name="Train").click()
    expect(live).to_contain_text(re.compile(rf"epoch \d+/{LONG_EPOCHS}, batch"))
    screenshot(page, "walkthrough-2-train-after-reload")
    expect(progress(page, long, "done")).to_be_visible(timeout=TRAIN_TIMEOUT_MS)
    with RunStore(server.runs) as store:
        records = {run_id: store.get(run_id) for run_id in (narrow, wide, long)}
    assert {r.status for r in records.values()} == {"done"}
    assert records[long].epochs_done == LONG_EPOCHS

    # Compare: the three runs, filtered by text and status, sorted, charted.
    page.get_by_role("tab", name="Compare").click()
    page.wait_for_selector("#results-table")
    filter_by(page, "walk-")
    for run_id, record in records.items():
        expect(rows(page, run_id)).to_be_visible()
        expect(rows(page, run_id)).to_contain_text(f"{record.metrics['accuracy']:.4g}")
    page.locator("#results-status").get_by_label("done").check()
    settled(page)
    for run_id in records:
        expect(rows(page, run_id)).to_be_visible()
    # Sorted by the final validation loss, lowest first: the order of the stored losses.
    sort_by(page, "val_loss", "ascending")
    loss = {run_id: records[run_id].metrics["loss"] for run_id in records}
    for index, run_id in enumerate(sorted(records, key=loss.get)):
        # Two one-epoch runs can end on the same loss to the table's 4 digits (0.4956 on
        # CI): those may stand in either order, the newer first.
        tied = [other for other in records if f"{loss[other]:.4g}" == f"{loss[run_id]:.4g}"]
        expect(body_row(page, index)).to_contain_text(re.compile("|".join(tied)))
    page.locator("#results-status").get_by_label("done").uncheck()
    settled(page)
    for run_id in (narrow, wide):
        rows(page, run_id).get_by_role("gridcell").first.click()
        expect(page.locator("#compare-runs")).to_contain_text(run_id)
        settled(page)
    expect(page.locator("#results-spec")).to_contain_text("name: walk-wide")
    page.locator("#compare-plot-button").click()
    expect(page.locator("#compare-plot .js-plotly-plot")).to_be_visible()
    page.locator("#hparams-button").click()
    expect(page.locator("#hparams-plot .js-plotly-plot")).to_be_visible()
    expect(page.locator("#compare-message")).not_to_contain_text("✗")
    screenshot(page, "walkthrough-3-compare")

    # Inspect the wide run: a prediction on a validation example.
    page.get_by_role("tab", name="Inspect").click()
    page.locator("#inspect-refresh").click()
    choose(page, "inspect-run", wide)
    page.locator("#predict-button").click()
    summary, table = page.locator("#predict-summary"), page.locator("#predict-table")
    expect(summary).to_contain_text("True class", timeout=60_000)
    expect(table).to_contain_text("probability")
    screenshot(page, "walkthrough-4-inspect")
    # Another run chosen: the wide run's predictions go with it.
    probability = table.get_by_role("gridcell").nth(1).inner_text()  # class 0's, e.g. 0.7272
    choose(page, "inspect-run", narrow)
    expect(summary).to_have_text("")
    expect(table).not_to_contain_text(probability)

    # Export it as a .keras file, offered for download with the code that loads it.
    page.get_by_role("tab", name="Export").click()
    page.locator("#export-refresh").click()
    choose(page, "export-run", wide)
    page.locator("#export-format").get_by_label("Keras file (.keras)").check()
    page.locator("#export-button").click()
    expect(page.locator("#export-message")).to_contain_text(f"✓ {wide}.keras", timeout=60_000)
    link = page.locator("#export-file a").first
    expect(link).to_have_attribute("href", re.compile(rf"/{wide}\.keras$"))
    downloaded = page.request.get(link.get_attribute("href"))
    assert downloaded.ok
    with zipfile.ZipFile(io.BytesIO(downloaded.body())) as archive:  # a .keras file is a zip
        assert "config.json" in archive.namelist()
    expect(page.locator("#export-snippet")).to_contain_text("safe_mode=True")
    screenshot(page, "walkthrough-5-export")

    no_error_badges(page)
    assert watched.problems() == []
    context.close()
