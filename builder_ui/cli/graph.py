"""`keras-seq graph`: a spec written with its model as a graph of blocks."""

from __future__ import annotations

import argparse
import sys

from builder_ui import files
from builder_ui.builders.graph_model import graph_text
from builder_ui.cli.arguments import EXIT_OK, PROG, InputError
from builder_ui.cli.common import guarded, load_spec_argument


@guarded
def run(args: argparse.Namespace) -> int:
    """Write the spec with its `model:` as the graph of blocks it builds (YAML).

    The same call as the app's "Open as graph" (`builders.graph_model.preset_as_graph`): a
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
