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

Each subcommand is a pair of functions, one that declares its arguments and
one that runs it, registered in `COMMANDS`; to add a subcommand, write both and
add one `Command` line there. Heavy imports (Gradio, Keras, pydantic, pandas)
happen inside the run functions so that `keras-seq --help` stays fast.

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
import ipaddress
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from builder_ui.engine.records import STATUSES
from builder_ui.extras import APP_MODULES, DISTRIBUTION, missing_extra
from builder_ui.lab import cli as lab_cli

PROG = "keras-seq"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 7860
DEFAULT_RUNS_DIR = "runs"
MAX_UPLOAD_MB = 1024  # `keras-seq ui --max-upload-mb`: an upload is read whole into memory


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
    _add_memory_budget_argument(parser)
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


def _run_ui(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
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

    _pass_memory_budget(args)
    try:
        launch(host=args.host, port=args.port, runs_dir=args.runs, auth=args.auth, **limits)
    except ListenError as error:  # a port in use: said before the app is built
        parser.error(str(error))
    return 0


# --- Shared by the experiment commands ----------------------------------------------------------

EXIT_OK = 0
EXIT_RUN_NOT_DONE = 1  # the command worked, a run did not end `done`
EXIT_BAD_INPUT = 2  # like argparse: the input was refused, nothing was done
EXIT_INTERRUPTED = 130


class InputError(Exception):
    """Input the command refuses: printed as one message on stderr, exit code 2."""


def _fail(args: argparse.Namespace, message: str) -> int:
    """Print `keras-seq COMMAND: error: MESSAGE` on stderr; return exit code 2."""
    message = str(message).rstrip()
    if "\n" in message:
        message = "\n" + "\n".join(f"  {line}" for line in message.splitlines())
    print(f"{PROG} {args.command}: error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _add_runs_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--runs",
        type=Path,
        default=Path(DEFAULT_RUNS_DIR),
        metavar="DIR",
        help=f"the run store directory (default: {DEFAULT_RUNS_DIR})",
    )


def _add_set_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        help="override a spec field before validation, e.g. --set train.epochs=2 "
        "(VALUE is read as YAML; repeatable)",
    )


def _add_memory_budget_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--memory-budget",
        type=_memory_budget,
        metavar="SIZE",
        help="refuse a model whose estimated memory exceeds SIZE (4GB, 512MB, 75%% of the free "
        "memory, or none); default: $KERAS_SEQ_MEMORY_BUDGET, else half the free memory",
    )


def _memory_budget(value: str) -> str:
    """`--memory-budget`, checked as `KERAS_SEQ_MEMORY_BUDGET` reads it."""
    # Loaded when the flag is given: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.builders.memory import BUDGET_ENV, BudgetError, memory_budget

    try:
        memory_budget({BUDGET_ENV: value})
    except BudgetError as error:
        raise argparse.ArgumentTypeError(error.problems[0][1]) from None
    return value


def _pass_memory_budget(args: argparse.Namespace) -> None:
    """`--memory-budget` into `KERAS_SEQ_MEMORY_BUDGET`, which the checks and workers read."""
    if getattr(args, "memory_budget", None) is not None:
        os.environ["KERAS_SEQ_MEMORY_BUDGET"] = args.memory_budget


def parse_override(text: str) -> tuple[list[str], object]:
    """`"train.epochs=2"` → `(["train", "epochs"], 2)`; the value is read as YAML."""
    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.specs import SpecError, parse_yaml
    from builder_ui.specs.documents import MAX_SPEC_DEPTH

    path, sep, value = text.partition("=")
    parts = path.strip().split(".")
    if not sep or not all(part.strip() for part in parts):
        raise InputError(f"--set expects FIELD=VALUE with a dotted field path, got {text!r}")
    if len(parts) > MAX_SPEC_DEPTH:  # nested dicts that deep overflow Python's recursion
        shown = path if len(path) <= 40 else f"{path[:40]}..."
        raise InputError(
            f"--set {shown}: a field path of {len(parts):,} parts, deeper than a spec nests "
            f"(at most {MAX_SPEC_DEPTH})"
        )
    try:
        parsed = parse_yaml(value) if value.strip() else None
    except SpecError as error:
        raise InputError(f"--set {path}: {error}") from None
    return [part.strip() for part in parts], parsed


