"""Chromium for the browser tests: Debian's build, driven by Playwright (no browser download).

`make browser` installs it; `$KERAS_SEQ_CHROMIUM` points elsewhere.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import time
from collections.abc import Iterator

import pytest

CHROMIUM = os.environ.get("KERAS_SEQ_CHROMIUM", "/usr/bin/chromium")
# Hang guards, not expectations: every page action's and every `expect`'s (set once for the
# process when Chromium starts, so no module's timeout depends on which module ran first). A
# click on a tab took over 30 s once, when a second test run and a `make check` shared the two
# cores (four busy processes): 60 s leaves room for that.
UI_TIMEOUT_MS = 60_000

needs_chromium = pytest.mark.skipif(
    not os.path.exists(CHROMIUM),
    reason=f"no Chromium at {CHROMIUM}: `make browser` installs Debian's chromium package "
    "(or set KERAS_SEQ_CHROMIUM)",
)


@contextlib.contextmanager
def launched_chromium() -> Iterator[object]:
    """A headless Chromium (a Playwright `Browser`), closed on exit."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=UI_TIMEOUT_MS)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            chromium.close()


# What Gradio's client logs when a reload cuts its open stream (the page being left, not the
# page loaded): counted apart, and only between a reload and the new page's navigation. The
# cut stream's client reopens it at once; when the server has already dropped the old session
# (it does as it sees the first stream go), the reopened stream is answered "404: Not Found"
# (gradio/routes.py, queue_data: a session no longer pending), which the old page logs as an
# unexpected error if the answer beats the navigation (seen once on a loaded 2-core CI run).
# When the old page's stream is cut mid-message instead, Chromium logs the stream's resource as
# failed (`net::ERR_INCOMPLETE_CHUNKED_ENCODING`, at the queue's data URL: `QUEUE_STREAM`) and
# the client's read of it as a network error (seen in 1 of about 10 walk-through runs).
UNLOAD_NOISE = re.compile(
    r"AbortError: signal is aborted|Connection errored out|^Unexpected error 404: Not Found$"
    r"|network error"
)
QUEUE_STREAM = "/gradio_api/queue/data"
CUT_STREAM = "Failed to load resource: net::ERR_INCOMPLETE_CHUNKED_ENCODING"


class Watched:
    """A page with its console messages, uncaught errors and requests to Gradio's queue recorded.

    `problems()` is what a browser test asserts empty. `reload()` reloads the page; what
    Gradio's client logs as the old page's open stream is cut is kept apart (`unload_noise`):
    it belongs to the page being left, which no one sees.
    """

    def __init__(self, page) -> None:
        self.page = page
        self.console: list[tuple[str, str]] = []
        self.joins: list[float] = []  # monotonic time of each event sent to the server
        self.join_events: list[str] = []  # and which event it was (`_event_of`), to say so
        self.failed: list[str] = []
        self.unloading = False
        self.unload_noise: list[str] = []
        page.on("console", self._console)
        page.on("framenavigated", self._navigated)
        page.on("request", self._request)
        page.on("requestfailed", lambda request: self.failed.append(request.url))
        page.on("pageerror", lambda error: self.console.append(("error", f"uncaught: {error}")))

    def _console(self, message) -> None:
        cut_stream = message.text == CUT_STREAM and QUEUE_STREAM in message.location.get("url", "")
        if self.unloading and (UNLOAD_NOISE.search(message.text) or cut_stream):
            self.unload_noise.append(message.text)
        else:
            self.console.append((message.type, message.text))

    def _navigated(self, frame) -> None:
        if frame == self.page.main_frame:
            self.unloading = False

    def reload(self) -> None:
        """Reload the page; the old page's stream, cut as it goes, is not an error of the new."""
        self.unloading = True
        self.page.reload()

    def _request(self, request) -> None:
        if "/queue/join" in request.url:
            self.joins.append(time.monotonic())
            self.join_events.append(_event_of(request))

    def problems(self) -> list[str]:
        """Console errors, and the warnings of a chart whose numbers were strings."""
        return [
            f"{kind}: {text}"
            for kind, text in self.console
            if kind == "error" or "zero is dropped" in text
        ]


def _event_of(request) -> str:
    """Which event a queue join sends: its `fn_index` and `trigger_id` (Gradio's ids)."""
    try:
        body = json.loads(request.post_data or "{}")
    except ValueError:
        return "unreadable join"
    return f"fn_index {body.get('fn_index')}, trigger {body.get('trigger_id')}"
