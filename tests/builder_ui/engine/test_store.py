"""The run store: real SQLite in WAL mode, status rules, epochs, artifacts, recovery."""

from __future__ import annotations

import math
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from builder_ui.engine import artifacts, processes
from builder_ui.engine.records import new_run_id
from builder_ui.engine.store import DB_NAME, SCHEMA_VERSION, RunNotFoundError, RunStore, StatusError

SPEC = {
    "version": 1,
    "name": "tiny",
    "task": {"type": "long_lag", "lag": 5, "n": 100},
    "model": {"type": "sequence_classifier", "units": 4},
    "train": {"epochs": 2, "learning_rate": 0.01},
}


@pytest.fixture
def store(tmp_path):
    with RunStore(tmp_path / "runs") as store:
        yield store


def test_a_new_store_writes_nothing_until_its_first_run(tmp_path):
    with RunStore(tmp_path / "runs") as store:
        assert store.list_runs() == [] and not store.exists("x")
        with pytest.raises(RunNotFoundError):
            store.get("261201-000000-abcd")
        assert store.schema_version == SCHEMA_VERSION
    assert not (tmp_path / "runs").exists()


def test_new_store_is_wal_with_schema_version(tmp_path):
    with RunStore(tmp_path / "runs") as store:
        store.create_run(SPEC)
        assert (tmp_path / "runs" / DB_NAME).is_file()
        assert store.journal_mode == "wal"
        assert store.schema_version == SCHEMA_VERSION
    # Checked with a plain sqlite3 connection, not through the store.
    conn = sqlite3.connect(tmp_path / "runs" / DB_NAME)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"runs", "epochs", "schema_version"} <= tables
    conn.close()


def test_store_written_by_a_newer_version_is_refused(tmp_path):
    with RunStore(tmp_path) as store:
        store.create_run(SPEC)
    conn = sqlite3.connect(tmp_path / DB_NAME)
    conn.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(RuntimeError, match="newer"):
        RunStore(tmp_path)


def test_run_ids_are_short_sortable_and_safe():
    first = new_run_id()
    time.sleep(1.05)
    second = new_run_id()
    assert len(first) == 18 and first < second
    assert first[:13] != second[:13]


def test_create_get_and_list_with_filters(store):
    a = store.create_run(SPEC)
    b = store.create_run(SPEC, name="other", sweep_id="sweep-1")
    c = store.create_run({**SPEC, "name": "third"}, sweep_id="sweep-1")
    record = store.get(a)
    assert record.name == "tiny" and record.status == "queued"
    assert record.spec == SPEC and record.sweep_id is None
    assert record.created <= time.time() and record.started is None
    assert [r.id for r in store.list_runs()] == [a, b, c]
    assert [r.id for r in store.list_runs(sweep_id="sweep-1")] == [b, c]
    assert [r.id for r in store.list_runs(name="other")] == [b]
    assert [r.id for r in store.list_runs(ids=[c, a])] == [c, a]
    assert store.list_runs(ids=[]) == []
    store.set_status(b, "running")
    assert [r.id for r in store.list_runs(status="running")] == [b]
    assert [r.id for r in store.list_runs(status=["queued", "running"])] == [a, b, c]
    assert [r.id for r in store.list_runs(limit=2)] == [b, c]
    with pytest.raises(RunNotFoundError, match="nope"):
        store.get("nope")
    with pytest.raises(ValueError, match="`status`"):
        store.list_runs(status="finished")


def test_bad_arguments_are_refused_with_the_value(store):
    with pytest.raises(ValueError, match=r"`run_id`.*'\.\./escape'"):
        store.create_run(SPEC, run_id="../escape")
    with pytest.raises(ValueError, match=r"`status`.*'done'"):
        store.create_run(SPEC, status="done")
    with pytest.raises(ValueError, match="`spec`"):
        store.create_run(["not", "a", "spec"])
    run_id = store.create_run(SPEC)
    with pytest.raises(ValueError, match="not yet in the store"):
        store.create_run(SPEC, run_id=run_id)
    with pytest.raises(ValueError, match=r"`fields`.*'status'"):
        store.update(run_id, status="done")
    with pytest.raises(ValueError, match=r"`epoch`.*got 0"):
        store.append_epoch(run_id, 0, {"loss": 1.0})
    with pytest.raises(ValueError, match="inside the run's directory"):
        with store.atomic_artifact(run_id, "../../outside.txt"):
            pass
    assert len(store.list_runs()) == 1


