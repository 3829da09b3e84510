"""The arguments of `keras-seq sweep`."""

from __future__ import annotations

import argparse
from pathlib import Path

from builder_ui.cli.arguments import (
    add_memory_budget_argument,
    add_runs_argument,
    add_set_argument,
    positive_int,
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", type=Path, metavar="SPEC", help="spec with a `sweep:` section")
    parser.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local: one trial after another (default); ray: one Ray task per trial",
    )
    parser.add_argument(
        "--address", metavar="ADDR", help="ray: join the Ray cluster at ADDR (e.g. auto)"
    )
    parser.add_argument(
        "--num-cpus",
        type=positive_int,
        metavar="N",
        help="ray: CPUs of the local Ray instance it starts (default: all)",
    )
    parser.add_argument(
        "--storage",
        metavar="URI",
        help="ray: send the trials' checkpoints and files through this pyarrow.fs URI "
        "(s3://bucket/prefix, gs://..., file:///shared/dir) instead of Ray's object store",
    )
    add_runs_argument(parser)
    add_set_argument(parser)
    add_memory_budget_argument(parser)
