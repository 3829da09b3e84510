"""Tests for `builder_ui.app.actions.catalog`: finding keras_seq's layers and tasks, no Gradio."""

from __future__ import annotations

import sys
import types

import pytest

from builder_ui.app.actions import catalog


class Documented:
    """First line of the summary.

    Details that the catalogue leaves out.
    """


class Undocumented(Documented):
    pass


def documented_task():
    """

    Make a task (the summary skips leading blank lines)."""


def fake_module(monkeypatch: pytest.MonkeyPatch, name: str, all_=None, **members):
    """Register a module `name` holding `members` (and `__all__` if given) in sys.modules."""
    module = types.ModuleType(name)
    for key, value in members.items():
        setattr(module, key, value)
    if all_ is not None:
        module.__all__ = all_
    monkeypatch.setitem(sys.modules, name, module)
    return module


def test_summary_is_first_nonempty_docstring_line():
    assert catalog.summarize(Documented) == "First line of the summary."
    assert (
        catalog.summarize(documented_task) == "Make a task (the summary skips leading blank lines)."
    )


def test_class_without_own_docstring_does_not_borrow_its_base_class_docstring():
    assert catalog.summarize(Undocumented) == catalog.NO_DOCSTRING


def test_kinds_are_named():
    assert catalog.kind_of(Documented) == "class"
    assert catalog.kind_of(documented_task) == "function"
    assert catalog.kind_of(len) == "function"
    assert catalog.kind_of(types) == "module"
    assert catalog.kind_of(3) == "int"


def test_layers_are_the_classes_listed_in_all(monkeypatch):
    fake_module(
        monkeypatch,
        "fake_layers",
        all_=["Documented", "helper", "Undocumented"],
        Documented=Documented,
        Undocumented=Undocumented,
        helper=documented_task,
        Hidden=Documented,
    )
    found = catalog.build_catalog("fake_layers", "fake_missing_tasks")
    assert [entry.name for entry in found.layers] == ["Documented", "Undocumented"]
    assert found.layers[0] == catalog.CatalogEntry(
        "Documented", "class", "First line of the summary."
    )


def test_tasks_list_whatever_all_holds(monkeypatch):
    fake_module(monkeypatch, "fake_layers", all_=[])
    fake_module(
        monkeypatch,
        "fake_tasks",
        all_=["adding_problem", "TaskSpec"],
        adding_problem=documented_task,
        TaskSpec=Documented,
    )
    found = catalog.build_catalog("fake_layers", "fake_tasks")
    assert found.layers == ()
    assert [(entry.name, entry.kind) for entry in found.tasks] == [
        ("adding_problem", "function"),
        ("TaskSpec", "class"),
    ]


def test_missing_tasks_module_gives_an_empty_task_list(monkeypatch):
    fake_module(monkeypatch, "fake_layers", all_=["Documented"], Documented=Documented)
    found = catalog.build_catalog("fake_layers", "fake_layers.tasks")
    assert found.tasks == ()
    assert catalog.import_optional("no_such_package_for_keras_seq.tasks") is None


def test_broken_import_inside_an_existing_module_is_not_hidden(tmp_path, monkeypatch):
    (tmp_path / "broken_tasks_for_catalog.py").write_text("import no_such_dependency_xyz\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "broken_tasks_for_catalog", raising=False)
    with pytest.raises(ModuleNotFoundError, match="no_such_dependency_xyz"):
        catalog.import_optional("broken_tasks_for_catalog")


def test_module_without_all_lists_its_own_public_names(monkeypatch):
    module = fake_module(monkeypatch, "fake_no_all")
    exec("class Local:\n    '''Defined here.'''\n\nclass _Private:\n    pass\n", vars(module))
    module.Imported = Documented  # defined elsewhere, so not part of this module's API
    assert catalog.public_names(module) == ["Local"]


def test_rows_follow_the_headers():
    entry = catalog.CatalogEntry("CECLSTM", "class", "The 1997 LSTM.")
    assert catalog.HEADERS == ("Name", "Kind", "Description")
    assert catalog.rows([entry]) == [["CECLSTM", "class", "The 1997 LSTM."]]


def test_real_catalogue_lists_the_cec_lstm_layers_and_any_tasks():
    found = catalog.build_catalog()
    layers = {entry.name: entry for entry in found.layers}
    assert {"CECLSTM", "CECLSTMCell"} <= set(layers)
    assert all(entry.summary != catalog.NO_DOCSTRING for entry in found.layers)
    tasks = catalog.import_optional("keras_seq.tasks")
    expected_tasks = list(getattr(tasks, "__all__", [])) if tasks is not None else []
    assert [entry.name for entry in found.tasks] == expected_tasks
