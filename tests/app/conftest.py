"""Fixtures of the app tests: one app that trains per test process (and its Chromium,
`browser`, in tests/conftest.py: every browser test of the process shares it).

`make test` hands whole files to its workers (`--dist loadfile`); the modules a worker runs
share its Chromium (each test opens its own context: its own cookies, storage and pages)
and its app (`server`): a `keras-seq ui` with its training process warmed up, over a run
store that the modules share. A test of that app therefore names the runs it looks at (by
id, or by a name no other module gives), and counts a store's runs before and after rather
than expecting it empty; every run it queues ends before it does, so the next module finds
the queue idle. A module that needs a differently started app (`--auth`, limits, a store
written beforehand, a restart) starts its own, with `--no-warm-up` where it never trains.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.app.app_server import Server, serving


@pytest.fixture(scope="session")
def server(tmp_path_factory) -> Iterator[Server]:
    """The app that trains, started in a subprocess on a free port with its own run store."""
    with serving(tmp_path_factory.mktemp("app")) as running:
        yield running
