"""`keras-seq graph`: a spec written with its model as a graph of blocks."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from builder_ui.cli.common import EXIT_OK, PROG, InputError, load_spec_argument


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", type=Path, metavar="SPEC", help="experiment spec (.yaml or .json)")
    parser.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="write to FILE instead of stdout; refused if FILE exists",
    )
    parser.add_argument("--force", action="store_true", help="replace the file at --out")


def run(args: argparse.Namespace) -> int:
    """Write the spec with its `model:` as the graph of blocks it builds (YAML).

    The same call as the app's "Open as graph" (`builders.graph.preset_as_graph`): a
    `sequence_classifier`, `sequence_regressor`, `vision_transformer` or RNN `seq2seq`
    becomes its layers, one node each. A sweep is left out (its paths name the short
    form's fields), with a note on stderr.
    """
    out = args.out
    if out is not None and out.is_dir():
        raise InputError(f"--out: {str(out)!r} is a directory; name a file")
    if out is not None and out.exists() and not args.force:
        raise InputError(f"--out: {str(out)!r} exists; pass --force to replace it")
    spec = load_spec_argument(args)

    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui import files
    from builder_ui.builders.graph import graph_text

    text = graph_text(spec)
    if spec.sweep is not None:
        print(
            f"{PROG} graph: note: the sweep was left out: its paths name fields of "
            f"{spec.model.type!r}, which the graph does not have",
            file=sys.stderr,
        )
    if out is None:
        sys.stdout.write(text)
    else:
        files.write_text(out, text)
        print(f"wrote {out}", file=sys.stderr)
    return EXIT_OK
