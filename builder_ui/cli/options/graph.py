"""The arguments of `keras-seq graph`."""

from __future__ import annotations

import argparse
from pathlib import Path


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", type=Path, metavar="SPEC", help="experiment spec (.yaml or .json)")
    parser.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="write to FILE instead of stdout; refused if FILE exists",
    )
    parser.add_argument("--force", action="store_true", help="replace the file at --out")