def test_status_transitions(store):
    run_id = store.create_run(SPEC)
    with pytest.raises(StatusError, match="'queued' and cannot become 'done'"):
        store.set_status(run_id, "done")
    store.set_status(run_id, "running", backend="tensorflow", device="CPU", params=12)
    record = store.get(run_id)
    assert record.status == "running" and record.started is not None
    assert (record.backend, record.device, record.params) == ("tensorflow", "CPU", 12)
    assert record.pid == __import__("os").getpid() and record.host
    store.set_status(run_id, "interrupted", error="killed")
    assert store.get(run_id).error == "killed"
    store.set_status(run_id, "running")  # resumed
    assert store.get(run_id).error is None
    record = store.finish(run_id, "done", metrics={"accuracy": 0.75}, wall_time=3.5)
    assert record.status == "done" and record.finished >= record.started
    assert record.metrics == {"accuracy": 0.75} and record.wall_time == 3.5
    for status in ("running", "failed", "interrupted", "queued"):
        with pytest.raises(StatusError, match="final"):
            store.set_status(run_id, status)


def test_run_counts_count_every_run_and_those_neither_queued_nor_running(store):
    assert store.run_counts() == (0, 0)
    _waiting, training, ended, stopped = (store.create_run(SPEC) for _ in range(4))
    store.set_status(training, "running")
    store.set_status(ended, "running")
    store.finish(ended, "done")
    store.set_status(stopped, "running")
    store.set_status(stopped, "interrupted", error="killed")
    assert store.run_counts() == (4, 2)  # the done and the interrupted run
    store.delete(ended)
    assert store.run_counts() == (3, 1)


def test_epochs_are_recorded_in_order_and_replaced_when_run_again(store):
    run_id = store.create_run(SPEC, status="running")
    store.append_epoch(run_id, 2, {"loss": 0.5, "val_loss": 0.6}, seconds=1.0)
    store.append_epoch(run_id, 1, {"loss": 0.9, "val_loss": float("nan")})
    store.append_epoch(run_id, 2, {"loss": 0.4, "val_loss": 0.55})
    history = store.get(run_id).history
    assert [row.epoch for row in history] == [1, 2]
    assert history[0].metrics == {"loss": 0.9, "val_loss": None}  # NaN is stored as null
    assert history[1].metrics == {"loss": 0.4, "val_loss": 0.55}
    epochs, values = store.get(run_id).curve("val_loss")
    assert epochs == [1, 2] and math.isnan(values[0]) and values[1] == 0.55


def test_artifacts_are_renamed_into_place_and_deleted_with_the_run(store):
    run_id = store.create_run(SPEC)
    target = store.artifact_dir(run_id) / "notes.txt"
    with store.atomic_artifact(run_id, "notes.txt") as path:
        assert path.parent == target.parent and path != target
        path.write_text("hello")
        assert not target.exists()  # nothing at the final name before the rename
    assert target.read_text() == "hello"
    assert store.get(run_id).artifacts == {"notes.txt": f"{run_id}/notes.txt"}
    assert artifacts.artifact_path(store, run_id, "notes.txt") == target

    with pytest.raises(RuntimeError, match="boom"):
        with store.atomic_artifact(run_id, "notes.txt") as path:
            path.write_text("half")
            raise RuntimeError("boom")
    assert target.read_text() == "hello"  # the failed write left the old file alone
    assert sorted(p.name for p in target.parent.iterdir()) == ["notes.txt"]

    with store.atomic_artifact(run_id, "saved") as path:  # a directory artifact
        path.mkdir()
        (path / "a").write_text("1")
    with store.atomic_artifact(run_id, "saved") as path:
        path.mkdir()
        (path / "b").write_text("2")
    assert sorted(p.name for p in (target.parent / "saved").iterdir()) == ["b"]

    store.append_epoch(run_id, 1, {"loss": 1.0})
    store.delete(run_id)
    assert not store.exists(run_id) and not target.parent.exists()
    conn = sqlite3.connect(store.path)
    assert conn.execute("SELECT COUNT(*) FROM epochs").fetchone()[0] == 0
    conn.close()


