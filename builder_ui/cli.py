"""The `keras-seq` command line.

Each subcommand is a pair of functions, one that declares its arguments and
one that runs it, registered in `COMMANDS`; to add a subcommand, write both and
add one `Command` line there. Heavy imports (Gradio, Keras) happen inside the
run functions so that `keras-seq --help` stays fast.
"""

from __future__ import annotations

import argparse
import ipaddress
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

PROG = "keras-seq"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7860
DEFAULT_RUNS_DIR = "runs"


@dataclass(frozen=True)
class Command:
    """A subcommand: its name, one-line help, argument declaration and runner.

    `run(args, parser)` returns the exit code; it may call `parser.error(...)`
    (exit code 2) to refuse a combination of arguments.
    """

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, argparse.ArgumentParser], int]


class _VersionAction(argparse.Action):
    """Print the package version; imports keras_seq only when asked."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, help="show the version and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        import keras_seq

        print(f"{parser.prog} {keras_seq.__version__}")
        parser.exit()


def parse_auth(value: str) -> tuple[str, str]:
    """Parse ``USER:PASS`` into a (user, password) pair; both parts must be non-empty."""
    user, sep, password = value.partition(":")
    if not sep or not user or not password:
        raise argparse.ArgumentTypeError(
            f"expected USER:PASS with both parts non-empty, got {value!r}"
        )
    return user, password


def parse_port(value: str) -> int:
    """Parse a TCP port number between 1 and 65535."""
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {value!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be between 1 and 65535, got {port}")
    return port


def is_loopback(host: str) -> bool:
    """Tell whether `host` names only this machine (localhost, 127.0.0.0/8 or ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _configure_ui(parser: argparse.ArgumentParser) -> None:
    """Declare the arguments of `keras-seq ui`."""
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"address to listen on (default: {DEFAULT_HOST}); "
        "any other than loopback requires --auth",
    )
    parser.add_argument(
        "--port", type=parse_port, default=DEFAULT_PORT, help=f"port (default: {DEFAULT_PORT})"
    )
    parser.add_argument(
        "--runs",
        type=Path,
        default=Path(DEFAULT_RUNS_DIR),
        metavar="DIR",
        help=f"directory for experiment runs (default: {DEFAULT_RUNS_DIR})",
    )
    parser.add_argument(
        "--auth",
        type=parse_auth,
        metavar="USER:PASS",
        help="require this user name and password to use the app",
    )


def _run_ui(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Start the Gradio app and block until it is interrupted."""
    if args.auth is None and not is_loopback(args.host):
        parser.error(
            f"refusing to serve on non-loopback host {args.host!r} without authentication; "
            "pass --auth USER:PASS to allow it"
        )
    from builder_ui.app import launch

    launch(host=args.host, port=args.port, runs_dir=args.runs, auth=args.auth)
    return 0


COMMANDS: tuple[Command, ...] = (
    Command("ui", "start the model builder web app", _configure_ui, _run_ui),
)


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """Build the top-level parser and return it with the subparsers by command name."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="keras_seq: sequence-model layers and their builder app."
    )
    parser.add_argument("--version", action=_VersionAction)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    by_name = {}
    for command in COMMANDS:
        sub = subparsers.add_parser(command.name, help=command.help, description=command.help)
        command.configure(sub)
        by_name[command.name] = sub
    return parser, by_name


def main(argv: Sequence[str] | None = None) -> int:
    """Run `keras-seq` with `argv` (default: the process arguments); return the exit code."""
    parser, subparsers = build_parser()
    args = parser.parse_args(argv)
    command = next(c for c in COMMANDS if c.name == args.command)
    return command.run(args, subparsers[command.name])


if __name__ == "__main__":
    sys.exit(main())
