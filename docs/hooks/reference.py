"""MkDocs hook: the parts of the site written from the code at build time, so they cannot drift.

- `<!-- spec-reference -->` in a page becomes the spec reference: every built-in task and
  model type, and the envelope (`train`, `sweep`), each field with its type, default, limits
  and help, read from the JSON Schema of the pydantic models (`builder_ui.specs.schema`).
- `<!-- cli-reference -->` becomes the `--help` of every `keras-seq` subcommand, from
  `builder_ui.cli.build_parser()`.
- Doctest examples in docstrings (`>>> ...` lines, not indented) are rendered as Python
  code blocks instead of nested block quotes (a Markdown preprocessor that mkdocstrings
  also uses, added before it reads the extensions).

Importing `builder_ui.builders` and `builder_ui.cli` loads pydantic, not Keras: the build
stays fast and needs no backend. Plugins installed in the environment are left out; the
reference shows what keras_seq itself provides.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from markdown import Extension
from markdown.preprocessors import Preprocessor
from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[2]
SPEC_MARKER = "<!-- spec-reference -->"
CLI_MARKER = "<!-- cli-reference -->"
LIMIT_WORDS = {
    "minimum": "≥ {}",
    "exclusiveMinimum": "> {}",
    "maximum": "≤ {}",
    "exclusiveMaximum": "< {}",
    "minLength": "at least {} characters",
    "maxLength": "at most {} characters",
    "pattern": "matches `{}`",
    "minItems": "at least {} items",
    "maxItems": "at most {} items",
    "minProperties": "at least {} entries",
}

# The envelope's fields have no docstring of their own (the schema's document model is made
# by `builder_ui.specs.schema.json_schema`); their help is written here.
DOCUMENT_HELP = {
    "name": "The run's name, shown in `keras-seq runs` and the app.",
    "task": "What to learn: `type` picks one of the task types below.",
    "model": "What learns it: `type` picks one of the model types below.",
    "train": "How to train; every field has a default.",
    "sweep": "A family of variants of this spec, one run per trial.",
}


# --- Doctests in docstrings ------------------------------------------------------------------


class _DoctestBlocks(Preprocessor):
    """Fence each run of `>>>` lines (and the output after them) as a `pycon` code block."""

    def run(self, lines: list[str]) -> list[str]:
        out: list[str] = []
        in_fence = False
        in_doctest = False
        for line in lines:
            if line.lstrip().startswith(("```", "~~~")):
                in_fence = not in_fence
            if not in_fence and not in_doctest and line.startswith(">>>"):
                out += ["", "```pycon"]
                in_doctest = True
            elif in_doctest and not line.strip():
                out += ["```", ""]
                in_doctest = False
            out.append(line)
        if in_doctest:
            out += ["```", ""]
        return out


class _ArgumentLists(Preprocessor):
    """Make a text that is only `name: description` entries a list, one item per entry.

    Sections griffe does not know, such as the layers' `Call arguments:`, reach Markdown as
    their raw text; without this, their entries run together into one paragraph.
    """

    ENTRY = re.compile(r"^(\w+(?:, \w+)*): (.*)$")

    def run(self, lines: list[str]) -> list[str]:
        filled = [line for line in lines if line.strip()]
        if not filled or not self.ENTRY.match(filled[0]):
            return lines
        if not all(self.ENTRY.match(line) or line.startswith("  ") for line in filled):
            return lines
        items: list[str] = []
        for line in filled:
            entry = self.ENTRY.match(line)
            if entry:
                items.append(f"- `{entry.group(1)}`: {entry.group(2)}")
            else:
                items[-1] += " " + line.strip()
        return items


class DoctestExtension(Extension):
    """Doctests as code blocks and argument lists as lists (before fenced code, priority 25)."""

    def extendMarkdown(self, md: Any) -> None:  # Markdown's name for the hook
        md.preprocessors.register(_DoctestBlocks(md), "keras_seq_doctests", 27)
        md.preprocessors.register(_ArgumentLists(md), "keras_seq_argument_lists", 28)


@event_priority(100)  # before mkdocstrings reads the Markdown extensions
def on_config(config: Any) -> Any:
    """Add the doctest extension and put the repository on `sys.path` for the references."""
    config.markdown_extensions.append(DoctestExtension())
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    return config


# --- The spec reference ----------------------------------------------------------------------


def _docstring_args(description: str) -> dict[str, str]:
    """The `Args:` entries of a model's docstring, by field name (`a, b: text` gives both)."""
    args: dict[str, str] = {}
    match = re.search(r"^Args:\n((?:    .*\n?|\n)*)", description, flags=re.M)
    if not match:
        return args
    names: list[str] = []
    for line in match.group(1).splitlines():
        entry = re.match(r"^    ([\w, ]+):\s*(.*)$", line)
        if entry and not line.startswith("     "):
            names = [name.strip() for name in entry.group(1).split(",")]
            for name in names:
                args[name] = entry.group(2)
        elif line.strip():
            for name in names:
                args[name] += " " + line.strip()
    return args


