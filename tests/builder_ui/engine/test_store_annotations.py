"""What a person says about a run: name, tags, note, star, archive, delete; old stores migrate.

Real SQLite stores in a temporary directory; the old-layout database is made with the
CREATE statements of the first release, copied here as they were.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from builder_ui.engine.records import MAX_NOTE_LENGTH, MAX_TAGS_PER_RUN
from builder_ui.engine.store import DB_NAME, RunNotFoundError, RunStore, StatusError
from tests.builder_ui.engine.test_store import SPEC

# The run store's tables as the first release made them (before tags, notes, stars).
OLD_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE runs (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, sweep_id TEXT, spec TEXT NOT NULL,
    status TEXT NOT NULL, created REAL NOT NULL, started REAL, finished REAL, backend TEXT,
    device TEXT, precision TEXT, params INTEGER, metrics TEXT NOT NULL DEFAULT '{}',
    wall_time REAL, examples_per_sec REAL, artifacts TEXT NOT NULL DEFAULT '{}', error TEXT,
    pid INTEGER, host TEXT, pid_started TEXT
);
CREATE INDEX runs_status ON runs (status);
CREATE INDEX runs_sweep ON runs (sweep_id);
CREATE TABLE epochs (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE, epoch INTEGER NOT NULL,
    metrics TEXT NOT NULL, time REAL NOT NULL, seconds REAL, PRIMARY KEY (run_id, epoch)
);
INSERT INTO schema_version (version) VALUES (1);
"""


@pytest.fixture
def store(tmp_path):
    with RunStore(tmp_path / "runs") as store:
        yield store


def _old_store(directory) -> None:
    """A store as the first release wrote it: one finished run with two epochs."""
    directory.mkdir(parents=True)
    conn = sqlite3.connect(directory / DB_NAME)
    conn.executescript(OLD_SCHEMA)
    conn.execute(
        "INSERT INTO runs (id, name, spec, status, created, metrics) VALUES (?, ?, ?, ?, ?, ?)",
        ("250101-000000-aaaa", "old", json.dumps(SPEC), "done", 1.0, '{"accuracy": 0.75}'),
    )
    for epoch in (1, 2):
        conn.execute(
            "INSERT INTO epochs (run_id, epoch, metrics, time) VALUES (?, ?, ?, ?)",
            ("250101-000000-aaaa", epoch, json.dumps({"loss": 1.0 / epoch}), 1.0 + epoch),
        )
    conn.commit()
    conn.close()


def test_a_store_made_by_an_older_version_opens_keeps_its_runs_and_takes_annotations(tmp_path):
    _old_store(tmp_path / "runs")
    with RunStore(tmp_path / "runs") as store:
        record = store.get("250101-000000-aaaa")
        assert (record.name, record.status, record.metrics) == ("old", "done", {"accuracy": 0.75})
        assert [row.epoch for row in record.history] == [1, 2]
        assert (record.tags, record.note, record.starred, record.archived) == ((), "", False, False)
        store.add_tags(record.id, ["baseline"])
        store.set_note(record.id, "first try")
        store.set_starred(record.id)
        new = store.create_run(SPEC, name="new")
    with RunStore(tmp_path / "runs") as store:  # and opens again, migrated once
        assert store.get("250101-000000-aaaa").tags == ("baseline",)
        assert store.get("250101-000000-aaaa").note == "first try"
        assert [r.id for r in store.list_runs()] == ["250101-000000-aaaa", new]


def test_tags_notes_stars_and_archive_are_stored_and_filter_the_list(store):
    first, second, third = (store.create_run(SPEC, name=f"run{i}") for i in range(3))
    assert store.add_tags(first, ["lstm", "baseline", "lstm"]) == ("baseline", "lstm")
    store.add_tags(second, "lstm")
    assert store.remove_tags(first, ["baseline", "never-had"]) == ("lstm",)
    store.set_note(second, "lr too high?\nTry 1e-3.")
    store.set_starred(second)
    store.set_archived(third)
    store.rename(first, "  the baseline  ")
    assert [r.id for r in store.list_runs(tag="lstm")] == [first, second]
    assert [r.id for r in store.list_runs(archived=False)] == [first, second]
    assert [r.id for r in store.list_runs(archived=True)] == [third]
    assert store.all_tags() == ["lstm"]
    record = store.get(second)
    assert (record.tags, record.note, record.starred) == (
        ("lstm",),
        "lr too high?\nTry 1e-3.",
        True,
    )
    assert store.get(first).name == "the baseline"
    store.set_starred(second, False)
    store.set_archived(third, False)
    assert not store.get(second).starred and not store.get(third).archived


