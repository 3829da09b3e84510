"""What the `keras-seq` commands share when they run: the run store, specs with `--set`, errors.

The commands' modules import this at their top (it loads pydantic, YAML and the run store);
the arguments, exit codes and `InputError`, which `--help` needs too, are
`builder_ui.cli.arguments`'s.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from builder_ui.builders import load_spec
from builder_ui.cli.arguments import EXIT_BAD_INPUT, EXIT_INTERRUPTED, PROG, InputError
from builder_ui.engine.store import DB_NAME, RunNotFoundError, RunStore, StatusError, StoreError
from builder_ui.specs import SpecError, parse_yaml, read_spec_file, upgrade
from builder_ui.specs.documents import MAX_SPEC_DEPTH


def fail(args: argparse.Namespace, message: str) -> int:
    """Print `keras-seq COMMAND: error: MESSAGE` on stderr; return exit code 2."""
    message = str(message).rstrip()
    if "\n" in message:
        message = "\n" + "\n".join(f"  {line}" for line in message.splitlines())
    print(f"{PROG} {args.command}: error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def parse_override(text: str) -> tuple[list[str], object]:
    """`"train.epochs=2"` → `(["train", "epochs"], 2)`; the value is read as YAML."""
    path, sep, value = text.partition("=")
    parts = path.strip().split(".")
    if not sep or not all(part.strip() for part in parts):
        raise InputError(f"--set expects FIELD=VALUE with a dotted field path, got {text!r}")
    if len(parts) > MAX_SPEC_DEPTH:  # nested dicts that deep overflow Python's recursion
        shown = path if len(path) <= 40 else f"{path[:40]}..."
        raise InputError(
            f"--set {shown}: a field path of {len(parts):,} parts, deeper than a spec nests "
            f"(at most {MAX_SPEC_DEPTH})"
        )
    try:
        parsed = parse_yaml(value) if value.strip() else None
    except SpecError as error:
        raise InputError(f"--set {path}: {error}") from None
    return [part.strip() for part in parts], parsed


def apply_overrides(data: object, overrides: Sequence[str]) -> object:
    """Set each `FIELD=VALUE` of `--set` in a spec document (a dict) before it is validated."""
    if not overrides:
        return data
    if not isinstance(data, dict):
        return data  # validation reports what the document is
    for text in overrides:
        parts, value = parse_override(text)
        node = data
        for depth, part in enumerate(parts[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                where = ".".join(parts[: depth + 1])
                raise InputError(f"--set {'.'.join(parts)}: {where} is not a mapping")
            node = child
        node[parts[-1]] = value
    return data


def load_spec_argument(args: argparse.Namespace):
    """The spec file of `args.spec`, with `--set` applied, validated (SpecError if not)."""
    data = read_spec_file(args.spec)
    if isinstance(data, dict):
        data = upgrade(data)  # `--set` paths name fields of the current spec version
    data = apply_overrides(data, getattr(args, "overrides", []))
    return load_spec(data)


def existing_store(args: argparse.Namespace):
    """The run store of `--runs`, which must already exist (commands that only read)."""
    if not (args.runs / DB_NAME).exists():  # a directory there: the store says so
        raise InputError(f"no run store in {str(args.runs)!r} (no {DB_NAME}); pass --runs DIR")
    return open_store(args.runs)


def open_store(directory: Path):
    """`RunStore(directory)`, its refusals (a file, a newer schema) as one message."""
    try:
        return RunStore(directory)
    except (ValueError, RuntimeError) as error:
        raise InputError(str(error)) from None


def print_record(record) -> None:
    """The outcome of a run on stdout: id, status, final metrics, time and device."""
    print(f"run {record.id} ({record.name}): {record.status}")
    width = max((len(name) for name in record.metrics), default=0)
    for name, value in record.metrics.items():
        shown = "n/a" if value is None else f"{value:.6g}"
        print(f"  {name:<{width}}  {shown}")
    details = []
    if record.wall_time is not None:
        details.append(f"{record.wall_time:.1f} s")
    if record.examples_per_sec:
        details.append(f"{record.examples_per_sec:,.0f} examples/s")
    details += [x for x in (record.device, record.precision) if x]
    if record.params is not None:
        details.append(f"{record.params:,} parameters")
    if details:
        print(f"  ({', '.join(details)})")
    if record.error:
        print(f"  {record.error}")


def guarded(run: Callable[[argparse.Namespace], int]):
    """Turn refused input (bad spec, unknown run, ...) into one message and exit code 2."""

    @functools.wraps(run)
    def wrapper(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        try:
            return run(args)
        except (InputError, SpecError, RunNotFoundError, StatusError, StoreError) as error:
            return fail(args, str(error))
        except OSError as error:  # an unreadable or unwritable path given on the command line
            return fail(args, f"{error.strerror or error}: {error.filename or ''}".rstrip(": "))
        except KeyboardInterrupt:
            print(f"\n{PROG} {args.command}: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED

    return wrapper


def table_text(table, legend: str = "") -> str:
    # pandas loads when a table is made, not on import.
    import pandas as pd

    with pd.option_context(
        "display.max_columns", None, "display.width", 250, "display.max_colwidth", 48
    ):
        text = table.to_string(index=False, float_format=lambda value: f"{value:.4g}")
    return f"{text}\n\ncolumns: {legend}" if legend else text
