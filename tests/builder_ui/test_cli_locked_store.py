"""A run store another process holds the write lock of (issue 42).

Reading (listing, comparing, exporting a `.keras` file) takes no write lock; a write that
cannot get the lock says so in one line, naming the store and who holds it. The lock is
held by a plain SQLite connection of this process (`BEGIN IMMEDIATE`, as any writer takes
it), and the store's wait is cut to half a second so that the tests stay quick.
"""

from __future__ import annotations

import os
import socket
import sqlite3

import pytest
import yaml

from builder_ui import cli
from builder_ui.engine import store_database
from builder_ui.engine.store import DB_NAME, RunStore
from tests.builder_ui.test_cli_engine import TINY as SPEC


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """A store of a done run (with a model file), a run still `running` in this process,
    and one left `running` by a process that died (its pid since reused by this one); its
    write lock held by another connection."""
    monkeypatch.setattr(store_database, "BUSY_TIMEOUT_S", 0.5)
    directory = tmp_path / "runs"
    with RunStore(directory) as store:
        done = store.create_run(SPEC, name="done", status="running")
        with store.atomic_artifact(done, "model.keras") as path:
            path.write_bytes(b"a model")
        store.finish(done, "done", metrics={"accuracy": 0.5})
        alive = store.create_run(SPEC, name="training", status="running")  # this process
        dead = store.create_run(SPEC, name="orphan", status="running")
        store.update(dead, pid=os.getpid(), host=socket.gethostname(), pid_started="1")
    holder = sqlite3.connect(directory / DB_NAME, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    yield {"dir": directory, "done": done, "alive": alive, "dead": dead}
    holder.execute("ROLLBACK")
    holder.close()


def test_listing_comparing_and_exporting_read_while_another_process_writes(runs, capsys):
    directory = str(runs["dir"])
    assert cli.main(["runs", "--runs", directory]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    listed = {line.split()[0]: line.split()[2] for line in captured.out.splitlines()[1:]}
    # The dead process's run is recovered by the next store that can write.
    assert listed == {runs["done"]: "done", runs["alive"]: "running", runs["dead"]: "running"}
    assert cli.main(["runs", "--runs", directory, "--compare", runs["done"], runs["alive"]]) == 0
    assert runs["alive"] in capsys.readouterr().out
    assert cli.main(["export", runs["done"], "--format", "keras", "--runs", directory]) == 0
    assert capsys.readouterr().out.strip().endswith(f"{runs['done']}/model.keras")


def test_a_write_that_cannot_get_the_lock_names_the_store_and_who_holds_it(runs, tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    path = str(runs["dir"] / DB_NAME)
    for argv in (["runs", "--star", runs["done"]], ["train", str(spec)]):
        assert cli.main([*argv, "--runs", str(runs["dir"])]) == 2
        captured = capsys.readouterr()
        assert captured.err == (
            f"keras-seq {argv[0]}: error: the run store database {path!r} is locked by "
            f"another writer (pid {os.getpid()} on this machine, which is training run "
            f"{runs['alive']}) and stayed locked for 0.5 s; nothing was written: try again "
            "when it is done\n"
        )
    with RunStore(runs["dir"], recover=False) as store:
        assert not store.get(runs["done"]).starred
        assert [record.name for record in store.list_runs()] == ["done", "training", "orphan"]
