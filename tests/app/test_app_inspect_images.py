"""Inspect in a real browser on the image models: a captioner's gaze, a ConvLSTM's frames.

The store holds a tiny Show-Attend-Tell run, a tiny ConvLSTM run and a tiny translator,
each trained by the engine, so the tab meets three kinds of model in one session; the
translator's decoding options (beam search, seeded samples) are checked on it too, beside a
classifier (recorded, not trained: Inspect only shows its hint).
Playwright drives Debian's Chromium against `keras-seq ui` (a subprocess); screenshots at
1400×900 go to `$KERAS_SEQ_SCREENSHOTS` (default `tests/artifacts/screenshots/`).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from builder_ui.engine.store import RunStore
from tests.app.app_server import Server, serving
from tests.app.browser import UI_TIMEOUT_MS, needs_chromium
from tests.app.compare_runs import TINY_SPECS, record_run
from tests.app.test_app_browser import SCREENSHOTS, screenshot

pytestmark = [pytest.mark.large, needs_chromium]

TRAIN = {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 0}
SPECS = {
    "captioner": {
        "version": 2,
        "name": "tiny-captioner",
        "task": {"type": "shape_captions", "n": 120, "size": 16},
        "model": {"type": "show_attend_tell", "filters": 8, "units": 16, "embedding_dim": 8},
        "train": TRAIN,
    },
    "frames": {
        "version": 2,
        "name": "tiny-conv-lstm",
        "task": {"type": "moving_shapes", "n": 60, "size": 8, "frames": 6, "predict": 2},
        "model": {"type": "conv_lstm", "filters": 4, "num_layers": 1},
        "train": TRAIN,
    },
    "translator": TINY_SPECS["seq2seq"],
}


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[tuple[Server, dict[str, str]]]:
    # Keras loads only for the tests that train.
    from builder_ui import engine

    directory = tmp_path_factory.mktemp("inspect-images")
    with RunStore(directory / "runs") as store:
        # A model type with no decoding, for its hint only. First: the dropdown opens on the
        # newest run, and choosing the run already chosen changes nothing.
        classifier = record_run(store, "sequence_classifier", 0.75, epochs=1)
        records = {key: engine.run(spec, store=store) for key, spec in SPECS.items()}
    assert all(r.status == "done" for r in records.values()), [r.error for r in records.values()]
    ids = {"classifier": classifier, **{key: record.id for key, record in records.items()}}
    with serving(directory, "--no-warm-up") as server:  # it predicts, and never trains
        yield server, ids


def open_inspect(browser, server):
    """A new session on the Inspect tab at 1400×900, its list of runs refreshed."""

    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(UI_TIMEOUT_MS)
    page.goto(server.url)
    page.get_by_role("tab", name="Inspect").click()
    page.locator("#inspect-refresh").click()
    return page


def test_inspect_draws_a_captions_gaze_and_a_videos_frames(browser, served):
    from playwright.sync_api import expect

    server, ids = served
    page = open_inspect(browser, server)

    def choose_run(run_id: str) -> None:
        page.locator("#inspect-run input").click()
        page.get_by_role("option", name=run_id).first.click()

    summary, plot = page.locator("#predict-summary"), page.locator("#predict-plot")

    # The captioner: its hint, the decoding options, a greedy caption and its gaze panels.
    choose_run(ids["captioner"])
    expect(page.locator("#inspect-hint")).to_contain_text("A captioner reads images")
    expect(page.locator("#decoding-options")).to_be_visible()
    page.locator("#inspect-example input").fill("2")
    page.locator("#predict-button").click()
    expect(summary).to_contain_text("Caption:", timeout=60_000)
    expect(summary).to_contain_text("Reference:")
    expect(summary).to_contain_text("Decoding: greedy")
    expect(plot.locator("img")).to_be_visible()
    expect(page.locator("#predict-table")).to_contain_text("most attended region")
    page.locator("#predict-summary").scroll_into_view_if_needed()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / "inspect-captioner-gaze.png", full_page=True)

    # Beam search, asked for with the keyboard: Enter in the input box predicts.
    page.locator("#decoding-options").get_by_text("Decoding").first.click()
    page.locator("#decoding-method").get_by_label("beam").check()
    page.locator("#decoding-beam-width input").fill("3")
    page.locator("#inspect-input textarea").press("Enter")
    expect(summary).to_contain_text("beam search, width 3", timeout=60_000)

    # Typed text is refused, named, and the last caption stays.
    page.locator("#inspect-input textarea").fill("a red square")
    page.locator("#predict-button").click()
    expect(page.locator("#inspect-message")).to_contain_text("a captioner reads images")
    expect(summary).to_contain_text("beam search, width 3")
    page.locator("#inspect-input textarea").fill("")

    # The ConvLSTM in the same session: no decoding options, true and predicted frames.
    choose_run(ids["frames"])
    expect(page.locator("#inspect-hint")).to_contain_text("next-frame model")
    expect(page.locator("#decoding-options")).to_be_hidden()
    page.locator("#predict-button").click()
    expect(summary).to_contain_text("MSE", timeout=60_000)
    expect(summary).not_to_contain_text("Caption:")
    expect(plot.locator("img")).to_be_visible()
    page.screenshot(path=SCREENSHOTS / "inspect-conv-lstm-frames.png", full_page=True)

    # And back to text: the translator still translates, with its decoding options.
    choose_run(ids["translator"])
    expect(page.locator("#decoding-options")).to_be_visible()
    page.locator("#predict-button").click()
    expect(summary).to_contain_text("Translation:", timeout=60_000)
    page.context.close()


def test_inspect_decodes_a_translation_as_chosen_and_offers_decoding_only_for_translators(
    browser, served
):
    """The translator in Inspect: beam search, then a seeded sample, by keyboard."""
    from playwright.sync_api import expect

    server, ids = served
    classifier, translator = ids["classifier"], ids["translator"]
    page = open_inspect(browser, server)

    def choose_run(run_id: str) -> None:
        page.locator("#inspect-run input").click()
        page.get_by_role("option", name=run_id).first.click()

    choose_run(classifier)
    expect(page.locator("#inspect-hint")).not_to_be_empty()
    expect(page.locator("#decoding-options")).to_be_hidden()
    choose_run(translator)
    options = page.locator("#decoding-options")
    expect(options).to_be_visible()
    options.get_by_text("Decoding").first.click()  # open the accordion
    page.locator("#decoding-method").get_by_label("beam").check()
    width = page.locator("#decoding-beam-width input")
    width.fill("3")
    page.locator("#predict-button").click()
    summary = page.locator("#predict-summary")
    expect(summary).to_contain_text("beam search, width 3, α = 0.6", timeout=60_000)
    expect(summary).to_contain_text("Translation:")

    # Sampling, asked for with the keyboard: Enter in the input box predicts.
    page.locator("#decoding-method").get_by_label("sample").check()
    page.locator("#decoding-temperature input").fill("2")
    page.locator("#inspect-input textarea").press("Enter")

    def sampled(seed: int) -> str:
        """The translation line, once the summary shows the sample of `seed`."""
        expect(summary).to_contain_text(f"sampled (T = 2, seed {seed})", timeout=60_000)
        expect(summary).not_to_contain_text("processing")
        (line,) = [x for x in summary.inner_text().splitlines() if x.startswith("Translation:")]
        return line

    first = sampled(0)
    page.locator("#decoding-seed input").fill("1")
    page.locator("#predict-button").click()
    sampled(1)
    page.locator("#decoding-seed input").fill("0")
    page.locator("#predict-button").click()
    assert sampled(0) == first  # the same seed: the same sample again

    # A field out of range is named, and the last prediction stays.
    page.locator("#decoding-top-p input").fill("1.5")
    page.locator("#predict-button").click()
    expect(page.locator("#inspect-message")).to_contain_text("Decoding: top_p: expected")
    expect(summary).to_contain_text("sampled (T = 2, seed 0)")
    screenshot(page, "inspect-decoding")
    page.context.close()
