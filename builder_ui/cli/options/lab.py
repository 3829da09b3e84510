"""The arguments of `keras-seq lab`."""

from __future__ import annotations

import argparse
from pathlib import Path

from builder_ui.cli.arguments import add_runs_argument
from builder_ui.lab.catalog import DEFAULT_OUT_DIR


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of `keras-seq lab`."""
    parser.description = (
        "Reproduce each structural limit of sequence models and the design that removed it "
        "(vanishing gradients, long time lags, the fixed-vector bottleneck, sequential "
        "computation, Transformer choices, visual attention, the ConvLSTM) and write a report "
        "with figures, measured numbers and the papers' claims. Every trained model is a run "
        "in the run store."
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small sizes: all seven experiments in minutes, to check the lab works",
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="N",
        help="run only experiment N (1-7); repeat it or give a comma list, e.g. --only 1,3",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(DEFAULT_OUT_DIR),
        metavar="DIR",
        help=f"report directory (default: {DEFAULT_OUT_DIR})",
    )
    add_runs_argument(parser)
