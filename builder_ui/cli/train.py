"""`keras-seq train`: train one spec into the run store."""

from __future__ import annotations

import argparse
import sys

from builder_ui import engine
from builder_ui.builders import load_spec, sweeps
from builder_ui.cli.arguments import (
    EXIT_OK,
    EXIT_RUN_NOT_DONE,
    PROG,
    InputError,
    pass_memory_budget,
)
from builder_ui.cli.common import guarded, load_spec_argument, open_store, print_record
from builder_ui.engine import devices
from builder_ui.engine.progress import TerminalProgress


@guarded
def run(args: argparse.Namespace) -> int:
    """Train one spec with a progress bar on stderr; print the run and its metrics on stdout."""

    pass_memory_budget(args)
    spec = load_spec_argument(args)
    if spec.sweep is not None:
        raise InputError(
            f"{args.spec} has a `sweep:` section ({_trial_count(spec)} trials); run it with "
            f"`{PROG} sweep {args.spec}`"
        )
    if args.name is not None:
        spec = load_spec({**spec.to_dict(), "name": args.name})

    devices.select_backend(spec.train)  # before Keras loads: its backend is fixed then
    with open_store(args.runs) as store:
        try:
            record = engine.run(spec, store=store, callbacks=[TerminalProgress()])
        except KeyboardInterrupt:
            _print_resume_hint(store)
            raise
    print_record(record)
    return EXIT_OK if record.status == "done" else EXIT_RUN_NOT_DONE


def _print_resume_hint(store) -> None:
    for record in store.list_runs(status="interrupted")[-1:]:
        print(
            f"run {record.id} is interrupted; continue it with `{PROG} resume {record.id} "
            f"--runs {store.directory}`",
            file=sys.stderr,
        )


def _trial_count(spec) -> int:
    if spec.sweep is None:
        return 1
    return spec.sweep.num_trials if spec.sweep.method != "grid" else sweeps.grid_size(spec)
