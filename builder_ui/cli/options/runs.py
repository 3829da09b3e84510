"""The arguments of `keras-seq runs`."""

from __future__ import annotations

import argparse
from pathlib import Path

from builder_ui.cli.arguments import add_runs_argument
from builder_ui.engine.records import STATUSES

# The flags of `keras-seq runs` that change one run (at most one per call): flag -> its
# argparse `nargs`, metavar and help. `--tag` is not one of them: it filters the list.
RUN_EDITS = {
    "rename": (2, ("RUN", "NAME"), "give run RUN the name NAME"),
    "add_tag": ("+", ("RUN", "TAG"), "tag run RUN with each TAG (letters, digits, _ . : + / -)"),
    "remove_tag": ("+", ("RUN", "TAG"), "take each TAG off run RUN"),
    "note": (2, ("RUN", "TEXT"), 'set the note of run RUN to TEXT ("" clears it)'),
    "star": (None, "RUN", "star run RUN"),
    "unstar": (None, "RUN", "unstar run RUN"),
    "archive": (None, "RUN", "archive run RUN: hidden from lists unless --archived"),
    "unarchive": (None, "RUN", "bring archived run RUN back into lists"),
    "delete": (None, "RUN", "delete run RUN, its epochs and its folder (asks, or --yes)"),
}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "List or compare the runs of a store (archived runs only with --archived), or change "
        "one run: --rename, --add-tag, --remove-tag, --note, --star, --unstar, --archive, "
        "--unarchive or --delete (one per call). `--tag TAG` filters the list; use "
        "`--add-tag RUN TAG` to tag a run."
    )
    add_runs_argument(parser)
    parser.add_argument("--status", choices=STATUSES, help="only runs with this status")
    parser.add_argument("--sweep", metavar="ID", help="only the runs of this sweep")
    parser.add_argument("--tag", metavar="TAG", help="only the runs tagged TAG")
    parser.add_argument(
        "--archived", action="store_true", help="also list archived runs (hidden by default)"
    )
    parser.add_argument(
        "--compare",
        nargs="+",
        metavar="ID",
        help="compare these runs: the spec fields that differ, metrics, time, device",
    )
    parser.add_argument(
        "--columns",
        metavar="COLS",
        help="the columns to print, comma-separated (full paths such as model.encoder.units, "
        "or `all`); default: those the app's Compare tab shows, the ones that differ",
    )
    parser.add_argument(
        "--csv", type=Path, metavar="FILE", help="also write the table as CSV (every column)"
    )
    parser.add_argument(
        "--report",
        type=Path,
        metavar="FILE",
        help="also write an HTML report of these runs: the table, curves, parallel coordinates "
        "and, with --sweep, importance; one file that opens with no server or network",
    )
    parser.add_argument(
        "--importance",
        action="store_true",
        help="with --sweep: each swept parameter's share of the variance of the sweep's "
        "metric over its finished trials (fANOVA, through Optuna)",
    )
    edits = parser.add_mutually_exclusive_group()
    for name, (nargs, metavar, help_text) in RUN_EDITS.items():
        flag = "--" + name.replace("_", "-")
        edits.add_argument(flag, dest=name, nargs=nargs, metavar=metavar, help=help_text)
    parser.add_argument(
        "--yes", action="store_true", help="with --delete: delete without asking first"
    )
