"""The Build tab's graph canvas in a real browser: assemble, check, train and compare a graph.

Playwright drives Debian's Chromium against `keras-seq ui` (a subprocess, one per module)
that reports shapes from the real Keras layers and trains in its real queue. The same
graph is built twice, once with the mouse and once with the keyboard alone: on the tiny
long-lag task (96 training sequences of 5 one-hot steps), an LSTM's output goes through a
Dense block and straight into an Add, then a Dropout, to the head. A Dense of another width
is a mismatch the canvas marks on the Add. The mouse's graph is trained and found in Compare;
the keyboard's, the same graph, is checked valid block by block and not trained again. Every
page's console is watched. Screenshots go to `$KERAS_SEQ_SCREENSHOTS` (default
`tests/artifacts/screenshots/`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from builder_ui.engine.store import RunStore
from tests.app.browser import Watched, needs_chromium
from tests.app.test_app_browser import (
    SCREENSHOTS,
    UI_TIMEOUT_MS,
    fill_field,
    queue_and_wait,
    screenshot,
)

pytestmark = [pytest.mark.large, needs_chromium]

# The task and training of the tiny spec, set in the form before the graph is started.
TINY_FIELDS = {"task-lag": "5", "task-n": "120", "task-num-distractors": "3", "train-epochs": "1"}
KEYS_PER_PORT_HUNT = 60  # a hang guard on Tab presses while looking for a port
REDRAW_RETRIES = 20  # a hang guard on looking up an element the canvas keeps redrawing


@pytest.fixture
def open_build(browser, server):
    """A new session on the Build tab with a tiny task and one epoch, started as a graph."""
    from playwright.sync_api import expect

    contexts = []

    def open_one(name: str, *, keyboard: bool) -> Watched:
        context = browser.new_context(viewport={"width": 1400, "height": 1100})
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(UI_TIMEOUT_MS)
        watched = Watched(page)
        page.goto(server.url)
        page.wait_for_selector("#field-task-lag input")
        fill_field(page, "name", name)
        for field, value in TINY_FIELDS.items():
            fill_field(page, field, value)
        expect(page.locator("#spec-yaml")).to_contain_text("epochs: 1")
        if keyboard:
            page.locator("#new-graph").focus()
            page.keyboard.press("Enter")
        else:
            page.locator("#new-graph").click()
        # One-hot steps: Input → LSTM → Output, each edge with its shape.
        expect(nodes(page)).to_have_count(3)
        expect(edge(page, "sequence", "encoder")).to_contain_text("(None, 5, 5)")
        expect(edge(page, "encoder", "head")).to_contain_text("(None, 16)")
        expect(page.locator("#spec-yaml")).to_contain_text("type: graph")
        return watched

    yield open_one
    for context in contexts:
        context.close()


@contextmanager
def opened_page(browser, server) -> Iterator[Watched]:
    """A page of its own (a new browser context) on the app, its Build tab loaded."""
    context = browser.new_context(viewport={"width": 1400, "height": 1100})
    try:
        page = context.new_page()
        page.set_default_timeout(UI_TIMEOUT_MS)
        watched = Watched(page)
        page.goto(server.url)
        page.wait_for_selector("#field-task-lag input")  # the first preset: Elman's RNN
        yield watched
    finally:
        context.close()


def canvas(page):
    return page.locator("#graph-canvas")


def nodes(page):
    return canvas(page).locator(".ksg-node")


def node(page, node_id: str):
    return canvas(page).locator(f'.ksg-node[data-id="{node_id}"]')


def port(page, node_id: str, name: str = "x"):
    return canvas(page).locator(f'.ksg-port[data-node="{node_id}"][data-port="{name}"]')


def edge(page, source: str, target: str, name: str = "x"):
    selector = f'.ksg-edge[data-source="{source}"][data-target="{target}"][data-port="{name}"]'
    return canvas(page).locator(selector)


def centre(locator) -> tuple[float, float]:
    """The middle of an element on screen, once it is there.

    A report from the server redraws the canvas, replacing its elements: the element is
    looked up again until one stays attached long enough to be measured.
    """
    from playwright.sync_api import Error

    for _ in range(REDRAW_RETRIES):
        try:
            locator.scroll_into_view_if_needed()
            box = locator.bounding_box()
        except Error:
            continue
        if box:
            return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    pytest.fail(f"{locator} never stayed on screen")


def mouse_drag(page, start: tuple[float, float], end: tuple[float, float]) -> None:
    """Press, move in steps, release: what a person's drag sends as pointer events."""
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move(*end, steps=8)
    page.mouse.up()


def drop_block(page, block: str, x: float, y: float) -> None:
    """Drag a palette entry onto the canvas at (x, y) from the stage's corner."""
    entry = canvas(page).locator(f'.ksg-entry[data-block="{block}"]')
    entry.scroll_into_view_if_needed()
    stage = canvas(page).locator(".ksg-stage").bounding_box()  # measured after the scroll
    mouse_drag(page, middle(entry), (stage["x"] + x, stage["y"] + y))