@pytest.mark.parametrize(
    ("call", "field", "value"),
    [
        (lambda s, r: s.add_tags(r, ["ok", "two words"]), "`tag`", "'two words'"),
        (lambda s, r: s.add_tags(r, ["x" * 41]), "`tag`", "'xxxx"),
        (lambda s, r: s.add_tags(r, ["-lead"]), "`tag`", "'-lead'"),
        (lambda s, r: s.rename(r, "  "), "`name`", "'  '"),
        (lambda s, r: s.rename(r, "two\nlines"), "`name`", "'two\\nlines'"),
        (lambda s, r: s.set_note(r, "n" * (MAX_NOTE_LENGTH + 1)), "`note`", "10,001 characters"),
    ],
)
def test_bad_annotations_are_refused_naming_the_field_and_value_and_change_nothing(
    store, call, field, value
):
    run_id = store.create_run(SPEC, name="kept")
    store.set_note(run_id, "before")
    with pytest.raises(ValueError, match="invalid value") as caught:
        call(store, run_id)
    assert field in str(caught.value) and value in str(caught.value)
    assert len(str(caught.value)) < 300  # a 10,001-character note is not echoed back whole
    record = store.get(run_id)
    assert (record.name, record.tags, record.note) == ("kept", (), "before")


def test_too_many_tags_are_refused_whole(store):
    run_id = store.create_run(SPEC)
    store.add_tags(run_id, [f"t{i}" for i in range(MAX_TAGS_PER_RUN - 1)])
    with pytest.raises(ValueError, match=f"at most {MAX_TAGS_PER_RUN} tags"):
        store.add_tags(run_id, ["a", "b"])
    assert len(store.get(run_id).tags) == MAX_TAGS_PER_RUN - 1


def test_annotating_an_unknown_run_names_it(store):
    store.create_run(SPEC)
    for call in (
        lambda: store.add_tags("nope", ["a"]),
        lambda: store.set_note("nope", "x"),
        lambda: store.set_starred("nope"),
        lambda: store.rename("nope", "x"),
    ):
        with pytest.raises(RunNotFoundError, match="'nope'"):
            call()


def test_deleting_removes_the_run_its_epochs_tags_and_folder_and_nothing_outside(store, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_text("keep me")
    run_id = store.create_run(SPEC)
    store.set_status(run_id, "running")
    store.append_epoch(run_id, 1, {"loss": 1.0})
    store.finish(run_id, "done")
    store.add_tags(run_id, ["gone"])
    with store.atomic_artifact(run_id, "model.keras") as path:
        path.write_text("weights")
    # A link inside the run's folder to a folder outside the store: unlinked, not followed.
    (store.artifact_dir(run_id) / "link").symlink_to(outside, target_is_directory=True)
    kept = store.create_run(SPEC)
    store.delete(run_id, allow_queued=False)
    assert not store.exists(run_id) and not store.artifact_dir(run_id).exists()
    assert (outside / "precious.txt").read_text() == "keep me"
    assert store.exists(kept) and store.all_tags() == []
    conn = sqlite3.connect(store.path)
    assert conn.execute("SELECT COUNT(*) FROM epochs").fetchone()[0] == 0
    conn.close()
    assert sorted(p.name for p in store.directory.iterdir() if not p.name.startswith(DB_NAME)) == []


def test_deleting_a_queued_or_running_run_is_refused_with_the_reason(store):
    queued = store.create_run(SPEC)
    running = store.create_run(SPEC, status="running")  # this process: alive
    with pytest.raises(StatusError, match=r"is queued .*cancel it before deleting it"):
        store.delete(queued, allow_queued=False)
    with pytest.raises(StatusError, match=r"is running .*cancel it before deleting it"):
        store.delete(running, allow_queued=False)
    assert store.exists(queued) and store.exists(running)
