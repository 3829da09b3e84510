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
"""

from __future__ import annotations

import contextlib
import json
import math
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
from builder_ui.engine import processes, store_errors, store_rows, store_schema
from builder_ui.engine.records import (
    FINAL_STATUSES,
    MAX_TAGS_PER_RUN,
    TRANSITIONS,
    EpochRecord,
    RunRecord,
    check_name,
    check_note,
    check_run_id,
    check_status,
    check_tag,
    new_run_id,
)
from builder_ui.engine.store_errors import (
    ReadOnlyStoreError,
    RunNotFoundError,
    StatusError,
    StoreError,
    StoreFullError,
    StoreLockedError,
    UnreadableRunError,
)
from builder_ui.engine.store_schema import DB_NAME, SCHEMA_VERSION

# How long a write waits for another writer's lock before giving up (`StoreLockedError`).
# Writes are short transactions; a lock held longer is another process stuck or in use.
BUSY_TIMEOUT_S = 5.0

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


def _finite_or_none(value: Any) -> Any:
    """JSON has no NaN or infinity: store them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _clean_metrics(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Logs as plain JSON values: floats (None when not finite), ints, strings."""
    clean = {}
    for key, value in metrics.items():
        if hasattr(value, "item") and callable(value.item):  # NumPy scalar or 0-d array
            value = value.item()
        if isinstance(value, bool) or value is None or isinstance(value, str):
            clean[str(key)] = value
        elif isinstance(value, (int, float)):
            clean[str(key)] = _finite_or_none(float(value) if isinstance(value, float) else value)
        else:
            clean[str(key)] = _finite_or_none(float(value))
    return clean


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=False)


def _spec_to_dict(spec: Any) -> dict[str, Any]:
    """A spec as a JSON-compatible dict: pydantic models via `model_dump(mode="json")`."""
    if hasattr(spec, "model_dump"):
        spec = spec.model_dump(mode="json")
    if not isinstance(spec, Mapping):
        raise ValueError(
            "Received an invalid value for argument `spec`, expected an ExperimentSpec or a "
            f"dict, got {type(spec).__name__}."
        )
    return json.loads(json.dumps(dict(spec), allow_nan=False))


def _read_only_reason(database: Path) -> str | None:
    """Why the store of `database` cannot be written (None if it can): its file system, modes.

    SQLite writes the database and, beside it, its `-wal` and `-shm` files.
    """
    for path in (database, database.parent):
        if path.exists() and not os.access(path, os.W_OK):
            if hasattr(os, "statvfs") and os.statvfs(path).f_flag & os.ST_RDONLY:
                return "on a read-only file system"
            return f"no permission to write to {str(path)!r}"
    return None


class RunStore:
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

    def _open_existing(self) -> None:
        """Start using the database file (made by this store or another process)."""
        with self._connections_lock:
            if self._created:
                return
            self._created = True
        self._read_only = _read_only_reason(self.path)
        self._init_schema()

    @property
    def read_only(self) -> str | None:
        """Why the store cannot be changed ("on a read-only file system", ...), or None."""
        return self._read_only

    def _check_writable(self) -> None:
        """Raise `ReadOnlyStoreError` before a change to a read-only store (nothing written)."""
        if self._read_only is not None:
            raise ReadOnlyStoreError(self._read_only_message(self._read_only))

    def _read_only_message(self, reason: str) -> str:
        return (
            f"the run store {str(self.directory)!r} is read-only ({reason}): it can be read, "
            "not changed; nothing was written: copy it to a directory you may write to, or "
            "make it writable, to change it"
        )

    def _create(self) -> None:
        """Make the directory and the database: the first write of this store."""
        if not self._created:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._open_existing()

    # -- connections ---------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        """This thread's connection (a new one after a fork); an empty one before any write."""
        if not self._created:
            if not self.path.exists():
                return self._empty()
            self._open_existing()
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        with self._file_errors():
            if self._read_only is not None:
                conn = self._connect_read_only()
            else:
                conn = sqlite3.connect(
                    self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
                )
            try:
                conn.row_factory = sqlite3.Row
                conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
                if self._read_only is None:
                    conn.execute("PRAGMA journal_mode = WAL")
                    # In WAL mode, NORMAL is safe against a crash of the process (not the machine).
                    conn.execute("PRAGMA synchronous = NORMAL")
                conn.execute("PRAGMA foreign_keys = ON")
            except BaseException:
                conn.close()  # which removes the -wal and -shm files it made for a damaged file
                raise
        self._local.conn = conn
        self._local.pid = os.getpid()
        with self._connections_lock:
            self._connections.append(conn)
        return conn

    def _connect_read_only(self) -> sqlite3.Connection:
        """A connection that cannot write, for a store on a read-only file system.

        SQLite reads a WAL database through its `-shm` file; where there is none (a store
        closed cleanly) and none can be made, the database is read as `immutable` (nothing
        can be writing it: a writer keeps its `-shm` file while it is open).
        """

        def connect(uri: str) -> sqlite3.Connection:
            conn = sqlite3.connect(
                uri, uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            try:
                conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # opens the file
            except BaseException:
                conn.close()
                raise
            return conn

        uri = f"{self.path.resolve().as_uri()}?mode=ro"
        try:
            return connect(uri)
        except sqlite3.Error as error:
            if store_errors.file_problem(error) != "unopenable":
                raise
        return connect(f"{uri}&immutable=1")

    def _empty(self) -> sqlite3.Connection:
        """An in-memory database with the schema and no runs: what a store not yet made reads."""
        conn = getattr(self._local, "empty", None)
        if conn is not None and self._local.empty_pid == os.getpid():
            return conn
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.executescript(store_schema.SCHEMA)
        conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
        self._local.empty = conn
        self._local.empty_pid = os.getpid()
        with self._connections_lock:
            self._connections.append(conn)
        return conn

    @contextlib.contextmanager
    def _write(self, *, wait: bool = True) -> Iterator[sqlite3.Connection]:
        """A write transaction that takes the write lock at once (no upgrade deadlocks).

        It waits up to `BUSY_TIMEOUT_S` for another writer (with `wait=False`, not at all),
        then raises `StoreLockedError`.
        """
        self._create()
        self._check_writable()
        with self._file_errors():
            conn = self._connect()
            if not wait:
                conn.execute("PRAGMA busy_timeout = 0")
            try:
                conn.execute("BEGIN IMMEDIATE")
            finally:
                if not wait:
                    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            try:
                yield conn
            except BaseException:
                if conn.in_transaction:  # SQLite may have rolled back already (a full disk)
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _read(self, query: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        """The rows of one query, outside any write transaction (WAL: no lock is taken)."""
        with self._file_errors():
            return self._connect().execute(query, tuple(params)).fetchall()

    @contextlib.contextmanager
    def _file_errors(self) -> Iterator[None]:
        """SQLite's errors about the database file, raised as a `StoreError` saying what to do."""
        try:
            yield
        except sqlite3.Error as error:
            problem = store_errors.file_problem(error)
            if problem is None:
                raise
            if problem == "read-only":
                reason = self._read_only or _read_only_reason(self.path) or "SQLite says so"
                raise ReadOnlyStoreError(self._read_only_message(reason)) from error
            kind = {"locked": StoreLockedError, "full": StoreFullError}.get(problem, StoreError)
            raise kind(self._file_message(problem, error)) from error

    def _file_message(self, problem: str, error: sqlite3.Error) -> str:
        """One line naming the database file, what is wrong with it and what to do."""
        named = repr(str(self.path))
        if self.path.is_symlink():
            named += f" (a symbolic link to {os.readlink(self.path)!r})"
        if problem == "locked":
            return (
                f"the run store database {named} is locked by another writer "
                f"({self._lock_holder()}) and stayed locked for {BUSY_TIMEOUT_S:g} s; nothing "
                "was written: try again when it is done"
            )
        if problem == "full":
            return (
                f"no space left to write the run store database {named} ({error}); that change "
                "was not written: free some space on its disk and try again"
            )
        if problem == "damaged":
            return (
                f"the run store database {named} is damaged or is not a run store ({error}); "
                f"it was left as it is: restore {DB_NAME} from a backup copy, or move it aside "
                "to start an empty store"
            )
        return (
            f"the run store database {named} cannot be opened ({error}); it was left as it "
            "is: check that it is a file you may read and write"
        )

    def _lock_holder(self) -> str:
        """Who holds the write lock, as far as this machine can tell: pids, and their runs."""
        try:  # not through `_read`: a store locked even for reads must not recurse here
            rows = (
                self._connect()
                .execute("SELECT id, pid, host, pid_started FROM runs WHERE status = 'running'")
                .fetchall()
            )
        except sqlite3.Error:
            rows = []
        here = socket.gethostname()
        holders = []
        for pid in processes.wal_writers(self.path):
            this = (pid, here, processes.start_time(pid))
            run = next((row["id"] for row in rows if tuple(row)[1:] == this), None)
            what = f"which is training run {run}" if run else processes.command_line(pid)
            holders.append(f"pid {pid} on this machine" + (f", {what}" if what else ""))
        if holders:
            return "; ".join(holders)
        running = ", ".join(f"run {row['id']} (pid {row['pid']} on {row['host']})" for row in rows)
        return "which one cannot be told here" + (f"; running now: {running}" if running else "")

    def _init_schema(self) -> None:
        """Make the tables, indexes and columns missing; a store that has them all is only read.

        So opening a store takes no write lock, and reads while another process writes.
        """
        if self._schema_complete():
            (row,) = self._read("SELECT version FROM schema_version")
            self._check_version(row["version"])
            return
        with self._write() as conn:
            for statement in store_schema.SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            store_schema.migrate(conn)
            row = conn.execute("SELECT version FROM schema_version").fetchone()
            if row is None:
                conn.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
            else:
                self._check_version(row["version"])  # a newer store's tables are not touched

    def _schema_complete(self) -> bool:
        names = {row["name"] for row in self._read("SELECT name FROM sqlite_master")}
        if not store_schema.SCHEMA_NAMES <= names:
            return False
        columns = {row["name"] for row in self._read("PRAGMA table_info(runs)")}
        versions = self._read("SELECT version FROM schema_version")
        return set(store_schema.ADDED_COLUMNS) <= columns and len(versions) == 1

    def _check_version(self, version: int) -> None:
        if version > SCHEMA_VERSION:
            raise RuntimeError(
                f"The run store {str(self.path)!r} has schema version {version}, "
                f"newer than this keras_seq understands ({SCHEMA_VERSION}); upgrade keras_seq."
            )

    @property
    def schema_version(self) -> int:
        (row,) = self._read("SELECT version FROM schema_version")
        return int(row["version"])

    @property
    def journal_mode(self) -> str:
        return self._read("PRAGMA journal_mode")[0][0]

    def revision(self) -> int | None:
        """A number that changes whenever a change to the store is committed, by any thread
        or process: what was read from the store may be kept while it is the same.

        SQLite's `PRAGMA data_version`, which changes when another connection commits, read
        on a connection of its own that never writes (so every write of this store's
        threads is another connection's). None while there is no database yet, and for a
        read-only store: nothing is to be kept then.
        """
        if not self.path.exists():
            return None
        self._connect()  # opens a database another process made (and reads whether read-only)
        if self._read_only is not None:
            return None
        with self._watch_lock:
            if self._watch is None or self._watch[1] != os.getpid():
                with self._file_errors():
                    watch = sqlite3.connect(
                        self.path,
                        timeout=BUSY_TIMEOUT_S,
                        isolation_level=None,
                        check_same_thread=False,
                    )
                with self._connections_lock:
                    self._connections.append(watch)
                self._watch = (watch, os.getpid())
            with self._file_errors():
                return int(self._watch[0].execute("PRAGMA data_version").fetchone()[0])

    def close(self) -> None:
        """Close every connection this store opened (in any thread)."""
        with self._watch_lock:
            self._watch = None
        with self._connections_lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            with contextlib.suppress(sqlite3.Error):
                conn.close()
        self._local = threading.local()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RunStore({str(self.directory)!r})"

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
        spec_dict = _spec_to_dict(spec)
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
                    _dumps(spec_dict),
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
            _dumps(_clean_metrics(value)) if _UPDATABLE[key] else value
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
                _dumps(_clean_metrics(value)) if _UPDATABLE[key] else value
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
                    _dumps(_clean_metrics(metrics)),
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

    def rename(self, run_id: str, name: str) -> None:
        """Give a run another name (1 to `MAX_NAME_LENGTH` characters on one line, stripped)."""
        self.update(run_id, name=check_name(name))

    def add_tags(self, run_id: str, tags: Iterable[str]) -> tuple[str, ...]:
        """Tag a run (a tag it has already is kept once); returns its tags, sorted.

        Raises:
            ValueError: A tag that is not one word (`check_tag`), or more than
                `MAX_TAGS_PER_RUN` tags on the run; then no tag is added.
        """
        new = [check_tag(tag) for tag in ([tags] if isinstance(tags, str) else tags)]
        with self._write() as conn:
            self._require(conn, run_id)
            have = {
                row[0] for row in conn.execute("SELECT tag FROM tags WHERE run_id = ?", (run_id,))
            }
            total = have | set(new)
            if len(total) > MAX_TAGS_PER_RUN:
                raise ValueError(
                    f"Received an invalid value for argument `tags`, expected at most "
                    f"{MAX_TAGS_PER_RUN} tags on run {run_id!r}, got {len(total)}."
                )
            conn.executemany(
                "INSERT OR IGNORE INTO tags (run_id, tag) VALUES (?, ?)",
                [(run_id, tag) for tag in new],
            )
        return tuple(sorted(total))

    def remove_tags(self, run_id: str, tags: Iterable[str]) -> tuple[str, ...]:
        """Take tags off a run (one it lacks is no error); returns the tags left, sorted."""
        gone = [tags] if isinstance(tags, str) else list(tags)
        with self._write() as conn:
            self._require(conn, run_id)
            conn.executemany(
                "DELETE FROM tags WHERE run_id = ? AND tag = ?", [(run_id, tag) for tag in gone]
            )
            rows = conn.execute("SELECT tag FROM tags WHERE run_id = ? ORDER BY tag", (run_id,))
            return tuple(row[0] for row in rows)

    def set_note(self, run_id: str, note: str) -> None:
        """Replace the run's note (`""` clears it); at most `MAX_NOTE_LENGTH` characters."""
        self._set_mark(run_id, "note", check_note(note))

    def set_starred(self, run_id: str, starred: bool = True) -> None:
        """Star a run (or with `starred=False` unstar it)."""
        self._set_mark(run_id, "starred", int(bool(starred)))

    def set_archived(self, run_id: str, archived: bool = True) -> None:
        """Archive a run, hiding it from the app's table by default (`archived=False` restores)."""
        self._set_mark(run_id, "archived", int(bool(archived)))

    def all_tags(self) -> list[str]:
        """Every tag some run has, sorted (for a tag filter's menu)."""
        return [row[0] for row in self._read("SELECT DISTINCT tag FROM tags ORDER BY tag")]

    def _set_mark(self, run_id: str, column: str, value: Any) -> None:
        with self._write() as conn:
            cursor = conn.execute(f"UPDATE runs SET {column} = ? WHERE id = ?", (value, run_id))
            if cursor.rowcount == 0:
                raise RunNotFoundError(f"No run with id {run_id!r} in {str(self.directory)!r}.")

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
            conn.execute("UPDATE runs SET artifacts = ? WHERE id = ?", (_dumps(artifacts), run_id))

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

    def record_sweep(self, sweep_id: str, spec: Any) -> None:
        """Keep the spec of sweep `sweep_id` (with its `sweep:` section) beside its trials.

        The first spec recorded for an id stays: a sweep's id is a hash of its
        spec (`builder_ui.specs.sweep_space.sweep_id`), so running the same spec again
        adds trials to the same sweep.
        """
        check_run_id(sweep_id)
        spec_dict = _spec_to_dict(spec)
        with self._write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO sweeps (id, spec, created) VALUES (?, ?, ?)",
                (sweep_id, _dumps(spec_dict), time.time()),
            )

    def sweep_spec(self, sweep_id: str) -> dict[str, Any] | None:
        """The spec recorded for sweep `sweep_id` (a dict), or None (a store from before
        sweeps were recorded, a lab experiment, or no such sweep)."""
        rows = self._read("SELECT spec FROM sweeps WHERE id = ?", (sweep_id,))
        return json.loads(rows[0]["spec"]) if rows else None

    def stopped_sweep(self, sweep_id: str, *, history: bool = False) -> list[RunRecord]:
        """Every trial of sweep `sweep_id`, in order, once none of them is `running`.

        A sweep is stopped when none of its trials is `running` (after
        `recover_interrupted`, so a trial whose process died counts as
        `interrupted`); its `queued` trials then have no process to train them.

        Raises:
            ValueError: No such sweep, or a trial still running.
        """
        self.recover_interrupted()
        records = self.list_runs(sweep_id=sweep_id, history=history)
        if not records:
            raise ValueError(f"No run or sweep with id {sweep_id!r} in {str(self.directory)!r}.")
        running = [record for record in records if record.status == "running"]
        if running:
            raise ValueError(
                f"Sweep {sweep_id!r} is still running (trial {running[0].id}, pid "
                f"{running[0].pid}); stop it before resuming it."
            )
        return records

    def remaining_trials(self, sweep_id: str) -> list[RunRecord]:
        """The trials of a stopped sweep still to train: `interrupted` and `queued`, in order.

        Raises:
            ValueError: No such sweep, a trial still running (`stopped_sweep`),
                or nothing left.
        """
        records = self.stopped_sweep(sweep_id)
        left = [record for record in records if record.status in ("interrupted", "queued")]
        if not left:
            statuses = ", ".join(f"{record.id} {record.status}" for record in records)
            raise ValueError(f"Sweep {sweep_id!r} has nothing left to resume ({statuses}).")
        return left

    def run_counts(self) -> tuple[int, int]:
        """`(runs, runs neither queued nor running)`, in one query, loading no run.

        A cheap sign that the store changed (a run added, ended or deleted), for a view
        that looks often; `list_runs` would read and parse every run to tell.
        """
        ((total, ended),) = self._read(
            "SELECT COUNT(*), COALESCE(SUM(status NOT IN ('queued', 'running')), 0) FROM runs"
        )
        return int(total), int(ended)

    def epoch_metrics(
        self, ids: Iterable[str] | None = None
    ) -> dict[str, list[tuple[int, dict[str, Any]]]]:
        """Run id -> its epochs' (epoch, metrics) in epoch order, in one query: of the runs
        `ids`, or of every run.

        What Compare's best-epoch columns read for a thousand runs at once (`history` is a
        query a run). An epoch whose metrics cannot be read is left out.
        """
        query, params = "SELECT run_id, epoch, metrics FROM epochs", []
        if ids is not None:
            params = list(ids)
            query += f" WHERE run_id IN ({', '.join('?' * len(params))})"
        epochs: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        for run_id, epoch, text in self._read(query + " ORDER BY run_id, epoch", params):
            try:
                metrics = json.loads(text)
            except ValueError:
                continue
            if isinstance(metrics, dict):
                epochs.setdefault(run_id, []).append((epoch, metrics))
        return epochs

    def epoch_counts(self) -> dict[str, int]:
        """Run id -> number of epochs recorded, for every run with at least one, in one query.

        What a run actually trained (early stopping, a failure, a resume), read without
        loading every epoch's metrics; compare with the spec's planned `train.epochs`.
        """
        rows = self._read("SELECT run_id, COUNT(*) FROM epochs GROUP BY run_id")
        return {run_id: count for run_id, count in rows}


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
