"""The run store's errors, and which of SQLite's errors are about the database file itself."""

from __future__ import annotations

import sqlite3


class RunNotFoundError(KeyError):
    """No run with this id is in the store."""

    def __str__(self) -> str:  # KeyError would quote the message.
        return str(self.args[0])


class StatusError(ValueError):
    """A status change the run's current status does not allow."""


class StoreError(Exception):
    """The store's database cannot be used as asked: damaged, not a database, a directory.

    Raised instead of SQLite's own error about the file; the message names the file and says
    what to do, in one line. Nothing was written: the store is left as it was.
    """


class StoreLockedError(StoreError):
    """Another process held the store's write lock for `BUSY_TIMEOUT_S`; nothing was written."""


class ReadOnlyStoreError(StoreError):
    """The store is read-only (a read-only file system, no permission): read, never changed."""


class StoreFullError(StoreError):
    """SQLite could not write the store: its disk is full. The transaction was rolled back."""


class UnreadableRunError(StoreError):
    """One run's row cannot be read (malformed JSON, an unknown status); the others can.

    `RunStore.list_runs` leaves such a run out (`RunStore.unreadable_runs` names it); `get`
    and a list of given `ids` raise this, naming the run and the column.
    """


# SQLite's errors about the database file itself, by result code (`sqlite_errorname`,
# Python 3.11 and later) or, before, by the words of its message; any other `sqlite3.Error`
# is a bug here and is raised as it is.
FILE_PROBLEMS = (
    ("SQLITE_BUSY", "database is locked", "locked"),
    ("SQLITE_READONLY", "readonly database", "read-only"),
    ("SQLITE_FULL", "database or disk is full", "full"),
    ("SQLITE_CORRUPT", "malformed", "damaged"),
    ("SQLITE_NOTADB", "not a database", "damaged"),
    ("SQLITE_CANTOPEN", "unable to open", "unopenable"),
    ("SQLITE_IOERR", "disk I/O error", "unopenable"),
)


def file_problem(error: sqlite3.Error) -> str | None:
    """The problem `FILE_PROBLEMS` names (`"locked"`, ...), or None for another error."""
    name = getattr(error, "sqlite_errorname", None)
    for code, words, problem in FILE_PROBLEMS:
        if name.startswith(code) if name else words in str(error):
            return problem
    return None
