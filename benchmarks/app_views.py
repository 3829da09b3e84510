"""How fast the builder app answers a person's clicks, in a real browser.

Issue 16 asks that every click that does not train shows its response in under 1 s on
2 cores (the median of every click of a walk-through through the app), and that the
Compare tab renders a store of 1,000 runs in under 2 s. This script measures both:
it starts the real app (`keras-seq ui --port P --runs DIR`, a subprocess) over a
temporary run store, drives Debian's Chromium (`/usr/bin/chromium`, or
`$KERAS_SEQ_CHROMIUM`) with Playwright, and times, inside the page, from the input
event (the pointer going down, the key, the `input` of a filled box) to the first
animation frame at which the element that answers it shows the new content.

**Clicks.** A store of `--runs` recorded runs (three model types, five learning rates,
a few epochs of history each, one in four ended `failed`) and one run trained by
`keras-seq train` (so Inspect and Export have a real model). Each repetition opens a
new page (a new Gradio session, local storage cleared; the HTTP cache of the browser
context kept, as for a returning visitor) and walks through Build
(pick a preset, change a field, build the summary), Train (the tab), Compare (the tab,
a text filter, a status, a row, a second row, overlay the curves, another curve metric,
overlay again), Inspect (the tab, choose a run) and Export (the tab, choose the run,
the format, export a `.keras`). The first walk-through warms up the server and is
reported apart; the table gives each click's median over `--repetitions` walk-throughs,
and the median of every click of them all (target: under 1 s). The reference is the
Train tab, whose switch runs in the browser alone: a click's ratio to it says how much
slower than a browser-only response it is on this machine.

Each click's time is split with what the page's own requests say (the page's `fetch`
is wrapped to note when an event joined Gradio's queue and when its
`process_completed` message came back, with the handler's seconds that Gradio reports
in it): *to join* is from the input to the first event's join (the browser's own work
first), *server* from there to the last event's completion message (queueing, the
handler, Gradio's pre- and post-processing, the network), *handler* the handlers' own
seconds, and *render* from that message to the visible response (Svelte and the
components drawing it). A click with no event is answered in the browser alone.

**Compare with 1,000 runs.** Two more servers, over 1,000 and over `--small-runs` (20)
recorded runs. In each repetition, in a new seeded random order, a fresh context per
store opens the app, waits until the page has no event in flight, clicks the Compare
tab and waits for the first page of rows (the legend "Runs 1–200 of 1000" and the
newest run's row visible), then types `seq2seq` in the filter and waits until the
legend counts the matching runs. Targets, over 1,000 runs: the first page under 1 s,
the keystroke under 300 ms; the ratio is to the 20-run store. The time until the
tab's refresh (its `select` event) has come back and is drawn is reported beside it,
not judged.

Run from the repository root:

    python benchmarks/app_views.py              # 5 repetitions; 8 minutes on 2 cores at load 11
    python benchmarks/app_views.py --quick      # smoke run: 1 repetition; not a measurement
    python benchmarks/app_views.py --check      # exit 1 if a target is missed

Writes benchmarks/results/app_views.json (every sample, the split of every click, the
environment) and benchmarks/results/app_views.md (the tables).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import _timing

CLICK_TARGET_S = 1.0  # the median over every click of the walk-through
COMPARE_TARGET_S = 1.0  # the 1,000-run Compare tab's first page of rows (issue 43)
FILTER_TARGET_S = 0.3  # a keystroke in its filter, until the legend counts the matches
REFERENCE = "train-tab"  # a tab switch answered by the browser alone
CHROMIUM = os.environ.get("KERAS_SEQ_CHROMIUM", "/usr/bin/chromium")
STARTUP_TIMEOUT_S = 240  # hang guards: a loaded 2-core machine is far slower than a quiet one
RESPONSE_TIMEOUT_MS = 60_000
VIEWPORT = {"width": 1400, "height": 1000}

# One spec per model type, as `record_runs` in the app tests writes them (never trained).
RECORDED_SPECS = {
    "sequence_classifier": {
        "version": 2,
        "name": "bench-gru",
        "task": {"type": "long_lag", "lag": 5, "n": 120, "encoding": "ids"},
        "model": {
            "type": "sequence_classifier",
            "encoder": {"type": "rnn", "cell": "gru", "units": 4},
            "embedding_dim": 4,
        },
        "train": {"epochs": 3, "batch_size": 32, "learning_rate": 0.01, "seed": 0},
    },
    "seq2seq": {
        "version": 2,
        "name": "bench-seq2seq",
        "task": {"type": "toy_translation", "n": 120, "min_len": 4, "max_len": 6},
        "model": {
            "type": "seq2seq",
            "architecture": {"type": "rnn", "cell": "lstm", "units": 8, "embedding_dim": 8},
        },
        "train": {"epochs": 3, "batch_size": 32, "learning_rate": 0.01, "seed": 0},
    },
    "pointer_network": {
        "version": 2,
        "name": "bench-pointer",
        "task": {"type": "sort_numbers", "length": 4, "n": 120},
        "model": {"type": "pointer_network", "units": 8, "cell": "lstm"},
        "train": {"epochs": 3, "batch_size": 32, "learning_rate": 0.01, "seed": 0},
    },
}
RATES = (0.001, 0.003, 0.01, 0.03, 0.1)
FINAL_METRICS = {
    "sequence_classifier": lambda score: {"accuracy": score},
    "seq2seq": lambda score: {"bleu": 50 * score, "exact_match": 0.0, "token_accuracy": score},
    "pointer_network": lambda score: {"accuracy": score, "pointer_accuracy": score / 2},
}
# The run `keras-seq train` trains for Inspect and Export: about a second of training.
TRAINED_SPEC = {
    "version": 2,
    "name": "bench-trained",
    "task": {"type": "long_lag", "lag": 5, "n": 120, "encoding": "ids"},
    "model": {
        "type": "sequence_classifier",
        "encoder": {"type": "rnn", "cell": "gru", "units": 4},
        "embedding_dim": 4,
    },
    "train": {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 0},
}


@dataclasses.dataclass(frozen=True)
class Settings:
    repetitions: int = 5
    runs: int = 60  # recorded runs in the walk-through's store
    epochs: int = 3  # epochs of history per recorded run
    big_runs: int = 1000
    small_runs: int = 20
    seed: int = 0
    quick: bool = False


# --- run stores --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class StoredRun:
    """What the walk-through needs to know of a run it wrote: to expect the right response."""

    id: str
    model_type: str
    status: str


def record_runs(directory: Path, count: int, epochs: int, failed_every: int = 0) -> list[StoredRun]:
    """Write `count` runs through `RunStore`'s API, as the engine records them.

    Model types and learning rates cycle; each run has `epochs` epochs of loss and
    validation loss, parameters and final metrics; every `failed_every`-th run (none
    for 0) ends `failed` with an error instead of `done`.
    """
    # The store and the specs' validation: loaded here, after the command line is read.
    from builder_ui.builders import load_spec
    from builder_ui.engine.store import RunStore

    types = list(RECORDED_SPECS)
    full = {
        name: load_spec(document).model_dump(mode="json")
        for name, document in RECORDED_SPECS.items()
    }
    written = []
    with RunStore(directory) as store:
        for i in range(count):
            model_type = types[i % len(types)]
            spec = full[model_type]
            spec = {**spec, "train": {**spec["train"], "learning_rate": RATES[i % len(RATES)]}}
            run_id = store.create_run(spec)
            store.set_status(run_id, "running", backend="tensorflow", device="CPU")
            store.update(run_id, params=100 + i, precision="float32")
            for epoch in range(1, epochs + 1):
                store.append_epoch(run_id, epoch, {"loss": 1.0 / epoch, "val_loss": 1.1 / epoch})
            failed = failed_every and i % failed_every == failed_every - 1
            status = "failed" if failed else "done"
            score = i / count
            metrics = {"loss": 1.0 - score, **FINAL_METRICS[model_type](score)}
            error = "recorded as failed by the benchmark" if failed else None
            store.finish(run_id, status, metrics=metrics, wall_time=1.5, error=error)
            written.append(StoredRun(run_id, model_type, status))
    return written


def train_one(directory: Path, work: Path) -> str:
    """Train `TRAINED_SPEC` with `keras-seq train` into the store; its run id."""
    # The store, to read back the id of the run trained: loaded after the command line is read.
    from builder_ui.engine.store import RunStore

    spec_path = work / "trained.json"
    spec_path.write_text(json.dumps(TRAINED_SPEC))
    argv = [
        sys.executable,
        "-m",
        "builder_ui.cli",
        "train",
        str(spec_path),
        "--runs",
        str(directory),
    ]
    result = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=_server_env())
    if result.returncode != 0:
        raise RuntimeError(f"keras-seq train failed:\n{result.stderr[-3000:]}")
    with RunStore(directory) as store:
        return next(r.id for r in store.list_runs() if r.name == TRAINED_SPEC["name"])


# --- the app server ------------------------------------------------------------------------------


def _server_env() -> dict[str, str]:
    return {
        **os.environ,
        "GRADIO_ANALYTICS_ENABLED": "False",
        "PYTHONUNBUFFERED": "1",
        "KERAS_BACKEND": os.environ.get("KERAS_BACKEND", "tensorflow"),
    }


def free_port() -> int:
    """A TCP port that is free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def served(runs: Path, log_path: Path) -> Iterator[str]:
    """`keras-seq ui` over the store `runs` in a subprocess; yields its URL once it answers."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    argv = [sys.executable, "-m", "builder_ui.cli", "ui", "--port", str(port), "--runs", str(runs)]
    with log_path.open("wb") as log:
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=_server_env())
    try:
        _wait_until_up(process, url, log_path)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=90)  # a hang guard: it stops the training process it warmed up
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


def _wait_until_up(process: subprocess.Popen, url: str, log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the app exited with {process.returncode}:\n{log_path.read_text()}")
        try:
            with urllib.request.urlopen(url + "/", timeout=10):
                return
        except (OSError, urllib.error.URLError):
            time.sleep(0.2)
    raise RuntimeError(f"the app did not answer within {STARTUP_TIMEOUT_S} s")


# --- timing inside the page ----------------------------------------------------------------------

# Installed in every page before Gradio's own scripts: the time of the first input event
# after `arm()`, and for every queue event the times it joined, started and completed
# (from the page's own fetches of /queue/join and the /queue/data event stream) with the
# handler's seconds that Gradio reports in `process_completed`.
PAGE_PROBE = """
(() => {
  const bench = (window.__ksBench = { armed: false, inputAt: null, events: {}, joining: 0 });
  const stamp = () => {
    if (bench.armed && bench.inputAt === null) bench.inputAt = performance.now();
  };
  for (const type of ["pointerdown", "keydown", "input"]) {
    window.addEventListener(type, stamp, true);
  }
  const event = (id) => (bench.events[id] = bench.events[id] || { id });
  const read = async (body) => {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let text = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      text += decoder.decode(value, { stream: true });
      let end;
      while ((end = text.indexOf("\\n\\n")) >= 0) {
        const block = text.slice(0, end);
        text = text.slice(end + 2);
        for (const line of block.split("\\n")) {
          if (!line.startsWith("data:")) continue;
          let message;
          try { message = JSON.parse(line.slice(5)); } catch (error) { continue; }
          if (!message.event_id) continue;
          const now = performance.now();
          if (message.msg === "process_starts") event(message.event_id).started = now;
          if (message.msg === "process_completed") {
            const record = event(message.event_id);
            record.completed = now;
            record.handler_s = (message.output && message.output.duration) ?? null;
            record.success = message.success;
          }
        }
      }
    }
  };
  const original = window.fetch;
  window.fetch = async function (input, init) {
    const url = typeof input === "string" ? input : input.url || String(input);
    if (url.includes("/queue/join")) {
      const sent = performance.now();
      let fn = null;
      try { fn = JSON.parse(init.body).fn_index; } catch (error) {}
      bench.joining += 1;
      try {
        const response = await original.apply(this, arguments);
        response.clone().json().then((body) => {
          if (body && body.event_id) {
            const record = event(body.event_id);
            record.joined = sent;
            record.fn = fn;
            // A generator (the Train tab's `watch`) streams for as long as the page is open.
            const deps = (window.gradio_config || {}).dependencies || [];
            const dep = deps.find((d) => d.id === fn) || {};
            record.stream = !!(dep.types && dep.types.generator);
            record.api_name = dep.api_name || null;
          }
        }).catch(() => {}).finally(() => { bench.joining -= 1; });
        return response;
      } catch (error) {
        bench.joining -= 1;
        throw error;
      }
    }
    const response = await original.apply(this, arguments);
    if (url.includes("/queue/data") && response.body) {
      const [mine, theirs] = response.body.tee();
      read(mine);
      return new Response(theirs, {
        status: response.status, statusText: response.statusText, headers: response.headers,
      });
    }
    return response;
  };
})();
"""

ARM = """() => {
  const b = window.__ksBench;
  b.armed = true;
  b.inputAt = null;
  b.armedAt = performance.now();
}"""

# Whether every event the page sent has come back (nothing joining, nothing pending).
SETTLED = """() => {
  const b = window.__ksBench;
  const events = Object.values(b.events).filter((e) => !e.stream);
  return b.joining === 0 && events.every((e) => e.completed !== undefined);
}"""

# Helpers the conditions below use, defined once per check.
JS_HELPERS = """
const $ = (selector) => document.querySelector(selector);
const shown = (el) => !!el && el.getClientRects().length > 0;
const text = (selector) => { const el = $(selector); return el ? el.textContent : ""; };
"""


def wait_response(page, condition: str, arg: object = None) -> float:
    """Wait for the first animation frame at which `condition(arg)` (JS) holds; return the
    milliseconds since the input event noted after `arm()`."""
    script = (
        "(arg) => {" + JS_HELPERS + f"const ok = ({condition})(arg);"
        "const b = window.__ksBench;"
        "return ok && b.inputAt !== null ? performance.now() - b.inputAt : false; }"
    )
    handle = page.wait_for_function(script, arg=arg, polling="raf", timeout=RESPONSE_TIMEOUT_MS)
    return float(handle.json_value())


def events_since_arm(page) -> list[dict]:
    """The queue events that joined after the last `arm()`, with times relative to the input."""
    return page.evaluate(
        """() => {
          const b = window.__ksBench;
          const start = b.inputAt ?? b.armedAt;
          const shift = (t) => (t === undefined ? null : t - start);
          return Object.values(b.events)
            .filter((e) => e.joined !== undefined && e.joined >= b.armedAt && !e.stream)
            .map((e) => ({ api_name: e.api_name, joined_ms: shift(e.joined),
                           started_ms: shift(e.started),
                           completed_ms: shift(e.completed), handler_s: e.handler_s ?? null }));
        }"""
    )


def settle(page) -> None:
    """Wait until every event the page sent has come back and been drawn (two frames)."""
    page.wait_for_function(SETTLED, polling="raf", timeout=RESPONSE_TIMEOUT_MS)
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


def split(total_ms: float, events: list[dict]) -> dict[str, object]:
    """A click's time in three parts, by the events that came back before its response.

    *to join*: from the input to the first event's join (the browser's own work first,
    such as drawing a tab); *server*: from there to the last completion message (queue,
    handlers, Gradio's processing, network); *render*: from that message to the visible
    response. A click with no event is all render: the browser alone answers it.
    """
    done = [e for e in events if e["completed_ms"] is not None and e["completed_ms"] <= total_ms]
    if not done:
        return {
            "ms": total_ms,
            "to_join_ms": 0.0,
            "server_ms": 0.0,
            "handler_ms": 0.0,
            "render_ms": total_ms,
            "events": events,
        }
    joined = min(e["joined_ms"] for e in done)
    completed = max(e["completed_ms"] for e in done)
    return {
        "ms": total_ms,
        "to_join_ms": joined,
        "server_ms": completed - joined,
        "handler_ms": sum(1e3 * (e["handler_s"] or 0.0) for e in done),
        "render_ms": total_ms - completed,
        "events": events,
    }


def timed(page, act: Callable[[], object], condition: str, arg: object = None) -> dict[str, object]:
    """Arm the probe, `act` (the click or keystroke), and time it to its visible response."""
    page.evaluate(ARM)
    act()
    total = wait_response(page, condition, arg)
    measured = split(total, events_since_arm(page))
    settle(page)
    return measured


# --- the walk-through ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Click:
    key: str
    label: str
    answered_by: str  # what shows the response


CLICKS = (
    Click("preset", "Build: pick the preset 5 · GRU", "spec YAML and form show the GRU"),
    Click("field", "Build: change encoder units to 24", "spec YAML shows `units: 24`"),
    Click("summary", "Build: build the summary", "headline with parameters, layer diagram"),
    Click("train-tab", "Train: open the tab", "Queue button visible"),
    Click("compare-tab", "Compare: open the tab", "table rows visible"),
    Click(
        "text-filter",
        "Compare: type `seq2seq` in the filter (live, no Enter)",
        "legend counts the seq2seq runs",
    ),
    Click("status", "Compare: tick status `done`", "legend counts the done seq2seq runs"),
    Click("row", "Compare: click a row", "its spec in the opened spec panel"),
    Click("second-row", "Compare: click a second row", "both runs in Runs to compare"),
    Click("overlay", "Compare: overlay learning curves", "Plotly chart drawn"),
    Click("curve-metric", "Compare: add the curve metric `loss`", "`loss` chosen in the menu"),
    Click("overlay-again", "Compare: overlay again (two metrics)", "chart with two panels"),
    Click("inspect-tab", "Inspect: open the tab", "run menu visible"),
    Click("inspect-run", "Inspect: choose the trained run", "the classifier's hint"),
    Click("export-tab", "Export: open the tab", "run menu visible"),
    Click("export-run", "Export: choose the trained run", "run chosen in the menu"),
    Click("export-format", "Export: choose Keras file (.keras)", "radio checked"),
    Click("export", "Export: export", "message names the .keras file"),
)
LABELS = {click.key: click.label for click in CLICKS}


@dataclasses.dataclass(frozen=True)
class WalkStore:
    """The walk-through's store: the runs it holds, for the responses to expect."""

    runs: list[StoredRun]
    trained: str


def option(page, menu: str, name: str) -> None:
    """Open the dropdown `menu` (untimed)."""
    page.locator(f"{menu} input").first.click()
    page.get_by_role("option", name=name).first.wait_for()


def tab(page, name: str):
    return page.get_by_role("tab", name=name, exact=True)


def walk(page, store: WalkStore) -> dict[str, dict[str, object]]:
    """One walk-through, in a freshly opened page; each click's measurement by key."""
    seq2seq = [r for r in reversed(store.runs) if r.model_type == "seq2seq" and r.status == "done"]
    first_row, second_row = seq2seq[0].id, seq2seq[1].id
    seq2seq_all = sum(1 for r in store.runs if r.model_type == "seq2seq")
    measured = {}

    option(page, "#preset", "5 · GRU")
    measured["preset"] = timed(
        page,
        lambda: page.get_by_role("option", name="5 · GRU").first.click(),
        """() => text("#spec-yaml").includes("cell: gru")
                 && ($("#field-model-encoder-units input") || {}).value === "16"
                 && shown($("#field-model-encoder-bidirectional"))""",
    )
    units = page.locator("#field-model-encoder-units input").first
    measured["field"] = timed(
        page, lambda: units.fill("24"), """() => text("#spec-yaml").includes("units: 24")"""
    )
    measured["summary"] = timed(
        page,
        lambda: page.locator("#summarize-button").click(),
        """() => text("#summary-headline").includes("parameters")
                 && text("#model-diagram").trim() !== "" """,
    )
    measured["train-tab"] = timed(
        page, lambda: tab(page, "Train").click(), """() => shown($("#queue-button"))"""
    )
    measured["compare-tab"] = timed(
        page,
        lambda: tab(page, "Compare").click(),
        """() => shown($("#results-table tbody tr")) && shown($("#results-legend"))""",
    )
    box = page.locator("#results-filter textarea")
    box.click()
    # The filter acts as you type: one `input` of the whole word, timed to the legend's count.
    measured["text-filter"] = timed(
        page,
        lambda: box.fill("seq2seq"),
        """(n) => text("#results-legend").includes(`of ${n} `)""",
        seq2seq_all,
    )
    measured["status"] = timed(
        page,
        lambda: page.locator("#results-status").get_by_label("done", exact=True).check(),
        """(n) => text("#results-legend").includes(`of ${n} `)""",
        len(seq2seq),
    )
    measured["row"] = timed(
        page,
        lambda: _row(page, first_row).click(),
        """(id) => shown($("#results-spec")) && text("#results-spec").includes("toy_translation")
                   && text("#compare-runs").includes(id)""",
        first_row,
    )
    measured["second-row"] = timed(
        page,
        lambda: _row(page, second_row).click(),
        """(id) => text("#compare-runs").includes(id)""",
        second_row,
    )
    measured["overlay"] = timed(
        page,
        lambda: page.locator("#compare-plot-button").click(),
        """() => shown($("#compare-plot .js-plotly-plot .main-svg"))""",
    )
    option(page, "#compare-metric", "loss")
    measured["curve-metric"] = timed(
        page,
        lambda: page.get_by_role("option", name="loss", exact=True).click(),
        """() => [...document.querySelectorAll("#compare-metric .token")]
                   .some((t) => t.textContent.trim() === "loss")""",
    )
    page.keyboard.press("Escape")
    measured["overlay-again"] = timed(
        page,
        lambda: page.locator("#compare-plot-button").click(),
        """() => document.querySelectorAll("#compare-plot .cartesianlayer .subplot").length >= 2""",
    )
    measured["inspect-tab"] = timed(
        page, lambda: tab(page, "Inspect").click(), """() => shown($("#inspect-run"))"""
    )
    option(page, "#inspect-run", store.trained)
    measured["inspect-run"] = timed(
        page,
        lambda: page.get_by_role("option", name=store.trained).first.click(),
        """() => text("#inspect-hint").includes("Type a sequence")""",
    )
    measured["export-tab"] = timed(
        page, lambda: tab(page, "Export").click(), """() => shown($("#export-run"))"""
    )
    option(page, "#export-run", store.trained)
    measured["export-run"] = timed(
        page,
        lambda: page.get_by_role("option", name=store.trained).first.click(),
        """(id) => ($("#export-run input") || {}).value.includes(id)""",
        store.trained,
    )
    page.locator("#export-format").get_by_label("Python code (.py)").check()  # so Keras is a change
    measured["export-format"] = timed(
        page,
        lambda: page.locator("#export-format").get_by_label("Keras file (.keras)").check(),
        """() => [...document.querySelectorAll("#export-format input")]
                   .some((i) => i.checked && i.value === "keras")""",
    )
    measured["export"] = timed(
        page,
        lambda: page.locator("#export-button").click(),
        """(id) => text("#export-message").includes(`${id}.keras`)""",
        store.trained,
    )
    return measured


def _row(page, run_id: str):
    row = page.locator("#results-table").get_by_role("row").filter(has_text=run_id)
    return row.get_by_role("gridcell").first


@contextlib.contextmanager
def new_context(browser) -> Iterator[object]:
    """A browser context (its own cookies, storage and HTTP cache) with the page probe."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        context.add_init_script(PAGE_PROBE)
        yield context
    finally:
        context.close()


@contextlib.contextmanager
def open_app(context, url: str) -> Iterator[object]:
    """A new page (a new Gradio session) on the app, once it has loaded and settled.

    On leaving, the page's local storage is cleared, so that the next page of the
    context starts from the default preset, as a new visitor does.
    """
    page = context.new_page()
    try:
        page.set_default_timeout(RESPONSE_TIMEOUT_MS)
        page.on("dialog", lambda dialog: dialog.accept())
        page.goto(url)
        page.wait_for_selector("#field-task-lag input")
        settle(page)
        yield page
    finally:
        page.evaluate("() => localStorage.clear()")
        page.close()


def measure_walks(browser, url: str, store: WalkStore, settings: Settings, log) -> dict:
    """The warm-up walk-through, then `settings.repetitions` timed ones.

    All in one browser context, each in a new page: the warm-up pays for what a first
    visit loads (Plotly, the components' scripts); the timed ones find it in the cache,
    as a person's second visit does, and each starts a new session.
    """
    with new_context(browser) as context:
        with open_app(context, url) as page:
            first = walk(page, store)
        log(f"warm-up walk-through: {_sum_s(first):.1f} s of responses")
        walks = []
        for index in range(settings.repetitions):
            with open_app(context, url) as page:
                walks.append(walk(page, store))
            log(f"walk-through {index + 1}/{settings.repetitions}: {_sum_s(walks[-1]):.1f} s")
    return {"first": first, "walks": walks}


def _sum_s(measured: dict) -> float:
    return sum(m["ms"] for m in measured.values()) / 1e3


# --- the Compare tab over 1,000 runs -------------------------------------------------------------

# The first page of rows: the legend and the newest run's row.
FIRST_PAGE = """([legend, newest]) => text("#results-legend").includes(legend)
  && [...document.querySelectorAll("#results-table tbody tr")]
       .some((row) => shown(row) && row.textContent.includes(newest))"""


def open_compare(browser, url: str, runs: list[StoredRun]) -> dict[str, object]:
    """A fresh session opens the app and clicks Compare; the first page's time, the time
    until the tab's refresh has come back and is drawn, and a filter keystroke's time."""
    shown_count = min(200, len(runs))
    legend = f"Runs 1–{shown_count} of {len(runs)} "
    with new_context(browser) as context, open_app(context, url) as page:
        page.evaluate(ARM)
        tab(page, "Compare").click()
        first_page = wait_response(page, FIRST_PAGE, [legend, runs[-1].id])
        settle(page)
        refreshed = page.evaluate(
            "() => performance.now() - window.__ksBench.inputAt"
        )  # after `settle`'s two frames: an upper bound
        events = events_since_arm(page)
        box = page.locator("#results-filter textarea")
        box.click()
        matching = sum(1 for run in runs if run.model_type == "seq2seq")
        # One `input` of the whole word (the filter acts as you type), to the legend's count.
        filtered = timed(
            page,
            lambda: box.fill("seq2seq"),
            """(n) => text("#results-legend").includes(`of ${n} `)""",
            matching,
        )
    return {**split(first_page, events), "refreshed_ms": refreshed, "filter": filtered}


def measure_compare(browser, urls: dict[str, str], stores: dict[str, list], settings, log) -> dict:
    """One warm-up open per store, then `settings.repetitions` rounds in a new order each."""
    first = {name: open_compare(browser, urls[name], stores[name]) for name in urls}
    samples = {name: [] for name in urls}
    orders = []
    rng = random.Random(settings.seed)
    for index in range(settings.repetitions):
        order = list(urls)
        rng.shuffle(order)
        orders.append(order)
        for name in order:
            samples[name].append(open_compare(browser, urls[name], stores[name]))
        log(
            f"compare round {index + 1}/{settings.repetitions}: "
            + ", ".join(f"{n} {samples[n][-1]['ms']:.0f} ms" for n in order)
        )
    return {"first": first, "samples": samples, "orders": orders}


# --- measure, summarise --------------------------------------------------------------------------


def measure(settings: Settings, log=print) -> dict:
    """Fill the stores, start the servers, drive Chromium; return the run record."""
    # Playwright drives the browser: loaded once the command line is read.
    from playwright.sync_api import sync_playwright

    work = Path(tempfile.mkdtemp(prefix="app-views-benchmark-"))
    try:
        walk_dir = work / "walk" / "runs"
        start = time.perf_counter()
        # Trained first, so that it is not the newest run, which the run menus show at first.
        trained = train_one(walk_dir, work)
        runs = record_runs(walk_dir, settings.runs, settings.epochs, failed_every=4)
        store = WalkStore(runs, trained)
        big = record_runs(work / "big" / "runs", settings.big_runs, settings.epochs)
        small = record_runs(work / "small" / "runs", settings.small_runs, settings.epochs)
        log(f"stores written in {time.perf_counter() - start:.0f} s")
        load_before = _timing.load_average()
        timing_start = time.perf_counter()
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                with served(walk_dir, work / "walk.log") as url:
                    clicks = measure_walks(browser, url, store, settings, log)
                with (
                    served(work / "big" / "runs", work / "big.log") as big_url,
                    served(work / "small" / "runs", work / "small.log") as small_url,
                ):
                    compare = measure_compare(
                        browser,
                        {"big": big_url, "small": small_url},
                        {"big": big, "small": small},
                        settings,
                        log,
                    )
                browser_version = browser.version
            finally:
                browser.close()
        seconds = time.perf_counter() - timing_start
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return record(settings, clicks, compare, load_before, seconds, browser_version)


def _ms(values: list[float]) -> dict[str, float]:
    return {name: round(value, 1) for name, value in _timing.summarize(values).items()}


def click_results(clicks: dict) -> tuple[list[dict], list[float]]:
    """Per click: summary, ratio to the reference, the split's medians; and every sample."""
    walks = clicks["walks"]
    reference = [w[REFERENCE]["ms"] for w in walks]
    results, every = [], []
    for click in CLICKS:
        samples = [w[click.key]["ms"] for w in walks]
        every += samples
        per_round = [mine / theirs for mine, theirs in zip(samples, reference, strict=True)]
        results.append(
            {
                "key": click.key,
                "label": click.label,
                "answered_by": click.answered_by,
                "ms": _ms(samples),
                "samples_ms": [round(v, 1) for v in samples],
                "first_ms": round(clicks["first"][click.key]["ms"], 1),
                "ratio": statistics.median(samples) / statistics.median(reference),
                "ratio_per_round": _timing.summarize(per_round),
                "to_join_ms": round(
                    statistics.median(w[click.key]["to_join_ms"] for w in walks), 1
                ),
                "server_ms": round(statistics.median(w[click.key]["server_ms"] for w in walks), 1),
                "handler_ms": round(
                    statistics.median(w[click.key]["handler_ms"] for w in walks), 1
                ),
                "render_ms": round(statistics.median(w[click.key]["render_ms"] for w in walks), 1),
                "events": statistics.median(len(w[click.key]["events"]) for w in walks),
                "splits": [{k: v for k, v in w[click.key].items() if k != "ms"} for w in walks],
                "under_1s": statistics.median(samples) < 1e3 * CLICK_TARGET_S,
            }
        )
    return results, every


def compare_results(compare: dict, settings: Settings) -> list[dict]:
    samples = compare["samples"]
    reference = [s["ms"] for s in samples["small"]]
    results = []
    for name, count in (("big", settings.big_runs), ("small", settings.small_runs)):
        values = [s["ms"] for s in samples[name]]
        judged = name == "big"
        median_s = statistics.median(values) / 1e3
        results.append(
            {
                "key": f"compare-{count}",
                "label": f"Compare tab, {count} runs: first page of rows",
                "runs": count,
                "ms": _ms(values),
                "samples_ms": [round(v, 1) for v in values],
                "first_ms": round(compare["first"][name]["ms"], 1),
                "ratio": statistics.median(values) / statistics.median(reference),
                "refreshed_ms": _ms([s["refreshed_ms"] for s in samples[name]]),
                "to_join_ms": round(statistics.median(s["to_join_ms"] for s in samples[name]), 1),
                "server_ms": round(statistics.median(s["server_ms"] for s in samples[name]), 1),
                "render_ms": round(statistics.median(s["render_ms"] for s in samples[name]), 1),
                "splits": [{k: v for k, v in s.items() if k != "ms"} for s in samples[name]],
                "target_s": COMPARE_TARGET_S if judged else None,
                "passed": median_s < COMPARE_TARGET_S if judged else None,
            }
        )
        filter_values = [s["filter"]["ms"] for s in samples[name]]
        results.append(
            {
                "key": f"filter-{count}",
                "label": f"Compare tab, {count} runs: a filter keystroke",
                "runs": count,
                "ms": _ms(filter_values),
                "samples_ms": [round(v, 1) for v in filter_values],
                "first_ms": round(compare["first"][name]["filter"]["ms"], 1),
                "ratio": statistics.median(filter_values)
                / statistics.median(s["filter"]["ms"] for s in samples["small"]),
                "refreshed_ms": None,
                "to_join_ms": round(
                    statistics.median(s["filter"]["to_join_ms"] for s in samples[name]), 1
                ),
                "server_ms": round(
                    statistics.median(s["filter"]["server_ms"] for s in samples[name]), 1
                ),
                "render_ms": round(
                    statistics.median(s["filter"]["render_ms"] for s in samples[name]), 1
                ),
                "splits": [
                    {k: v for k, v in s["filter"].items() if k != "ms"} for s in samples[name]
                ],
                "target_s": FILTER_TARGET_S if judged else None,
                "passed": statistics.median(filter_values) / 1e3 < FILTER_TARGET_S
                if judged
                else None,
            }
        )
    return results


def _target(seconds: float) -> str:
    return f"< {seconds:.0f} s" if seconds >= 1 else f"< {1e3 * seconds:.0f} ms"


def record(settings, clicks, compare, load_before, seconds, browser_version) -> dict:
    per_click, every = click_results(clicks)
    overall = statistics.median(every)
    environment = _timing.environment()
    environment["load_average_timing"] = {"start": load_before, "end": _timing.load_average()}
    environment["keras_backend"] = os.environ.get("KERAS_BACKEND", "tensorflow")
    environment["chromium"] = browser_version
    environment["packages"]["gradio"] = _version("gradio")
    environment["packages"]["playwright"] = _version("playwright")
    targets = [
        {
            "key": "clicks",
            "label": "median of every click of the walk-throughs",
            "ms": round(overall, 1),
            "samples": len(every),
            "target_s": CLICK_TARGET_S,
            "passed": overall < 1e3 * CLICK_TARGET_S,
        },
        *[entry for entry in compare_results(compare, settings) if entry["passed"] is not None],
    ]
    return {
        "benchmark": "app_views",
        "description": (
            "Milliseconds from a click (or keystroke) to its visible response in the builder "
            "app, in headless Chromium over a real keras-seq ui server; and the Compare tab's "
            "first page of rows over 1,000 runs against 20."
        ),
        "reference": REFERENCE,
        "settings": dataclasses.asdict(settings),
        "environment": environment,
        "timing_s": round(seconds, 1),
        "clicks": per_click,
        "compare": compare_results(compare, settings),
        "compare_orders": compare["orders"],
        "targets": targets,
        "all_targets_met": all(t["passed"] for t in targets),
    }


def _version(package: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


# --- the report ----------------------------------------------------------------------------------


def click_table(record: dict) -> str:
    headers = (
        "click",
        "answered by",
        "median ms",
        "IQR ms",
        "first ms",
        "× Train tab",
        "to join ms",
        "server ms",
        "handler ms",
        "render ms",
        "< 1 s",
    )
    rows = []
    for entry in record["clicks"]:
        ms = entry["ms"]
        rows.append(
            (
                entry["label"] + (" (reference)" if entry["key"] == REFERENCE else ""),
                entry["answered_by"],
                f"{ms['median']:.0f}",
                f"{ms['q1']:.0f}–{ms['q3']:.0f}",
                f"{entry['first_ms']:.0f}",
                f"{entry['ratio']:.1f}×",
                f"{entry['to_join_ms']:.0f}",
                f"{entry['server_ms']:.0f}",
                f"{entry['handler_ms']:.0f}",
                f"{entry['render_ms']:.0f}",
                "yes" if entry["under_1s"] else "**no**",
            )
        )
    return _timing.markdown_table(headers, rows)


def compare_table(record: dict) -> str:
    headers = (
        "store",
        "measured",
        "median ms",
        "IQR ms",
        "first ms",
        f"× {record['settings']['small_runs']} runs",
        "to join ms",
        "server ms",
        "render ms",
        "refresh drawn, median ms",
        "target",
        "result",
    )
    rows = []
    for entry in record["compare"]:
        ms = entry["ms"]
        target = "reference" if entry["target_s"] is None else _target(entry["target_s"])
        refreshed = entry["refreshed_ms"]
        rows.append(
            (
                f"{entry['runs']} runs",
                "filter keystroke" if entry["key"].startswith("filter") else "first page",
                f"{ms['median']:.0f}",
                f"{ms['q1']:.0f}–{ms['q3']:.0f}",
                f"{entry['first_ms']:.0f}",
                f"{entry['ratio']:.2f}×",
                f"{entry['to_join_ms']:.0f}",
                f"{entry['server_ms']:.0f}",
                f"{entry['render_ms']:.0f}",
                "—" if refreshed is None else f"{refreshed['median']:.0f}",
                target,
                _timing.verdict(entry["passed"]),
            )
        )
    return _timing.markdown_table(headers, rows)


def verdicts(record: dict) -> list[str]:
    lines = []
    for target in record["targets"]:
        word = "PASS" if target["passed"] else "FAIL"
        ms = target["ms"] if target["key"] == "clicks" else target["ms"]["median"]
        lines.append(
            f"{word}: {target['label']} at {ms:.0f} ms (target {_target(target['target_s'])})"
        )
    slow = [entry["label"] for entry in record["clicks"] if not entry["under_1s"]]
    if slow:
        lines.append("Clicks whose own median is 1 s or more: " + "; ".join(slow))
    return lines


def markdown(record: dict) -> str:
    settings, environment = record["settings"], record["environment"]
    lines = _timing.markdown_preamble(
        "Builder app: click latency and the 1,000-run Compare tab", record
    )
    lines += [
        f"- App: `keras-seq ui` over a store of {settings['runs']} recorded runs (three model "
        f"types, {settings['epochs']} epochs of history, one in four failed) and one trained "
        "run; Compare timed again over stores of "
        f"{settings['big_runs']} and {settings['small_runs']} recorded runs.",
        f"- Browser: headless Chromium {environment['chromium']} via Playwright "
        f"{environment['packages'].get('playwright')}, viewport 1400×1000; Gradio "
        f"{environment['packages'].get('gradio')}; Keras backend {environment['keras_backend']}.",
        f"- Timing: {_timing.plural(settings['repetitions'], 'walk-through')} after one "
        "untimed (its times are the *first* column), each in a new page (a new session) of "
        "one browser context; "
        "a time runs from the input event to the first animation frame that shows the "
        "response.",
        _timing.machine_line(environment),
    ]
    note = (
        "Medians over the walk-throughs. *to join*: from the input to the first queue event "
        "the click sent (the browser's own work before it, such as drawing a tab's "
        "components); *server*: from there to the `process_completed` message of its last "
        "event that came before the response (queue, handlers, Gradio's processing, "
        "network); *handler*: the seconds Gradio reports for the handlers themselves; "
        "*render*: from that message to the visible response. A click with no server time "
        "is answered by the browser alone."
    )
    compare_note = (
        "*first page*: from the click on the Compare tab to the legend and the newest run's "
        "row visible; *refresh drawn*: until the "
        "tab's own refresh (`select` event) has come back and been drawn; *filter keystroke*: "
        "from typing `seq2seq` in the filter (one input) to the legend counting the matches."
    )
    clicks_target = record["targets"][0]
    summary = (
        f"Median over all {clicks_target['samples']} clicks: **{clicks_target['ms']:.0f} ms** "
        f"(target < {CLICK_TARGET_S:.0f} s)."
    )
    return _timing.markdown_document(
        lines,
        [click_table(record), summary, note, compare_table(record), compare_note],
        verdicts(record),
    )


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Time the builder app's clicks and its 1,000-run Compare tab in Chromium."
    )
    parser.add_argument(
        "--repetitions",
        type=int,
        default=5,
        help="timed walk-throughs and Compare opens (default 5)",
    )
    parser.add_argument(
        "--runs", type=int, default=60, help="recorded runs in the walk-through's store"
    )
    parser.add_argument("--epochs", type=int, default=3, help="epochs of history per recorded run")
    parser.add_argument(
        "--big-runs", type=int, default=1000, help="runs of the large store (default 1000)"
    )
    parser.add_argument(
        "--small-runs", type=int, default=20, help="runs of the reference store (default 20)"
    )
    _timing.add_seed_argument(parser)
    _timing.add_output_arguments(
        parser, "app_views", quick_help="smoke run: 1 repetition; not a measurement"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.repetitions = 1
    elif args.repetitions < 1:
        parser.error(f"--repetitions must be at least 1, got {args.repetitions}")
    if args.runs < 12:
        parser.error(
            "--runs must be at least 12 (the walk-through needs two done seq2seq runs), "
            f"got {args.runs}"
        )
    for option in ("epochs", "big_runs", "small_runs"):
        if getattr(args, option) < 1:
            parser.error(f"--{option.replace('_', '-')} must be at least 1")
    if not os.path.exists(CHROMIUM):
        parser.error(
            f"no Chromium at {CHROMIUM}: `make browser` installs it (or set KERAS_SEQ_CHROMIUM)"
        )
    args.settings = Settings(
        repetitions=args.repetitions,
        runs=args.runs,
        epochs=args.epochs,
        big_runs=args.big_runs,
        small_runs=args.small_runs,
        seed=args.seed,
        quick=args.quick,
    )
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    return _timing.measure_and_report(
        args,
        measure,
        stem="app_views",
        markdown=markdown,
        tables=(click_table, compare_table),
        verdicts=verdicts,
    )


if __name__ == "__main__":
    sys.exit(main())
