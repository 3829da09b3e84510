"""The run store's database: its SQLite connections, schema and errors (`RunStore`'s base).

One connection per thread (and per process: a connection is never shared across a fork),
WAL mode and a busy timeout (`BUSY_TIMEOUT_S`), short write transactions (`_write`); a
database SQLite cannot use is a `StoreError` naming the file, a read-only one is read and
refuses writes (`ReadOnlyStoreError`), a lock held too long is a `StoreLockedError` naming
who holds it. `revision` says whether anything committed since it was last read.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Self

from builder_ui.engine import processes, store_errors, store_schema
from builder_ui.engine.store_errors import (
    ReadOnlyStoreError,
    StoreError,
    StoreFullError,
    StoreLockedError,
)
from builder_ui.engine.store_schema import DB_NAME, SCHEMA_VERSION

# How long a write waits for another writer's lock before giving up (`StoreLockedError`).
# Writes are short transactions; a lock held longer is another process stuck or in use.
BUSY_TIMEOUT_S = 5.0


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


class StoreDatabase:
    """The store's SQLite database; see the module docstring."""

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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RunStore({str(self.directory)!r})"
