"""The Build form in a real browser: only what applies, no stale views, no edit lost unasked.

Playwright drives Debian's Chromium against a real `keras-seq ui` server (a
subprocess over a real run store), as in `test_app_browser.py`: the summary
and the Inspect tab's message are cleared when what they describe changes;
picking another preset or reloading the page with unsaved edits asks first
(the test accepts or dismisses the browser's dialog), and a reload keeps the
edited spec (the browser's local storage).
"""

from __future__ import annotations

import pytest

from tests.app.browser import UI_TIMEOUT_MS, needs_chromium
from tests.app.test_app_browser import fill_field, screenshot

pytestmark = [pytest.mark.large, needs_chromium]


@pytest.fixture
def page(browser, server):
    """The app in a fresh browser session (its own cookies and local storage)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1100})
    opened = context.new_page()
    opened.set_default_timeout(UI_TIMEOUT_MS)
    opened.goto(server.url)
    opened.wait_for_selector("#field-task-lag input")
    yield opened
    context.close()


def pick_preset(page, label: str) -> None:
    """Choose a preset from the dropdown by (part of) its label, as a person does."""
    page.locator("#preset input").click()
    page.get_by_role("option", name=label).click()


def answer_dialogs(page, accept: bool) -> list[str]:
    """Accept or dismiss every dialog from now on; returns the kinds seen (`confirm`, ...)."""
    seen: list[str] = []

    def answer(dialog) -> None:
        seen.append(dialog.type)
        dialog.accept() if accept else dialog.dismiss()

    page.on("dialog", answer)
    return seen


def test_the_summary_of_the_previous_model_is_cleared_when_another_preset_is_loaded(page):
    from playwright.sync_api import expect

    fill_field(page, "model-encoder-units", "4")
    page.locator("#summarize-button").click()
    expect(page.locator("#summary-headline")).to_contain_text("parameters", timeout=60_000)
    expect(page.locator("#model-diagram")).to_contain_text("simple_0")
    answer_dialogs(page, accept=True)
    pick_preset(page, "5 · GRU")
    expect(page.locator("#spec-yaml")).to_contain_text("cell: gru")
    expect(page.locator("#summary-headline")).to_have_text("")
    expect(page.locator("#model-diagram")).not_to_contain_text("simple_0")
    expect(page.locator("#summary-table")).not_to_contain_text("simple_0")


def test_another_preset_with_unsaved_edits_asks_first_and_keeps_them_if_refused(page):
    from playwright.sync_api import expect

    fill_field(page, "model-encoder-units", "7")
    expect(page.locator("#spec-yaml")).to_contain_text("units: 7")
    seen = answer_dialogs(page, accept=False)
    pick_preset(page, "5 · GRU")
    expect(page.locator("#preset input")).to_have_value("1 · Vanilla RNN")
    assert seen == ["confirm"]
    expect(page.locator("#spec-yaml")).to_contain_text("units: 7")
    expect(page.locator("#field-model-encoder-units input")).to_have_value("7")
    screenshot(page, "build-form-preset-refused")


def test_new_graph_over_a_graph_of_ones_own_asks_first_and_keeps_it_if_refused(page):
    from playwright.sync_api import expect

    spec = page.locator("#spec-yaml")
    fill_field(page, "model-encoder-units", "9")
    expect(spec).to_contain_text("units: 9")
    page.locator("#open-as-graph").click()  # the edited RNN as blocks: a graph of one's own
    expect(spec).to_contain_text("type: graph")
    expect(spec).to_contain_text("simple_0")
    page.wait_for_function("window.ksSpecEdited === true")  # the page knows of the edit
    seen = answer_dialogs(page, accept=False)
    with page.expect_event("dialog"):
        page.locator("#new-graph").click()
    assert seen == ["confirm"]
    # The app's events run one at a time: this refusal comes after the refused New graph.
    page.locator("#open-as-graph").click()
    expect(page.locator("#spec-errors")).to_contain_text("a graph already")
    expect(spec).to_contain_text("simple_0")  # a new graph's recurrent block is `encoder`
    expect(spec).to_contain_text("units: 9")


def test_another_preset_with_unsaved_edits_is_loaded_once_accepted(page):
    from playwright.sync_api import expect

    fill_field(page, "model-encoder-units", "7")
    expect(page.locator("#spec-yaml")).to_contain_text("units: 7")
    seen = answer_dialogs(page, accept=True)
    pick_preset(page, "5 · GRU")
    expect(page.locator("#spec-yaml")).to_contain_text("cell: gru")
    assert seen == ["confirm"]
    # The preset as loaded is no edit: the next preset loads without asking.
    pick_preset(page, "6 · Seq2seq")
    expect(page.locator("#spec-yaml")).to_contain_text("type: seq2seq")
    assert seen == ["confirm"]


def test_a_reload_with_unsaved_edits_asks_first_and_keeps_the_edited_spec(page):
    from playwright.sync_api import expect

    fill_field(page, "model-encoder-units", "7")
    expect(page.locator("#spec-yaml")).to_contain_text("units: 7")
    seen = answer_dialogs(page, accept=True)
    page.reload()
    page.wait_for_selector("#field-task-lag input")
    assert seen == ["beforeunload"]
    expect(page.locator("#spec-yaml")).to_contain_text("units: 7")
    expect(page.locator("#field-model-encoder-units input")).to_have_value("7")
    screenshot(page, "build-form-reloaded")


def test_the_form_shows_only_the_chosen_architectures_fields_each_with_its_default(page):
    from playwright.sync_api import expect

    pick_preset(page, "6 · Seq2seq")
    units = page.locator("#field-model-architecture-units")
    expect(units).to_contain_text("Default: 64.")
    expect(page.locator("#field-model-architecture-cell")).to_contain_text("Default: lstm.")
    for hidden in ("num-heads", "ff-dim", "input-feeding", "attention-units"):
        expect(page.locator(f"#field-model-architecture-{hidden}")).to_have_count(0)
    attention = page.locator("#field-model-architecture-attention input")
    attention.click()
    page.get_by_role("option", name="luong_dot").click()
    expect(page.locator("#spec-yaml")).to_contain_text("attention: luong_dot")
    expect(page.locator("#field-model-architecture-input-feeding")).to_have_count(1)
    expect(page.locator("#field-model-architecture-attention-units")).to_have_count(0)
    screenshot(page, "build-form-luong")


def test_an_inspect_error_does_not_stay_on_another_sub_tab(page):
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Inspect").click()
    page.get_by_role("tab", name="Gradient flow").click()
    page.locator("#gradient-button").click()
    message = page.locator("#inspect-message")
    expect(message).to_contain_text("Choose a run first")
    page.get_by_role("tab", name="Positional encoding").click()
    expect(message).to_have_text("")
