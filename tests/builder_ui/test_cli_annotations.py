"""`keras-seq runs` names, tags, notes, stars, archives and deletes runs in the store.

A real run store written through `RunStore`'s API, changed by `cli.main` as a person
runs it, and read back from the same SQLite file.
"""

from __future__ import annotations

import pytest

from builder_ui import cli
from builder_ui.engine.store import RunStore
from tests.app.compare_runs import record_runs


@pytest.fixture
def runs(tmp_path):
    """Three finished runs, one with a file in its folder, and one queued run."""
    directory = tmp_path / "runs"
    with RunStore(directory) as store:
        ids = record_runs(store, 3, epochs=1)
        with store.atomic_artifact(ids[0], "model.keras") as path:
            path.write_text("weights")
        queued = store.create_run(store.get(ids[0]).spec, name="waiting")
    return directory, [*ids, queued]


def runs_cli(directory, *argv: str) -> int:
    return cli.main(["runs", "--runs", str(directory), *argv])


def record(directory, run_id):
    with RunStore(directory) as store:
        return store.get(run_id, history=False)


def test_tags_notes_stars_and_names_are_set_from_the_command_line(runs, capsys):
    directory, (first, second, third, _) = runs
    assert runs_cli(directory, "--add-tag", first, "baseline", "lstm") == 0
    assert capsys.readouterr().out.strip() == f"run {first}: tags baseline, lstm"
    assert runs_cli(directory, "--remove-tag", first, "lstm") == 0
    assert runs_cli(directory, "--note", second, "lr too high") == 0
    assert runs_cli(directory, "--star", second) == 0
    assert runs_cli(directory, "--rename", third, "best so far") == 0
    assert record(directory, first).tags == ("baseline",)
    assert record(directory, second).note == "lr too high" and record(directory, second).starred
    assert record(directory, third).name == "best so far"
    capsys.readouterr()
    assert runs_cli(directory, "--tag", "baseline") == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2 and first in lines[1] and "baseline" in lines[1]
    assert "★" in lines[0].split() and "tags" in lines[0].split()


def test_archived_runs_are_hidden_from_the_list_unless_asked_for(runs, capsys):
    directory, (first, second, *_) = runs
    assert runs_cli(directory, "--archive", first) == 0
    capsys.readouterr()
    assert runs_cli(directory) == 0
    listed = capsys.readouterr().out
    assert first not in listed and second in listed
    assert runs_cli(directory, "--archived") == 0
    assert first in capsys.readouterr().out
    assert runs_cli(directory, "--unarchive", first) == 0
    assert not record(directory, first).archived


def test_delete_asks_for_yes_then_removes_the_run_and_its_folder(runs, capsys):
    directory, (first, second, *_) = runs
    folder = directory / first
    assert (folder / "model.keras").is_file()
    assert runs_cli(directory, "--delete", first) == 2  # no terminal to ask: needs --yes
    error = capsys.readouterr().err
    assert "needs --yes" in error and first in error and len(error.strip().splitlines()) == 1
    assert folder.is_dir() and record(directory, first).id == first
    assert runs_cli(directory, "--delete", first, "--yes") == 0
    assert not folder.exists()
    with RunStore(directory) as store:
        assert not store.exists(first) and store.exists(second)


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["--add-tag", "{run}", "two words"], "'two words'"),
        (["--note", "{run}", "x" * 10_001], "`note`"),
        (["--rename", "{run}", " "], "`name`"),
        (["--star", "no-such-run"], "'no-such-run'"),
        (["--delete", "{queued}", "--yes"], "is queued"),
        (["--add-tag", "{run}"], "expects RUN TAG"),
        (["--star", "{run}", "--yes"], "--yes only confirms --delete"),
    ],
)
def test_refused_edits_exit_2_with_one_line_and_change_nothing(runs, capsys, argv, named):
    directory, ids = runs
    run, queued = ids[0], ids[-1]
    before = [record(directory, run_id) for run_id in ids]
    argv = [arg.format(run=run, queued=queued) for arg in argv]
    assert runs_cli(directory, *argv) == 2
    error = capsys.readouterr().err.strip()
    assert named in error and len(error.splitlines()) == 1 and len(error) < 400
    assert [record(directory, run_id) for run_id in ids] == before
    assert (directory / run / "model.keras").is_file()


def test_two_edits_in_one_call_are_refused_by_the_parser(runs, capsys):
    directory, (first, *_) = runs
    with pytest.raises(SystemExit) as caught:
        runs_cli(directory, "--star", first, "--archive", first)
    assert caught.value.code == 2
    assert "not allowed with" in capsys.readouterr().err
    assert not record(directory, first).starred
