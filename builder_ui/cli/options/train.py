"""The arguments of `keras-seq train`."""

from __future__ import annotations

import argparse
from pathlib import Path

from builder_ui.cli.arguments import add_memory_budget_argument, add_runs_argument, add_set_argument


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", type=Path, metavar="SPEC", help="experiment spec (.yaml or .json)")
    add_runs_argument(parser)
    parser.add_argument("--name", help="name of the run (default: the spec's name)")
    add_set_argument(parser)
    add_memory_budget_argument(parser)
