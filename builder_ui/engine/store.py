"""The run store: every experiment run, its history and its artifacts.

A store is a directory::

    runs/
      runs.sqlite            one row per run, one row per finished epoch, one per sweep
      250312-180102-a1b2/    the artifacts of one run (model.keras, backup/, ...)

The database is SQLite in WAL mode, so the app can read while a run writes
from another thread or another process; each thread (and each process) gets
its own connection. Writes are short transactions, and each epoch is written
as it ends: a process killed mid-run loses nothing already recorded. When a
store is opened, runs whose process has died while `running` are marked
`interrupted` (see `RunStore.recover_interrupted`); the engine can resume them.
A database SQLite cannot use (damaged, not a database, a directory) raises a
`StoreError` that names the file and says what to do, and nothing is written; a
run whose row cannot be read is left out of lists (`RunStore.unreadable_runs`).
A store on a read-only file system (or without write permission) is read, and
any change raises `ReadOnlyStoreError`; a write that waits `BUSY_TIMEOUT_S` for
another writer's lock raises `StoreLockedError`, naming who holds it.

A run moves through these states::

    queued ──▶ running ──▶ done | failed | diverged | cancelled | pruned
                  │  ▲
                  ▼  │ (resume)
              interrupted

`pruned`: a sweep's scheduler stopped the run at an epoch boundary (a weak
trial); its finished epochs are kept, no model is saved.

The trials of a sweep share its `sweep_id`; the sweep's own spec (with its
`sweep:` section) is kept beside them (`RunStore.record_sweep`), so that a
stopped search can be continued: `keras-seq resume` replays its trials into a
new study and asks for the ones it never chose (`builder_ui.engine.search`).

Artifacts are written to a temporary name in the run's directory and renamed
into place (`RunStore.atomic_artifact`), so a reader never sees half a file.

`RunStore` is the runs' lifecycle (create, status, epochs, finish, artifacts, delete,
recovery) over its bases, one module each: `store_database` (connections, schema, errors),
`store_marks` (name, tags, note, star, archive) and `store_queries` (sweeps, the views'
counts and curves); `store_rows` reads a row back and writes its JSON, `store_schema` holds
the tables and their migrations, `store_errors` the errors.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from builder_ui import files
from builder_ui.engine import processes, store_rows
from builder_ui.engine.records import (
    FINAL_STATUSES,
    TRANSITIONS,
    EpochRecord,
    RunRecord,
    check_run_id,
    check_status,
    new_run_id,
)
from builder_ui.engine.store_database import BUSY_TIMEOUT_S, StoreDatabase
from builder_ui.engine.store_errors import (
    ReadOnlyStoreError,
    RunNotFoundError,
    StatusError,
    StoreError,
    StoreFullError,
    StoreLockedError,
    UnreadableRunError,
)
from builder_ui.engine.store_marks import StoreMarks
from builder_ui.engine.store_queries import StoreQueries
from builder_ui.engine.store_rows import clean_metrics, dumps, spec_to_dict
from builder_ui.engine.store_schema import DB_NAME, SCHEMA_VERSION

# Columns `RunStore.update` may set, and whether they hold JSON.
_UPDATABLE = {
    "name": False,
    "sweep_id": False,
    "started": False,
    "finished": False,
    "backend": False,
    "device": False,
    "precision": False,
    "params": False,
    "metrics": True,
    "wall_time": False,
    "examples_per_sec": False,
    "error": False,
    "pid": False,
    "host": False,
    "pid_started": False,
}


class RunStore(StoreDatabase, StoreMarks, StoreQueries):
    """Runs and their artifacts in a directory: `runs.sqlite` plus one folder per run.

    Safe to share between threads (each gets its own connection) and between
    processes (SQLite WAL mode and a busy timeout). Opening a store marks runs
    left `running` by a dead process as `interrupted`.

    Nothing is written until a run is: a store over a directory that holds no
    `runs.sqlite` reads as empty, and the directory and the database are made
    by the first write (`create_run`), so a refused spec leaves no trace.

    Args:
        directory: Where the database and the artifacts live; made when the
            first run is created.
        recover: Call `recover_interrupted()` on open. Default True.

    Example:

    >>> store = RunStore("runs")
    >>> run_id = store.create_run(spec, name="lstm")
    >>> store.get(run_id).status
    'queued'
    """

    def __init__(self, directory: str | os.PathLike, *, recover: bool = True):
        self.directory = Path(directory)
        if self.directory.exists() and not self.directory.is_dir():
            raise ValueError(
                "Received an invalid value for argument `directory`, expected a directory, "
                f"got the file {str(self.directory)!r}."
            )
        self.path = self.directory / DB_NAME
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        # The connection `revision` reads (it never writes), with the pid that opened it.
        self._watch: tuple[sqlite3.Connection, int] | None = None
        self._watch_lock = threading.Lock()
        self._connections_lock = threading.Lock()
        self._created = False
        self._read_only: str | None = None  # why it is, once the database is opened
        if self.path.is_dir():
            raise StoreError(
                f"{str(self.path)!r} is a directory, not a run store database; it was left as "
                "it is: move it aside to start an empty store here, or use another directory"
            )
        if self.path.exists():
            try:
                self._open_existing()
                if recover:
                    self.recover_interrupted(wait=False)
            except BaseException:
                self.close()
                raise

    # -- connections ---------------------------------------------------------

    # -- runs ----------------------------------------------------------------

    def create_run(
        self,
        spec: Any,
        name: str | None = None,
        sweep_id: str | None = None,
        status: str = "queued",
        run_id: str | None = None,
    ) -> str:
        """Record a new run and return its id.

        Args:
            spec: An `ExperimentSpec` or its dict form.
            name: Name of the run; defaults to the spec's `name`.
            sweep_id: The sweep it belongs to, if any.
            status: `"queued"` (default) or `"running"`.
            run_id: Use this id instead of a new one.
        """
        spec_dict = spec_to_dict(spec)
        if name is None:
            name = spec_dict.get("name") or "run"
        if not isinstance(name, str) or not name:
            raise ValueError(
                f"Received an invalid value for argument `name`, expected a non-empty string, "
                f"got {name!r}."
            )
        if status not in ("queued", "running"):
            raise ValueError(
                "Received an invalid value for argument `status`, expected 'queued' or "
                f"'running', got {status!r}."
            )
        if sweep_id is not None:
            check_run_id(sweep_id)
        generated = run_id is None
        run_id = new_run_id() if generated else check_run_id(run_id)
        now = time.time()
        extra = processes.this_process() if status == "running" else {}
        with self._write() as conn:
            while conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone():
                if not generated:
                    raise ValueError(
                        f"Received an invalid value for argument `run_id`, expected an id not "
                        f"yet in the store, got {run_id!r}."
                    )
                run_id = new_run_id()
            conn.execute(
                "INSERT INTO runs (id, name, sweep_id, spec, status, created, started, pid, host,"
                " pid_started) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    name,
                    sweep_id,
                    dumps(spec_dict),
                    status,
                    now,
                    now if status == "running" else None,
                    extra.get("pid"),
                    extra.get("host"),
                    extra.get("pid_started"),
                ),
            )
        return run_id

    def get(self, run_id: str, *, history: bool = True) -> RunRecord:
        """The record of one run (with its epoch history unless `history=False`).

        Raises:
            RunNotFoundError: No such run.
            UnreadableRunError: Its row cannot be read (malformed JSON, an unknown status).
        """
        rows = self._read("SELECT * FROM runs WHERE id = ?", (run_id,))
        if not rows:
            raise RunNotFoundError(f"No run with id {run_id!r} in {str(self.directory)!r}.")
        return store_rows.run_record(
            rows[0],
            self.history(run_id) if history else (),
            self._tags([run_id]).get(run_id, ()),
            database=self.path,
        )

    def _tags(self, run_ids: list[str] | None = None) -> dict[str, tuple[str, ...]]:
        """Run id -> its tags, sorted, for `run_ids` (None: every run), in one query."""
        query, params = "SELECT run_id, tag FROM tags", []
        if run_ids is not None:
            if not run_ids:
                return {}
            query += f" WHERE run_id IN ({', '.join('?' * len(run_ids))})"
            params = list(run_ids)
        tags: dict[str, list[str]] = {}
        for run_id, tag in self._read(query + " ORDER BY tag", params):
            tags.setdefault(run_id, []).append(tag)
        return {run_id: tuple(values) for run_id, values in tags.items()}

    def exists(self, run_id: str) -> bool:
        return bool(self._read("SELECT 1 FROM runs WHERE id = ?", (run_id,)))

    def history(self, run_id: str) -> tuple[EpochRecord, ...]:
        """The recorded epochs of a run, in order (`UnreadableRunError` if one cannot be read)."""
        rows = self._read(
            "SELECT epoch, metrics, time, seconds FROM epochs WHERE run_id = ? ORDER BY epoch",
            (run_id,),
        )
        return tuple(
            EpochRecord(
                row["epoch"],
                store_rows.json_object(
                    run_id, row["metrics"], f"epoch {row['epoch']}'s metrics", database=self.path
                ),
                row["time"],
                row["seconds"],
            )
            for row in rows
        )

    def list_runs(
        self,
        *,
        status: str | Iterable[str] | None = None,
        name: str | None = None,
        sweep_id: str | None = None,
        ids: Iterable[str] | None = None,
        history: bool = False,
        limit: int | None = None,
        tag: str | None = None,
        archived: bool | None = None,
    ) -> list[RunRecord]:
        """Runs matching every filter given, oldest first.

        A run whose row cannot be read (malformed JSON, an unknown status) is left out,
        and `unreadable_runs` says why; one of the `ids` given raises `UnreadableRunError`.

        Args:
            status: One status or several.
            name: Exact run name.
            sweep_id: Runs of this sweep.
            ids: Only these run ids (in this order if given).
            history: Also load each run's epochs (slower for many runs).
            limit: At most this many (the newest ones).
            tag: Runs with this tag.
            archived: True for archived runs only, False for the others, None for all.
        """
        clauses, params = [], []
        if status is not None:
            statuses = [status] if isinstance(status, str) else list(status)
            for one in statuses:
                check_status(one)
            clauses.append(f"status IN ({', '.join('?' * len(statuses))})")
            params += statuses
        if name is not None:
            clauses.append("name = ?")
            params.append(name)
        if sweep_id is not None:
            clauses.append("sweep_id = ?")
            params.append(sweep_id)
        id_list = None
        if ids is not None:
            id_list = [ids] if isinstance(ids, str) else list(ids)
            if not id_list:
                return []
            clauses.append(f"id IN ({', '.join('?' * len(id_list))})")
            params += id_list
        if tag is not None:
            clauses.append("id IN (SELECT run_id FROM tags WHERE tag = ?)")
            params.append(tag)
        if archived is not None:
            clauses.append("archived = ?")
            params.append(int(bool(archived)))
        query = "SELECT * FROM runs"
        if clauses:
            query += " WHERE " + " AND ".join(clauses)
        query += " ORDER BY created, id"
        rows = self._read(query, params)
        if limit is not None:
            rows = rows[-limit:] if limit > 0 else []
        tags = self._tags(id_list)
        records = []
        for row in rows:
            try:
                epochs = self.history(row["id"]) if history else ()
                records.append(
                    store_rows.run_record(row, epochs, tags.get(row["id"], ()), database=self.path)
                )
            except UnreadableRunError:
                if id_list is not None:
                    raise
        if id_list is not None:
            order = {run_id: i for i, run_id in enumerate(id_list)}
            records.sort(key=lambda record: order[record.id])
        return records

    def unreadable_runs(self) -> list[str]:
        """Why each run `list_runs` leaves out cannot be read: one line a run, oldest first."""
        problems = []
        for row in self._read("SELECT * FROM runs ORDER BY created, id"):
            try:
                store_rows.run_record(row, (), database=self.path)
            except UnreadableRunError as error:
                problems.append(str(error))
        return problems

    # -- changes -------------------------------------------------------------

    def update(self, run_id: str, **fields: Any) -> None:
        """Set run fields other than the status (e.g. `device="CPU", params=1234`)."""
        unknown = sorted(set(fields) - set(_UPDATABLE))
        if unknown:
            raise ValueError(
                f"Received an invalid value for argument `fields`, expected names from "
                f"{sorted(_UPDATABLE)}, got {unknown}."
            )
        if not fields:
            return
        values = [
            dumps(clean_metrics(value)) if _UPDATABLE[key] else value
            for key, value in fields.items()
        ]
        assignments = ", ".join(f"{key} = ?" for key in fields)
        with self._write() as conn:
            cursor = conn.execute(f"UPDATE runs SET {assignments} WHERE id = ?", [*values, run_id])
            if cursor.rowcount == 0:
                raise RunNotFoundError(f"No run with id {run_id!r} in {str(self.directory)!r}.")

    def set_status(self, run_id: str, status: str, *, error: str | None = None, **fields: Any):
        """Move a run to `status`, if its current status allows it (see `TRANSITIONS`).

        Moving to `running` records this process (pid, host) and the start
        time; moving to a final status records the finish time. Other `fields`
        are set in the same transaction.

        Raises:
            StatusError: The move is not allowed (e.g. `done` → `running`).
        """
        check_status(status)
        unknown = sorted(set(fields) - set(_UPDATABLE))
        if unknown:
            raise ValueError(
                f"Received an invalid value for argument `fields`, expected names from "
                f"{sorted(_UPDATABLE)}, got {unknown}."
            )
        now = time.time()
        if status == "running":
            fields = {"started": now, "finished": None, **processes.this_process(), **fields}
        elif status in FINAL_STATUSES:
            fields = {"finished": now, **fields}
        if error is not None or status in ("running", "done"):
            fields["error"] = error
        with self._write() as conn:
            row = conn.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                raise RunNotFoundError(f"No run with id {run_id!r} in {str(self.directory)!r}.")
            current = row["status"]
            if current not in TRANSITIONS:
                raise store_rows.unknown_status(run_id, current, database=self.path)
            if status not in TRANSITIONS[current]:
                allowed = sorted(TRANSITIONS[current]) or "nothing (it is final)"
                raise StatusError(
                    f"Run {run_id!r} is {current!r} and cannot become {status!r}; "
                    f"from {current!r} it can become {allowed}."
                )
            values = [
                dumps(clean_metrics(value)) if _UPDATABLE[key] else value
                for key, value in fields.items()
            ]
            assignments = "".join(f", {key} = ?" for key in fields)
            conn.execute(
                f"UPDATE runs SET status = ?{assignments} WHERE id = ?",
                [status, *values, run_id],
            )

    def append_epoch(
        self,
        run_id: str,
        epoch: int,
        metrics: Mapping[str, Any],
        *,
        seconds: float | None = None,
        time_: float | None = None,
    ) -> None:
        """Record a finished epoch (1 is the first); an epoch run again replaces its row."""
        if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
            raise ValueError(
                f"Received an invalid value for argument `epoch`, expected a positive integer, "
                f"got {epoch!r}."
            )
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO epochs (run_id, epoch, metrics, time, seconds) "
                "VALUES (?, ?, ?, ?, ?)",
                (
                    run_id,
                    epoch,
                    dumps(clean_metrics(metrics)),
                    time.time() if time_ is None else time_,
                    seconds,
                ),
            )

    def finish(
        self,
        run_id: str,
        status: str = "done",
        *,
        metrics: Mapping[str, Any] | None = None,
        wall_time: float | None = None,
        examples_per_sec: float | None = None,
        error: str | None = None,
        **fields: Any,
    ) -> RunRecord:
        """End a run with a final status and its results; returns the updated record."""
        if status not in FINAL_STATUSES and status != "interrupted":
            raise ValueError(
                f"Received an invalid value for argument `status`, expected one of "
                f"{sorted(FINAL_STATUSES | {'interrupted'})}, got {status!r}."
            )
        if metrics is not None:
            fields["metrics"] = metrics
        if wall_time is not None:
            fields["wall_time"] = wall_time
        if examples_per_sec is not None:
            fields["examples_per_sec"] = examples_per_sec
        self.set_status(run_id, status, error=error, **fields)
        return self.get(run_id)

    # -- annotations: what a person says about a run --------------------------

    def _require(self, conn: sqlite3.Connection, run_id: str) -> None:
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is None:
            raise RunNotFoundError(f"No run with id {run_id!r} in {str(self.directory)!r}.")

    # -- artifacts -----------------------------------------------------------

    def artifact_dir(self, run_id: str) -> Path:
        """`<directory>/<run_id>/`, where the run's files go (not created here)."""
        return self.directory / check_run_id(run_id)

    @contextlib.contextmanager
    def atomic_artifact(self, run_id: str, relative_path: str) -> Iterator[Path]:
        """A temporary path to write an artifact to; renamed into place if the block succeeds.

        The temporary name keeps the suffix (Keras wants `.keras`), and works
        for files and directories. The artifact is then recorded under its
        file name (see `set_artifact`).

        Example:

        >>> with store.atomic_artifact(run_id, "model.keras") as path:
        ...     model.save(path)
        """
        self._check_writable()
        target = self.artifact_target(run_id, relative_path)
        with files.atomic_path(target) as temp:
            yield temp
        self.set_artifact(run_id, Path(relative_path).name, target)

    def artifact_target(self, run_id: str, relative_path: str) -> Path:
        """Where to write the run's file `relative_path`: its folder resolved inside the run's,
        its last part not followed (the rename that puts a file in place replaces a symbolic
        link found there, never writes through it).

        Raises:
            ValueError: The path leads outside `<directory>/<run_id>/`.
        """
        base = self.artifact_dir(run_id).resolve()
        unresolved = base / relative_path
        target = unresolved.parent.resolve() / unresolved.name
        if base not in target.parents or unresolved.name in ("", ".", ".."):
            raise ValueError(
                f"Received an invalid value for argument `relative_path`, expected a path inside "
                f"the run's directory, got {relative_path!r}."
            )
        return target

    def set_artifact(self, run_id: str, name: str, path: str | os.PathLike | None) -> None:
        """Record (or with `path=None` forget) an artifact of the run, by name."""
        if path is not None:
            path = Path(path)
            if path.is_absolute():
                path = path.resolve().relative_to(self.directory.resolve())
            path = path.as_posix()
        with self._write() as conn:
            row = conn.execute("SELECT artifacts FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                raise RunNotFoundError(f"No run with id {run_id!r} in {str(self.directory)!r}.")
            artifacts = store_rows.json_object(
                run_id, row["artifacts"], "artifacts", database=self.path
            )
            if path is None:
                artifacts.pop(name, None)
            else:
                artifacts[name] = path
            conn.execute("UPDATE runs SET artifacts = ? WHERE id = ?", (dumps(artifacts), run_id))

    # -- removal and recovery ------------------------------------------------

    def delete(self, run_id: str, *, allow_queued: bool = True) -> None:
        """Remove a run, its epochs, its tags and its artifact directory.

        A running run is refused (cancel it first); so is a queued one when
        `allow_queued` is False, as the app and the CLI ask, since a training
        process is about to pick it up. Only `<directory>/<run_id>` is removed (the
        id cannot name another path, `check_run_id`); a symbolic link there is
        unlinked, never followed. That folder is first renamed aside, so a failure
        to delete the rows puts it back and leaves the run whole.

        Raises:
            RunNotFoundError: No such run.
            StatusError: The run is running (or queued, when refused).
        """
        record = self.get(run_id, history=False)
        if record.status == "running" and self._owner_alive(record):
            raise StatusError(
                f"Run {run_id!r} is running (pid {record.pid}); cancel it before deleting it."
            )
        if record.status == "queued" and not allow_queued:
            raise StatusError(
                f"Run {run_id!r} is queued (a training process is about to start it); "
                "cancel it before deleting it."
            )
        self._check_writable()  # before its folder is moved aside
        directory = self.artifact_dir(run_id)
        aside = None
        if directory.is_symlink() or directory.exists():
            aside = directory.with_name(f".deleting-{run_id}-{secrets.token_hex(4)}")
            os.replace(directory, aside)  # renames a symbolic link itself, not its target
        try:
            with self._write() as conn:
                for table, key in (("tags", "run_id"), ("epochs", "run_id"), ("runs", "id")):
                    conn.execute(f"DELETE FROM {table} WHERE {key} = ?", (run_id,))
                # The sweep's spec goes with its last trial.
                conn.execute(
                    "DELETE FROM sweeps WHERE id = ? AND NOT EXISTS "
                    "(SELECT 1 FROM runs WHERE sweep_id = ?)",
                    (record.sweep_id, record.sweep_id),
                )
        except BaseException:
            if aside is not None:
                os.replace(aside, directory)
            raise
        if aside is not None and (aside.is_symlink() or not aside.is_dir()):
            aside.unlink()
        elif aside is not None:
            shutil.rmtree(aside)

    def _owner_alive(self, record: RunRecord) -> bool:
        """Whether the process running `record` is alive; True when it cannot be told."""
        if record.pid is None or record.host != socket.gethostname():
            return True
        rows = self._read("SELECT pid_started FROM runs WHERE id = ?", (record.id,))
        return processes.alive(record.pid, rows[0]["pid_started"] if rows else None)

    def recover_interrupted(self, *, wait: bool = True) -> list[str]:
        """Mark `running` runs whose process has died as `interrupted`; returns their ids.

        Only runs started on this machine are checked (a process elsewhere
        cannot be seen from here).

        Args:
            wait: False stops at once, recovering no more runs, when another process holds
                the write lock or the store is read-only (opening a store does so: it reads
                without waiting for writers, and a later call recovers the rest).
        """
        recovered = []
        for record in self.list_runs(status="running"):
            if self._owner_alive(record):
                continue
            error = f"The process running it (pid {record.pid}) ended before it finished."
            try:
                with self._write(wait=wait) as conn:
                    # `running` -> `interrupted` (`TRANSITIONS`), unless it changed meanwhile.
                    changed = conn.execute(
                        "UPDATE runs SET status = 'interrupted', error = ? "
                        "WHERE id = ? AND status = 'running'",
                        (error, record.id),
                    ).rowcount
            except (StoreLockedError, ReadOnlyStoreError):
                if wait:
                    raise
                break
            if changed:
                recovered.append(record.id)
        return recovered

    # -- sweeps --------------------------------------------------------------


# The errors and the schema's names are defined beside (`store_errors`, `store_schema`) and
# are the store's too: `from builder_ui.engine.store import RunNotFoundError` as before.
__all__ = [
    "BUSY_TIMEOUT_S",
    "DB_NAME",
    "SCHEMA_VERSION",
    "ReadOnlyStoreError",
    "RunNotFoundError",
    "RunStore",
    "StatusError",
    "StoreError",
    "StoreFullError",
    "StoreLockedError",
    "UnreadableRunError",
]