def wire(page, source: str, target: str, name: str = "x") -> None:
    """Drag from a block's output dot to another block's input port.

    The stage is scrolled into view first, once: measuring one end may not scroll the page
    after the other end was measured.
    """
    from playwright.sync_api import expect

    settled(page)
    canvas(page).locator(".ksg-stage").scroll_into_view_if_needed()
    out = canvas(page).locator(f'.ksg-out[data-node="{source}"]')
    mouse_drag(page, middle(out), middle(port(page, target, name)))
    expect(edge(page, source, target, name)).to_have_count(1)


def settled(page) -> None:
    """Wait until the canvas has drawn the server's answer to its newest edit: a block grows
    by a line when its report comes (its parameters), moving its ports, so a gesture aimed
    before that would miss them."""
    page.wait_for_function(
        """() => { const root = document.querySelector('#graph-canvas .ksg-root');
            return root && root.dataset.answered === root.dataset.revision; }"""
    )


def middle(locator) -> tuple[float, float]:
    """The middle of an element on screen, without scrolling (see `centre`)."""
    from playwright.sync_api import Error

    for _ in range(REDRAW_RETRIES):
        try:
            box = locator.bounding_box()
        except Error:
            continue
        if box:
            return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    pytest.fail(f"{locator} never stayed on screen")


def set_param(page, name: str, value: str) -> None:
    """Type a value into the parameter panel's field and leave it (Tab), as a person does."""
    box = canvas(page).locator(f"#ksg-param-{name}")
    box.fill(value)
    box.press("Tab")


# The graph's blocks, in the spec's order.
GRAPH_LAYERS = ["Input", "LSTM", "Output", "Dense", "Add", "Dropout"]


def check_graph_is_valid(page, name: str) -> None:
    """The canvas marks no block, the spec is valid and names the graph's blocks in order."""
    from playwright.sync_api import expect

    expect(page.locator("#spec-errors")).to_contain_text("Valid spec")
    expect(canvas(page).locator(".ksg-bad")).to_have_count(0)
    yaml = page.locator("#spec-yaml")
    expect(yaml).to_contain_text(f"name: {name}")
    in_order = re.compile(r"[\s\S]*".join(f"layer: {x}\\b" for x in GRAPH_LAYERS))
    expect(yaml).to_contain_text(in_order, use_inner_text=True)


def check_graph_trains_and_shows_in_compare(watched: Watched, server, name: str) -> str:
    """The graph is valid: queue one epoch, wait until done, find the run in Compare.

    Returns:
        The run's id.
    """
    from playwright.sync_api import expect

    page = watched.page
    check_graph_is_valid(page, name)
    run_id = queue_and_wait(page)
    with RunStore(server.runs) as store:
        record = store.get(run_id)
    assert record.status == "done" and record.name == name
    assert record.spec["model"]["type"] == "graph"
    assert [n["layer"] for n in record.spec["model"]["nodes"]] == GRAPH_LAYERS
    page.get_by_role("tab", name="Compare").click()
    row = page.locator("#results-table").get_by_role("row").filter(has_text=run_id)
    expect(row).to_be_visible()
    expect(row).to_contain_text(name)
    expect(row).to_contain_text("done")
    return run_id


def check_exports_as_python(page, run_id: str) -> None:
    """The Export tab writes the graph run out as Keras functional-API code."""
    from playwright.sync_api import expect

    page.get_by_role("tab", name="Export").click()
    page.locator("#export-refresh").click()
    page.locator("#export-run input").click()
    page.get_by_role("option", name=run_id).first.click()
    page.locator("#export-format").get_by_label("Python code (.py)").check()
    page.locator("#export-button").click()
    safe_id = run_id.replace("-", "_")
    expect(page.locator("#export-message")).to_contain_text(f"✓ model_{safe_id}.py", timeout=60_000)


def test_a_graph_built_with_the_mouse_checks_its_shapes_trains_and_shows_in_compare(
    open_build, server
):
    from playwright.sync_api import expect

    watched = open_build("mouse-graph", keyboard=False)
    page = watched.page
    drop_block(page, "Dense", 330, 100)
    expect(node(page, "dense")).to_have_count(1)
    # Dropped without its required width: marked, and the panel says why.
    expect(node(page, "dense")).to_have_class(re.compile("ksg-bad"))
    set_param(page, "units", "16")
    drop_block(page, "Add", 330, 210)
    drop_block(page, "Dropout", 330, 320)
    expect(nodes(page)).to_have_count(6)
    set_param(page, "rate", "0.1")
    wire(page, "encoder", "dense")
    wire(page, "encoder", "add")
    wire(page, "dense", "add")
    wire(page, "add", "dropout")
    wire(page, "dropout", "head")  # replaces encoder → head: the head has one port
    expect(edge(page, "encoder", "head")).to_have_count(0)
    expect(edge(page, "dense", "add")).to_contain_text("(None, 16)")
    expect(canvas(page).locator(".ksg-bad")).to_have_count(0)
    screenshot(page, "canvas-1-mouse-graph")

    # A narrower Dense: its edge shows the new shape, and the Add is marked with Keras's words.
    node(page, "dense").click()
    set_param(page, "units", "8")
    expect(edge(page, "dense", "add")).to_contain_text("(None, 8)")
    expect(node(page, "add")).to_have_class(re.compile("ksg-bad"))
    expect(node(page, "add")).to_have_attribute("data-error", re.compile("add"))
    node(page, "add").click()
    expect(canvas(page).locator("#ksg-node-error")).to_contain_text("add")
    screenshot(page, "canvas-2-mismatch-marked")

    node(page, "dense").click()
    set_param(page, "units", "16")
    expect(node(page, "add")).not_to_have_class(re.compile("ksg-bad"))
    # The YAML follows the canvas: the task and training stay as the form set them.
    yaml = page.locator("#spec-yaml")
    expect(yaml).to_contain_text("units: 16")
    expect(yaml).to_contain_text("lag: 5")
    run_id = check_graph_trains_and_shows_in_compare(watched, server, "mouse-graph")
    screenshot(page, "canvas-3-mouse-run-in-compare")
    check_exports_as_python(page, run_id)

    # Typed YAML redraws the canvas: a wider LSTM no longer fits the Add. Undo takes it back.
    page.get_by_role("tab", name="Build").click()
    editor = page.locator("#spec-yaml .cm-content")
    text = editor.inner_text()
    wider, count = re.subn(r"units: 16(\n\s+inputs:\n\s+x: sequence)", r"units: 12\1", text)
    assert count == 1, text
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(wider)
    expect(edge(page, "encoder", "dense")).to_contain_text("(None, 12)")
    expect(node(page, "add")).to_have_class(re.compile("ksg-bad"))
    canvas(page).locator(".ksg-undo").click()
    expect(edge(page, "encoder", "dense")).to_contain_text("(None, 16)")
    expect(node(page, "add")).not_to_have_class(re.compile("ksg-bad"))
    expect(page.locator("#spec-yaml")).not_to_contain_text("units: 12")
    assert watched.problems() == []


