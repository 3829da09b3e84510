"""The Compare tab in a real browser: annotate a run, delete one, and draw the Plotly charts.

Playwright drives Debian's Chromium against `keras-seq ui` (a subprocess) over a real run
store of six finished runs written through `RunStore`'s API (one translator's BLEU by
length kept as the app keeps it, so the chart needs no model). Every page's console is
recorded: a test fails on a console error or an uncaught exception in the page.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from builder_ui.app.actions.compare import BLEU_ARTIFACT
from builder_ui.engine.store import RunStore
from tests.app.app_server import Server, serving
from tests.app.browser import UI_TIMEOUT_MS, needs_chromium
from tests.app.compare_runs import record_runs
from tests.app.test_app_browser import screenshot
from tests.app.test_app_compare import rows, settled

pytestmark = [pytest.mark.large, needs_chromium]

# BLEU by length of one translator, as `keras_seq.metrics.evaluate_by_length` writes it:
# unrounded scores, which the app's table shows to 1 (BLEU) and 2 (the others) decimals.
BLEU_CSV = """bucket,min_length,max_length,n,bleu,exact_match,token_accuracy
1-10,1,10,14,41.23456,0.1234567,0.8765432
11-20,11,20,6,18.98765,0.0,0.5012345
"""

# The text of every SVG text of a Plotly chart: its box's distance (px) inside the chart's
# left and right edges; a negative one is cut off there.
TEXT_INSIDE_JS = """(chart) => {
    const edge = chart.querySelector('.main-svg').getBoundingClientRect();
    return [...chart.querySelectorAll('text')]
        .filter((text) => text.textContent.trim())
        .map((text) => {
            const box = text.getBoundingClientRect();
            return [text.textContent, box.left - edge.left, edge.right - box.right];
        });
}"""

# Each trace's y values and the y range the browser drew them in.
RANGES_JS = """(chart) => chart.data.map((trace) => {
    const axis = 'yaxis' + (trace.yaxis || 'y').slice(1);
    return [trace.y, chart._fullLayout[axis].range];
})"""


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Iterator[tuple[Server, list[str]]]:
    directory = tmp_path_factory.mktemp("compare-charts")
    with RunStore(directory / "runs") as store:
        ids = record_runs(store, 6, epochs=3)
        with store.atomic_artifact(ids[5], "model.keras") as path:
            path.write_text("weights")
        with store.atomic_artifact(ids[1], BLEU_ARTIFACT) as path:  # ids[1]: a seq2seq run
            path.write_text(BLEU_CSV)
    with serving(directory, "--no-warm-up") as running:  # it never trains
        yield running, ids


@pytest.fixture
def page(browser, served):
    """The Compare tab in a new session, with its console errors collected in `page.problems`."""

    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(UI_TIMEOUT_MS)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(f"uncaught: {error}"))
    page.problems = problems
    page.goto(served[0].url)
    page.get_by_role("tab", name="Compare").click()
    page.wait_for_selector("#results-table")
    yield page
    context.close()


def click_row(page, run_id: str) -> None:
    settled(page)
    rows(page, run_id).get_by_role("gridcell").first.click()
    from playwright.sync_api import expect

    expect(page.locator("#run-name textarea, #run-name input").first).not_to_have_value("")


def fill(page, elem_id: str, text: str) -> None:
    box = page.locator(f"#{elem_id} textarea, #{elem_id} input").first
    box.fill(text)


def test_a_clicked_run_is_named_tagged_starred_and_filtered_by_tag(page, served):
    from playwright.sync_api import expect

    server, ids = served
    click_row(page, ids[0])
    fill(page, "run-name", "the baseline")
    fill(page, "run-tags", "baseline, lstm")
    fill(page, "run-note", "first try")
    page.locator("#run-save").click()
    expect(page.locator("#compare-message")).to_contain_text(f"Saved run {ids[0]}")
    page.locator("#run-star").click()
    expect(page.locator("#run-star")).to_contain_text("Unstar")
    row = rows(page, ids[0])
    expect(row).to_contain_text("the baseline")
    expect(row).to_contain_text("baseline, lstm")
    expect(row).to_contain_text("★")
    with RunStore(server.runs) as store:
        record = store.get(ids[0])
    assert (record.name, record.tags, record.note) == (
        "the baseline",
        ("baseline", "lstm"),
        "first try",
    )
    assert record.starred
    # A tag with a character tags may not hold: one message, nothing changed.
    fill(page, "run-tags", "bad tag!")
    page.locator("#run-save").click()
    expect(page.locator("#compare-message")).to_contain_text("✗ Tags:")
    expect(page.locator("#compare-message")).to_contain_text("'tag!'")
    with RunStore(server.runs) as store:
        assert store.get(ids[0]).tags == ("baseline", "lstm")
    assert page.problems == []


def test_delete_asks_for_the_tick_first_and_archive_hides_a_run(page, served):
    from playwright.sync_api import expect

    server, ids = served
    click_row(page, ids[5])
    page.locator("#run-delete").click()
    expect(page.locator("#compare-message")).to_contain_text("✗ Tick")
    assert (server.runs / ids[5] / "model.keras").is_file()
    page.locator("#run-confirm input").check()
    page.locator("#run-delete").click()
    expect(page.locator("#compare-message")).to_contain_text(f"Deleted run {ids[5]}")
    expect(rows(page, ids[5])).to_have_count(0)
    assert not (server.runs / ids[5]).exists()

    click_row(page, ids[4])
    page.locator("#run-archive").click()
    expect(rows(page, ids[4])).to_have_count(0)
    page.locator("#results-show-archived input").check()
    expect(rows(page, ids[4])).to_have_count(1)
    assert page.problems == []


def test_the_plotly_charts_render_with_no_console_error(page, served):
    from playwright.sync_api import expect

    _, ids = served
    click_row(page, ids[1])
    click_row(page, ids[2])
    expect(page.locator("#compare-runs")).to_contain_text(ids[2])
    page.locator("#compare-plot-button").click()
    expect(page.locator("#compare-plot .js-plotly-plot")).to_be_visible()
    for values, (low, high) in page.locator("#compare-plot .js-plotly-plot").evaluate(RANGES_JS):
        assert low <= min(values) and max(values) <= high, (values, low, high)
    # The two runs logged the same val_loss (one line on the other): the hover names both.
    page.locator("#compare-plot .nsewdrag").first.hover()
    hover = page.locator("#compare-plot .hoverlayer")
    expect(hover).to_contain_text("epoch")
    for run_id in ids[1:3]:
        expect(hover).to_contain_text(run_id)
    screenshot(page, "compare-charts-curves-hover")
    # The drawing options redraw the curves shown: smoothed, log scale, seconds of training.
    plot = page.locator("#compare-plot .js-plotly-plot")
    page.locator("#compare-log-y input").check()
    page.locator("#compare-x-axis").get_by_label("seconds of training").check()
    expect(page.locator("#compare-plot .xtitle")).to_have_text("seconds of training")
    assert plot.evaluate("p => p.layout.yaxis.type") == "log"
    page.locator("#compare-log-y input").uncheck()
    expect(page.locator("#compare-plot .xtitle")).to_have_text("seconds of training")
    page.wait_for_function(
        "() => document.querySelector('#compare-plot .js-plotly-plot').layout.yaxis.type !== 'log'"
    )
    screenshot(page, "compare-charts-curves-time")
    # By group: the Group by menu's column, one mean per value of it.
    page.locator("#group-by input").click()
    page.get_by_role("option", name="model.type", exact=True).click()
    page.locator("#compare-curves-grouped input").check()
    expect(page.locator("#compare-plot .legend")).to_contain_text("(1 run)")
    page.locator("#compare-curves-grouped input").uncheck()
    page.locator("#hparams-button").click()
    expect(page.locator("#hparams-plot .js-plotly-plot")).to_be_visible()
    expect(page.locator("#hparams-plot text", has_text="sequence_classifier")).to_be_visible()
    texts = page.locator("#hparams-plot .js-plotly-plot").evaluate(TEXT_INSIDE_JS)
    assert texts and [t for t in texts if min(t[1:]) < 0] == []  # none cut at an edge
    scatter_x = page.locator("#scatter-x input")
    scatter_x.click()
    page.get_by_role("option", name="train.learning_rate").click()
    page.locator("#scatter-button").click()
    expect(page.locator("#scatter-plot .js-plotly-plot")).to_be_visible()
    expect(page.locator("#compare-message")).not_to_contain_text("✗")
    # One point per run shown (six written; the other tests may have deleted or archived one).
    expect(page.locator("#scatter-plot .scatterlayer .point").first).to_be_visible()
    page.locator("#bleu-button").click()
    expect(page.locator("#bleu-plot .js-plotly-plot")).to_be_visible()
    ticks = page.locator("#bleu-plot .xtick text")
    expect(ticks).to_have_text(["1-10", "11-20"])  # the buckets, not fractional lengths
    table = page.locator("#bleu-table")
    for shown in ("41.2", "0.12", "0.88", "0.5"):
        expect(table).to_contain_text(shown)
    for unrounded in ("41.23", "18.9", "0.123", "0.876", "0.501"):
        expect(table).not_to_contain_text(unrounded)
    screenshot(page, "compare-charts")
    assert page.problems == []


# Each line's run and its value on the metric axis (the last), and that axis's brushed ranges.
BRUSHED_JS = """(chart) => {
    const trace = chart.data[0];
    const metric = trace.dimensions[trace.dimensions.length - 1];
    return [trace.meta.run_ids, Array.from(metric.values), metric.constraintrange || null];
}"""


def test_brushing_an_axis_of_the_parallel_coordinates_filters_the_table(page, served):
    """Drag along the metric's axis: the table keeps the runs whose lines the brush keeps;
    the chart drawn again has no brush, and the table every run again."""
    from playwright.sync_api import expect

    page.locator("#hparams-button").click()
    chart = page.locator("#hparams-plot .js-plotly-plot")
    expect(chart).to_be_visible()
    drawn, values, _ = chart.evaluate(BRUSHED_JS)
    assert len(drawn) >= 3, drawn
    # The metric's axis is the last; drag over its upper half (the higher values).
    axis = page.locator("#hparams-plot .axis-brush rect.background").last
    box = axis.bounding_box()
    x = box["x"] + box["width"] / 2
    page.mouse.move(x, box["y"] + 3)
    page.mouse.down()
    page.mouse.move(x, box["y"] + box["height"] * 0.55, steps=8)
    page.mouse.up()
    legend = page.locator("#results-legend")
    expect(legend).to_contain_text("Brushed on the parallel coordinates")
    _, _, ranges = chart.evaluate(BRUSHED_JS)
    assert ranges, "the drag drew no brush"
    ranges = ranges if isinstance(ranges[0], list) else [ranges]
    kept = [
        run_id
        for run_id, value in zip(drawn, values, strict=True)
        if any(low <= value <= high for low, high in ranges)
    ]
    assert 0 < len(kept) < len(drawn), (kept, values, ranges)
    expect(legend).to_contain_text(
        "only the run whose line" if len(kept) == 1 else f"only the {len(kept)} runs whose lines"
    )
    settled(page)
    for run_id in drawn:
        expect(rows(page, run_id)).to_have_count(1 if run_id in kept else 0)
    screenshot(page, "compare-charts-brushed")
    # A new chart has no brush: every run is back.
    page.locator("#hparams-button").click()
    expect(legend).not_to_contain_text("Brushed")
    settled(page)
    for run_id in drawn:
        expect(rows(page, run_id)).to_have_count(1)
    assert page.problems == []
