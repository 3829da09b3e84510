"""`keras-seq export`: write a recorded run's model as a file that loads elsewhere."""

from __future__ import annotations

import argparse
from pathlib import Path

from builder_ui.cli.common import (
    EXIT_OK,
    InputError,
    add_runs_argument,
    existing_store,
    positive_int,
)


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


def _export_decoding(args: argparse.Namespace):
    """The decoding `--decoding`, `--beam-width` and `--length-penalty` ask for; None if none is
    given (the export's default, beam search, and nothing for a model without a decode loop).

    Given explicitly, they are passed on, so that an export they cannot apply to (another
    format, a classifier) refuses them rather than ignoring them.
    """
    if args.decoding is None and args.beam_width is None and args.length_penalty is None:
        return None
    # Loaded when the options are given: an export that takes them loads Keras anyway.
    from keras_seq.models import Beam, Greedy

    if args.decoding == "greedy":
        for option, value in (
            ("--beam-width", args.beam_width),
            ("--length-penalty", args.length_penalty),
        ):
            if value is not None:
                raise InputError(
                    f"{option}: only with --decoding beam (greedy decoding keeps one prefix), "
                    f"got {option} {value} with --decoding greedy"
                )
        return Greedy()
    width = DEFAULT_BEAM_WIDTH if args.beam_width is None else args.beam_width
    alpha = DEFAULT_LENGTH_PENALTY if args.length_penalty is None else args.length_penalty
    for option, fields in (
        ("--beam-width", {"width": width}),
        ("--length-penalty", {"length_penalty": alpha}),
    ):
        try:
            Beam(**fields)
        except ValueError as error:
            raise InputError(f"{option}: {error}") from None
    return Beam(width=width, length_penalty=alpha)


def run(args: argparse.Namespace) -> int:
    """Export a done run's model; print the path written."""
    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.results import export

    decoding = _export_decoding(args)
    with existing_store(args) as store:
        try:
            path = export.export(
                store,
                args.run,
                args.format,
                out=args.out,
                force=args.force,
                batch_size=args.batch_size,
                decoding=decoding,
            )
        except export.ExportError as error:
            raise InputError(str(error)) from None
        print(path)
        if args.format == "savedmodel" and args.out is None:
            print(path.parent / export.SAVEDMODEL_ZIP)  # the zip beside the SavedModel
    return EXIT_OK