def test_a_yaml_typo_keeps_the_graph_read_only_and_loses_nothing(open_build):
    """A typo in the YAML (`: x` after `layer: Dense`) leaves the last good graph on the
    canvas, read-only; fixed, the next canvas edit adds to the whole graph, and a reload
    finds every block."""
    from playwright.sync_api import expect

    from tests.app.test_app_build_form import answer_dialogs

    watched = open_build("typo-graph", keyboard=False)
    page = watched.page
    drop_block(page, "Dense", 330, 100)
    expect(nodes(page)).to_have_count(4)
    set_param(page, "units", "8")
    yaml = page.locator("#spec-yaml")
    expect(yaml).to_contain_text("units: 8")
    editor = page.locator("#spec-yaml .cm-content")
    good = editor.inner_text()
    typo = good.replace("layer: Dense", "layer: Dense: x", 1)
    assert typo != good, good
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(typo)
    root, status = canvas(page).locator(".ksg-root"), canvas(page).locator(".ksg-status")
    expect(root).to_have_class(re.compile("ksg-frozen"))
    expect(status).to_contain_text("does not parse")
    expect(nodes(page)).to_have_count(4)
    screenshot(page, "canvas-8-yaml-typo-read-only")
    node(page, "dense").focus()
    page.keyboard.press("Delete")  # refused: the spec holds no graph to write it into
    expect(status).to_contain_text("Read-only")
    expect(nodes(page)).to_have_count(4)

    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(good)
    expect(root).not_to_have_class(re.compile("ksg-frozen"))
    drop_block(page, "Dropout", 330, 320)
    expect(nodes(page)).to_have_count(5)
    for layer in ("Input", "LSTM", "Output", "Dense", "Dropout"):
        expect(yaml).to_contain_text(f"layer: {layer}")
    answer_dialogs(page, accept=True)
    watched.reload()
    expect(nodes(page)).to_have_count(5)
    expect(node(page, "dense")).to_have_count(1)
    assert watched.problems() == []


def hunt_port(page, node_id: str, name: str = "x") -> None:
    """Press Tab until the port has the focus (the keyboard's way through the canvas)."""
    target = port(page, node_id, name)
    for _ in range(KEYS_PER_PORT_HUNT):
        if target.evaluate("el => el === document.activeElement"):
            return
        page.keyboard.press("Tab")
    pytest.fail(f"Tab never reached port {node_id}.{name}")


def key_connect(page, source: str, target: str, name: str = "x") -> None:
    """Select the source block, press C, Tab to the target's port, press Enter."""
    from playwright.sync_api import expect

    node(page, source).focus()
    page.keyboard.press("c")
    hunt_port(page, target, name)
    page.keyboard.press("Enter")
    expect(edge(page, source, target, name)).to_have_count(1)


def key_add(page, block: str, node_id: str) -> None:
    """Focus the palette entry and press Enter; the new block is selected."""
    from playwright.sync_api import expect

    canvas(page).locator(f'.ksg-entry[data-block="{block}"]').focus()
    page.keyboard.press("Enter")
    expect(node(page, node_id)).to_be_focused()


def key_param(page, name: str, value: str) -> None:
    box = canvas(page).locator(f"#ksg-param-{name}")
    box.focus()
    page.keyboard.press("Control+a")
    page.keyboard.type(value)
    page.keyboard.press("Tab")


