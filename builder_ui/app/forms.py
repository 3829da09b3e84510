"""The spec as a form: one field per hyperparameter, read from the registered pydantic models.

A spec document (a dict, as parsed from the YAML the user sees) becomes a list
of `FormField`s, one per leaf field of its `task`, `model` and `train`
sections, each with its dotted path (`model.encoder.units`), its kind (`int`,
`float`, `bool`, `choice`, `text`, or `toggle` for an optional block such as
`train.early_stopping`), its current value, the allowed values or bounds,
a line of help taken from the field's description or the `Args:` section
of its model's docstring, and its default. Because the fields come from the
registry's params models, a plugin's model type gets a form like the built-ins.

Only the fields that apply are listed. A discriminated block (`encoder`,
`architecture`) lists its chosen type's fields alone; within a model, a field
left at its default is listed only when the model's own validators accept
another value for it given the choices already made (the `cec_lstm` cell's
`forget_gate`, a Luong attention's `input_feeding`), so the rule lives in
one place, the model, and a plugin's validators hide its fields too. A field
the user has set stays listed, with its error, whatever else changes.

`set_field(document, path, value)` changes one field and returns the new
document. The value is converted to the field's kind but not checked: an
out-of-range value stays in the document, so that the YAML shows what the
user typed and validation names the field. Choosing another `type` (of the
model, the task or a block like `model.encoder`) replaces that section with
the new type's defaults.

Lists and mappings (a sweep's values) have no form field; they are edited in
the YAML. Nothing here imports Keras or Gradio.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import math
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
from pydantic import BaseModel, ValidationError

from builder_ui import builders
from builder_ui.specs import TrainSpec

KINDS = ("int", "float", "bool", "choice", "text", "toggle")
SECTIONS = ("task", "model", "train")
NAME_HELP = "Names the run (letters, digits, '.', '_', '-'); a sweep's runs add -0, -1, …"
NULL = "null"  # how a choice shows None


@dataclass(frozen=True)
class FormField:
    """One editable field of a spec.

    Attributes:
        path: Dotted path in the spec (`"model.encoder.units"`).
        label: The field's name (`"units"`).
        section: `"run"` (the spec's name), `"task"`, `"model"` or `"train"`.
        kind: One of `KINDS`.
        value: The current value (the default when the document leaves it out).
        choices: Allowed values of a `choice` (None among them when optional).
        optional: Whether null is allowed.
        bounds: Human-readable bounds, e.g. `"≥ 1, ≤ 65536"` (numbers only).
        help: One line about the field.
        structural: Changing it changes which fields exist (a `type`, an
            optional block), so a form must be redrawn.
        default: The value the spec takes when the field is left out.
        required: The field has no default (a data file's path).
    """

    path: str
    label: str
    section: str
    kind: str
    value: Any
    choices: tuple[Any, ...] = ()
    optional: bool = False
    bounds: str = ""
    help: str = ""
    structural: bool = False
    default: Any = None
    required: bool = False

    @property
    def elem_id(self) -> str:
        """A stable HTML id for the field: `field-model-encoder-units`."""
        return "field-" + re.sub(r"[^A-Za-z0-9]+", "-", self.path).strip("-")

    def description(self) -> str:
        """Help, bounds and the default in one line."""
        parts = [part for part in (self.help, self.bounds and f"({self.bounds})") if part]
        if self.optional and self.kind in ("int", "float", "text"):
            parts.append("(empty: null)")
        parts.append("Required." if self.required else f"Default: {self.default_shown()}.")
        return " ".join(parts)

    def default_shown(self) -> str:
        """The default as the YAML writes it (`null`, `true`); `off` for an optional block."""
        if self.kind == "toggle":
            return "on" if self.default else "off"
        if self.default is None:
            return NULL
        if isinstance(self.default, bool):
            return "true" if self.default else "false"
        return str(self.default)


# ---------------------------------------------------------------------------
# Reading the models


def _unwrap(annotation: Any) -> tuple[Any, list[Any]]:
    """Strip `Annotated`, returning the bare type and the constraints found."""
    metadata: list[Any] = []
    while get_origin(annotation) is Annotated:
        args = get_args(annotation)
        annotation = args[0]
        for extra in args[1:]:
            metadata.extend(getattr(extra, "metadata", None) or [extra])
    return annotation, metadata


def _union_members(annotation: Any) -> list[Any] | None:
    origin = get_origin(annotation)
    if origin is Union or isinstance(annotation, types.UnionType):
        return list(get_args(annotation))
    return None


def _bounds(metadata: list[Any]) -> str:
    parts = []
    for item in metadata:
        for attr, sign in (("ge", "≥"), ("gt", ">"), ("le", "≤"), ("lt", "<")):
            value = getattr(item, attr, None)
            if value is not None and isinstance(
                item,
                (annotated_types.Ge, annotated_types.Gt, annotated_types.Le, annotated_types.Lt),
            ):
                if isinstance(value, float) and value.is_integer():
                    value = int(value)
                parts.append(f"{sign} {value}")
    return ", ".join(parts)


_NAMES = r"[A-Za-z_]\w*(?:,\s*[A-Za-z_]\w*)*"
_ENTRY = re.compile(rf"^    ({_NAMES}):\s*(.*)$")
_NAMES_ONLY = re.compile(rf"^    ({_NAMES}),$")
_CONTINUED_ENTRY = re.compile(rf"^\s+({_NAMES}):\s*(.*)$")


def _docstring_help(cls: type) -> dict[str, str]:
    """`{field: its text}` from the `Args:` sections of a model's (and its bases') docstrings."""
    helps: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        doc = inspect.getdoc(klass) if klass.__doc__ else None
        if not doc or "Args:" not in doc:
            continue
        entries: list[tuple[list[str], list[str]]] = []
        pending: list[str] = []
        for line in doc.split("Args:", 1)[1].splitlines():
            if line.strip() and not line.startswith(" "):
                break  # the next section
            names_only = _NAMES_ONLY.match(line)
            entry = _ENTRY.match(line) or (_CONTINUED_ENTRY.match(line) if pending else None)
            if names_only:
                pending = _split_names(names_only.group(1))
            elif entry:
                entries.append((pending + _split_names(entry.group(1)), [entry.group(2)]))
                pending = []
            elif line.strip() and entries:
                entries[-1][1].append(line.strip())
        for names, text in entries:
            sentence = " ".join(text).strip()
            for name in names:
                if sentence:
                    helps[name] = sentence
    return helps


def _split_names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def _default(field_info: Any) -> Any:
    if field_info.default_factory is not None:
        value = field_info.default_factory()
        return value.model_dump(mode="json") if isinstance(value, BaseModel) else value
    default = field_info.default
    if default is None or isinstance(default, (bool, int, float, str)):
        return default
    if isinstance(default, BaseModel):
        return default.model_dump(mode="json")
    return None  # required (PydanticUndefined)


def _tag(cls: Any) -> str | None:
    if isinstance(cls, type) and issubclass(cls, BaseModel) and "type" in cls.model_fields:
        args = get_args(_unwrap(cls.model_fields["type"].annotation)[0])
        if len(args) == 1:
            return args[0]
    return None


def _model_fields(
    cls: type[BaseModel], values: Mapping[str, Any], prefix: str, section: str, every: bool
) -> list[FormField]:
    """The fields of `cls` at `prefix`; with `every`, also those that do not apply now."""
    helps = _docstring_help(cls)
    fields: list[FormField] = []
    for name, info in cls.model_fields.items():
        path = f"{prefix}.{name}"
        if prefix in ("task", "model") and name == "type":
            continue  # chosen with the task and model type selectors
        if not every and not _applies(cls, values, name):
            continue
        present = isinstance(values, Mapping) and name in values
        value = values[name] if present else _default(info)
        help_text = info.description or helps.get(name, "")
        annotation, metadata = _unwrap(info.annotation)
        metadata = [*info.metadata, *metadata]
        described = _describe(
            path, name, section, annotation, metadata, value, help_text, info, every
        )
        fields.extend(_with_default(field, path, info) for field in described)
    return fields


def _with_default(field: FormField, path: str, info: Any) -> FormField:
    """`field` with the default of the model field `info` at `path` (its tag for a selector)."""
    default = _default(info)
    if field.path == f"{path}.type" and isinstance(default, Mapping):
        return dataclasses.replace(field, default=default.get("type"))
    if field.path != path:
        return field  # a field of an inner block: it has its own default already
    return dataclasses.replace(field, default=default, required=info.is_required())


# ---------------------------------------------------------------------------
# Which fields apply

_NO_PROBE = object()  # a field whose other values are not tried: it always applies


def _applies(cls: type[BaseModel], values: Mapping[str, Any], name: str) -> bool:
    """Whether field `name` of `cls` can take a value other than its default, given `values`.

    Only the choices already made take part (the `type`, `cell` or `attention`
    of the siblings, a block's `type`, the required fields): the numbers are
    left at their defaults, so that typing a number never hides a field (nor
    redraws the form). A field whose value is set (not its default) applies.
    When the choices alone fail validation, nothing is hidden.
    """
    info = cls.model_fields[name]
    values = values if isinstance(values, Mapping) else {}
    if name in values and values[name] != _default(info):
        return True
    probe = _other_value(info)
    if probe is _NO_PROBE:
        return True
    chosen = _choices_made(cls, values, name)
    try:
        cls.model_validate(chosen)
    except ValidationError:
        return True
    try:
        cls.model_validate({**chosen, name: probe})
    except ValidationError:
        return False
    return True


def _choices_made(cls: type[BaseModel], values: Mapping[str, Any], skip: str) -> dict[str, Any]:
    """The values of `cls`'s choice, flag and required fields in `values` (a block by its type)."""
    chosen: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        if name == skip or name not in values:
            continue
        value = values[name]
        annotation = _non_null(info.annotation)
        if info.is_required() or annotation is bool or get_origin(annotation) is Literal:
            chosen[name] = value
        elif isinstance(value, Mapping) and "type" in value:
            chosen[name] = {"type": value["type"]}
    return chosen


def _non_null(annotation: Any) -> Any:
    """The bare type of an annotation, `X | None` read as `X` (a union of several kept)."""
    annotation, _ = _unwrap(annotation)
    members = [m for m in _union_members(annotation) or [annotation] if m is not type(None)]
    return _unwrap(members[0])[0] if len(members) == 1 else annotation


def _other_value(info: Any) -> Any:
    """A valid value of the field `info` besides its default, or `_NO_PROBE`.

    Tried for flags, choices and numbers that default to null (`attention_units`):
    the fields whose use depends on another choice.
    """
    default = _default(info)
    annotation, metadata = _unwrap(info.annotation)
    members = [m for m in _union_members(annotation) or [annotation] if m is not type(None)]
    if len(members) == 1:
        annotation, more = _unwrap(members[0])
        metadata = [*metadata, *more]
    metadata = [*info.metadata, *metadata]
    if annotation is bool:
        return not default if isinstance(default, bool) else True
    if get_origin(annotation) is Literal:
        others = [choice for choice in get_args(annotation) if choice != default]
        return others[0] if others else _NO_PROBE
    if default is None and annotation in (int, float):
        low = [getattr(m, "ge", None) for m in metadata if isinstance(m, annotated_types.Ge)]
        return annotation(low[0]) if low else _NO_PROBE
    return _NO_PROBE


def _describe(path, name, section, annotation, metadata, value, help_text, info, every):
    members = _union_members(annotation)
    optional = False
    if members is not None:
        non_null = [m for m in members if m is not type(None)]
        optional = len(non_null) < len(members)
        models = [_unwrap(m)[0] for m in non_null]
        if len(models) > 1 and all(_tag(m) for m in models):
            return _union_block(path, name, section, models, value, help_text, every)
        if len(non_null) == 1:
            annotation, more = _unwrap(non_null[0])
            metadata = [*metadata, *more]
        else:
            return []
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if optional:
            enabled = isinstance(value, Mapping)
            toggle = FormField(
                path,
                name,
                section,
                "toggle",
                enabled,
                optional=True,
                help=help_text,
                structural=True,
            )
            inner = _model_fields(annotation, value, path, section, every) if enabled else []
            return [toggle, *inner]
        block = value if isinstance(value, Mapping) else {}
        return _model_fields(annotation, block, path, section, every)
    if get_origin(annotation) is Literal:
        choices = tuple(get_args(annotation)) + ((None,) if optional else ())
        is_type = name == "type"
        return [
            FormField(
                path,
                name,
                section,
                "choice",
                value,
                choices,
                optional,
                help=help_text,
                structural=is_type,
            )
        ]
    if annotation is bool:
        if optional:
            return [
                FormField(
                    path, name, section, "choice", value, (True, False, None), True, help=help_text
                )
            ]
        return [FormField(path, name, section, "bool", value, help=help_text)]
    if annotation is int:
        return [
            FormField(path, name, section, "int", value, (), optional, _bounds(metadata), help_text)
        ]
    if annotation is float:
        return [
            FormField(
                path, name, section, "float", value, (), optional, _bounds(metadata), help_text
            )
        ]
    if annotation is str:
        return [FormField(path, name, section, "text", value, (), optional, "", help_text)]
    return []  # lists and mappings: YAML only


def _union_block(path, name, section, models, value, help_text, every):
    tags = tuple(_tag(m) for m in models)
    values = value if isinstance(value, Mapping) else {}
    chosen_tag = values.get("type", tags[0])
    chosen = next((m for m in models if _tag(m) == chosen_tag), None)
    selector = FormField(
        f"{path}.type",
        "type",
        section,
        "choice",
        chosen_tag,
        tags,
        help=help_text or f"Kind of {name}.",
        structural=True,
    )
    if chosen is None:
        return [selector]
    inner = _model_fields(chosen, values, path, section, every)
    inner = [f for f in inner if f.path != f"{path}.type"]
    return [selector, *inner]


def section_model(document: Mapping[str, Any], section: str) -> type[BaseModel] | None:
    """The params model of a section of `document`, or None when its type is unknown."""
    if section == "train":
        return TrainSpec
    data = document.get(section)
    type_name = data.get("type") if isinstance(data, Mapping) else None
    if not isinstance(type_name, str):
        return None
    kind = "task" if section == "task" else "model"
    names = builders.task_types() if kind == "task" else builders.model_types()
    if type_name not in names:
        return None
    return builders.params_model(kind, type_name)


def form_fields(document: Mapping[str, Any], *, every: bool = False) -> list[FormField]:
    """The editable fields of a spec document: its `name`, then task, model and train.

    Only the fields that apply now (see the module's docstring); with `every`, all of
    them, so that a script may set one before the choice that makes it apply.
    """
    if not isinstance(document, Mapping):
        return []
    name = document.get("name")
    fields: list[FormField] = [
        FormField(
            "name",
            "name",
            "run",
            "text",
            name if isinstance(name, str) else "",
            help=NAME_HELP,
            required=True,
        )
    ]
    for section in SECTIONS:
        cls = section_model(document, section)
        if cls is None:
            continue
        values = document.get(section)
        values = values if isinstance(values, Mapping) else {}
        fields.extend(_model_fields(cls, values, section, section, every))
    return fields


def structure(document: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """What fields a form has: `(path, kind)` pairs. Equal structures need no redraw."""
    types_ = tuple(
        (section, str((document.get(section) or {}).get("type")))
        for section in ("task", "model")
        if isinstance(document, Mapping) and isinstance(document.get(section), Mapping)
    )
    return types_ + tuple((f.path, f.kind) for f in form_fields(document))


# ---------------------------------------------------------------------------
# Changing the document


class FieldError(ValueError):
    """A form value that cannot even be put in the document (the message names the field)."""


def defaults(kind: str, type_name: str) -> dict[str, Any]:
    """A section for a new `type`: its fields with their defaults, nulls left out."""
    cls = builders.params_model(kind, type_name)
    try:
        data = cls.model_validate({"type": type_name}).model_dump(mode="json")
    except ValidationError:
        # A required field (a data file's path): start from the fields that have defaults.
        data = {"type": type_name}
        for name, info in cls.model_fields.items():
            if name != "type" and not info.is_required():
                data[name] = _default(info)
            elif name != "type":
                data[name] = ""
    return _drop_nulls(data)


def _drop_nulls(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _drop_nulls(v) for k, v in data.items() if v is not None}
    return data


def _block_defaults(cls: type[BaseModel], path: str, tag: str) -> dict[str, Any]:
    """Defaults of the member `tag` of the union at `path` inside `cls` (e.g. `encoder`)."""
    name = path.split(".")[-1]
    info = cls.model_fields[name]
    annotation, _ = _unwrap(info.annotation)
    members = _union_members(annotation) or [annotation]
    for member in members:
        member, _ = _unwrap(member)
        if _tag(member) == tag:
            return _drop_nulls(member().model_dump(mode="json"))
    raise FieldError(f"{path}.type: expected one of the listed kinds, got {tag!r}")


def _coerce(field: FormField, value: Any) -> Any:
    if isinstance(value, str) and value.strip() == "" and field.kind in ("int", "float", "text"):
        return None if field.optional or field.kind != "text" else ""
    if field.kind == "choice":
        if value in (NULL, None):
            return None
        for choice in field.choices:
            if value == choice or (isinstance(value, str) and str(choice).lower() == value.lower()):
                return choice
        return value  # validation reports it with the allowed values
    if field.kind in ("bool", "toggle"):
        if isinstance(value, str):
            return value.strip().lower() in ("true", "1", "yes", "on")
        return bool(value)
    if field.kind == "int":
        if isinstance(value, bool):
            return value
        if isinstance(value, float) and math.isfinite(value) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            text = value.strip()
            try:
                return int(text)
            except ValueError:
                try:
                    number = float(text)
                except ValueError:
                    return text  # validation says "expected an integer, got 'abc'"
                return int(number) if math.isfinite(number) and number.is_integer() else number
        return value
    if field.kind == "float":
        if isinstance(value, str):
            try:
                return float(value.strip())
            except ValueError:
                return value.strip()
        if isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        return value
    return value if value is None else str(value)


def set_field(document: Mapping[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `document` with the field at `path` set to `value` (converted to its kind).

    Raises:
        FieldError: `path` is not a field of the document's form.
    """
    document = copy.deepcopy(dict(document))
    fields = {f.path: f for f in form_fields(document, every=True)}
    if path not in fields:
        known = ", ".join(fields) or "none (fix the task and model types first)"
        raise FieldError(f"{path}: not a field of this spec; fields: {known}")
    field = fields[path]
    value = _coerce(field, value)
    parts = path.split(".")
    if field.kind == "toggle":
        cls = section_model(document, parts[0])
        info = _lookup_model(cls, parts[1:-1])
        block = _unwrap(info.model_fields[parts[-1]].annotation)[0]
        member = next(
            _unwrap(m)[0] for m in (_union_members(block) or [block]) if m is not type(None)
        )
        value = _drop_nulls(member().model_dump(mode="json")) if value else None
        if value == {}:
            value = {}
    elif parts[-1] == "type" and field.structural and len(parts) > 2:
        cls = section_model(document, parts[0])
        owner = _lookup_model(cls, parts[1:-2])
        value_block = _block_defaults(owner, ".".join(parts[1:-1]), value)
        parts = parts[:-1]
        value = value_block
    node = document
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[parts[-1]] = value
    return document


def _lookup_model(cls: type[BaseModel] | None, parts: list[str]) -> type[BaseModel]:
    """The model class reached from `cls` through the field names `parts` (non-union only)."""
    if cls is None:
        raise FieldError("the section's type is unknown")
    for part in parts:
        annotation, _ = _unwrap(cls.model_fields[part].annotation)
        members = _union_members(annotation)
        if members:
            annotation = next(_unwrap(m)[0] for m in members if m is not type(None))
        cls = annotation
    return cls


def set_type(document: Mapping[str, Any], section: str, type_name: str) -> dict[str, Any]:
    """A copy of `document` whose `task` or `model` is `type_name` with its defaults."""
    if section not in ("task", "model"):
        raise FieldError(f"{section}: expected 'task' or 'model'")
    document = copy.deepcopy(dict(document))
    document[section] = defaults(section, type_name)
    return document
