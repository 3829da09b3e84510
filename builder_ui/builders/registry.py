"""The registry of task and model types, built-in and from plugins.

Builders register by type name with `register_model` / `register_task`
(`builder_ui.builders.base` says what a builder is). The built-in ones register
when `builder_ui.builders` is imported. Other packages add builders without
touching keras_seq, through the entry-point group `keras_seq.builders` (in
their `pyproject.toml`):

    [project.entry-points."keras_seq.builders"]
    my_classifier = "my_package.builders:MyClassifier"

Entry points are loaded once, the first time a type is looked up. A plugin
that fails to import or is not a valid builder does not break the others: it
is left out and the error, naming the entry point, is shown when a spec uses
its type (and by `plugin_errors()`).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, get_args

from pydantic import BaseModel

from builder_ui.builders.base import (
    INPUT_KINDS,
    TARGET_KINDS,
    BuilderError,
    ModelBuilder,
    TaskBuilder,
)
from builder_ui.specs import ModelParams, SpecError, TaskParams, shown

ENTRY_POINT_GROUP = "keras_seq.builders"
TYPE_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"

_logger = logging.getLogger(__name__)


@dataclass
class _Registry:
    models: dict[str, ModelBuilder] = field(default_factory=dict)
    tasks: dict[str, TaskBuilder] = field(default_factory=dict)
    # Entry-point type name → why it could not be loaded.
    plugin_errors: dict[str, str] = field(default_factory=dict)
    plugins_loaded: bool = False
    lock: threading.RLock = field(default_factory=threading.RLock)


_REGISTRY = _Registry()


def _check_builder(cls: Any, type_name: str, base: type) -> None:
    """Refuse anything that is not a complete builder of kind `base`, naming what is wrong."""
    what = "model" if base is ModelBuilder else "task"
    if not isinstance(type_name, str) or not re.fullmatch(TYPE_NAME_PATTERN, type_name):
        raise BuilderError(
            f"A {what} type name must match {TYPE_NAME_PATTERN} (lower case, digits, _), "
            f"got {type_name!r}."
        )
    if not (isinstance(cls, type) and issubclass(cls, base)):
        raise BuilderError(
            f"{what} type {type_name!r}: expected a subclass of builder_ui.builders."
            f"{base.__name__}, got {cls!r}."
        )
    params = getattr(cls, "params", None)
    params_base = ModelParams if base is ModelBuilder else TaskParams
    if not (isinstance(params, type) and issubclass(params, BaseModel)):
        raise BuilderError(
            f"{what} type {type_name!r}: `{cls.__name__}.params` must be a pydantic model "
            f"(a subclass of builder_ui.specs.{params_base.__name__}), got {params!r}."
        )
    if not issubclass(params, params_base):
        raise BuilderError(
            f"{what} type {type_name!r}: `{cls.__name__}.params` must subclass "
            f"builder_ui.specs.{params_base.__name__}, got {params.__name__}."
        )
    type_field = params.model_fields.get("type")
    tags = get_args(type_field.annotation) if type_field is not None else ()
    if tags != (type_name,):
        raise BuilderError(
            f"{what} type {type_name!r}: `{params.__name__}` must declare "
            f'`type: Literal["{type_name}"] = "{type_name}"`, got {tags or "no literal"}.'
        )
    if base is ModelBuilder:
        if cls.build is ModelBuilder.build:
            raise BuilderError(f"model type {type_name!r}: `{cls.__name__}` must define build().")
        for attr, allowed in (("input_kinds", INPUT_KINDS), ("target_kinds", TARGET_KINDS)):
            kinds = getattr(cls, attr, ())
            if (
                not isinstance(kinds, (tuple, list, frozenset, set))
                or not kinds
                or not set(kinds) <= set(allowed)
            ):
                raise BuilderError(
                    f"model type {type_name!r}: `{cls.__name__}.{attr}` must be a non-empty "
                    f"tuple of {', '.join(repr(k) for k in allowed)}, got {kinds!r}."
                )
    elif cls.load is TaskBuilder.load:
        raise BuilderError(f"task type {type_name!r}: `{cls.__name__}` must define load().")


def _register(table: str, base: type, type_name: str, cls: type, replace: bool) -> None:
    _check_builder(cls, type_name, base)
    with _REGISTRY.lock:
        registered = getattr(_REGISTRY, table)
        current = registered.get(type_name)
        if current is not None and type(current) is not cls and not replace:
            raise BuilderError(
                f"{'model' if base is ModelBuilder else 'task'} type {type_name!r} is already "
                f"registered by {type(current).__module__}.{type(current).__qualname__}; "
                "pass replace=True to replace it."
            )
        if current is None or type(current) is not cls:
            cls.type = type_name
            registered[type_name] = cls()


def register_model(type_name: str, *, replace: bool = False) -> Callable[[type], type]:
    """Class decorator: register a `ModelBuilder` subclass as model type `type_name`.

    Raises:
        BuilderError: when the class is not a complete builder, or the name
            is taken by another class (unless `replace=True`).
    """

    def decorate(cls: type) -> type:
        _register("models", ModelBuilder, type_name, cls, replace)
        return cls

    return decorate


def register_task(type_name: str, *, replace: bool = False) -> Callable[[type], type]:
    """Class decorator: register a `TaskBuilder` subclass as task type `type_name`."""

    def decorate(cls: type) -> type:
        _register("tasks", TaskBuilder, type_name, cls, replace)
        return cls

    return decorate


def unregister(kind: str, type_name: str) -> None:
    """Remove a registered type (`kind` is `"model"` or `"task"`); for tests and plugins."""
    with _REGISTRY.lock:
        (_REGISTRY.models if kind == "model" else _REGISTRY.tasks).pop(type_name, None)


def _entry_point_label(entry_point: importlib.metadata.EntryPoint) -> str:
    dist = getattr(entry_point, "dist", None)
    origin = f" (from {dist.name} {dist.version})" if dist is not None else ""
    return f"entry point {entry_point.name!r} = {entry_point.value!r}{origin}"


def _load_plugins() -> None:
    with _REGISTRY.lock:
        if _REGISTRY.plugins_loaded:
            return
        _REGISTRY.plugins_loaded = True
        for entry_point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            load_entry_point(entry_point)


def load_entry_point(entry_point: importlib.metadata.EntryPoint) -> str | None:
    """Load and register one entry point of `keras_seq.builders`; never raises.

    Returns:
        None when registered, else the error (also kept for `plugin_errors()`).
    """
    label = _entry_point_label(entry_point)
    name = entry_point.name
    try:
        obj = entry_point.load()
    except Exception as error:  # a broken plugin must not break the others
        message = f"{label} failed to import: {type(error).__name__}: {error}"
    else:
        if isinstance(obj, type) and issubclass(obj, TaskBuilder):
            table, base = "tasks", TaskBuilder
        else:
            table, base = "models", ModelBuilder
        builtin = name in getattr(_REGISTRY, table) and (
            type(getattr(_REGISTRY, table)[name]).__module__.startswith("builder_ui.")
            and not (isinstance(obj, type) and obj.__module__.startswith("builder_ui."))
        )
        try:
            if builtin:
                raise BuilderError(f"type {name!r} is built in and cannot be replaced by a plugin")
            _register(table, base, name, obj, replace=False)
        except BuilderError as error:
            message = f"{label} is not a valid builder: {error}"
        else:
            _REGISTRY.plugin_errors.pop(name, None)
            return None
    _REGISTRY.plugin_errors[name] = message
    _logger.warning("keras_seq plugin not loaded: %s", message)
    return message


def _ensure_loaded() -> None:
    _load_plugins()


def reload_plugins() -> None:
    """Look for entry points again (e.g. after installing a plugin in this process)."""
    with _REGISTRY.lock:
        _REGISTRY.plugins_loaded = False
        _REGISTRY.plugin_errors.clear()
    importlib.invalidate_caches()
    _ensure_loaded()


def plugin_errors() -> dict[str, str]:
    """Entry points that could not be loaded: type name → the error, naming the entry point."""
    _ensure_loaded()
    return dict(_REGISTRY.plugin_errors)


def model_types() -> list[str]:
    """Names of the registered model types (built-in and plugins), sorted."""
    _ensure_loaded()
    return sorted(_REGISTRY.models)


def task_types() -> list[str]:
    """Names of the registered task types (built-in and plugins), sorted."""
    _ensure_loaded()
    return sorted(_REGISTRY.tasks)


def model_builder(type_name: str) -> ModelBuilder:
    """The registered builder of model type `type_name`; `SpecError` at `model.type` if none."""
    return _lookup("model", type_name)


def task_builder(type_name: str) -> TaskBuilder:
    """The registered builder of task type `type_name`; `SpecError` at `task.type` if none."""
    return _lookup("task", type_name)


def params_model(kind: str, type_name: Any) -> type[BaseModel]:
    """The pydantic params model of a registered `"task"` or `"model"` type."""
    return _lookup(kind, type_name).params


def _lookup(kind: str, type_name: Any) -> Any:
    _ensure_loaded()
    table = _REGISTRY.models if kind == "model" else _REGISTRY.tasks
    if isinstance(type_name, str) and type_name in table:
        return table[type_name]
    if isinstance(type_name, str) and type_name in _REGISTRY.plugin_errors:
        raise SpecError([(f"{kind}.type", _REGISTRY.plugin_errors[type_name])])
    known = ", ".join(repr(name) for name in sorted(table))
    if not isinstance(type_name, str):
        raise SpecError([(f"{kind}.type", f"expected a string, got {shown(type_name)}")])
    raise SpecError(
        [(f"{kind}.type", f"unknown {kind} type {type_name!r}; expected one of {known}")]
    )


def describe_types() -> dict[str, dict[str, Any]]:
    """For the app and CLI: each model type's description, input and target kinds."""
    _ensure_loaded()
    return {
        name: {
            "description": builder.description,
            "input_kinds": list(builder.input_kinds),
            "target_kinds": list(builder.target_kinds),
            "module": type(builder).__module__,
        }
        for name, builder in sorted(_REGISTRY.models.items())
    }


def describe_tasks() -> dict[str, dict[str, Any]]:
    """For the app and CLI: each task type's description and module."""
    _ensure_loaded()
    return {
        name: {"description": builder.description, "module": type(builder).__module__}
        for name, builder in sorted(_REGISTRY.tasks.items())
    }


def model_builders() -> dict[str, ModelBuilder]:
    """Every registered model type's builder, by type name (a copy, sorted by name)."""
    _ensure_loaded()
    return dict(sorted(_REGISTRY.models.items()))