def test_the_same_graph_built_with_the_keyboard_alone(open_build):
    from playwright.sync_api import expect

    watched = open_build("keyboard-graph", keyboard=True)
    page = watched.page
    key_add(page, "Dense", "dense")
    key_param(page, "units", "16")
    key_add(page, "Add", "add")
    key_add(page, "Dropout", "dropout")
    key_param(page, "rate", "0.1")
    expect(nodes(page)).to_have_count(6)

    # Arrow keys move the focused block, in grid steps: the spec's position follows.
    before = node(page, "dropout").get_attribute("style")
    node(page, "dropout").focus()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Shift+ArrowRight")
    expect(node(page, "dropout")).not_to_have_attribute("style", before)

    key_connect(page, "encoder", "dense")
    key_connect(page, "encoder", "add")
    key_connect(page, "dense", "add")
    key_connect(page, "add", "dropout")
    key_connect(page, "dropout", "head")
    expect(edge(page, "dense", "add")).to_contain_text("(None, 16)")

    # Delete, undo, redo: an extra block comes and goes.
    key_add(page, "LayerNormalization", "layer_normalization")
    page.keyboard.press("Delete")
    expect(node(page, "layer_normalization")).to_have_count(0)
    page.keyboard.press("Control+z")
    expect(node(page, "layer_normalization")).to_have_count(1)
    page.keyboard.press("Control+Shift+z")
    expect(node(page, "layer_normalization")).to_have_count(0)

    # The mismatch and its fix, typed.
    node(page, "dense").focus()
    key_param(page, "units", "8")
    expect(edge(page, "dense", "add")).to_contain_text("(None, 8)")
    expect(node(page, "add")).to_have_class(re.compile("ksg-bad"))
    screenshot(page, "canvas-4-keyboard-mismatch")
    node(page, "dense").focus()
    key_param(page, "units", "16")
    expect(node(page, "add")).not_to_have_class(re.compile("ksg-bad"))
    screenshot(page, "canvas-5-keyboard-graph")
    # The mouse's graph, which the test above trains; this one is not trained again.
    check_graph_is_valid(page, "keyboard-graph")
    # The YAML editor keeps Tab for indenting, and says how to leave it: Escape, then Tab.
    expect(page.locator("#spec-yaml")).to_contain_text("Esc then Tab leaves")
    page.locator("#spec-yaml .cm-content").focus()
    page.keyboard.press("Escape")
    page.keyboard.press("Tab")
    left = "!document.querySelector('#spec-yaml').contains(document.activeElement)"
    assert page.evaluate(left)
    assert watched.problems() == []


def test_a_preset_of_the_arc_opens_as_a_graph_of_its_own_layers(browser, server):
    from playwright.sync_api import expect

    with opened_page(browser, server) as watched:
        page = watched.page
        page.locator("#open-as-graph").click()
        # Input, the SimpleRNN, the softmax head: the preset's own layers, each edge shaped.
        expect(nodes(page)).to_have_count(3)
        expect(edge(page, "sequence", "simple_0")).to_contain_text("(None, ")
        expect(edge(page, "simple_0", "classifier")).to_contain_text("(None, ")
        expect(page.locator("#spec-yaml")).to_contain_text("layer: SimpleRNN")
        expect(page.locator("#spec-errors")).to_contain_text("Valid spec")
        screenshot(page, "canvas-6-preset-as-graph")
        assert watched.problems() == []


LABEL_BOXES = """() => [...document.querySelectorAll('.ksg-edge-label')].map((label) => {
    const box = label.getBoundingClientRect();
    return [box.x, box.y, box.width, box.height, label.textContent];
})"""


def overlapping(boxes):
    """Pairs of edge labels whose boxes overlap by more than a pixel each way."""
    return [
        (a[4], b[4])
        for i, a in enumerate(boxes)
        for b in boxes[i + 1 :]
        if a[0] + 1 < b[0] + b[2]
        and b[0] + 1 < a[0] + a[2]
        and a[1] + 1 < b[1] + b[3]
        and b[1] + 1 < a[1] + a[3]
    ]


def test_a_seq2seq_preset_opens_as_an_encoder_graph_and_one_decoder_block(browser, server):
    from playwright.sync_api import expect

    from tests.app.test_app_build_form import pick_preset

    with opened_page(browser, server) as watched:
        page = watched.page
        pick_preset(page, "7 · Seq2seq + Bahdanau attention")
        expect(page.locator("#spec-yaml")).to_contain_text("attention: bahdanau")
        page.locator("#open-as-graph").click()
        # Source ids, their embedding, the bidirectional GRU, the decoder block and the
        # softmax over the target words. The GRU feeds the decoder twice: its states to the
        # attention (memory), and its final state [h→; h←] to start from (state).
        expect(nodes(page)).to_have_count(5)
        expect(edge(page, "encoder_0", "decoder", "memory")).to_contain_text("(None, None, 64)")
        expect(edge(page, "encoder_0", "decoder", "state")).to_have_text("(None, 64)")
        expect(node(page, "decoder")).to_contain_text("RecurrentDecoder → (None, ")
        expect(page.locator("#spec-yaml")).to_contain_text("layer: RecurrentDecoder")
        expect(page.locator("#spec-errors")).to_contain_text("Valid spec")
        assert overlapping(page.evaluate(LABEL_BOXES)) == []  # no label covers another
        screenshot(page, "canvas-7-seq2seq-as-graph")
        assert watched.problems() == []


def stage_point(page, fx: float, fy: float) -> tuple[float, float]:
    """A point of the stage, as fractions of its width and height from its top-left corner."""
    box = canvas(page).locator(".ksg-stage").bounding_box()
    return box["x"] + fx * box["width"], box["y"] + fy * box["height"]


