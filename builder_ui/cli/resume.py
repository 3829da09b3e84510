"""`keras-seq resume`: continue an interrupted run or sweep from its checkpoint."""

from __future__ import annotations

import argparse
import sys

from builder_ui import engine
from builder_ui.builders import load_spec
from builder_ui.cli.arguments import EXIT_OK, EXIT_RUN_NOT_DONE, PROG, InputError
from builder_ui.cli.common import existing_store, guarded, print_record, table_text
from builder_ui.engine import devices, executors
from builder_ui.engine.artifacts import CHECKPOINT_LOG, ArtifactError, confine
from builder_ui.engine.progress import TerminalProgress
from builder_ui.results import compare
from builder_ui.specs import SpecError


def _checkpoint_log(store, run_id: str) -> str:
    """What the engine noted about the run's checkpoint (`checkpoint.log`), or "".

    A log that leads out of the run's folder (a symbolic link) is refused, not printed.
    """

    try:
        log = confine(store, run_id, f"{run_id}/{CHECKPOINT_LOG}", field=CHECKPOINT_LOG)
    except ArtifactError as error:
        raise InputError(str(error)) from None
    return log.read_text(encoding="utf-8") if log.exists() else ""


def _print_checkpoint_notes(store, run_id: str, seen: str) -> None:
    """Print on stderr the checkpoint notes written since the log read `seen`."""
    for line in _checkpoint_log(store, run_id)[len(seen) :].splitlines():
        print(f"{PROG} resume: warning: {line}", file=sys.stderr)


def _resume_sweep(args: argparse.Namespace, store) -> int:
    """`keras-seq resume SWEEP_ID`: run what is left of the sweep; print its trials' table."""

    trials = [record.id for record in store.list_runs(sweep_id=args.run)]
    seen = {run_id: _checkpoint_log(store, run_id) for run_id in trials}
    try:
        result = executors.resume_sweep(store, args.run, callbacks=[TerminalProgress()])
    except ValueError as error:
        raise InputError(str(error)) from None
    finally:
        for run_id in trials:
            _print_checkpoint_notes(store, run_id, seen[run_id])
    table = compare.compare(store, result.run_ids)
    print(f"sweep {result.sweep_id}: {len(result.records)} runs in {args.runs}")
    print(table_text(table))
    return EXIT_OK if result.all_done else EXIT_RUN_NOT_DONE


@guarded
def run(args: argparse.Namespace) -> int:
    """Continue an interrupted run from its last finished epoch, or what is left of a sweep."""

    with existing_store(args) as store:
        if not store.exists(args.run) and store.list_runs(sweep_id=args.run):
            return _resume_sweep(args, store)
        seen = _checkpoint_log(store, args.run) if store.exists(args.run) else ""
        if store.exists(args.run):
            _select_stored_backend(store.get(args.run, history=False).spec)
        try:
            record = engine.run(
                None, store=store, run_id=args.run, resume=True, callbacks=[TerminalProgress()]
            )
        except SpecError:
            raise
        except ValueError as error:
            raise InputError(str(error)) from None
        finally:
            if store.exists(args.run):
                _print_checkpoint_notes(store, args.run, seen)
    print_record(record)
    return EXIT_OK if record.status == "done" else EXIT_RUN_NOT_DONE


def _select_stored_backend(document) -> None:
    """Start Keras on a stored run's `train.backend` (an unreadable spec: `engine.run` says)."""

    try:
        devices.select_backend(load_spec(document).train)
    except SpecError:
        pass
