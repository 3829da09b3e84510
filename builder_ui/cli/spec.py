"""`keras-seq schema` and `keras-seq validate`: the spec language's JSON Schema, and a spec
checked without training."""

from __future__ import annotations

import argparse
import json
import sys

from builder_ui import files
from builder_ui.builders import json_schema, memory, sweeps
from builder_ui.builders.memory import format_bytes
from builder_ui.cli.arguments import EXIT_OK, pass_memory_budget
from builder_ui.cli.common import guarded, load_spec_argument
from builder_ui.engine.executors import trial_estimates
from builder_ui.specs import shown


@guarded
def run_schema(args: argparse.Namespace) -> int:
    """Print the JSON Schema of an experiment spec (every registered task and model type)."""

    text = json.dumps(json_schema(), indent=2) + "\n"
    if args.out is None:
        sys.stdout.write(text)
    else:
        files.write_text(args.out, text)
        print(f"wrote {args.out}", file=sys.stderr)
    return EXIT_OK


@guarded
def run_validate(args: argparse.Namespace) -> int:
    """Run every check `train` and `sweep` run before training (data included); train nothing.

    The checks include what `model.fit` would refuse on one batch (for a graph, each block's
    call as training runs it and the Output against the targets, symbolically) and the
    memory estimate against the budget. A valid spec is printed with each trial's parameter
    count and memory estimate, and the budget they are within.
    """
    pass_memory_budget(args)
    spec = load_spec_argument(args)

    trials = sweeps.trials(spec)
    estimates = trial_estimates(trials)
    what = f"model {spec.model.type!r} on task {spec.task.type!r}"
    if spec.sweep is not None and spec.sweep.method == "bayes":
        what += f", {spec.sweep.num_trials} trials chosen from {sweeps.describe_space(spec)}"
    elif spec.sweep is not None:
        what += f", {len(trials)} trials"
    print(f"{args.spec}: valid ({what})")
    budget = memory.memory_budget()
    if spec.sweep is None:
        print(f"  {_estimate_line(estimates[0], spec.model.type, detailed=True)}")
    else:
        for trial, found in zip(trials, estimates, strict=True):
            label = ", ".join(f"{key}={shown(value)}" for key, value in trial.values.items())
            print(f"  trial {trial.index} ({label}): {_estimate_line(found, spec.model.type)}")
    if any(found is not None for found in estimates):
        within = "within " if budget.bytes is not None else ""
        print(f"  {within}{budget.describe()}")
    return EXIT_OK


def _estimate_line(found, model_type: str, detailed: bool = False) -> str:
    """`1,234 parameters; training needs about 45.1 kB (...)`, or why there is no estimate."""
    if found is None:
        return f"parameters and memory not estimated (model type {model_type!r} gives no estimate)"

    needs = found.describe() if detailed else f"about {format_bytes(found.total_bytes)}"
    return f"{found.parameters:,} parameters; training needs {needs}"