def quick_add(page, text: str) -> None:
    """Type into the open quick-add box and take the first match."""
    from playwright.sync_api import expect

    box = canvas(page).locator(".ksg-quick-input")
    expect(box).to_be_focused()
    page.keyboard.type(text)
    page.keyboard.press("Enter")
    expect(box).to_have_count(0)


OVERLAPS = """() => {
    const boxes = [...document.querySelectorAll('#graph-canvas .ksg-node')]
        .map((node) => node.getBoundingClientRect());
    let found = 0;
    boxes.forEach((a, i) => boxes.slice(i + 1).forEach((b) => {
        if (a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom) found++;
    }));
    return found;
}"""


def test_the_node_editor_gestures_search_quick_add_wiring_hints_copy_paste_and_tidy(
    open_build, browser
):
    """What every node editor has, on the canvas: the palette's search, quick-add from a
    double-click and from a wire dropped on the stage, ports that say why a wire may not end
    there, an edge clicked and deleted, blocks copied as YAML into a second tab, duplicate,
    Tidy, zoom and an SVG export."""
    from playwright.sync_api import expect

    from tests.app.test_app_build_form import answer_dialogs

    watched = open_build("editor-graph", keyboard=False)
    page = watched.page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    yaml = page.locator("#spec-yaml")

    # The palette's search: typing narrows it, Enter adds the first match.
    search = canvas(page).locator(".ksg-search")
    search.fill("layernorm")
    expect(canvas(page).locator(".ksg-entry")).to_have_count(1)
    search.press("Enter")
    expect(node(page, "layer_normalization")).to_have_count(1)
    search.fill("")

    # Quick-add: double-click an empty spot of the stage, type, Enter.
    page.mouse.dblclick(*stage_point(page, 0.08, 0.06))
    quick_add(page, "dense")
    expect(node(page, "dense")).to_have_count(1)
    set_param(page, "units", "8")

    # A wire dropped on the stage opens quick-add; the new block arrives wired.
    out = canvas(page).locator('.ksg-out[data-node="encoder"]')
    mouse_drag(page, centre(out), stage_point(page, 0.85, 0.1))
    quick_add(page, "dropout")
    expect(edge(page, "encoder", "dropout")).to_contain_text("(None, 16)")
    expect(yaml).to_contain_text("layer: Dropout")

    # While a wire is drawn from dropout, the head's port lights up; the encoder's says why not.
    page.mouse.move(*centre(canvas(page).locator('.ksg-out[data-node="dropout"]')))
    page.mouse.down()
    page.mouse.move(*stage_point(page, 0.5, 0.5), steps=6)
    expect(port(page, "head")).to_have_class(re.compile("ksg-ok"))
    expect(port(page, "encoder")).to_have_class(re.compile("ksg-no"))
    expect(port(page, "encoder")).to_have_attribute("title", re.compile("a loop"))
    screenshot(page, "canvas-9-wiring-hints")
    page.mouse.move(*centre(port(page, "head")), steps=6)
    page.mouse.up()
    expect(edge(page, "dropout", "head")).to_have_count(1)
    expect(edge(page, "encoder", "head")).to_have_count(0)

    # An edge clicked and Delete pressed is deleted; Ctrl+Z brings that edge back.
    edge(page, "encoder", "dropout").click()
    page.keyboard.press("Delete")
    expect(edge(page, "encoder", "dropout")).to_have_count(0)
    page.keyboard.press("Control+z")
    expect(edge(page, "encoder", "dropout")).to_have_count(1)

    # Two blocks selected (Ctrl+click) and copied; a second tab pastes them with their edge.
    node(page, "encoder").click()
    node(page, "dropout").click(modifiers=["Control"])
    page.keyboard.press("Control+c")
    expect(canvas(page).locator(".ksg-status")).to_contain_text("Copied 2 blocks")
    second = page.context.new_page()
    other = Watched(second)
    second.goto(page.url)
    second.wait_for_selector("#field-task-lag input")
    answer_dialogs(second, accept=True)  # the tab opens on this session's graph: start anew
    second.locator("#new-graph").click()
    expect(nodes(second)).to_have_count(3)
    canvas(second).locator(".ksg-stage").focus()
    second.keyboard.press("Control+v")
    expect(nodes(second)).to_have_count(5)
    expect(edge(second, "encoder_2", "dropout")).to_have_count(1)
    expect(edge(second, "sequence", "encoder_2")).to_have_count(1)  # its input is there too
    expect(second.locator("#spec-yaml")).to_contain_text("encoder_2")
    second.keyboard.press("Control+z")
    expect(nodes(second)).to_have_count(3)
    assert other.problems() == []
    second.close()

    # Duplicate, then Tidy: no block on another, and the spec holds every position.
    page.bring_to_front()
    node(page, "dense").click()
    page.keyboard.press("Control+d")
    expect(node(page, "dense_2")).to_have_count(1)
    canvas(page).locator(".ksg-tidy").click()
    expect(canvas(page).locator(".ksg-status")).to_contain_text("Tidied")
    assert page.evaluate(OVERLAPS) == 0
    screenshot(page, "canvas-10-tidied")

    # Shift+drag a box over the stage's upper half: the blocks wholly inside it are selected.
    canvas(page).locator(".ksg-stage").scroll_into_view_if_needed()
    start, end = stage_point(page, 0.02, 0.02), stage_point(page, 0.98, 0.5)
    inside = page.evaluate(
        """([x1, y1, x2, y2]) => [...document.querySelectorAll('#graph-canvas .ksg-node')]
            .filter((n) => { const r = n.getBoundingClientRect();
                return r.width && r.left >= x1 && r.right <= x2 && r.top >= y1 && r.bottom <= y2; })
            .map((n) => n.dataset.id).sort()""",
        [*start, *end],
    )
    assert inside, "the box holds no block: the layout changed"
    page.keyboard.down("Shift")
    mouse_drag(page, start, end)
    page.keyboard.up("Shift")
    chosen = canvas(page).locator(".ksg-node.selected")
    expect(chosen).to_have_count(len(inside))
    assert sorted(chosen.evaluate_all("(nodes) => nodes.map((n) => n.dataset.id)")) == inside

    # Zoom in with the controls, with the wheel, and with a pinch (a trackpad's pinch reaches
    # the page as a wheel event with Ctrl held); the minimap is there.
    viewport = canvas(page).locator(".svelte-flow__viewport")
    zooms = []
    for zoom_in in (
        lambda: canvas(page).locator(".svelte-flow__controls-zoomin").click(),
        lambda: page.mouse.wheel(0, -300),
        lambda: (page.keyboard.down("Control"), page.mouse.wheel(0, -100)),
    ):
        zooms.append(viewport.evaluate(SCALE))
        page.mouse.move(*stage_point(page, 0.5, 0.5))
        zoom_in()
        page.keyboard.up("Control")
        page.wait_for_function(
            f"(before) => ({SCALE})(document.querySelector('{VIEWPORT}')) > before", arg=zooms[-1]
        )
    expect(canvas(page).locator(".svelte-flow__minimap")).to_be_visible()

    # A block dragged to the stage's edge and held there pans the stage (auto-pan).
    before = viewport.get_attribute("style")
    page.mouse.move(*centre(node(page, "dense")))
    page.mouse.down()
    page.mouse.move(*stage_point(page, 0.995, 0.5), steps=8)
    expect(viewport).not_to_have_attribute("style", before)
    page.mouse.up()

    # The graph downloads as SVG and as PNG, each a file of its kind.
    for kind, start in (("svg", b"<svg"), ("png", b"\x89PNG")):
        with page.expect_download() as download:
            canvas(page).locator(f".ksg-export-{kind}").click()
        assert download.value.suggested_filename == f"graph.{kind}"
        assert Path(download.value.path()).read_bytes().lstrip().startswith(start)
    assert watched.problems() == []


