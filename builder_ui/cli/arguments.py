"""The `keras-seq` commands' shared arguments, exit codes and refused input: no heavy import.

`builder_ui.cli` builds its parser from this module and `builder_ui.cli.options`, so
`keras-seq --help`, `keras-seq COMMAND --help` and `--version` load neither pydantic nor YAML
nor Keras; a command's own module (which imports what it runs at its top) loads when that
command runs.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

PROG = "keras-seq"
DEFAULT_RUNS_DIR = "runs"


EXIT_OK = 0
EXIT_RUN_NOT_DONE = 1  # the command worked, a run did not end `done`
EXIT_BAD_INPUT = 2  # like argparse: the input was refused, nothing was done
EXIT_INTERRUPTED = 130


class InputError(Exception):
    """Input the command refuses: printed as one message on stderr, exit code 2."""


def add_runs_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--runs",
        type=Path,
        default=Path(DEFAULT_RUNS_DIR),
        metavar="DIR",
        help=f"the run store directory (default: {DEFAULT_RUNS_DIR})",
    )


def add_set_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override a spec field before validation, e.g. --set train.epochs=2 "
        "(VALUE is read as YAML; repeatable)",
    )


def add_memory_budget_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--memory-budget",
        type=parse_memory_budget,
        metavar="SIZE",
        help="refuse a model whose estimated memory exceeds SIZE (4GB, 512MB, 75%% of the free "
        "memory, or none); default: $KERAS_SEQ_MEMORY_BUDGET, else half the free memory",
    )


def parse_memory_budget(value: str) -> str:
    """`--memory-budget`, checked as `KERAS_SEQ_MEMORY_BUDGET` reads it."""
    # Loaded when the flag is given: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.builders.memory import BUDGET_ENV, BudgetError, memory_budget

    try:
        memory_budget({BUDGET_ENV: value})
    except BudgetError as error:
        raise argparse.ArgumentTypeError(error.problems[0][1]) from None
    return value


def positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {number}")
    return number


def pass_memory_budget(args: argparse.Namespace) -> None:
    """`--memory-budget` into `KERAS_SEQ_MEMORY_BUDGET`, which the checks and workers read."""
    if getattr(args, "memory_budget", None) is not None:
        os.environ["KERAS_SEQ_MEMORY_BUDGET"] = args.memory_budget
