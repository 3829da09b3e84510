"""Fixtures of the app tests: one started app and one Chromium per test module.

A module that needs a differently started app (`--auth`, limits) defines its own `server`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.app.app_server import Server
from tests.app.browser import launched_chromium


@pytest.fixture(scope="module")
def server(request, tmp_path_factory) -> Iterator[Server]:
    """The app, started in a subprocess on a free port with its own run store."""
    running = Server(tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1]))
    try:
        running.wait_until_up()
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium shared by the module's tests (each opens its own context)."""
    with launched_chromium() as chromium:
        yield chromium
