"""A damaged run store (issue 42): one line naming the file and what to do, exit 2, untouched.

A `runs.sqlite` cut short, garbage, a symbolic link to a text file or a directory; a run row
with malformed JSON or an unknown status. Each command is run in-process (`cli.main`).
"""

from __future__ import annotations

import sqlite3

import pytest
import yaml

from builder_ui import cli
from builder_ui.engine.store import DB_NAME, RunStore, UnreadableRunError
from tests.builder_ui.test_cli_engine import TINY as SPEC


def make_store(directory) -> list[str]:
    """A store of three runs with two epochs each; returns their ids."""
    ids = []
    with RunStore(directory) as store:
        for name in ("first", "second", "third"):
            run_id = store.create_run(SPEC, name=name, status="running")
            for epoch in (1, 2):
                store.append_epoch(run_id, epoch, {"loss": 1.0 / epoch})
            store.finish(run_id, "done", metrics={"accuracy": 0.5})
            ids.append(run_id)
    return ids


def cut_short(path):
    path.write_bytes(path.read_bytes()[:4096])  # a copy that stopped after its first page


def garbage(path):
    path.write_bytes(bytes(range(256)) * 16)


def link_to_text(path):
    notes = path.parent.parent / "notes.txt"
    notes.write_text("my notes, not a database\n" * 100)
    path.unlink()
    path.symlink_to(notes)


DAMAGES = {"cut short": cut_short, "garbage": garbage, "a link to a text file": link_to_text}


def snapshot(directory):
    """Every file under `directory` (links followed) with its bytes."""
    return {
        path.relative_to(directory): path.read_bytes() if path.is_file() else None
        for path in sorted(directory.rglob("*"))
    }


def command_line(command, tmp_path, runs, run_id):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    return {
        "runs": ["runs"],
        "train": ["train", str(spec)],
        "export": ["export", run_id, "--format", "keras"],
        "resume": ["resume", run_id],
    }[command] + ["--runs", str(runs)]


@pytest.mark.parametrize("command", ["runs", "train", "export", "resume"])
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_store_is_one_line_naming_it_exit_2_and_left_as_it_is(
    tmp_path, capsys, command, damage
):
    runs = tmp_path / "runs"
    run_id = make_store(runs)[0]
    DAMAGES[damage](runs / DB_NAME)
    argv = command_line(command, tmp_path, runs, run_id)
    before = snapshot(tmp_path)
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith(
        f"keras-seq {command}: error: the run store database {str(runs / DB_NAME)!r}"
    )
    assert "is damaged or is not a run store" in captured.err
    assert f"restore {DB_NAME} from a backup copy" in captured.err
    if damage == "a link to a text file":
        assert f"a symbolic link to {str(tmp_path / 'notes.txt')!r}" in captured.err
    assert snapshot(tmp_path) == before  # nothing written, not even a -wal file


@pytest.mark.parametrize("command", ["runs", "train", "export", "resume"])
def test_a_store_database_that_is_a_directory_is_named_exit_2(tmp_path, capsys, command):
    runs = tmp_path / "runs"
    (runs / DB_NAME).mkdir(parents=True)
    argv = command_line(command, tmp_path, runs, "261201-000000-abcd")
    before = snapshot(tmp_path)
    assert cli.main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"keras-seq {command}: error: {str(runs / DB_NAME)!r} is a directory, not a run store "
        "database; it was left as it is: move it aside to start an empty store here, or use "
        "another directory\n"
    )
    assert snapshot(tmp_path) == before


def damage_rows(runs, ids):
    """The second run's metrics malformed JSON, the third's status one no keras_seq knows."""
    with sqlite3.connect(runs / DB_NAME) as conn:
        conn.execute("UPDATE runs SET metrics = '{oops' WHERE id = ?", (ids[1],))
        conn.execute("UPDATE runs SET status = 'exploded' WHERE id = ?", (ids[2],))
    conn.close()


def test_runs_with_unreadable_rows_are_named_and_the_rest_listed(tmp_path, capsys):
    runs = tmp_path / "runs"
    ids = make_store(runs)
    damage_rows(runs, ids)
    assert cli.main(["runs", "--runs", str(runs)]) == 0
    captured = capsys.readouterr()
    listed = [line.split()[0] for line in captured.out.splitlines()[1:]]
    assert listed == [ids[0]]
    path = str(runs / DB_NAME)
    assert captured.err.splitlines() == [
        f"keras-seq runs: warning: run {ids[1]!r} in {path!r} cannot be read: its metrics is "
        "not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2 "
        "(char 1)); the other runs are not affected: restore runs.sqlite from a backup copy "
        "to get this one back",
        f"keras-seq runs: warning: run {ids[2]!r} in {path!r} cannot be read: its status "
        "'exploded' is none of queued, running, done, failed, diverged, cancelled, "
        "interrupted, pruned; the other runs are not affected: restore runs.sqlite from a "
        "backup copy to get this one back",
    ]


ON_ONE_RUN = [["export", "{1}", "--format", "keras"], ["runs", "--compare", "{0}", "{1}"]]


@pytest.mark.parametrize("argv", [*ON_ONE_RUN, ["resume", "{2}"]])
def test_a_command_on_an_unreadable_run_is_one_line_naming_it_exit_2(tmp_path, capsys, argv):
    runs = tmp_path / "runs"
    ids = make_store(runs)
    damage_rows(runs, ids)
    argv = [arg.format(*ids) for arg in argv]
    assert cli.main([*argv, "--runs", str(runs)]) == 2
    captured = capsys.readouterr()
    bad = next(run_id for run_id in ids[1:] if run_id in argv)
    assert captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith(f"keras-seq {argv[0]}: error: run {bad!r} in ")
    assert "cannot be read" in captured.err


def test_the_store_leaves_unreadable_runs_out_of_lists_and_refuses_to_change_them(tmp_path):
    runs = tmp_path / "runs"
    ids = make_store(runs)
    damage_rows(runs, ids)
    with RunStore(runs) as store:
        assert [record.id for record in store.list_runs()] == ids[:1]
        assert [problem.split("'")[1] for problem in store.unreadable_runs()] == ids[1:]
        for run_id in ids[1:]:
            with pytest.raises(UnreadableRunError, match=run_id):
                store.get(run_id)
        with pytest.raises(UnreadableRunError, match="'exploded'"):
            store.set_status(ids[2], "running")
        with pytest.raises(UnreadableRunError, match=ids[1]):
            store.list_runs(ids=ids)