VIEWPORT = "#graph-canvas .svelte-flow__viewport"
SCALE = "(v) => new DOMMatrix(getComputedStyle(v).transform).a"  # the stage's zoom


# A point of the stage, on screen, where a new block fits: no block, the minimap or the zoom
# controls within a block's width and height of it (the block arrives centred under the point).
EMPTY_POINT = """() => {
    const stage = document.querySelector('#graph-canvas .ksg-stage').getBoundingClientRect();
    const taken = [...document.querySelectorAll(
        '#graph-canvas .ksg-node, #graph-canvas .svelte-flow__minimap, '
        + '#graph-canvas .svelte-flow__controls')].map((el) => el.getBoundingClientRect());
    const [w, h] = [230, 110];
    const [top, bottom] = [Math.max(stage.top, 0), Math.min(stage.bottom, window.innerHeight)];
    for (let y = top + 60; y + h < bottom; y += 20) {  // room above for the shape labels
        for (let x = stage.left + w / 2 + 10; x + w / 2 < stage.right; x += 20) {
            const free = taken.every((r) =>
                x + w / 2 < r.left || x - w / 2 > r.right || y + h < r.top || y - 40 > r.bottom);
            if (free) return [x, y];
        }
    }
    return null;
}"""


class Mouse:
    """The mouse actions of a test, counted: a click or a drag is one."""

    def __init__(self, page) -> None:
        self.page = page
        self.actions = 0

    def click(self, locator, **kwargs) -> None:
        self.actions += 1
        locator.click(**kwargs)

    def drag(self, start, end) -> None:
        self.actions += 1
        mouse_drag(self.page, start, end)

    def wire(self, source: str, target: str, name: str = "x") -> None:
        self.actions += 1
        wire(self.page, source, target, name)

    def wire_to_new(self, source: str, block: str) -> None:
        """Drop a wire from `source` on an empty spot of the stage, type the block, Enter."""
        settled(self.page)
        start = centre(canvas(self.page).locator(f'.ksg-out[data-node="{source}"]'))  # scrolls
        point = self.page.evaluate(EMPTY_POINT)
        if point is None:  # the stage is full: zoom out a step
            self.click(canvas(self.page).locator(".svelte-flow__controls-zoomout"))
            start = centre(canvas(self.page).locator(f'.ksg-out[data-node="{source}"]'))
            point = self.page.evaluate(EMPTY_POINT)
        assert point is not None, "no empty spot on the stage"
        self.drag(start, point)
        quick_add(self.page, block)

    def param(self, name: str, value: str) -> None:
        self.click(canvas(self.page).locator(f"#ksg-param-{name}"))
        self.page.keyboard.press("Control+a")
        self.page.keyboard.type(value)
        self.page.keyboard.press("Tab")


