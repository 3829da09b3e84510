"""`keras-seq ui`: serve the builder app (loopback by default; `--auth` elsewhere)."""

from __future__ import annotations

import argparse
import ipaddress

from builder_ui.cli.arguments import pass_memory_budget
from builder_ui.cli.options.ui import MAX_UPLOAD_MB
from builder_ui.engine.slots import keep_gpus_for_training


def is_loopback(host: str) -> bool:
    """Tell whether `host` names only this machine (localhost, 127.0.0.0/8 or ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


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
    # The GPUs are hidden from this process before the app's modules load Keras (and a
    # backend); the app is loaded once its options are checked, which then need no Keras.
    keep_gpus_for_training()
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
