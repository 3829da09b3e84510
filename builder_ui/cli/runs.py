"""`keras-seq runs`: list, compare, annotate and delete recorded runs."""

from __future__ import annotations

import argparse
import sys

from builder_ui.cli.arguments import EXIT_OK, PROG, InputError
from builder_ui.cli.common import existing_store, guarded, table_text
from builder_ui.cli.options.runs import RUN_EDITS
from builder_ui.engine.store import DB_NAME
from builder_ui.results import compare, report


@guarded
def run(args: argparse.Namespace) -> int:
    """List the runs of a store, or compare some of them; optionally write the table as CSV."""

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
    with existing_store(args) as store:
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
        print(table_text(*_columns_shown(table, args.columns)))
    if args.csv is not None:
        path = compare.to_csv(table, args.csv)
        print(f"wrote {path}", file=sys.stderr)
    if args.report is not None and not table.empty:
        with existing_store(args) as store:
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
    with existing_store(args) as store:
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
    with existing_store(args) as store:
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