MOUSE_ACTIONS_BAR = 20  # the bar for the 7-block classifier


def test_a_seven_block_attention_classifier_in_at_most_twenty_mouse_actions(browser, server):
    """Input → Embedding → CECLSTM → FinalStatePooling → BahdanauAttention (over the CECLSTM's
    states) → Dense → Output, built from "New graph" with wires dropped on the stage (quick-add),
    counting every click and drag, and checked valid by the server."""
    from playwright.sync_api import expect

    with opened_page(browser, server) as watched:
        page = watched.page
        fill_field(page, "name", "seven-blocks")
        for field, value in TINY_FIELDS.items():
            fill_field(page, field, value)
        page.locator("#field-task-encoding input").click()
        page.get_by_role("option", name="ids", exact=True).click()
        expect(page.locator("#spec-yaml")).to_contain_text("encoding: ids")

        mouse = Mouse(page)
        mouse.click(page.locator("#new-graph"))
        expect(nodes(page)).to_have_count(4)  # tokens → embedding → encoder (LSTM) → head
        mouse.click(canvas(page).locator(".ksg-full"))  # the canvas takes the whole screen
        expect(canvas(page).locator(".ksg-root")).to_have_js_property("isConnected", True)
        page.wait_for_function("document.fullscreenElement !== null")
        mouse.click(node(page, "encoder"))
        page.keyboard.press("Delete")
        expect(nodes(page)).to_have_count(3)
        mouse.wire_to_new("embedding", "CECLSTM")
        mouse.param("units", "16")
        mouse.click(canvas(page).locator("#ksg-param-return_sequences"))
        mouse.wire_to_new("ceclstm", "FinalStatePooling")
        mouse.wire_to_new("final_state_pooling", "Bahdanau")  # into its first port, query
        mouse.param("units", "16")
        mouse.wire("ceclstm", "bahdanau_attention", "value")
        mouse.wire_to_new("bahdanau_attention", "Dense")
        mouse.param("units", "16")
        mouse.wire("dense", "head")
        expect(nodes(page)).to_have_count(7)
        expect(page.locator("#spec-errors")).to_contain_text("Valid spec")
        expect(canvas(page).locator(".ksg-bad")).to_have_count(0)
        expect(edge(page, "bahdanau_attention", "dense")).to_contain_text("(None, ")
        # Each block its own parameters and their memory: the Dense 16 → 16 has 16·16 + 16.
        expect(node(page, "dense")).to_contain_text("272 params · 1.1 kB")
        # The recurrent block says whether it runs on cuDNN here, and why (or why not).
        badge = node(page, "ceclstm").locator(".ksg-kernel")
        expect(badge).to_contain_text("cuDNN LSTM")
        expect(badge).to_have_attribute("title", re.compile(r"cuDNN|GPU"))
        mouse.click(canvas(page).locator(".ksg-tidy"))  # laid out in layers, for the picture
        expect(canvas(page).locator(".ksg-status")).to_contain_text("Tidied")
        page.wait_for_timeout(300)  # the fit's frame, for the picture only
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / "canvas-11-seven-block-classifier.png"
        canvas(page).locator(".ksg-root").screenshot(path=path)
        print(f"seven-block classifier: {mouse.actions} mouse actions")
        assert mouse.actions <= MOUSE_ACTIONS_BAR
        assert watched.problems() == []


def test_a_keras_file_opens_as_a_graph_of_its_layers(open_build, tmp_path):
    """A functional model saved as .keras (an LSTM and a softmax Dense on the tiny task)
    opens on the canvas as Input → LSTM → Output, valid, with the file's units."""
    import keras
    from playwright.sync_api import expect

    inputs = keras.Input((5, 5), name="steps")
    hidden = keras.layers.LSTM(12, name="memory")(inputs)
    outputs = keras.layers.Dense(2, activation="softmax", name="classes")(hidden)
    path = tmp_path / "small.keras"
    keras.Model(inputs, outputs).save(path)

    watched = open_build("keras-file-graph", keyboard=False)
    page = watched.page
    from tests.app.test_app_build_form import answer_dialogs

    answer_dialogs(page, accept=True)  # over the graph New graph made: asked, and agreed
    with page.expect_file_chooser() as chooser:
        page.locator("#open-keras").click()
    chooser.value.set_files(str(path))
    expect(node(page, "memory")).to_contain_text("LSTM → (None, 12)")
    expect(edge(page, "steps", "memory")).to_contain_text("(None, 5, 5)")
    expect(nodes(page)).to_have_count(3)
    expect(page.locator("#spec-yaml")).to_contain_text("units: 12")
    expect(page.locator("#spec-errors")).to_contain_text("Valid spec")
    assert watched.problems() == []


AXE = (
    Path(__file__).resolve().parents[2]
    / "builder_ui/app/canvas/frontend/node_modules/axe-core/axe.min.js"
)
AXE_RUN = """async () => {
    const result = await axe.run(document, {runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa']});
    return result.violations
        .filter((v) => v.impact === 'serious' || v.impact === 'critical')
        .map((v) => [v.id, v.impact, v.nodes.slice(0, 5).map((n) => n.target.join(' '))]);
}"""


