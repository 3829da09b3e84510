"""Spec errors: every problem with its field path, one per line, and how pydantic's become ours.

`SpecError` is what every part of builder_ui raises for input it cannot use. Its
`problems` are `(path, message)` pairs; `str(error)` prints them one per line:

    model.encoder.units: expected an integer ≥ 1, got -3
    train.optimizer: expected one of 'adam', 'sgd', 'rmsprop' or 'adamw', got 'adagrad'

`problems_from` turns a pydantic `ValidationError` into such pairs, following the
error's location through the models (and the `type` tags of unions) to name the
field the way the spec writes it. `shown` renders a received value for a message,
cut to `MAX_SHOWN` characters.
"""

from __future__ import annotations

import json
import re
import reprlib
from collections.abc import Mapping
from typing import Annotated, Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

# The longest value repr shown in an error message.
MAX_SHOWN = 80

# What `shown` renders before it cuts: enough for MAX_SHOWN characters, never a huge value whole.
_BOUNDED = reprlib.Repr()
_BOUNDED.maxlevel = 4
_BOUNDED.maxdict = _BOUNDED.maxlist = _BOUNDED.maxtuple = _BOUNDED.maxset = 16
_BOUNDED.maxstring = _BOUNDED.maxother = _BOUNDED.maxlong = 2 * MAX_SHOWN


class SpecError(ValueError):
    """A spec that cannot be used: every problem, one per line, each naming its field.

    Attributes:
        problems: `(path, message)` pairs, e.g. `("model.units", "expected an
            integer ≥ 1, got -3")`. `path` is `""` for a problem with the
            whole document (malformed YAML, not a mapping).
    """

    def __init__(self, problems: list[tuple[str, str]] | str, *, path: str = ""):
        if isinstance(problems, str):
            problems = [(path, problems)]
        self.problems = list(problems)
        super().__init__("\n".join(_line(p, m) for p, m in self.problems))

    def prefixed(self, prefix: str) -> SpecError:
        """The same problems, their paths under `prefix` (e.g. `"task"`)."""
        return SpecError([(_join(prefix, path), message) for path, message in self.problems])


def _line(path: str, message: str) -> str:
    return f"{path}: {message}" if path else message


def _join(prefix: str, path: str) -> str:
    if not prefix:
        return path
    if not path:
        return prefix
    return f"{prefix}{path}" if path.startswith("[") else f"{prefix}.{path}"


