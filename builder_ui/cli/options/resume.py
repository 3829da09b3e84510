"""The arguments of `keras-seq resume`."""

from __future__ import annotations

import argparse

from builder_ui.cli.arguments import add_runs_argument


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run",
        metavar="RUN",
        help="id of an interrupted run, or of a sweep: its interrupted trials are resumed, "
        "its queued ones trained, and a bayes search chooses the trials it has not yet",
    )
    add_runs_argument(parser)
