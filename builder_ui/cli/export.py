"""`keras-seq export`: write a recorded run's model as a file that loads elsewhere."""

from __future__ import annotations

import argparse

from builder_ui.cli.arguments import EXIT_OK, InputError
from builder_ui.cli.common import existing_store, guarded
from builder_ui.cli.options.export import DEFAULT_BEAM_WIDTH, DEFAULT_LENGTH_PENALTY
from builder_ui.results import export
from keras_seq.models import Beam, Greedy


def _export_decoding(args: argparse.Namespace):
    """The decoding `--decoding`, `--beam-width` and `--length-penalty` ask for; None if none is
    given (the export's default, beam search, and nothing for a model without a decode loop).

    Given explicitly, they are passed on, so that an export they cannot apply to (another
    format, a classifier) refuses them rather than ignoring them.
    """
    if args.decoding is None and args.beam_width is None and args.length_penalty is None:
        return None
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


@guarded
def run(args: argparse.Namespace) -> int:
    """Export a done run's model; print the path written."""

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
