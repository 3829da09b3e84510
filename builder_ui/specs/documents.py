"""Spec documents: YAML and JSON text or files in, plain data out, and specs back to text.

Reading is strict where YAML is loose: duplicate keys are refused (with the
line of the first), in JSON too; a key that is a list or a mapping (YAML's
`? [a, b]`) is refused; `1e-3` is a number (YAML 1.2, not 1.1's string), and
JSON's `NaN`/`Infinity` are refused. Each of these, and a syntax error, becomes
a `SpecError` naming the line and column. The work of reading is bounded before
it is done: by bytes (`MAX_SPEC_BYTES`), nesting (`MAX_SPEC_DEPTH`) and values
after YAML's aliases are expanded (`MAX_SPEC_NODES`). Nothing here validates
fields: `builder_ui.specs.validation` does that with the builders' types.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Mapping
from pathlib import Path
from typing import Any

import yaml

from builder_ui.specs.errors import SpecError, shown
from builder_ui.specs.experiment import ExperimentSpec

# A spec is a page of text; anything larger is not a spec.
MAX_SPEC_BYTES = 1_000_000
# Nesting of mappings and lists (a spec needs about five), and values once YAML's aliases are
# expanded (a spec holds hundreds; a sweep's lists a few thousand).
MAX_SPEC_DEPTH = 64
MAX_SPEC_NODES = 100_000
SPEC_SUFFIXES = (".yaml", ".yml", ".json")


class _SpecLoader(yaml.SafeLoader):
    """Safe YAML that refuses duplicate keys and reads `1e-3` as a number (YAML 1.2)."""


def _construct_mapping(loader: _SpecLoader, node: yaml.MappingNode, deep: bool = False):
    seen = {}
    for key_node, _ in node.value:
        # Deep for a key that is a list or a mapping, so that it is whole when shown.
        key = loader.construct_object(key_node, deep=deep or key_node.id != "scalar")
        if not isinstance(key, Hashable):  # `? [a, b]`: a list or a mapping as a key
            kind = "list" if isinstance(key, list) else "mapping"
            raise yaml.constructor.ConstructorError(
                "while reading a mapping",
                node.start_mark,
                f"found a key that is a {kind} ({shown(key)}); a spec's keys are names",
                key_node.start_mark,
            )
        if key in seen:
            raise yaml.constructor.ConstructorError(
                "while reading a mapping",
                node.start_mark,
                f"found duplicate key {key!r} (first on line {seen[key] + 1})",
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_SpecLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_SpecLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def parse_yaml(text: str, source: str = "") -> Any:
    """Parse YAML text safely; a syntax error becomes a `SpecError` with its line and column.

    Before any Python object is built, the document's events are read once
    (PyYAML's parser is iterative) to bound its work: more than `MAX_SPEC_DEPTH`
    nested mappings and lists, or more than `MAX_SPEC_NODES` nodes once every
    alias is expanded (a "billion laughs" document is a few hundred bytes whose
    aliases expand to billions of nodes), is refused with one message.
    """
    try:
        _check_yaml_size(text, source)
        return yaml.load(text, Loader=_SpecLoader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "somewhere"
        problem = error.problem or error.context or "unreadable"
        raise SpecError(f"{_source(source)}malformed YAML at {where}: {problem}") from None
    except yaml.YAMLError as error:
        raise SpecError(f"{_source(source)}malformed YAML: {error}") from None


def _too_deep(source: str) -> SpecError:
    return SpecError(
        f"{_source(source)}nested more than {MAX_SPEC_DEPTH} levels deep; a spec is a few "
        "levels of mappings and lists"
    )


def _too_large(source: str) -> SpecError:
    return SpecError(
        f"{_source(source)}more than {MAX_SPEC_NODES:,} values once its aliases are expanded; "
        "a spec holds a few hundred"
    )


def _check_yaml_size(text: str, source: str) -> None:
    """Refuse YAML nested deeper than `MAX_SPEC_DEPTH` or expanding past `MAX_SPEC_NODES` nodes.

    Walks the parser's events with an explicit stack: each open mapping or list
    counts the nodes below it, an alias counts as the whole node it names
    (whose size is known once that node has ended), and the walk stops at the
    first count past the limit, so the work is bounded by the limits, not by
    what the aliases would expand to.
    """
    loader = _SpecLoader(text)
    sizes: dict[str, int] = {}  # anchor -> nodes of its node, aliases expanded
    stack: list[list[Any]] = []  # [anchor, nodes so far] of each open collection
    total = 0

    def add(nodes: int) -> None:
        nonlocal total
        if stack:
            stack[-1][1] += nodes
            if stack[-1][1] > MAX_SPEC_NODES:
                raise _too_large(source)
        else:
            total += nodes
            if total > MAX_SPEC_NODES:
                raise _too_large(source)

    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, yaml.ScalarEvent):
                if event.anchor is not None:
                    sizes[event.anchor] = 1
                add(1)
            elif isinstance(event, yaml.AliasEvent):
                add(sizes.get(event.anchor, 1))
            elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
                if len(stack) >= MAX_SPEC_DEPTH:
                    raise _too_deep(source)
                stack.append([event.anchor, 1])
            elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
                anchor, nodes = stack.pop()
                if anchor is not None:
                    sizes[anchor] = nodes
                add(nodes)
    finally:
        loader.dispose()


def parse_json(text: str, source: str = "") -> Any:
    """Parse JSON text; a syntax error becomes a `SpecError` with its line and column.

    JSON has no aliases, but it nests: past `MAX_SPEC_DEPTH` levels it is
    refused with one message (deeper than Python's recursion limit, before the
    decoder recurses that far). A key twice in one object (Python's decoder
    keeps the last) and `NaN`/`Infinity` (which it reads as floats) are refused
    at their line and column (`_check_json_structure`).
    """
    _check_json_structure(text, source)
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as error:
        raise SpecError(
            f"{_source(source)}malformed JSON at line {error.lineno}, column "
            f"{error.colno}: {error.msg}"
        ) from None


# What `_check_json_structure` looks at: strings (skipped whole, or read as keys), brackets,
# and the constants Python's decoder takes but JSON does not.
_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]|-?Infinity|NaN', re.DOTALL)
_COLON = re.compile(r"[ \t\r\n]*:")


def _check_json_structure(text: str, source: str) -> None:
    """Refuse JSON nested past `MAX_SPEC_DEPTH`, with a key twice in one object, or `NaN`.

    One pass over the text's strings and brackets, before it is decoded: the
    open objects' keys are kept (with where each was first seen), so a
    duplicate is named at its own line and column with the line of the first.
    """
    open_objects: list[dict[str, int] | None] = []  # per open bracket: its keys, or None
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token == "{" or token == "[":
            if len(open_objects) >= MAX_SPEC_DEPTH:
                raise _too_deep(source)
            open_objects.append({} if token == "{" else None)
        elif token == "}" or token == "]":
            if open_objects:
                open_objects.pop()
        elif token.startswith('"'):
            keys = open_objects[-1] if open_objects else None
            if keys is not None and _COLON.match(text, match.end()):
                key = _json_string(token)
                if key in keys:
                    first = text.count("\n", 0, keys[key]) + 1
                    problem = f"duplicate key {key!r} (first on line {first})"
                    raise _json_error(source, text, match.start(), problem)
                keys[key] = match.start()
        else:
            raise _json_error(source, text, match.start(), f"{token} is not a JSON number")


def _json_string(token: str) -> str:
    """A JSON string's value (escapes read); its raw text if it is malformed."""
    try:
        return json.loads(token)
    except ValueError:
        return token[1:-1]


def _json_error(source: str, text: str, position: int, problem: str) -> SpecError:
    line = text.count("\n", 0, position) + 1
    column = position - text.rfind("\n", 0, position)
    return SpecError(f"{_source(source)}malformed JSON at line {line}, column {column}: {problem}")


def _source(source: str) -> str:
    return f"{source}: " if source else ""


def _refuse_constant(name: str) -> Any:
    raise json.JSONDecodeError(f"{name} is not a JSON number", name, 0)


def read_spec_file(path: str | Path) -> Any:
    """Read a `.yaml`, `.yml` or `.json` spec file into plain data (not validated)."""
    path = Path(path)
    source = str(path)
    if path.suffix.lower() not in SPEC_SUFFIXES:
        raise SpecError(
            f"{source}: expected a file ending in {', '.join(SPEC_SUFFIXES)}, got {path.suffix!r}"
        )
    if not path.is_file():
        raise SpecError(f"{source}: no such spec file")
    size = path.stat().st_size
    if size > MAX_SPEC_BYTES:
        raise SpecError(
            f"{source}: {size:,} bytes is too large for a spec (at most {MAX_SPEC_BYTES:,})"
        )
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise SpecError(f"{source}: not UTF-8 text (line {line}: {error.reason})") from None
    if path.suffix.lower() == ".json":
        return parse_json(text, source)
    return parse_yaml(text, source)


def read_document(source: str | Path | Mapping[str, Any]) -> Any:
    """The plain data of a spec given as a file path, YAML or JSON text, or a mapping.

    Args:
        source: A `Path`, or a string naming an existing `.yaml`/`.yml`/`.json`
            file; otherwise a string is parsed as YAML (which JSON also is); a
            mapping is returned as it is.

    Raises:
        SpecError: for an unreadable file or malformed YAML/JSON (with the line).
    """
    if isinstance(source, Mapping):
        return source
    if isinstance(source, Path):
        return read_spec_file(source)
    if not isinstance(source, str):
        raise SpecError(
            f"expected a path, YAML or JSON text, or a mapping, got {type(source).__name__}"
        )
    if _looks_like_path(source):
        return read_spec_file(source)
    return parse_yaml(source)


def _looks_like_path(text: str) -> bool:
    return "\n" not in text and text.strip().lower().endswith(SPEC_SUFFIXES)


def dump_spec(spec: ExperimentSpec, format: str = "yaml") -> str:
    """Write a spec as YAML or JSON text that `load_spec` reads back to an equal spec.

    Args:
        spec: The spec.
        format: `"yaml"` (default) or `"json"`.
    """
    if format not in ("yaml", "json"):
        raise ValueError(
            f"Received an invalid value for argument `format`, expected 'yaml' or 'json', "
            f"got {format!r}."
        )
    data = spec.to_dict()
    if format == "json":
        return json.dumps(data, indent=2, allow_nan=False) + "\n"
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


# ---------------------------------------------------------------------------
# JSON Schema
