"""The Compare tab in a real browser: filters that never error, a readable table, 1,000 runs.

Playwright drives Debian's Chromium against `keras-seq ui` (a subprocess) over a real run
store: one with a run of each of three model types and one of 1,000 runs, each run written
through `RunStore`'s API as the engine writes one (nothing is trained: the tests view and
compare runs). Screenshots at 1400×900 go to
`$KERAS_SEQ_SCREENSHOTS` (default `tests/artifacts/screenshots/`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import parse_qsl, urljoin, urlsplit

import pytest

from builder_ui.engine.store import RunStore
from tests.app.app_server import Server, get, serving
from tests.app.browser import UI_TIMEOUT_MS, needs_chromium
from tests.app.compare_runs import record_failed_run, record_run, record_runs
from tests.app.test_app_browser import SCREENSHOTS

pytestmark = [pytest.mark.large, needs_chromium]


@pytest.fixture(scope="module")
def mixed(tmp_path_factory) -> Iterator[tuple[Server, list[str]]]:
    """A server over a run of each of three model types, a cancelled run of a sweep and a
    failed run (its error and traceback recorded as the engine records them).

    Recorded, not trained: the tests view and compare them (Inspect's decoding, which needs
    a trained translator, is tested in test_app_inspect_images.py).
    """
    directory = tmp_path_factory.mktemp("compare-mixed")
    with RunStore(directory / "runs") as store:
        # In this order: the table's columns follow the runs' metrics in the order they came.
        classifier = record_run(store, "sequence_classifier", 0.75, epochs=1)
        translator = record_run(store, "seq2seq", 0.5, epochs=1)
        pointer = record_run(store, "pointer_network", 0.5, epochs=1)
        spec = store.get(classifier).spec
        cancelled = store.create_run(spec, name="never-ran", sweep_id="sweep-b")
        store.set_status(cancelled, "cancelled")
        failed = record_failed_run(store, "sequence_classifier", IndexError("no such step 7"))
    with serving(directory, "--no-warm-up") as running:  # it never trains
        yield running, [classifier, translator, pointer, cancelled, failed]


@pytest.fixture(scope="module")
def thousand(tmp_path_factory) -> Iterator[tuple[Server, list[str]]]:
    directory = tmp_path_factory.mktemp("compare-1000")
    with RunStore(directory / "runs") as store:
        ids = record_runs(store, 1000, epochs=1)
    with serving(directory, "--no-warm-up") as running:
        yield running, ids


@pytest.fixture(scope="module")
def searched(tmp_path_factory) -> Iterator[tuple[Server, str]]:
    """A server over a 12-trial grid sweep whose loss the learning rate alone sets."""
    from tests.builder_ui.results.test_importance import learning_rate_alone, record_sweep

    directory = tmp_path_factory.mktemp("compare-sweep")
    with RunStore(directory / "runs") as store:
        sweep = record_sweep(store, learning_rate_alone)
    with serving(directory, "--no-warm-up") as running:
        yield running, sweep


def open_compare(browser, server: Server):
    """A new session on the Compare tab, at 1400×900."""

    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(UI_TIMEOUT_MS)
    page.goto(server.url)
    page.get_by_role("tab", name="Compare").click()
    page.wait_for_selector("#results-table")
    return page


def screenshot(page, name: str) -> None:
    """Save the viewport, once the results table has no update in flight."""
    settled(page)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=SCREENSHOTS / f"{name}.png")


def rows(page, text: str):
    return page.locator("#results-table").get_by_role("row").filter(has_text=text)


def headers(page) -> list[str]:
    cells = page.locator("#results-table thead th")
    return [cells.nth(i).inner_text().strip() for i in range(cells.count())]


def no_error_badges(page) -> None:
    """Gradio turns a component whose handler raised into a red "Error" badge."""
    from playwright.sync_api import expect

    expect(page.locator(".error").filter(has_text="Error")).to_have_count(0)


def settled(page) -> None:
    """Wait until the results table has no update in flight (opening the tab refreshes it)."""
    from playwright.sync_api import expect

    expect(page.locator("#results-table .eta-bar, #results-table .progress-text")).to_have_count(0)


def filter_by(page, text: str) -> None:
    """Type `text` into the filter and press Enter, once the table is not being refreshed.

    (Typing during a refresh can lose keys to the components it re-renders.)
    """
    from playwright.sync_api import expect

    settled(page)
    box = page.locator("#results-filter textarea")
    box.click()
    box.press("Control+a")
    page.keyboard.type(text)
    expect(box).to_have_value(text)
    box.press("Enter")


def test_typing_a_filter_keeps_the_table_and_combines_with_the_status(browser, mixed):
    from playwright.sync_api import expect

    server, (classifier, translator, pointer, cancelled, _failed) = mixed
    page = open_compare(browser, server)
    expect(rows(page, pointer)).to_be_visible()
    filter_by(page, "seq2seq")
    expect(rows(page, classifier)).to_have_count(0)
    expect(rows(page, translator)).to_be_visible()
    # A translator has no accuracy: its table is read by a metric it has.
    expect(page.locator("#results-table thead")).to_contain_text("val_loss")
    no_error_badges(page)
    expect(page.locator("#compare-message")).not_to_contain_text("✗")
    expect(page.locator("#compare-runs")).to_be_visible()
    screenshot(page, "compare-1-text-filter")

    page.locator("#results-status").get_by_label("cancelled").check()
    expect(rows(page, translator)).to_have_count(0)  # seq2seq and cancelled: none
    filter_by(page, "never")
    expect(rows(page, cancelled)).to_be_visible()
    expect(rows(page, pointer)).to_have_count(0)
    no_error_badges(page)

    # The filter acts as you type, without Enter; an emptied box shows every run again.
    page.locator("#results-status").get_by_label("cancelled").uncheck()
    box = page.locator("#results-filter textarea")
    box.click()
    box.press("Control+a")
    box.press("Backspace")
    expect(rows(page, pointer)).to_be_visible()
    expect(rows(page, classifier)).to_be_visible()
    page.keyboard.type("seq2", delay=60)
    expect(rows(page, classifier)).to_have_count(0)
    expect(rows(page, translator)).to_be_visible()
    expect(box).to_have_value("seq2")  # no key lost to the refreshes it made
    screenshot(page, "compare-1b-live-filter")
    page.context.close()


def test_the_view_is_in_the_url_so_a_reload_or_a_shared_link_shows_it(browser, mixed):
    from playwright.sync_api import expect

    server, (classifier, translator, pointer, _cancelled, failed) = mixed
    page = open_compare(browser, server)
    filter_by(page, "tiny")
    page.locator("#results-status").get_by_label("done").check()
    bound = page.locator("#results-metric-min textarea")
    bound.fill("0.3")
    bound.press("Enter")
    expect(page).to_have_url(re.compile(r"[?&]min=0\.3"))
    page.locator("#results-sort-order input").click()
    page.get_by_role("option", name="ascending", exact=True).click()
    expect(page).to_have_url(re.compile(r"[?&]order=ascending"))
    query = dict(parse_qsl(urlsplit(page.url).query))
    assert (query["open"], query["q"], query["status"]) == ("compare", "tiny", "done"), query
    assert "max" not in query and "tag" not in query, query

    page.reload()  # the Build tab is the page's first: the link opens Compare with its view
    expect(page.get_by_role("tab", name="Compare")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#results-filter textarea")).to_have_value("tiny")
    expect(page.locator("#results-metric-min textarea")).to_have_value("0.3")
    expect(page.locator("#results-status").get_by_label("done")).to_be_checked()
    expect(rows(page, pointer)).to_be_visible()
    expect(rows(page, failed)).to_have_count(0)  # failed, and not "tiny"
    screenshot(page, "compare-0-reloaded-view")

    # A link written by hand, shared with a second tab: what does not fit is dropped.
    second = page.context.new_page()
    second.goto(f"{server.url}?open=compare&q=seq2seq&status=done,bogus&runs_page=oops&order=up")
    expect(second.locator("#results-filter textarea")).to_have_value("seq2seq")
    expect(rows(second, translator)).to_be_visible()
    expect(rows(second, classifier)).to_have_count(0)
    no_error_badges(second)

    # Another tab chosen: a reload opens the first tab, not Compare.
    page.get_by_role("tab", name="Train").click()
    expect(page).not_to_have_url(re.compile(r"open=compare"))
    page.context.close()


def test_three_model_types_give_a_short_readable_table_with_the_rest_one_pick_away(
    browser, mixed, tmp_path
):
    from playwright.sync_api import expect

    server, (_classifier, _translator, pointer, _cancelled, failed) = mixed
    page = open_compare(browser, server)
    expect(rows(page, pointer)).to_be_visible()
    shown = headers(page)
    assert shown[:3] == ["id", "name", "status"], shown
    assert {"val_accuracy", "epochs_run", "params", "device"} <= set(shown), shown
    assert "accuracy" not in shown and len(shown) <= 17, shown
    # Short enough for one line each: the longest is a best epoch's (`best_val_accuracy_epoch`).
    assert all(len(header) <= 24 for header in shown), shown
    header_row = page.locator("#results-table thead tr").first.bounding_box()
    assert header_row["height"] < 60, header_row  # one line of text, not a letter per line
    legend = page.locator("#results-legend")
    expect(legend).to_contain_text("final metrics of the run on the validation split")
    expect(legend).to_contain_text("epochs recorded in the store")
    screenshot(page, "compare-2-three-model-types")

    # Gradio's header menu sorts the rows shown: names descending.
    name_header = page.locator("#results-table thead th").nth(1)
    name_header.hover()
    name_header.get_by_role("button", name="Open cell menu").click()
    page.get_by_role("menuitem", name="Sort descending").click()
    body_rows = page.locator("#results-table").get_by_role("row")
    expect(body_rows.nth(1)).to_contain_text("tiny-seq2seq")
    expect(body_rows.nth(4)).to_contain_text("never-ran")

    page.locator("#results-columns-panel").get_by_text("Columns: pick any other").click()
    columns = page.locator("#results-columns input")
    columns.click()
    page.keyboard.type("model.encoder.units")
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    expect(page.locator("#results-table thead")).to_contain_text("units")
    expect(legend).to_contain_text("= model.encoder.units")

    rows(page, pointer).get_by_role("gridcell").first.click()
    expect(page.locator("#results-spec")).to_contain_text("pointer_network")
    expect(page.locator("#results-spec")).to_contain_text("learning_rate: 0.01")
    expect(page.locator("#results-outcome")).to_contain_text("done")
    no_error_badges(page)
    screenshot(page, "compare-3-picked-column-and-spec")

    # A failed run's row: why it failed, and the end of its traceback, one click away.
    rows(page, failed).get_by_role("gridcell").first.click()
    outcome = page.locator("#results-outcome")
    expect(outcome).to_contain_text("failed")
    expect(outcome).to_contain_text("IndexError: no such step 7")
    expect(outcome).to_contain_text("in fail")  # the traceback's last frames
    outcome.scroll_into_view_if_needed()
    screenshot(page, "compare-3b-failed-run")

    # Both clicked rows are picked: what differs between them, against the first picked.
    page.locator("#diff-button").click()
    diff = page.locator("#compare-diff")
    expect(diff).to_contain_text("Δ val_accuracy")
    expect(diff.get_by_role("row").filter(has_text="model.type")).to_contain_text(
        "sequence_classifier"
    )
    diff.scroll_into_view_if_needed()
    screenshot(page, "compare-3c-differences")

    # The report, downloaded, opens with no network, every chart drawn, no console error.
    page.locator("#results-report-button").click()
    expect(page.locator("#results-report")).to_contain_text(re.compile(r"keras-seq-report-.*html"))
    no_error_badges(page)
    link = page.locator("#results-report a").first.get_attribute("href")
    status, body = get(urljoin(page.url, link))
    assert status == 200 and body.startswith("<!DOCTYPE html>"), (status, body[:200])
    report = tmp_path / "report.html"
    report.write_text(body, encoding="utf-8")
    offline = page.context.browser.new_context(offline=True)
    errors = []
    opened = offline.new_page()
    opened.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.goto(report.as_uri())
    opened.wait_for_function("document.querySelectorAll('.plotly .main-svg').length >= 2")
    expect(opened.locator("table")).to_contain_text(pointer)
    assert errors == []
    offline.close()

    # Grouped by model type: each type's runs, and each metric's mean and std over them.
    page.locator("#group-by input").click()
    page.get_by_role("option", name="model.type", exact=True).click()
    page.locator("#group-button").click()
    groups = page.locator("#groups-table")
    expect(groups).to_contain_text("val_accuracy mean")
    expect(groups.get_by_role("row").filter(has_text="pointer_network")).to_be_visible()
    groups.scroll_into_view_if_needed()
    screenshot(page, "compare-3d-groups")
    no_error_badges(page)
    page.context.close()


def test_a_store_of_a_thousand_runs_renders_in_pages_of_two_hundred(browser, thousand):
    from playwright.sync_api import expect

    server, ids = thousand
    page = open_compare(browser, server)
    legend = page.locator("#results-legend")
    expect(legend).to_contain_text("Runs 1–200 of 1000 (page 1 of 5)")
    expect(rows(page, ids[-1])).to_be_visible()
    box = page.locator("#results-page input")
    box.fill("5")
    box.press("Enter")
    expect(legend).to_contain_text("Runs 801–1000 of 1000 (page 5 of 5)")
    expect(rows(page, ids[199])).to_be_visible()  # the first row of the last page
    no_error_badges(page)
    screenshot(page, "compare-4-thousand-runs")
    page.context.close()


def body_row(page, index: int):
    """The `index`-th row of the table's body (0 is the first run shown)."""
    return page.locator("#results-table").get_by_role("row").nth(index + 1)