def apply_overrides(data: object, overrides: Sequence[str]) -> object:
    """Set each `FIELD=VALUE` of `--set` in a spec document (a dict) before it is validated."""
    if not overrides:
        return data
    if not isinstance(data, dict):
        return data  # validation reports what the document is
    for text in overrides:
        parts, value = parse_override(text)
        node = data
        for depth, part in enumerate(parts[:-1]):
            child = node.setdefault(part, {})
            if not isinstance(child, dict):
                where = ".".join(parts[: depth + 1])
                raise InputError(f"--set {'.'.join(parts)}: {where} is not a mapping")
            node = child
        node[parts[-1]] = value
    return data


def load_spec_argument(args: argparse.Namespace):
    """The spec file of `args.spec`, with `--set` applied, validated (SpecError if not)."""
    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.builders import load_spec
    from builder_ui.specs import read_spec_file, upgrade

    data = read_spec_file(args.spec)
    if isinstance(data, dict):
        data = upgrade(data)  # `--set` paths name fields of the current spec version
    data = apply_overrides(data, getattr(args, "overrides", []))
    return load_spec(data)


def _existing_store(args: argparse.Namespace):
    """The run store of `--runs`, which must already exist (commands that only read)."""
    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.engine.store import DB_NAME

    if not (args.runs / DB_NAME).exists():  # a directory there: the store says so
        raise InputError(f"no run store in {str(args.runs)!r} (no {DB_NAME}); pass --runs DIR")
    return open_store(args.runs)


def open_store(directory: Path):
    """`RunStore(directory)`, its refusals (a file, a newer schema) as one message."""
    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.engine.store import RunStore

    try:
        return RunStore(directory)
    except (ValueError, RuntimeError) as error:
        raise InputError(str(error)) from None


def _print_record(record) -> None:
    """The outcome of a run on stdout: id, status, final metrics, time and device."""
    print(f"run {record.id} ({record.name}): {record.status}")
    width = max((len(name) for name in record.metrics), default=0)
    for name, value in record.metrics.items():
        shown = "n/a" if value is None else f"{value:.6g}"
        print(f"  {name:<{width}}  {shown}")
    details = []
    if record.wall_time is not None:
        details.append(f"{record.wall_time:.1f} s")
    if record.examples_per_sec:
        details.append(f"{record.examples_per_sec:,.0f} examples/s")
    details += [x for x in (record.device, record.precision) if x]
    if record.params is not None:
        details.append(f"{record.params:,} parameters")
    if details:
        print(f"  ({', '.join(details)})")
    if record.error:
        print(f"  {record.error}")


