"""`keras-seq sweep`: run a spec's sweep, here or on a Ray cluster."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from builder_ui.cli.common import (
    EXIT_OK,
    EXIT_RUN_NOT_DONE,
    PROG,
    InputError,
    add_memory_budget_argument,
    add_runs_argument,
    add_set_argument,
    load_spec_argument,
    open_store,
    pass_memory_budget,
    positive_int,
    table_text,
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


def run(args: argparse.Namespace) -> int:
    """Run every trial; print a table of the trials (what differs, their metrics)."""
    if args.executor != "ray" and any(
        value is not None for value in (args.address, args.num_cpus, args.storage)
    ):
        raise InputError("--address, --num-cpus and --storage are for --executor ray")
    pass_memory_budget(args)
    spec = load_spec_argument(args)

    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.engine import executors
    from builder_ui.engine.progress import TerminalProgress
    from builder_ui.engine.transfer import StorageError
    from builder_ui.results import compare

    with open_store(args.runs) as store:
        earlier = {record.sweep_id for record in store.list_runs()}
        try:
            result = executors.run_sweep(
                spec,
                store=store,
                executor=args.executor,
                address=args.address,
                num_cpus=args.num_cpus,
                callbacks=[TerminalProgress()],
                storage=args.storage,
            )
        except executors.ExecutorError as error:
            raise InputError(str(error)) from None
        except StorageError as error:
            raise InputError(f"--storage {args.storage}: {error}") from None
        except KeyboardInterrupt:
            for sweep_id in {record.sweep_id for record in store.list_runs()} - earlier:
                print(
                    f"{PROG} sweep: sweep {sweep_id} stopped; run what is left of it with "
                    f"`{PROG} resume {sweep_id} --runs {args.runs}`",
                    file=sys.stderr,
                )
            raise
        table = compare.compare(store, result.run_ids)
    print(f"sweep {result.sweep_id}: {len(result.records)} runs in {args.runs}")
    print(table_text(table))
    # A trial the sweep's scheduler pruned ended as asked: not a failure of the sweep.
    finished = all(record.status in ("done", "pruned") for record in result.records)
    return EXIT_OK if finished else EXIT_RUN_NOT_DONE
