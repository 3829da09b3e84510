"""Fixtures shared by the builder_ui tests."""

from __future__ import annotations

import sys
import types

import pytest


@pytest.fixture
def launched(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Replace `builder_ui.app.page` by a stub that records `launch` calls instead of serving."""
    calls: list[dict] = []
    stub = types.ModuleType("builder_ui.app.page")
    stub.launch = lambda **kwargs: calls.append(kwargs)
    monkeypatch.setitem(sys.modules, "builder_ui.app.page", stub)
    return calls