def _guarded(run: Callable[[argparse.Namespace], int]):
    """Turn refused input (bad spec, unknown run, ...) into one message and exit code 2."""

    def wrapper(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
        # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
        from builder_ui.engine.store import RunNotFoundError, StatusError, StoreError
        from builder_ui.specs import SpecError

        try:
            return run(args)
        except (InputError, SpecError, RunNotFoundError, StatusError, StoreError) as error:
            return _fail(args, str(error))
        except OSError as error:  # an unreadable or unwritable path given on the command line
            return _fail(args, f"{error.strerror or error}: {error.filename or ''}".rstrip(": "))
        except KeyboardInterrupt:
            print(f"\n{PROG} {args.command}: interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED

    return wrapper


# --- keras-seq train ------------------------------------------------------------------------------


def _configure_train(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", type=Path, metavar="SPEC", help="experiment spec (.yaml or .json)")
    _add_runs_argument(parser)
    parser.add_argument("--name", help="name of the run (default: the spec's name)")
    _add_set_argument(parser)
    _add_memory_budget_argument(parser)


def _run_train(args: argparse.Namespace) -> int:
    """Train one spec with a progress bar on stderr; print the run and its metrics on stdout."""
    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.builders import load_spec

    _pass_memory_budget(args)
    spec = load_spec_argument(args)
    if spec.sweep is not None:
        raise InputError(
            f"{args.spec} has a `sweep:` section ({_trial_count(spec)} trials); run it with "
            f"`{PROG} sweep {args.spec}`"
        )
    if args.name is not None:
        spec = load_spec({**spec.to_dict(), "name": args.name})

    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui import engine
    from builder_ui.engine import devices
    from builder_ui.engine.progress import TerminalProgress

    devices.select_backend(spec.train)  # before Keras loads: its backend is fixed then
    with open_store(args.runs) as store:
        try:
            record = engine.run(spec, store=store, callbacks=[TerminalProgress()])
        except KeyboardInterrupt:
            _print_resume_hint(store)
            raise
    _print_record(record)
    return EXIT_OK if record.status == "done" else EXIT_RUN_NOT_DONE


def _print_resume_hint(store) -> None:
    for record in store.list_runs(status="interrupted")[-1:]:
        print(
            f"run {record.id} is interrupted; continue it with `{PROG} resume {record.id} "
            f"--runs {store.directory}`",
            file=sys.stderr,
        )


def _trial_count(spec) -> int:
    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.builders import sweeps

    if spec.sweep is None:
        return 1
    return spec.sweep.num_trials if spec.sweep.method != "grid" else sweeps.grid_size(spec)


# --- keras-seq sweep ------------------------------------------------------------------------------


def _configure_sweep(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", type=Path, metavar="SPEC", help="spec with a `sweep:` section")
    parser.add_argument(
        "--executor",
        choices=("local", "ray"),
        default="local",
        help="local: one trial after another (default); ray: one Ray task per trial",
    )
    parser.add_argument(
        "--address", metavar="ADDR", help="ray: join the Ray cluster at ADDR (e.g. auto)"
    )
    parser.add_argument(
        "--num-cpus",
        type=_positive_int,
        metavar="N",
        help="ray: CPUs of the local Ray instance it starts (default: all)",
    )
    parser.add_argument(
        "--storage",
        metavar="URI",
        help="ray: send the trials' checkpoints and files through this pyarrow.fs URI "
        "(s3://bucket/prefix, gs://..., file:///shared/dir) instead of Ray's object store",
    )
    _add_runs_argument(parser)
    _add_set_argument(parser)
    _add_memory_budget_argument(parser)


def _positive_int(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {number}")
    return number


def _run_sweep(args: argparse.Namespace) -> int:
    """Run every trial; print a table of the trials (what differs, their metrics)."""
    if args.executor != "ray" and any(
        value is not None for value in (args.address, args.num_cpus, args.storage)
    ):
        raise InputError("--address, --num-cpus and --storage are for --executor ray")
    _pass_memory_budget(args)
    spec = load_spec_argument(args)

    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.engine import executors
    from builder_ui.engine.progress import TerminalProgress
    from builder_ui.engine.transfer import StorageError
    from builder_ui.results import compare

    with open_store(args.runs) as store:
        earlier = {record.sweep_id for record in store.list_runs()}
        try:
            result = executors.run_sweep(
                spec,
                store=store,
                executor=args.executor,
                address=args.address,
                num_cpus=args.num_cpus,
                callbacks=[TerminalProgress()],
                storage=args.storage,
            )
        except executors.ExecutorError as error:
            raise InputError(str(error)) from None
        except StorageError as error:
            raise InputError(f"--storage {args.storage}: {error}") from None
        except KeyboardInterrupt:
            for sweep_id in {record.sweep_id for record in store.list_runs()} - earlier:
                print(
                    f"{PROG} sweep: sweep {sweep_id} stopped; run what is left of it with "
                    f"`{PROG} resume {sweep_id} --runs {args.runs}`",
                    file=sys.stderr,
                )
            raise
        table = compare.compare(store, result.run_ids)
    print(f"sweep {result.sweep_id}: {len(result.records)} runs in {args.runs}")
    print(_table_text(table))
    # A trial the sweep's scheduler pruned ended as asked: not a failure of the sweep.
    finished = all(record.status in ("done", "pruned") for record in result.records)
    return EXIT_OK if finished else EXIT_RUN_NOT_DONE


# --- keras-seq runs -------------------------------------------------------------------------------


# The flags of `keras-seq runs` that change one run (at most one per call): flag -> its
# argparse `nargs`, metavar and help. `--tag` is not one of them: it filters the list.
RUN_EDITS = {
    "rename": (2, ("RUN", "NAME"), "give run RUN the name NAME"),
    "add_tag": ("+", ("RUN", "TAG"), "tag run RUN with each TAG (letters, digits, _ . : + / -)"),
    "remove_tag": ("+", ("RUN", "TAG"), "take each TAG off run RUN"),
    "note": (2, ("RUN", "TEXT"), 'set the note of run RUN to TEXT ("" clears it)'),
    "star": (None, "RUN", "star run RUN"),
    "unstar": (None, "RUN", "unstar run RUN"),
    "archive": (None, "RUN", "archive run RUN: hidden from lists unless --archived"),
    "unarchive": (None, "RUN", "bring archived run RUN back into lists"),
    "delete": (None, "RUN", "delete run RUN, its epochs and its folder (asks, or --yes)"),
}


def _configure_runs(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "List or compare the runs of a store (archived runs only with --archived), or change "
        "one run: --rename, --add-tag, --remove-tag, --note, --star, --unstar, --archive, "
        "--unarchive or --delete (one per call). `--tag TAG` filters the list; use "
        "`--add-tag RUN TAG` to tag a run."
    )
    _add_runs_argument(parser)
    parser.add_argument("--status", choices=STATUSES, help="only runs with this status")
    parser.add_argument("--sweep", metavar="ID", help="only the runs of this sweep")
    parser.add_argument("--tag", metavar="TAG", help="only the runs tagged TAG")
    parser.add_argument(
        "--archived", action="store_true", help="also list archived runs (hidden by default)"
    )
    parser.add_argument(
        "--compare",
        nargs="+",
        metavar="ID",
        help="compare these runs: the spec fields that differ, metrics, time, device",
    )
    parser.add_argument(
        "--columns",
        metavar="COLS",
        help="the columns to print, comma-separated (full paths such as model.encoder.units, "
        "or `all`); default: those the app's Compare tab shows, the ones that differ",
    )
    parser.add_argument(
        "--csv", type=Path, metavar="FILE", help="also write the table as CSV (every column)"
    )
    parser.add_argument(
        "--report",
        type=Path,
        metavar="FILE",
        help="also write an HTML report of these runs: the table, curves, parallel coordinates "
        "and, with --sweep, importance; one file that opens with no server or network",
    )
    parser.add_argument(
        "--importance",
        action="store_true",
        help="with --sweep: each swept parameter's share of the variance of the sweep's "
        "metric over its finished trials (fANOVA, through Optuna)",
    )
    edits = parser.add_mutually_exclusive_group()
    for name, (nargs, metavar, help_text) in RUN_EDITS.items():
        flag = "--" + name.replace("_", "-")
        edits.add_argument(flag, dest=name, nargs=nargs, metavar=metavar, help=help_text)
    parser.add_argument(
        "--yes", action="store_true", help="with --delete: delete without asking first"
    )


def _run_runs(args: argparse.Namespace) -> int:
    """List the runs of a store, or compare some of them; optionally write the table as CSV."""
    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.engine.store import DB_NAME
    from builder_ui.results import compare, report

    edit = next((name for name in RUN_EDITS if getattr(args, name) is not None), None)
    if edit is not None:
        return _edit_run(args, edit)
    if args.importance:
        return _print_importance(args)
    if not (args.runs / DB_NAME).exists():  # a directory there: the store says so
        if args.compare:
            raise InputError(f"no run store in {str(args.runs)!r}; pass --runs DIR")
        print(f"No runs in {args.runs}.")
        return EXIT_OK
    with _existing_store(args) as store:
        if args.compare:
            where = {}
            if args.status is not None:
                where["status"] = args.status
            if args.sweep is not None:
                where["sweep_id"] = args.sweep
            try:
                table = compare.compare(store, args.compare, where=where or None)
            except KeyError as error:
                raise InputError(str(error.args[0])) from None
        else:
            # The table of the app's Compare tab, oldest first: the same columns.
            where = {"status": args.status, "sweep_id": args.sweep, "tag": args.tag}
            where = {key: value for key, value in where.items() if value is not None}
            if not args.archived:
                where["archived"] = False
            table = compare.compare(store, where=where, annotations=True)
            for problem in store.unreadable_runs():  # left out of the table
                print(f"{PROG} runs: warning: {problem}", file=sys.stderr)
    if table.empty:
        print("No runs match.")
    else:
        print(_table_text(*_columns_shown(table, args.columns)))
    if args.csv is not None:
        path = compare.to_csv(table, args.csv)
        print(f"wrote {path}", file=sys.stderr)
    if args.report is not None and not table.empty:
        with _existing_store(args) as store:
            text = report.report_html(store, list(table["id"]), sweep_id=args.sweep)
        print(f"wrote {report.write_report(args.report, text)}", file=sys.stderr)
    return EXIT_OK


def _print_importance(args: argparse.Namespace) -> int:
    """`keras-seq runs --sweep ID --importance`: each parameter's importance, largest first."""
    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.results.importance import ImportanceError, sweep_importance

    if args.sweep is None:
        raise InputError("--importance measures one sweep: give it with --sweep ID")
    if args.compare or args.csv is not None:
        raise InputError("--importance prints its own table; list or compare in another call")
    with _existing_store(args) as store:
        try:
            found = sweep_importance(store, args.sweep)
        except (ImportanceError, ImportError) as error:
            raise InputError(str(error)) from None
    print(
        f"sweep {found.sweep_id}: the importance of each parameter for {found.metric} "
        f"(fANOVA over {found.trials} finished trials)"
    )
    for line in found.lines():
        print(line)
    return EXIT_OK


def _edit_run(args: argparse.Namespace, edit: str) -> int:
    """Change one run as the `RUN_EDITS` flag `edit` asks; print what it did on stdout.

    A refused value (a tag with a space, a note too long, an unknown run, deleting a
    queued or running run) changes nothing and exits 2 with one line naming it.
    """
    if args.compare or args.csv is not None:
        raise InputError(
            f"--{edit.replace('_', '-')} changes a run; list or compare in another call"
        )
    if args.yes and edit != "delete":
        raise InputError("--yes only confirms --delete")
    value = getattr(args, edit)
    run_id, rest = (value, []) if isinstance(value, str) else (value[0], value[1:])
    if edit in ("add_tag", "remove_tag") and not rest:
        raise InputError(
            f"--{edit.replace('_', '-')} expects RUN TAG [TAG ...], got only {run_id!r}"
        )
    with _existing_store(args) as store:
        record = store.get(run_id, history=False)  # an unknown run: exit 2, naming it
        try:
            said = _apply_edit(store, record, edit, rest, args.yes)
        except ValueError as error:  # a StatusError is one too
            raise InputError(str(error)) from None
    print(said)
    return EXIT_OK


def _apply_edit(store, record, edit: str, rest: list[str], confirmed: bool) -> str:
    """Make the change in the store; returns the line that says what it did."""
    run = f"run {record.id}"
    if edit == "rename":
        store.rename(record.id, rest[0])
        return f"{run}: renamed {record.name!r} -> {rest[0].strip()!r}"
    if edit == "add_tag":
        return f"{run}: tags {', '.join(store.add_tags(record.id, rest))}"
    if edit == "remove_tag":
        return f"{run}: tags {', '.join(store.remove_tags(record.id, rest)) or '(none)'}"
    if edit == "note":
        store.set_note(record.id, rest[0])
        return f"{run}: note {'cleared' if not rest[0] else f'set ({len(rest[0])} characters)'}"
    if edit in ("star", "unstar"):
        store.set_starred(record.id, edit == "star")
    elif edit in ("archive", "unarchive"):
        store.set_archived(record.id, edit == "archive")
    else:
        _confirm_delete(record, confirmed)
        store.delete(record.id, allow_queued=False)
        return f"{run}: deleted, with its epochs and {store.artifact_dir(record.id)}"
    return f"{run}: {edit}red" if edit.endswith("star") else f"{run}: {edit}d"


def _confirm_delete(record, confirmed: bool) -> None:
    """Ask on a terminal before deleting; without one, `--yes` must say it (else exit 2)."""
    if confirmed:
        return
    what = f"run {record.id} ({record.name}, {record.status}) and its files"
    if not sys.stdin.isatty():
        raise InputError(f"--delete {record.id}: deleting {what} needs --yes (no terminal to ask)")
    answer = input(f"Delete {what}? [y/N] ").strip().lower()
    if answer not in ("y", "yes"):
        raise InputError(f"--delete {record.id}: not confirmed; nothing deleted")


def _columns_shown(table, asked: str | None):
    """The table with the columns to print, under short headers, and their legend.

    `asked`: None for the columns the app's Compare tab shows by default
    (`compare.default_columns`: those that differ among the runs, read by the main metric),
    `all`, or comma-separated full paths (`id` always first).

    Raises:
        InputError: a column asked for that the table does not have, listing those it has.
    """
    # Loaded when the command runs: `keras-seq --help` imports no pandas or pydantic.
    from builder_ui.results import compare

    if asked is None:
        columns = compare.default_columns(table, compare.default_metric(table))
    elif asked.strip() == "all":
        columns = list(table.columns)
    else:
        columns = [name.strip() for name in asked.split(",") if name.strip()]
        unknown = [name for name in columns if name not in table.columns]
        if unknown:
            raise InputError(
                f"--columns: no column {unknown[0]!r} in this table; its columns: "
                + ", ".join(table.columns)
            )
        columns = ["id", *[name for name in columns if name != "id"]]
    headers = compare.short_headers(columns)
    legend = " · ".join(f"{head} = {column}" for column, head in headers.items() if head != column)
    return table[columns].rename(columns=headers), legend


def _table_text(table, legend: str = "") -> str:
    # pandas loads when a table is made, not on import.
    import pandas as pd

    with pd.option_context(
        "display.max_columns", None, "display.width", 250, "display.max_colwidth", 48
    ):
        text = table.to_string(index=False, float_format=lambda value: f"{value:.4g}")
    return f"{text}\n\ncolumns: {legend}" if legend else text


# --- keras-seq export -----------------------------------------------------------------------------


def _configure_export(parser: argparse.ArgumentParser) -> None:
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
        help="beam: beam search with GNMT's length penalty (3 to 5 BLEU above greedy in "
        "benchmarks/results/translation.md); greedy: the most probable token at each step "
        "(default: beam)",
    )
    decoding.add_argument(
        "--beam-width",
        type=_positive_int,
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
    _add_runs_argument(parser)


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


def _run_export(args: argparse.Namespace) -> int:
    """Export a done run's model; print the path written."""
    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.results import export

    decoding = _export_decoding(args)
    with _existing_store(args) as store:
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


# --- keras-seq resume -----------------------------------------------------------------------------


def _configure_resume(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run",
        metavar="RUN",
        help="id of an interrupted run, or of a sweep: its interrupted trials are resumed, "
        "its queued ones trained, and a bayes search chooses the trials it has not yet",
    )
    _add_runs_argument(parser)


def _checkpoint_log(store, run_id: str) -> str:
    """What the engine noted about the run's checkpoint (`checkpoint.log`), or "".

    A log that leads out of the run's folder (a symbolic link) is refused, not printed.
    """
    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.engine.artifacts import ArtifactError, confine
    from builder_ui.engine.train import CHECKPOINT_LOG

    try:
        log = confine(store, run_id, f"{run_id}/{CHECKPOINT_LOG}", field=CHECKPOINT_LOG)
    except ArtifactError as error:
        raise InputError(str(error)) from None
    return log.read_text(encoding="utf-8") if log.exists() else ""


def _print_checkpoint_notes(store, run_id: str, seen: str) -> None:
    """Print on stderr the checkpoint notes written since the log read `seen`."""
    for line in _checkpoint_log(store, run_id)[len(seen) :].splitlines():
        print(f"{PROG} resume: warning: {line}", file=sys.stderr)


def _resume_sweep(args: argparse.Namespace, store) -> int:
    """`keras-seq resume SWEEP_ID`: run what is left of the sweep; print its trials' table."""
    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.engine import executors
    from builder_ui.engine.progress import TerminalProgress
    from builder_ui.results import compare

    trials = [record.id for record in store.list_runs(sweep_id=args.run)]
    seen = {run_id: _checkpoint_log(store, run_id) for run_id in trials}
    try:
        result = executors.resume_sweep(store, args.run, callbacks=[TerminalProgress()])
    except ValueError as error:
        raise InputError(str(error)) from None
    finally:
        for run_id in trials:
            _print_checkpoint_notes(store, run_id, seen[run_id])
    table = compare.compare(store, result.run_ids)
    print(f"sweep {result.sweep_id}: {len(result.records)} runs in {args.runs}")
    print(_table_text(table))
    return EXIT_OK if result.all_done else EXIT_RUN_NOT_DONE


def _run_resume(args: argparse.Namespace) -> int:
    """Continue an interrupted run from its last finished epoch, or what is left of a sweep."""
    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui import engine
    from builder_ui.engine.progress import TerminalProgress
    from builder_ui.specs import SpecError

    with _existing_store(args) as store:
        if not store.exists(args.run) and store.list_runs(sweep_id=args.run):
            return _resume_sweep(args, store)
        seen = _checkpoint_log(store, args.run) if store.exists(args.run) else ""
        if store.exists(args.run):
            _select_stored_backend(store.get(args.run, history=False).spec)
        try:
            record = engine.run(
                None, store=store, run_id=args.run, resume=True, callbacks=[TerminalProgress()]
            )
        except SpecError:
            raise
        except ValueError as error:
            raise InputError(str(error)) from None
        finally:
            if store.exists(args.run):
                _print_checkpoint_notes(store, args.run, seen)
    _print_record(record)
    return EXIT_OK if record.status == "done" else EXIT_RUN_NOT_DONE


def _select_stored_backend(document) -> None:
    """Start Keras on a stored run's `train.backend` (an unreadable spec: `engine.run` says)."""
    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.builders import load_spec
    from builder_ui.engine import devices
    from builder_ui.specs import SpecError

    try:
        devices.select_backend(load_spec(document).train)
    except SpecError:
        pass


# --- keras-seq schema and validate ----------------------------------------------------------------


def _configure_schema(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", type=Path, metavar="FILE", help="write to FILE instead of stdout")


def _run_schema(args: argparse.Namespace) -> int:
    """Print the JSON Schema of an experiment spec (every registered task and model type)."""

    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui import files
    from builder_ui.builders import json_schema

    text = json.dumps(json_schema(), indent=2) + "\n"
    if args.out is None:
        sys.stdout.write(text)
    else:
        files.write_text(args.out, text)
        print(f"wrote {args.out}", file=sys.stderr)
    return EXIT_OK


def _configure_validate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", type=Path, metavar="SPEC", help="experiment spec (.yaml or .json)")
    _add_set_argument(parser)
    _add_memory_budget_argument(parser)


def _run_validate(args: argparse.Namespace) -> int:
    """Run every check `train` and `sweep` run before training (data included); train nothing.

    The checks include what `model.fit` would refuse on one batch (for a graph, each block's
    call as training runs it and the Output against the targets, symbolically) and the
    memory estimate against the budget. A valid spec is printed with each trial's parameter
    count and memory estimate, and the budget they are within.
    """
    _pass_memory_budget(args)
    spec = load_spec_argument(args)

    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.builders import memory, sweeps
    from builder_ui.engine.executors import trial_estimates
    from builder_ui.specs import shown

    trials = sweeps.trials(spec)
    estimates = trial_estimates(trials)
    what = f"model {spec.model.type!r} on task {spec.task.type!r}"
    if spec.sweep is not None and spec.sweep.method == "bayes":
        what += f", {spec.sweep.num_trials} trials chosen from {sweeps.describe_space(spec)}"
    elif spec.sweep is not None:
        what += f", {len(trials)} trials"
    print(f"{args.spec}: valid ({what})")
    budget = memory.memory_budget()
    if spec.sweep is None:
        print(f"  {_estimate_line(estimates[0], spec.model.type, detailed=True)}")
    else:
        for trial, found in zip(trials, estimates, strict=True):
            label = ", ".join(f"{key}={shown(value)}" for key, value in trial.values.items())
            print(f"  trial {trial.index} ({label}): {_estimate_line(found, spec.model.type)}")
    if any(found is not None for found in estimates):
        within = "within " if budget.bytes is not None else ""
        print(f"  {within}{budget.describe()}")
    return EXIT_OK


def _estimate_line(found, model_type: str, detailed: bool = False) -> str:
    """`1,234 parameters; training needs about 45.1 kB (...)`, or why there is no estimate."""
    if found is None:
        return f"parameters and memory not estimated (model type {model_type!r} gives no estimate)"
    # Loaded when the command runs: `keras-seq --help` imports no pydantic, YAML or Gradio.
    from builder_ui.builders.memory import format_bytes

    needs = found.describe() if detailed else f"about {format_bytes(found.total_bytes)}"
    return f"{found.parameters:,} parameters; training needs {needs}"


# --- keras-seq graph ------------------------------------------------------------------------------


def _configure_graph(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("spec", type=Path, metavar="SPEC", help="experiment spec (.yaml or .json)")
    parser.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="write to FILE instead of stdout; refused if FILE exists",
    )
    parser.add_argument("--force", action="store_true", help="replace the file at --out")


def _run_graph(args: argparse.Namespace) -> int:
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


COMMANDS: tuple[Command, ...] = (
    Command("ui", "start the model builder web app", _configure_ui, _run_ui),
    Command("train", "train one experiment spec", _configure_train, _guarded(_run_train)),
    Command("sweep", "run every trial of a spec's sweep", _configure_sweep, _guarded(_run_sweep)),
    Command("runs", "list, compare and export runs as CSV", _configure_runs, _guarded(_run_runs)),
    Command("export", "export a finished run's model", _configure_export, _guarded(_run_export)),
    Command("resume", "continue an interrupted run", _configure_resume, _guarded(_run_resume)),
    Command(
        "schema",
        "print the JSON Schema of experiment specs",
        _configure_schema,
        _guarded(_run_schema),
    ),
    Command(
        "validate",
        "check a spec without training it",
        _configure_validate,
        _guarded(_run_validate),
    ),
    Command(
        "graph",
        "write a spec with its model as a graph of blocks",
        _configure_graph,
        _guarded(_run_graph),
    ),
    Command("lab", "run the bottleneck lab and write its report", lab_cli.configure, lab_cli.run),
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
        command.configure(sub)
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
        # Loaded when a command runs (not for --help); installs an import hook, imports no Keras.
        from builder_ui.engine.native_logs import quiet_tensorflow_startup

        quiet_tensorflow_startup()
    command = next(c for c in COMMANDS if c.name == args.command)
    # Imports no Keras. A Ctrl-C is noted as well as raised, so that training stops even when its
    # KeyboardInterrupt is lost (raised inside a weakref callback, say).
    from builder_ui.engine import interrupts

    with interrupts.remembered():
        return command.run(args, subparsers[command.name])


if __name__ == "__main__":
    sys.exit(main())
