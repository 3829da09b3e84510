"""The arguments of `keras-seq export`."""

from __future__ import annotations

import argparse
from pathlib import Path

from builder_ui.cli.arguments import add_runs_argument, positive_int


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="id of a finished (done) run")
    parser.add_argument(
        "--format",
        required=True,
        choices=("keras", "savedmodel", "python", "onnx", "litert"),
        help="keras: the .keras file; savedmodel: a TensorFlow SavedModel (and a zip); "
        "python: a script that rebuilds the architecture; onnx: an ONNX file for "
        "onnxruntime; litert: a TensorFlow Lite file for the LiteRT interpreter "
        "(an encoder-decoder: its decode loop, ids in and out)",
    )
    decoding = parser.add_argument_group(
        "decoding",
        "how an encoder-decoder's savedmodel, onnx and litert exports decode (fixed in the "
        "file); refused, if given, for another format or a model without a decode loop",
    )
    decoding.add_argument(
        "--decoding",
        choices=("beam", "greedy"),
        help="beam: beam search with GNMT's length penalty (3 to 4 BLEU above greedy in "
        "benchmarks/results/translation.md); greedy: the most probable token at each step "
        "(default: beam)",
    )
    decoding.add_argument(
        "--beam-width",
        type=positive_int,
        metavar="N",
        help=f"beam only: the prefixes kept per source (default: {DEFAULT_BEAM_WIDTH})",
    )
    decoding.add_argument(
        "--length-penalty",
        type=float,
        metavar="A",
        help="beam only: alpha of the length penalty ((5 + |Y|) / 6)^alpha, >= 0; 0 ranks by "
        f"log-probability alone (default: {DEFAULT_LENGTH_PENALTY})",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="PATH",
        help="also copy the export to PATH (a .keras, .py, .onnx or .tflite suffix is added "
        "if missing); refused if something is there",
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        metavar="N",
        help="litert only: the batch size the file takes (default 1; a LiteRT file's batch "
        "size is fixed)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="replace an earlier export at --out (never a directory of other files)",
    )
    add_runs_argument(parser)


# `keras-seq export`'s beam search unless told otherwise: `keras_seq.models.Beam()`'s defaults
# (written here too, so that `--help` need not import Keras).
DEFAULT_BEAM_WIDTH = 4
DEFAULT_LENGTH_PENALTY = 0.6
