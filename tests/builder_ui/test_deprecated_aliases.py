"""The old flat import paths still work for one release, each with a DeprecationWarning."""

from __future__ import annotations

import importlib
import sys

import pytest

from builder_ui import builders, engine, specs
from builder_ui.results import compare


@pytest.mark.parametrize(
    ("old", "name", "new"),
    [
        ("builder_ui.spec", "load_spec", builders.load_spec),
        ("builder_ui.spec", "SpecError", specs.SpecError),
        ("builder_ui.spec", "ModelParams", specs.ModelParams),
        ("builder_ui.registry", "ModelBuilder", builders.ModelBuilder),
        ("builder_ui.registry", "register_model", builders.register_model),
        ("builder_ui.registry", "prepare", builders.prepare),
        ("builder_ui.runs", "RunStore", engine.RunStore),
        ("builder_ui.compare", "compare", compare.compare),
    ],
)
def test_an_old_path_gives_the_same_object_and_warns(monkeypatch, old, name, new):
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=old.replace(".", r"\.")):
        module = importlib.import_module(old)
    assert getattr(module, name) is new
