"""The `keras-seq` command line.

    keras-seq ui [--host H] [--port P] [--runs DIR] [--auth USER:PASS] [--memory-budget SIZE]
                 [--data-dir DIR ...] [--max-upload-mb MB] [--trusted-proxy ADDR ...]
                 [--no-warm-up]
    keras-seq train SPEC [--runs DIR] [--name N] [--set FIELD=VALUE ...] [--memory-budget SIZE]
    keras-seq sweep SPEC [--executor local|ray] [--address ADDR] [--num-cpus N]
                         [--storage URI] [--runs DIR] [--memory-budget SIZE]
    keras-seq runs [--runs DIR] [--status S] [--sweep ID [--importance]] [--tag TAG] [--archived]
                   [--compare ID ...] [--csv FILE] [--report FILE]
    keras-seq runs --rename RUN NAME | --add-tag RUN TAG... | --remove-tag RUN TAG...
                   | --note RUN TEXT | --star RUN | --unstar RUN | --archive RUN
                   | --unarchive RUN | --delete RUN [--yes]
    keras-seq export RUN --format keras|savedmodel|python|onnx|litert [--out PATH]
                     [--batch-size N] [--decoding beam|greedy] [--beam-width N]
                     [--length-penalty A] [--runs DIR]
    keras-seq resume RUN|SWEEP [--runs DIR]
    keras-seq schema [--out FILE]
    keras-seq validate SPEC [--set FIELD=VALUE ...] [--memory-budget SIZE]
    keras-seq graph SPEC [--out FILE] [--force]

Every command takes `--verbose`, which shows TensorFlow's native start-up
lines (hidden by default, see `builder_ui.engine.native_logs`).

Each subcommand is two modules, registered by name in `COMMANDS`:
`options/<command>.py` declares its arguments (argparse only: every `--help`
reads them without loading pydantic, YAML, Gradio or Keras) and `<command>.py`
runs it, importing what it needs at its top; it loads only when its command
runs. What they share is in `arguments` (the shared arguments, exit codes and
refused input) and `common` (the run store, `--set` overrides, the errors
turned into one line). To add a subcommand, write its two modules and add one
`Command` line.

Exit codes: 0 when the command did what it was asked (a run ended `done`);
1 when it worked but a run ended otherwise (`diverged`, `failed`, ...);
2 when the input was refused (a malformed or invalid spec, an unknown run, a
run that cannot be exported): one message on stderr, naming the field and the
value, and nothing written to the run store; also 2 when the builder's packages (the `app`
extra) are not installed, said in one line; 130 when interrupted (Ctrl-C; an
interrupted run can be continued with `keras-seq resume`).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from builder_ui.cli.arguments import EXIT_BAD_INPUT, PROG
from builder_ui.engine import interrupts
from builder_ui.engine.native_logs import quiet_tensorflow_startup
from builder_ui.extras import APP_MODULES, DISTRIBUTION, missing_extra


@dataclass(frozen=True)
class Command:
    """A subcommand: its name, one-line help, and the modules that declare and run it.

    `builder_ui.cli.options.<module>` holds `configure(parser)`, its arguments (no heavy
    import: every `--help` reads it); `builder_ui.cli.<module>` holds `run(args, parser)`,
    which returns the exit code and may call `parser.error(...)` (exit code 2) to refuse a
    combination of arguments, imports what it runs at its top, and loads when the command
    runs. `configure` and `run` name other functions where one module holds two commands.
    """

    name: str
    help: str
    module: str
    configure: str = "configure"
    run: str = "run"

    def configure_parser(self, parser: argparse.ArgumentParser) -> None:
        """Declare the command's arguments on its subparser."""
        options = importlib.import_module(f"builder_ui.cli.options.{self.module}")
        getattr(options, self.configure)(parser)

    def runner(self):
        """`run(args, parser)`, its module imported now."""
        return getattr(importlib.import_module(f"builder_ui.cli.{self.module}"), self.run)


class _VersionAction(argparse.Action):
    """Print the installed package's version, without importing keras_seq (Keras, seconds)."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        # Read when asked: importing importlib.metadata would slow `keras-seq --help` by 20 ms.
        from importlib.metadata import PackageNotFoundError, version

        try:
            number = version(DISTRIBUTION)
        except PackageNotFoundError:  # run from a checkout that is not installed
            # Keras loads on first use, not on import (specs and the app start without it).
            import keras_seq

            number = keras_seq.__version__
        print(f"{parser.prog} {number}")
        parser.exit()


COMMANDS: tuple[Command, ...] = (
    Command("ui", "start the model builder web app", "ui"),
    Command("train", "train one experiment spec", "train"),
    Command("sweep", "run every trial of a spec's sweep", "sweep"),
    Command("runs", "list, compare and export runs as CSV", "runs"),
    Command("export", "export a finished run's model", "export"),
    Command("resume", "continue an interrupted run", "resume"),
    Command(
        "schema",
        "print the JSON Schema of experiment specs",
        "spec",
        "configure_schema",
        "run_schema",
    ),
    Command(
        "validate", "check a spec without training it", "spec", "configure_validate", "run_validate"
    ),
    Command("graph", "write a spec with its model as a graph of blocks", "graph"),
    Command("lab", "run the bottleneck lab and write its report", "lab"),
)


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """Build the top-level parser and return it with the subparsers by command name."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="keras_seq: sequence-model layers and their builder app."
    )
    parser.add_argument("--version", action=_VersionAction)
    _add_verbose_argument(parser, default=False)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    by_name = {}
    for command in COMMANDS:
        sub = subparsers.add_parser(command.name, help=command.help, description=command.help)
        command.configure_parser(sub)
        # Accepted after the command too; SUPPRESS keeps a flag given before it.
        _add_verbose_argument(sub, default=argparse.SUPPRESS)
        by_name[command.name] = sub
    return parser, by_name


def _add_verbose_argument(parser: argparse.ArgumentParser, default: object) -> None:
    parser.add_argument(
        "--verbose",
        action="store_true",
        default=default,
        help="also show TensorFlow's native start-up and info lines (hidden by default)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run `keras-seq` with `argv` (default: the process arguments); return the exit code.

    A command run from the base install (`pip install keras-seq`, without the `app` extra)
    says which extra it needs, in one line, and returns 2.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        return _main(argv)
    except ModuleNotFoundError as error:
        if error.name is None or error.name.split(".")[0] not in APP_MODULES:
            raise  # not a package of the app extra: a bug, or said by its own command
        # The command is the first argument that is no option: the top level's take no value.
        command = next((arg for arg in argv if not arg.startswith("-")), "")
        what = f"{PROG} {command}".rstrip()
        print(missing_extra(f"{what} needs the builder's packages", "app"), file=sys.stderr)
        return EXIT_BAD_INPUT


def _main(argv: list[str]) -> int:
    parser, subparsers = build_parser()
    args = parser.parse_args(argv)
    if not args.verbose:
        quiet_tensorflow_startup()  # an import hook, installed before any command loads Keras
    command = next(c for c in COMMANDS if c.name == args.command)
    # A Ctrl-C is noted as well as raised, so that training stops even when its
    # KeyboardInterrupt is lost (raised inside a weakref callback, say).
    with interrupts.remembered():
        return command.runner()(args, subparsers[command.name])


if __name__ == "__main__":
    sys.exit(main())
