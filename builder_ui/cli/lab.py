"""`keras-seq lab`: run the bottleneck lab and write its report.

    keras-seq lab [--quick] [--only N ...] [--out DIR] [--runs DIR]

`builder_ui.cli.options.lab.configure(parser)` declares the arguments (the run
store's as every command declares it, `arguments.add_runs_argument`) and
`run(args, parser)` runs the lab; `builder_ui.cli` registers them as a `Command`.
Exit codes: 0 when every experiment ran and the report was written, 1 when an experiment
failed (the others still ran and the report says which), 2 for refused
arguments, 130 when interrupted (the report holds what finished).
"""

from __future__ import annotations

import argparse
import sys

from builder_ui.cli.arguments import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, EXIT_RUN_NOT_DONE
from builder_ui.lab.suite import parse_numbers, run_lab


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Run the experiments `args` chose and write the report; return the exit code."""

    try:
        numbers = parse_numbers(args.only)
    except ValueError as error:
        parser.error(str(error))
    for path, flag in ((args.out, "--out"), (args.runs, "--runs")):
        if path.exists() and not path.is_dir():
            parser.error(f"{flag} {str(path)!r} is a file; expected a directory")

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    mode = "quick" if args.quick else "full"
    log(f"keras-seq lab: experiments {', '.join(map(str, numbers))} ({mode} sizes)")
    try:
        lab = run_lab(numbers, quick=args.quick, out_dir=args.out, runs_dir=args.runs, log=log)
    except KeyboardInterrupt:
        print(
            f"Interrupted; the report in {args.out} holds the experiments that finished.",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    except ValueError as error:  # a store or results file that cannot be used
        print(f"error: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for result in lab.results:
        print(f"{result.number}. {result.title}: {result.verdict}")
    minutes, seconds = divmod(round(lab.seconds), 60)
    print(f"Report: {lab.report_path} ({minutes} min {seconds:02d} s; runs in {args.runs})")
    return EXIT_OK if lab.ok else EXIT_RUN_NOT_DONE