def sort_by(page, label: str, order: str) -> None:
    """Pick `label` in the "Sort by" menu and `order` ("descending" or "ascending")."""
    from playwright.sync_api import expect

    settled(page)
    page.locator("#results-sort-order input").click()
    page.get_by_role("option", name=order, exact=True).click()
    settled(page)
    menu = page.locator("#results-sort input")
    wanted = re.compile(rf"^{re.escape(label)}(?: \(|$)")  # its own option, not best_{label}
    for attempt in range(3):
        menu.click()
        menu.press("Control+a")  # replace "newest first", do not type into it
        page.keyboard.type(label)
        # The column's own option, clicked once the list shows it: Enter pressed before the
        # list filters (a busy machine) left the typed text in the box and the order unchanged.
        page.get_by_role("option", name=wanted).first.click()
        expect(menu).to_have_attribute("aria-expanded", "false")  # chosen: the list closed
        # A refresh that redraws the menu's choices as the click lands (the order's, on a
        # busy machine) can pick the option drawn there instead: pick again.
        if attempt == 2 or wanted.search(menu.input_value() or ""):
            break
        settled(page)
    expect(menu).to_have_value(wanted)
    settled(page)


def go_to_page(page, number: int) -> None:
    settled(page)
    box = page.locator("#results-page input")
    box.fill(str(number))
    box.press("Enter")


