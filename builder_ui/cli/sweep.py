"""`keras-seq sweep`: run a spec's sweep, here or on a Ray cluster."""

from __future__ import annotations

import argparse
import sys

from builder_ui.cli.arguments import (
    EXIT_OK,
    EXIT_RUN_NOT_DONE,
    PROG,
    InputError,
    pass_memory_budget,
)
from builder_ui.cli.common import guarded, load_spec_argument, open_store, table_text
from builder_ui.engine import executors
from builder_ui.engine.progress import TerminalProgress
from builder_ui.engine.transfer import StorageError
from builder_ui.results import compare


@guarded
def run(args: argparse.Namespace) -> int:
    """Run every trial; print a table of the trials (what differs, their metrics)."""
    if args.executor != "ray" and any(
        value is not None for value in (args.address, args.num_cpus, args.storage)
    ):
        raise InputError("--address, --num-cpus and --storage are for --executor ray")
    pass_memory_budget(args)
    spec = load_spec_argument(args)

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