def _summary(description: str) -> str:
    """A model docstring without its `Args:` section."""
    return re.split(r"^Args:", description, flags=re.M)[0].strip()


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _type(prop: dict[str, Any]) -> str:
    """A field's type in words: `integer`, one of the literals, a nested section, or null."""
    if "const" in prop:
        return f"`{prop['const']}`"
    if "enum" in prop:
        return "one of " + ", ".join(f"`{value}`" for value in prop["enum"])
    if "$ref" in prop:
        name = _ref_name(prop["$ref"])
        return f"[{name}](#{name.lower()})"
    for key in ("anyOf", "oneOf"):
        if key in prop:
            return " or ".join(_type(option) for option in prop[key])
    kind = prop.get("type", "any")
    if kind == "array":
        return f"list of {_type(prop.get('items', {}))}"
    if kind == "object" and "additionalProperties" in prop:
        return f"mapping of field path to {_type(prop['additionalProperties'])}"
    return "any" if kind == "any" or not prop else str(kind)


def _limits(prop: dict[str, Any]) -> str:
    """The bounds of a field (from every option of a union), e.g. `≥ 1, ≤ 64`."""
    found = [template.format(prop[key]) for key, template in LIMIT_WORDS.items() if key in prop]
    for key in ("anyOf", "oneOf", "items"):
        options = prop.get(key, [])
        for option in options if isinstance(options, list) else [options]:
            limit = _limits(option)
            if limit:
                found.append(limit)
    return ", ".join(found)


def _default(name: str, prop: dict[str, Any], required: set[str]) -> str:
    if name in required:
        return "required"
    if "default" not in prop:
        return "see its section"
    value = prop["default"]
    if value is None:
        return "`null`"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    return f"`{value}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _field_table(schema: dict[str, Any]) -> list[str]:
    """A Markdown table of a model's fields: name, type, default, limits and help."""
    help_by_name = _docstring_args(schema.get("description", ""))
    required = set(schema.get("required", ()))
    rows = ["| Field | Type | Default | Limits | Help |", "|---|---|---|---|---|"]
    for name, prop in schema.get("properties", {}).items():
        help_text = prop.get("description") or help_by_name.get(name, "")
        if name == "type" and "const" in prop:
            help_text = help_text or "Picks this type."
        rows.append(
            "| "
            + " | ".join(
                _cell(part)
                for part in (
                    f"`{name}`",
                    _type(prop),
                    _default(name, prop, required),
                    _limits(prop),
                    help_text,
                )
            )
            + " |"
        )
    return rows


