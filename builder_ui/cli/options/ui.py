"""The arguments of `keras-seq ui`."""

from __future__ import annotations

import argparse
from pathlib import Path

from builder_ui.cli.arguments import add_memory_budget_argument, add_runs_argument

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7860
MAX_UPLOAD_MB = 1024  # `keras-seq ui --max-upload-mb`: an upload is read whole into memory


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


def configure(parser: argparse.ArgumentParser) -> None:
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
    add_runs_argument(parser)
    parser.add_argument(
        "--auth",
        type=parse_auth,
        metavar="USER:PASS",
        help="require this user name and password to use the app",
    )
    add_memory_budget_argument(parser)
    parser.add_argument(
        "--data-dir",
        dest="data_dirs",
        action="append",
        type=Path,
        default=[],
        metavar="DIR",
        help="a folder whose files specs in the app may name as data, besides the uploads "
        "(repeatable; default: none)",
    )
    parser.add_argument(
        "--max-upload-mb",
        type=int,
        metavar="MB",
        help=f"the largest data file one upload may be, in MiB, 1 to {MAX_UPLOAD_MB} (default: "
        "10); a request may be 64 KiB more, for the form around the file",
    )
    parser.add_argument(
        "--trusted-proxy",
        dest="trusted_proxies",
        action="append",
        default=[],
        metavar="ADDR",
        help="the IP address (or network, 10.0.0.0/8) of a reverse proxy in front of the app, "
        "whose X-Forwarded-For names the client; from any other peer the header is ignored, "
        "so the login throttle counts the TCP peer (repeatable; default: none)",
    )
    parser.add_argument(
        "--no-warm-up",
        dest="warm_up",
        action="store_false",
        help="start the training process when the first run is queued, not with the app "
        "(a quicker, lighter start for browsing results; the first run starts seconds later)",
    )