def ranked(store: RunStore, metric: str, *, descending: bool, keep=lambda record: True):
    """Run ids of the store ordered by a final metric, worked out here from the records.

    Runs without the metric come last, newest first (the table's order before sorting).
    """
    newest_first = [r for r in reversed(store.list_runs()) if keep(r)]
    having = [r for r in newest_first if r.metrics.get(metric) is not None]
    having.sort(key=lambda r: r.metrics[metric], reverse=descending)
    return [r.id for r in having] + [r.id for r in newest_first if r not in having]


def test_sort_by_orders_every_run_in_the_store_before_paging(browser, thousand):
    from playwright.sync_api import expect

    from tests.app.compare_runs import full_spec

    server, _ids = thousand
    with RunStore(server.runs) as store:
        by_loss = ranked(store, "loss", descending=True)
        by_accuracy = ranked(store, "accuracy", descending=False)
        classifiers = ranked(
            store,
            "loss",
            descending=True,
            keep=lambda r: r.spec["model"]["type"] == "sequence_classifier",
        )
    page = open_compare(browser, server)
    legend = page.locator("#results-legend")
    sort_by(page, "val_loss", "descending")
    expect(legend).to_contain_text("sorted by val_loss, descending")
    expect(body_row(page, 0)).to_contain_text(by_loss[0])  # the oldest run: page 5 unsorted
    go_to_page(page, 5)
    expect(legend).to_contain_text("Runs 801–1000 of 1000 (page 5 of 5)")
    expect(body_row(page, 0)).to_contain_text(by_loss[800])
    screenshot(page, "compare-5-sorted-page-5")

    # Ascending by accuracy: translators have none, so they fill the last pages.
    go_to_page(page, 1)
    sort_by(page, "val_accuracy", "ascending")
    expect(body_row(page, 0)).to_contain_text(by_accuracy[0])
    go_to_page(page, 5)
    expect(body_row(page, 0)).to_contain_text(by_accuracy[800])
    expect(body_row(page, 0)).to_contain_text("seq2seq")

    # The sort combines with a filter, and holds when a run ends and the table refreshes.
    go_to_page(page, 1)
    sort_by(page, "val_loss", "descending")
    filter_by(page, "sequence_classifier")
    expect(body_row(page, 0)).to_contain_text(classifiers[0])
    with RunStore(server.runs) as store:
        worst = store.create_run(full_spec("sequence_classifier"))
        store.set_status(worst, "running", backend="tensorflow", device="CPU")
        store.finish(worst, "done", metrics={"loss": 5.0, "accuracy": 0.0}, wall_time=1.0)
    try:
        expect(body_row(page, 0)).to_contain_text(worst)
        expect(body_row(page, 1)).to_contain_text(classifiers[0])
        no_error_badges(page)
    finally:
        with RunStore(server.runs) as store:
            store.delete(worst)
    page.context.close()