def shown(value: Any) -> str:
    """A short, readable rendering of a value received in a spec (at most `MAX_SHOWN` characters).

    The value is rendered with `reprlib`'s bounds first (a few items per
    level, a few levels), so a huge value costs no more to show than a small one.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = _BOUNDED.repr(value)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 3] + "..."


def problems_from(error: ValidationError, root: type[BaseModel]) -> list[tuple[str, str]]:
    """Turn a pydantic `ValidationError` on `root` into `(path, message)` problems."""
    problems = []
    for item in error.errors(include_url=False):
        parts, annotation, parent = _walk(root, item["loc"])
        message = _describe(item, annotation, parent)
        path_parts = list(parts)
        # An "after" model validator names its field as "field: message".
        if item["type"] == "value_error":
            text = str(item.get("ctx", {}).get("error", item["msg"]))
            head, sep, rest = text.partition(": ")
            if sep and re.fullmatch(r"[A-Za-z_][\w.]*", head):
                path_parts.extend(head.split("."))
                message = rest
        problems.append((_format_path(path_parts), message))
    return problems


def _format_path(parts: list[str | int]) -> str:
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_]\w*", part):
            text = f"{text}.{part}" if text else part
        else:
            text += f"[{json.dumps(part)}]"
    return text


def _unwrap(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _members(annotation: Any) -> list[Any]:
    origin = get_origin(annotation)
    if origin is Union or type(annotation).__name__ == "UnionType":
        return [_unwrap(a) for a in get_args(annotation)]
    return []


def _tag(cls: Any) -> str | None:
    if isinstance(cls, type) and issubclass(cls, BaseModel) and "type" in cls.model_fields:
        args = get_args(_unwrap(cls.model_fields["type"].annotation))
        if len(args) == 1:
            return args[0]
    return None


def _walk(root: type[BaseModel], loc: tuple) -> tuple[list, Any, Any]:
    """Follow a pydantic error location through the models; skip union tags.

    Returns the path parts, the annotation of the field reached (or None) and
    the model holding it (for listing allowed fields).
    """
    parts: list = []
    annotation: Any = root
    parent: Any = None
    for item in loc:
        annotation = _unwrap(annotation)
        members = _members(annotation)
        if members:
            chosen = next(
                (m for m in members if item in (_tag(m), getattr(m, "__name__", None))), None
            )
            if chosen is not None:
                annotation = chosen
                continue
            non_null = [m for m in members if m is not type(None)]
            annotation = non_null[0] if len(non_null) == 1 else None
            annotation = _unwrap(annotation)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            parent = annotation
            field = annotation.model_fields.get(item) if isinstance(item, str) else None
            annotation = field.annotation if field is not None else None
            parts.append(item)
            continue
        origin = get_origin(annotation)
        if origin is dict:
            annotation = get_args(annotation)[1] if get_args(annotation) else None
        elif origin is list:
            annotation = get_args(annotation)[0] if get_args(annotation) else None
        else:
            annotation = None
        parent = None
        parts.append(item)
    return parts, annotation, parent


def _number_kind(annotation: Any) -> str:
    annotation = _unwrap(annotation)
    members = [m for m in _members(annotation) if m is not type(None)]
    if len(members) == 1:
        annotation = members[0]
    return "an integer" if annotation is int else "a number"


def _describe(item: Mapping[str, Any], annotation: Any, parent: Any) -> str:
    kind, ctx, value = item["type"], item.get("ctx") or {}, item.get("input")
    got = f", got {shown(value)}"
    bounds = {
        "greater_than_equal": ("≥", "ge"),
        "greater_than": (">", "gt"),
        "less_than_equal": ("≤", "le"),
        "less_than": ("<", "lt"),
    }
    if kind in bounds:
        sign, key = bounds[kind]
        bound = ctx.get(key)
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)
        return f"expected {_number_kind(annotation)} {sign} {bound}{got}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"expected an integer{got}"
    if kind in ("float_type", "float_parsing"):
        return f"expected a number{got}"
    if kind == "finite_number":
        return f"expected a finite number{got}"
    if kind in ("bool_type", "bool_parsing"):
        return f"expected true or false{got}"
    if kind == "string_type":
        return f"expected a string{got}"
    if kind == "string_pattern_mismatch":
        return f"expected a string matching {ctx.get('pattern')}{got}"
    if kind == "string_too_short":
        return f"expected a non-empty string{got}"
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected')}{got}"
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        allowed = sorted(parent.model_fields) if parent is not None else []
        hint = f"; allowed fields: {', '.join(allowed)}" if allowed else ""
        return f"unknown field{hint}"
    if kind == "union_tag_invalid":
        return f"unknown type {shown(ctx.get('tag'))}; expected one of {ctx.get('expected_tags')}"
    if kind == "union_tag_not_found":
        return f"missing the `type` field that says which kind it is{got}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        return f"expected a mapping of fields{got}"
    if kind in ("list_type", "tuple_type"):
        return f"expected a list{got}"
    if kind == "too_short":
        return f"expected at least {ctx.get('min_length')} item(s){got}"
    if kind == "too_long":
        return f"expected at most {ctx.get('max_length')} item(s){got}"
    if kind == "value_error":
        return str(ctx.get("error", item["msg"]))
    return f"{item['msg'][:1].lower()}{item['msg'][1:]}{got}"


def choices(names: list[str]) -> str:
    return ", ".join(repr(n) for n in names) if names else "(none registered)"