def _nested_refs(schema: dict[str, Any]) -> list[str]:
    """The `$defs` names a model's fields refer to, in field order."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "$ref" in node:
                name = _ref_name(node["$ref"])
                if name not in found:
                    found.append(name)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema.get("properties", {}))
    return found


def _section(
    title: str, name: str, defs: dict[str, Any], done: set[str], level: int = 3
) -> list[str]:
    """A heading for model `name` with its summary and fields, then its nested models."""
    schema = defs[name]
    done.add(name)
    lines = [f"{'#' * level} {title} {{ #{name.lower()} }}", ""]
    summary = _summary(schema.get("description", ""))
    if summary:
        lines += [summary, ""]
    lines += [*_field_table(schema), ""]
    for nested in _nested_refs(schema):
        if nested not in done:
            lines += _section(nested, nested, defs, done, level + 1)
    return lines


def spec_reference() -> str:
    """The spec reference as Markdown, from the JSON Schema of the built-in types."""
    # Reads the registry: pydantic models only, no Keras.
    from builder_ui import builders
    from builder_ui.specs import schema as spec_schema

    tasks = {
        name: info
        for name, info in builders.describe_tasks().items()
        if info["module"].startswith("builder_ui.")
    }
    models = {
        name: info
        for name, info in builders.describe_types().items()
        if info["module"].startswith("builder_ui.")
    }
    schema = spec_schema.json_schema(
        [builders.params_model("task", name) for name in tasks],
        [builders.params_model("model", name) for name in models],
    )
    defs = schema["$defs"]
    done: set[str] = set()
    document = {**schema, "properties": dict(schema["properties"])}
    document["properties"]["task"] = {"type": "a [task type](#task-types)"}
    document["properties"]["model"] = {"type": "a [model type](#model-types)"}
    for name, text in DOCUMENT_HELP.items():
        document["properties"][name] = {"description": text, **document["properties"][name]}
    lines = ["## The document", "", *_field_table(document), ""]
    lines += ["## `train` and `sweep`", ""]
    for name in ("TrainSpec", "SweepSpec"):
        lines += _section(name, name, defs, done)
    lines += ["## Task types", ""]
    lines += ["| `task.type` | What it is |", "|---|---|"]
    lines += [f"| [`{n}`](#task-{n}) | {_cell(i['description'])} |" for n, i in tasks.items()]
    lines.append("")
    for name, info in tasks.items():
        ref = builders.params_model("task", name).__name__
        lines += [f"### `task.type: {name}` {{ #task-{name} }}", "", info["description"], ""]
        lines += _section_body(ref, defs, done)
    lines += ["## Model types", ""]
    lines += ["| `model.type` | Reads | Predicts | What it is |", "|---|---|---|---|"]
    for name, info in models.items():
        reads = ", ".join(info["input_kinds"])
        predicts = ", ".join(info["target_kinds"])
        lines.append(
            f"| [`{name}`](#model-{name}) | {reads} | {predicts} | {info['description']} |"
        )
    lines.append("")
    for name, info in models.items():
        ref = builders.params_model("model", name).__name__
        kinds = (
            f"Reads {', '.join(info['input_kinds'])} inputs; "
            f"predicts {', '.join(info['target_kinds'])} targets."
        )
        lines += [f"### `model.type: {name}` {{ #model-{name} }}", "", info["description"], ""]
        lines += [kinds, ""]
        lines += _section_body(ref, defs, done)
    return "\n".join(lines)


def _section_body(name: str, defs: dict[str, Any], done: set[str]) -> list[str]:
    """A type's summary, field table and nested sections (its heading is the caller's)."""
    schema = defs[name]
    done.add(name)
    lines: list[str] = []
    summary = _summary(schema.get("description", ""))
    if summary:
        lines += [summary, ""]
    lines += [*_field_table(schema), ""]
    for nested in _nested_refs(schema):
        if nested not in done:
            lines += _section(nested, nested, defs, done, 4)
    return lines


# --- The CLI reference -----------------------------------------------------------------------


def cli_reference() -> str:
    """Every `keras-seq` subcommand's `--help`, as `text` blocks."""
    # argparse only: the CLI imports its heavy libraries inside the commands.
    from builder_ui import cli

    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal; fix the width
    parser, subparsers = cli.build_parser()
    lines = ["## `keras-seq`", "", "```text", parser.format_help().rstrip(), "```", ""]
    for name, sub in subparsers.items():
        lines += [f"## `keras-seq {name}`", "", "```text", sub.format_help().rstrip(), "```", ""]
    return "\n".join(lines)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Write the generated references where their markers stand."""
    if SPEC_MARKER in markdown:
        markdown = markdown.replace(SPEC_MARKER, spec_reference())
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    return markdown