def test_the_name_column_stays_in_view_when_the_table_scrolls_sideways(browser, thousand):
    server, ids = thousand
    page = open_compare(browser, server)
    settled(page)
    scrolled = page.evaluate(
        """() => {
            const viewport = document.querySelector('#results-table .virtual-table-viewport');
            viewport.scrollLeft = viewport.scrollWidth;
            return viewport.scrollLeft;
        }"""
    )
    assert scrolled > 100, scrolled  # the table is wider than the page, so it did scroll
    page.wait_for_timeout(500)  # the scroll event re-lays the sticky cells out; a frame or two
    table = page.locator("#results-table .virtual-table-viewport").bounding_box()
    name = rows(page, ids[-1]).get_by_role("gridcell").nth(1)
    box = name.bounding_box()
    assert table["x"] <= box["x"] and box["x"] + box["width"] <= table["x"] + table["width"], (
        box,
        table,
    )
    id_box = rows(page, ids[-1]).get_by_role("gridcell").first.bounding_box()
    assert id_box["x"] >= table["x"] - 1, (id_box, table)  # 1 px: borders round
    screenshot(page, "compare-6-scrolled-sideways")
    page.context.close()


def header_titles(page) -> dict[str, str]:
    """Each header's text → its `title` attribute (what a hover shows)."""
    return page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('#results-table thead th')]
            .map(th => [th.innerText.trim(), th.getAttribute('title')]))"""
    )


def test_a_short_header_shows_its_full_path_on_hover(browser, thousand):
    from playwright.sync_api import expect

    server, _ids = thousand
    page = open_compare(browser, server)
    settled(page)
    expected = {"learning_rate": "train.learning_rate", "validation_split": "task.validation_split"}
    page.wait_for_function(
        """(expected) => [...document.querySelectorAll('#results-table thead th')].every(
            th => !(th.innerText.trim() in expected)
                || th.getAttribute('title') === expected[th.innerText.trim()])""",
        arg=expected,
    )
    titles = header_titles(page)
    assert {head: titles.get(head) for head in expected} == expected, titles
    assert titles["id"] == "id", titles
    # A new page and a new order re-render the table: the titles stay.
    sort_by(page, "learning_rate", "ascending")
    go_to_page(page, 2)
    expect(page.locator("#results-legend")).to_contain_text("(page 2 of 5)")
    page.wait_for_function(
        """() => [...document.querySelectorAll('#results-table thead th')].some(
            th => th.getAttribute('title') === 'train.learning_rate')"""
    )
    page.locator("#results-table thead th").filter(has_text="learning_rate").hover()
    screenshot(page, "compare-7-header-hover")
    page.context.close()


def test_fifteen_rows_are_in_view_at_1400_by_900_on_opening_the_tab(browser, thousand):
    server, _ids = thousand
    page = open_compare(browser, server)
    settled(page)
    page.wait_for_timeout(500)  # the virtual table lays its rows out after the data comes
    table = page.locator("#results-table").bounding_box()
    top, bottom = max(0, table["y"]), min(900, table["y"] + table["height"])
    body = (
        page.locator("#results-table").get_by_role("row").filter(has=page.get_by_role("gridcell"))
    )
    boxes = [body.nth(i).bounding_box() for i in range(body.count())]
    in_view = [
        b for b in boxes if b and b["height"] and b["y"] >= top and b["y"] + b["height"] <= bottom
    ]
    screenshot(page, "compare-8-rows-in-view")
    assert len(in_view) >= 15, (len(in_view), table)
    page.context.close()


def test_bleu_of_a_run_without_bleu_shows_a_message_and_the_csv_button_is_normal(browser, mixed):
    from playwright.sync_api import expect

    server, (classifier, _translator, _pointer, _cancelled, _failed) = mixed
    page = open_compare(browser, server)
    settled(page)  # the tab's opening refresh would replace a selection made during it
    rows(page, classifier).get_by_role("gridcell").first.click()
    expect(page.locator("#compare-runs")).to_contain_text(classifier)
    page.locator("#bleu-button").click()
    empty = page.locator("#bleu-empty")
    expect(empty).to_be_visible()
    expect(empty).to_contain_text("finished seq2seq run")
    expect(page.locator("#bleu-plot")).to_be_hidden()
    broken = page.evaluate(
        """() => [...document.querySelectorAll('#tab-compare img')]
            .filter(img => img.offsetParent !== null && !(img.complete && img.naturalWidth > 0))
            .map(img => img.outerHTML)"""
    )
    assert broken == [], broken
    csv_button = page.locator("#results-csv-button").bounding_box()
    assert csv_button["height"] < 60, csv_button  # a normal button, not a tall panel
    no_error_badges(page)
    page.locator("#bleu-button").scroll_into_view_if_needed()
    screenshot(page, "compare-9-bleu-empty")
    page.context.close()


def test_clicking_a_header_sorts_every_run_and_a_second_click_flips_the_order(browser, thousand):
    from playwright.sync_api import expect

    server, _ids = thousand
    with RunStore(server.runs) as store:
        lowest = ranked(store, "loss", descending=False)[0]
        highest = ranked(store, "loss", descending=True)[0]
    page = open_compare(browser, server)
    legend = page.locator("#results-legend")
    header = page.locator("#results-table thead th").filter(has_text="val_loss").first
    settled(page)
    header.click()
    expect(legend).to_contain_text("sorted by val_loss, ascending")
    expect(body_row(page, 0)).to_contain_text(lowest)  # the lowest of all 1,000, not of page 1
    expect(page.locator("#results-sort input")).to_have_value(re.compile(r"^val_loss"))
    settled(page)
    header.click()
    expect(legend).to_contain_text("sorted by val_loss, descending")
    expect(body_row(page, 0)).to_contain_text(highest)
    expect(page.locator("#results-sort-order input")).to_have_value("descending")
    no_error_badges(page)
    page.context.close()


def test_a_sweeps_parameter_importance_draws_the_learning_rate_on_top(browser, searched):
    from playwright.sync_api import expect

    server, sweep = searched
    page = open_compare(browser, server)
    page.locator("#importance-button").click()  # no sweep chosen yet: it says what to do
    expect(page.locator("#compare-message")).to_contain_text("Choose a sweep in the Sweep filter")
    settled(page)
    page.locator("#results-sweep input").click()
    page.get_by_role("option", name=sweep, exact=True).click()
    settled(page)
    page.locator("#importance-button").click()
    plot = page.locator("#importance-plot")
    expect(plot.locator(".ytick text")).to_have_count(2)
    labels = plot.locator(".ytick text").all_text_contents()  # SVG text has no innerText
    assert labels == ["model.encoder.units", "train.learning_rate"]  # drawn from the bottom
    expect(plot).to_contain_text("fANOVA over 12 finished trials")
    no_error_badges(page)
    plot.scroll_into_view_if_needed()
    screenshot(page, "compare-10-importance")
    page.context.close()