def test_reader_sees_epochs_while_a_writer_thread_writes(store):
    run_id = store.create_run(SPEC, status="running")
    epochs = 100
    errors = []
    # A second store object on the same directory reads as the app would.
    reader = RunStore(store.directory, recover=False)
    reader.history(run_id)  # its connection is open before the writer starts

    def write():
        try:
            for epoch in range(1, epochs + 1):
                store.append_epoch(run_id, epoch, {"loss": 1.0 / epoch})
                time.sleep(0.002)  # an epoch takes a while
        except Exception as error:  # reported below
            errors.append(error)

    writer = threading.Thread(target=write)
    writer.start()
    seen = []
    while writer.is_alive():
        history = reader.history(run_id)
        # Every read sees a consistent prefix: epochs 1..k, nothing half-written.
        assert [row.epoch for row in history] == list(range(1, len(history) + 1))
        seen.append(len(history))
    writer.join()
    seen.append(len(reader.history(run_id)))
    reader.close()
    assert not errors
    assert seen[-1] == epochs
    assert seen == sorted(seen)  # never goes backwards
    assert len(set(seen)) > 10  # the reader saw the run grow while it was written


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.mark.large
def test_running_runs_of_dead_processes_become_interrupted_on_open(tmp_path):
    with RunStore(tmp_path) as store:
        dead = store.create_run(SPEC, status="running")
        alive = store.create_run(SPEC, status="running")
        reused = store.create_run(SPEC, status="running")
        queued = store.create_run(SPEC)
        store.append_epoch(dead, 1, {"loss": 0.7})
        pid = _dead_pid()
        assert not processes.alive(pid)
        store.update(dead, pid=pid)
        # Our own pid, but a start time that is not ours: the pid was reused.
        store.update(reused, pid_started="1")
    with RunStore(tmp_path) as store:
        assert store.get(dead).status == "interrupted"
        assert f"pid {pid}" in store.get(dead).error
        assert store.get(dead).history[0].metrics == {"loss": 0.7}
        assert store.get(alive).status == "running"
        assert store.get(queued).status == "queued"
        if sys.platform.startswith("linux"):
            assert store.get(reused).status == "interrupted"
        with pytest.raises(StatusError, match="cancel it"):
            store.delete(alive)


def test_a_full_database_is_one_line_naming_it_and_the_change_is_rolled_back(store):
    """SQLite's own "database or disk is full" (SQLITE_FULL), reached here by capping the
    file's pages (`PRAGMA max_page_count`) as a full disk caps it: the store says which file
    and what to do, keeps every row as it was, and writes again once there is room."""
    from builder_ui.engine.store import StoreFullError

    run_id = store.create_run(SPEC)
    store.append_epoch(run_id, 1, {"loss": 1.0})
    connection = store._connect()  # this thread's: the one the writes below use
    pages = connection.execute("PRAGMA page_count").fetchone()[0]
    connection.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(StoreFullError) as caught:
        store.set_note(run_id, "a note longer than a page " * 380)  # 9,880 characters
    assert str(caught.value) == (
        f"no space left to write the run store database {str(store.path)!r} (database or "
        "disk is full); that change was not written: free some space on its disk and try again"
    )
    record = store.get(run_id)
    assert record.note == "" and [row.epoch for row in record.history] == [1]
    connection.execute(f"PRAGMA max_page_count = {2**30}")  # room again
    store.set_note(run_id, "written")
    assert store.get(run_id).note == "written"


def test_the_revision_changes_with_every_commit_by_any_thread_or_connection(tmp_path):
    """`revision` is what a reader may keep its reads by: the same while nothing is
    committed, new after a commit by this thread, another thread or another connection
    (a plain sqlite3 one, as another process has)."""
    with RunStore(tmp_path / "runs") as store:
        assert store.revision() is None  # no database yet: nothing to keep
        run_id = store.create_run(SPEC)
        first = store.revision()
        assert store.revision() == first  # reading changes nothing
        store.set_status(run_id, "running")
        by_this_thread = store.revision()
        assert by_this_thread != first
        writer = threading.Thread(target=store.set_note, args=(run_id, "a note"))
        writer.start()
        writer.join()
        by_another_thread = store.revision()
        assert by_another_thread != by_this_thread
        other = sqlite3.connect(tmp_path / "runs" / DB_NAME, isolation_level=None)
        other.execute("UPDATE runs SET starred = 1 WHERE id = ?", (run_id,))
        other.close()
        assert store.revision() != by_another_thread
        assert store.get(run_id).starred