@pytest.mark.skipif(not AXE.exists(), reason="axe-core is installed by `make js-test` (npm ci)")
def test_axe_core_finds_no_serious_violation_on_the_build_tab_with_a_graph(browser, server):
    """WCAG 2.1 A and AA rules, by axe-core, over the whole Build tab: the form, the YAML
    editor and the canvas showing the seq2seq preset as a graph with a block's panel open."""
    from playwright.sync_api import expect

    from tests.app.test_app_build_form import pick_preset

    with opened_page(browser, server) as watched:
        page = watched.page
        pick_preset(page, "7 · Seq2seq + Bahdanau attention")
        page.locator("#open-as-graph").click()
        expect(nodes(page)).to_have_count(5)
        node(page, "decoder").click()
        expect(canvas(page).locator("#ksg-param-units")).to_be_visible()
        page.add_script_tag(path=str(AXE))
        assert page.evaluate(AXE_RUN) == []


@pytest.mark.parametrize(
    ("preset", "blocks", "shot"),
    [
        ("10 · Vision Transformer", "PatchEmbedding", "canvas-vit"),
        ("9b · Transformer encoder–decoder", "TransformerDecoder", "canvas-transformer-seq2seq"),
    ],
)
def test_the_vit_and_the_transformer_seq2seq_open_on_the_canvas_laid_out(
    browser, server, preset, blocks, shot
):
    """The arc's last models as blocks: each opens valid, tidied in layers with no block on
    another, and is photographed for the docs (docs/images/ holds copies)."""
    from playwright.sync_api import expect

    from tests.app.test_app_build_form import pick_preset

    with opened_page(browser, server) as watched:
        page = watched.page
        pick_preset(page, preset)
        page.locator("#open-as-graph").click()
        expect(canvas(page).locator(f'.ksg-node[data-layer="{blocks}"]')).to_have_count(1)
        expect(page.locator("#spec-errors")).to_contain_text("Valid spec")
        expect(canvas(page).locator(".ksg-bad")).to_have_count(0)
        expect(canvas(page).locator(".ksg-summary")).to_contain_text("parameters")
        assert page.evaluate(OVERLAPS) == 0
        canvas(page).locator(".ksg-full").click()
        page.wait_for_function("document.fullscreenElement !== null")
        canvas(page).locator(".ksg-fit").click()
        page.wait_for_timeout(300)  # the fit's frame, for the picture only
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        canvas(page).locator(".ksg-root").screenshot(path=SCREENSHOTS / f"{shot}.png")
        assert watched.problems() == []


def test_a_group_repeated_three_times_collapses_expands_and_counts_its_copies(open_build):
    """A Dense 16 → 16 between the LSTM and the head, grouped (Ctrl+G) and repeated ×3: the
    YAML holds one group with its count, the model three Dense layers (the parameter count says
    so), and the group folds into one block and opens again."""
    from playwright.sync_api import expect

    watched = open_build("group-graph", keyboard=False)
    page = watched.page
    canvas(page).locator('.ksg-entry[data-block="Dense"]').focus()
    page.keyboard.press("Enter")
    expect(node(page, "dense")).to_be_focused()
    set_param(page, "units", "16")
    wire(page, "encoder", "dense")
    wire(page, "dense", "head")
    # LSTM 16 on 5 features: 4·(5·16 + 16·16 + 16); Dense 16 → 16: 16·16 + 16; head 16 → 2.
    lstm, dense, head = 4 * (5 * 16 + 16 * 16 + 16), 16 * 16 + 16, 16 * 2 + 2
    summary = canvas(page).locator(".ksg-summary")
    expect(summary).to_have_text(f"{lstm + dense + head:,} parameters")

    node(page, "dense").click()
    page.keyboard.press("Control+g")
    frame = canvas(page).locator('[data-group="group"]')
    expect(frame).to_have_count(1)
    count = frame.locator(".ksg-repeat")
    count.fill("3")
    count.press("Tab")
    yaml = page.locator("#spec-yaml")
    expect(yaml).to_contain_text("repeat: 3")
    expect(page.locator("#spec-errors")).to_contain_text("Valid spec")
    expect(summary).to_have_text(f"{lstm + 3 * dense + head:,} parameters")
    screenshot(page, "canvas-12-group-repeated")

    frame.locator(".ksg-collapse").click()
    folded = canvas(page).locator('.ksg-group[data-group="group"]')
    expect(folded).to_contain_text("group ×3")
    expect(node(page, "dense")).to_be_hidden()
    expect(yaml).to_contain_text("collapsed: true")
    # Its output connects from the keyboard as its last copy's block does.
    canvas(page).locator('.ksg-out[data-node="group"]').focus()
    page.keyboard.press("Enter")
    expect(canvas(page).locator(".ksg-status")).to_contain_text("Connecting dense")
    page.keyboard.press("Escape")
    folded.locator(".ksg-expand").click()
    expect(node(page, "dense")).to_be_visible()
    page.keyboard.press("Control+z")  # the fold, undone: folded again
    expect(node(page, "dense")).to_be_hidden()
    assert watched.problems() == []
