"""The arguments of `keras-seq spec` (`schema` and `validate`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from builder_ui.cli.arguments import add_memory_budget_argument, add_set_argument


def configure_schema(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, metavar="FILE", help="write to FILE instead of stdout")


def configure_validate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", type=Path, metavar="SPEC", help="experiment spec (.yaml or .json)")
    add_set_argument(parser)
    add_memory_budget_argument(parser)
