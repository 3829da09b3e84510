"""What keras_seq offers right now: its layers and tasks, discovered at run time.

Pure Python (no Gradio), so the app only renders what this module returns and
the catalogue can be tested without a browser.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType

LAYERS_MODULE = "keras_seq.layers"
TASKS_MODULE = "keras_seq.tasks"
NO_DOCSTRING = "(no description)"
HEADERS = ("Name", "Kind", "Description")


@dataclass(frozen=True)
class CatalogEntry:
    """One public object of keras_seq: its name, kind and one-line summary."""

    name: str
    kind: str
    summary: str

    def as_row(self) -> list[str]:
        """Return the entry as a table row in the order of `HEADERS`."""
        return [self.name, self.kind, self.summary]


@dataclass(frozen=True)
class Catalog:
    """The layers and tasks currently available in keras_seq."""

    layers: tuple[CatalogEntry, ...]
    tasks: tuple[CatalogEntry, ...]


def summarize(obj: object) -> str:
    """Return the first non-empty line of `obj`'s own docstring, or a placeholder."""
    doc = inspect.getdoc(obj) if _has_own_doc(obj) else None
    for line in (doc or "").splitlines():
        if line.strip():
            return line.strip()
    return NO_DOCSTRING


def _has_own_doc(obj: object) -> bool:
    """Tell whether `obj` documents itself (rather than inheriting a base class's docstring)."""
    if inspect.isclass(obj):
        return bool(obj.__dict__.get("__doc__"))
    return bool(getattr(obj, "__doc__", None))


def kind_of(obj: object) -> str:
    """Name the kind of a public object: class, function, module or its type name."""
    if inspect.isclass(obj):
        return "class"
    if inspect.isfunction(obj) or inspect.isbuiltin(obj):
        return "function"
    if inspect.ismodule(obj):
        return "module"
    return type(obj).__name__


def import_optional(module_name: str) -> ModuleType | None:
    """Import `module_name`, or return None if that module itself does not exist.

    Errors raised while importing an existing module (a broken import inside it)
    propagate: a missing module is expected while the project grows, a broken one
    is a bug.
    """
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (
            module_name == exc.name or module_name.startswith(exc.name + ".")
        ):
            return None
        raise


def public_names(module: ModuleType) -> list[str]:
    """Return the module's `__all__`, or its public names defined in the module itself."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return sorted(
        name
        for name, obj in vars(module).items()
        if not name.startswith("_") and getattr(obj, "__module__", "").startswith(module.__name__)
    )


def entries_for(module: ModuleType | None, *, classes_only: bool = False) -> list[CatalogEntry]:
    """Describe the public objects of `module` (only classes if `classes_only`)."""
    if module is None:
        return []
    entries = []
    for name in public_names(module):
        obj = getattr(module, name, None)
        if obj is None or name.startswith("_"):
            continue
        if classes_only and not inspect.isclass(obj):
            continue
        entries.append(CatalogEntry(name=name, kind=kind_of(obj), summary=summarize(obj)))
    return entries


def build_catalog(layers_module: str = LAYERS_MODULE, tasks_module: str = TASKS_MODULE) -> Catalog:
    """Discover the public layer classes and the tasks that keras_seq exports now."""
    layers = entries_for(import_optional(layers_module), classes_only=True)
    tasks = entries_for(import_optional(tasks_module))
    return Catalog(layers=tuple(layers), tasks=tuple(tasks))


def rows(entries: Iterable[CatalogEntry]) -> list[list[str]]:
    """Return entries as table rows (see `HEADERS`)."""
    return [entry.as_row() for entry in entries]
