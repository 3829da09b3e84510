"""How long `keras-seq` takes to answer before it does any work: this tree against another.

The command line is the entry point that must start fast: `keras-seq --help` and each
command's `--help` load no Keras, and `keras-seq validate` refuses a spec file that is not
there before it loads anything heavy. Four cases, each a fresh interpreter, as a user types
them:

- `help`: `keras-seq --help`;
- `validate_help`: `keras-seq validate --help`;
- `validate_missing`: `keras-seq validate missing.yaml` (refused: no such file);
- `validate_spec`: `keras-seq validate examples/specs/gru.yaml` (builds the model, so
  TensorFlow loads: the cost the other cases must not pay).

Each case runs from this tree and from `--reference REV` (default: the commit before the
Keras boundary moved between modules, 8867d6c), checked out into a temporary git worktree;
both run with this environment's interpreter, the tree first on `sys.path` and the
editable install's finder removed, so only the code differs. The cases alternate in a new
random order each round; the table gives the median seconds per start and the ratio of
this tree to the reference.

Run from the repository root:

    python benchmarks/cli_start.py             # 7 rounds, about 2 minutes
    python benchmarks/cli_start.py --quick     # smoke run; not a measurement

Writes benchmarks/results/cli_start.json (every sample and the environment) and
benchmarks/results/cli_start.md (the table).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import _timing

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = "8867d6c"
CASES = {
    "help": ["--help"],
    "validate_help": ["validate", "--help"],
    "validate_missing": ["validate", "missing.yaml"],
    "validate_spec": ["validate", "examples/specs/gru.yaml"],
}
# The tree given first on sys.path, the editable install's finder taken out (it would load
# this checkout's builder_ui whatever the path says), then `keras-seq ARGS`.
RUN = (
    "import sys; sys.meta_path = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]; "
    "sys.path.insert(0, sys.argv[1]); import builder_ui; "
    "assert builder_ui.__file__.startswith(sys.argv[1]), builder_ui.__file__; "
    "from builder_ui.cli import main; sys.exit(main(sys.argv[2:]))"
)


@dataclasses.dataclass(frozen=True)
class Settings:
    rounds: int = 7
    seed: int = 0
    quick: bool = False


@contextlib.contextmanager
def worktree(revision: str) -> Iterator[Path]:
    """`revision` checked out in a temporary git worktree, removed on exit."""
    directory = Path(tempfile.mkdtemp(prefix="cli-start-"))
    subprocess.run(
        ["git", "worktree", "add", "--detach", "-q", str(directory), revision], cwd=ROOT, check=True
    )
    try:
        yield directory
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", str(directory)], cwd=ROOT)


def start(tree: Path, arguments: list[str]):
    def step() -> None:
        done = subprocess.run(
            [sys.executable, "-c", RUN, str(tree), *arguments],
            cwd=tree,
            capture_output=True,
            text=True,
            timeout=300,  # a hang guard
        )
        if "AssertionError" in done.stderr:
            raise RuntimeError(f"{tree}: not the tree's builder_ui: {done.stderr[-300:]}")

    return step


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", default=REFERENCE, help="the git revision compared")
    parser.add_argument("--quick", action="store_true", help=_timing.QUICK_HELP)
    parser.add_argument("--output-dir", default=_timing.RESULTS_DIR, type=Path)
    args = parser.parse_args(argv)
    settings = Settings(rounds=2 if args.quick else Settings.rounds, quick=args.quick)
    with worktree(args.reference) as reference:
        steps = {}
        for name, arguments in CASES.items():
            steps[f"{name}/reference"] = start(reference, arguments)
            steps[f"{name}/this"] = start(ROOT, arguments)
        timing = _timing.time_rounds(steps, settings, 1, print)
    environment = _timing.environment()
    environment["load_average_timing"] = {
        "start": timing.load_before,
        "end": _timing.load_average(),
    }
    results = []
    rows = []
    for name in CASES:
        before = _timing.summarize(timing.wall[f"{name}/reference"])
        after = _timing.summarize(timing.wall[f"{name}/this"])
        ratio = after["median"] / before["median"]
        results.append({"case": name, "reference": before, "this": after, "ratio": ratio})
        rows.append([name, f"{before['median']:.3f}", f"{after['median']:.3f}", f"{ratio:.2f}"])
    record = {
        "environment": environment,
        "settings": dataclasses.asdict(settings) | {"reference": args.reference},
        "samples_s": timing.wall,
        "results": results,
    }
    lines = _timing.markdown_preamble("`keras-seq` start-up: this tree against a reference", record)
    lines += [
        _timing.machine_line(environment),
        "",
        _timing.markdown_table(
            ["case", f"{args.reference} (s)", "this tree (s)", "this / reference"], rows
        ),
    ]
    text = _timing.markdown_document(
        lines,
        [
            f"Median wall seconds of {settings.rounds} fresh interpreters per case, the cases "
            "interleaved in a random order each round (benchmarks/cli_start.py)."
        ],
        [],
    )
    json_path, md_path = _timing.write_results("cli_start", record, text, args.output_dir)
    print(text)
    print(f"wrote {json_path} and {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
