"""`keras-seq ui`: serve the builder app (loopback by default; `--auth` elsewhere)."""

from __future__ import annotations

import argparse
import ipaddress
from pathlib import Path

from builder_ui.cli.common import (
    add_memory_budget_argument,
    add_runs_argument,
    pass_memory_budget,
)

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


def is_loopback(host: str) -> bool:
    """Tell whether `host` names only this machine (localhost, 127.0.0.0/8 or ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """Start the Gradio app and block until it is interrupted."""
    if args.auth is None and not is_loopback(args.host):
        parser.error(
            f"refusing to serve on non-loopback host {args.host!r} without authentication; "
            "pass --auth USER:PASS to allow it"
        )
    # The run store's folder, or the first of its parents that exists, must be a folder.
    existing = next(path for path in (args.runs, *args.runs.absolute().parents) if path.exists())
    if not existing.is_dir():
        parser.error(f"--runs: expected a folder of runs, but {str(existing)!r} is a file")
    limits: dict[str, object] = {}  # given options only: the page holds the defaults
    for directory in args.data_dirs:
        if not directory.is_dir():
            parser.error(f"--data-dir: expected an existing directory, got {str(directory)!r}")
        limits["data_dirs"] = args.data_dirs
    if args.max_upload_mb is not None:
        if not 1 <= args.max_upload_mb <= MAX_UPLOAD_MB:
            parser.error(
                f"--max-upload-mb: expected 1 to {MAX_UPLOAD_MB}, got {args.max_upload_mb}"
            )
        limits["max_upload_bytes"] = args.max_upload_mb * 2**20
    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.app.page import launch
    from builder_ui.app.serving import ListenError, check_proxy_address

    for address in args.trusted_proxies:
        try:
            check_proxy_address(address)
        except ValueError as error:
            parser.error(f"--trusted-proxy: {error}")
        limits["trusted_proxies"] = args.trusted_proxies
    if not args.warm_up:
        limits["warm_up"] = False

    pass_memory_budget(args)
    try:
        launch(host=args.host, port=args.port, runs_dir=args.runs, auth=args.auth, **limits)
    except ListenError as error:  # a port in use: said before the app is built
        parser.error(str(error))
    return 0
