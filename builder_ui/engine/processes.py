"""The processes a run store names: is a run's process alive, who holds the write lock.

A running run records the `pid`, `host` and `pid_started` of the process training it
(`this_process`); a store opened later asks `alive` whether that process still runs, so
that a run whose process died is marked `interrupted`. On Linux the start time (field 22
of `/proc/<pid>/stat`) tells a reused pid apart, and `/proc/locks` tells which process
holds SQLite's WAL write lock (`wal_writers`); elsewhere those answer None or nothing.
"""

from __future__ import annotations

import ctypes
import math
import os
import socket
import sys
from pathlib import Path
from typing import Any

# The byte of the `-shm` file a WAL writer locks (SQLite's WAL_WRITE_LOCK: 120).
WAL_WRITE_LOCK_BYTE = 120


def _stat_fields(pid: int) -> list[str]:
    """The fields of `/proc/<pid>/stat` from field 3 (the state) on; [] where unreadable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read().decode("ascii", "replace")
    except OSError:
        return []
    # The command name (field 2) is in parentheses and may hold spaces.
    return stat[stat.rfind(")") + 2 :].split()


def start_time(pid: int) -> str | None:
    """When process `pid` started, in clock ticks since boot (Linux), to tell reused pids apart."""
    fields = _stat_fields(pid)
    return fields[19] if len(fields) > 19 else None  # field 22


def wal_writers(database: Path) -> list[int]:
    """The processes that hold SQLite's WAL write lock on `database` (Linux's /proc/locks).

    A writer locks byte `WAL_WRITE_LOCK_BYTE` of the `-shm` file; empty where that cannot
    be read (another system, no `-shm` file).
    """
    try:
        shm = os.stat(f"{database}-shm")
        with open("/proc/locks", encoding="ascii", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    inode = f"{os.major(shm.st_dev):02x}:{os.minor(shm.st_dev):02x}:{shm.st_ino}"
    pids = []
    for line in lines:
        # "3: POSIX  ADVISORY  WRITE 11699 fe:00:2179337 120 120"; a waiter's has "->" after "3:".
        fields = line.split()
        if len(fields) != 8 or fields[3] != "WRITE" or fields[5] != inode:
            continue
        start, end = int(fields[6]), math.inf if fields[7] == "EOF" else int(fields[7])
        if start <= WAL_WRITE_LOCK_BYTE <= end and fields[4].isdigit():
            pids.append(int(fields[4]))
    return pids


def command_line(pid: int) -> str:
    """`running python -m builder_ui.cli ui ...` (at most 80 characters), or ""."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            arguments = handle.read().decode("utf-8", "replace").replace("\0", " ")
    except OSError:
        return ""
    text = " ".join(arguments.split())  # one line, whatever the arguments hold
    return f"running {text[:77]}..." if len(text) > 80 else f"running {text}" if text else ""


def alive(pid: int, started: str | None = None) -> bool:
    """Whether process `pid` on this machine is still running.

    A zombie (ended, not yet reaped) counts as dead; where the start time is
    known (Linux), a different process that reused the pid counts as dead too.
    """
    if pid <= 0:
        return False
    if sys.platform == "win32":  # pragma: no cover - Windows only
        kernel32 = ctypes.windll.kernel32
        handle = kernel32.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return False
        code = ctypes.c_ulong()
        kernel32.GetExitCodeProcess(handle, ctypes.byref(code))
        kernel32.CloseHandle(handle)
        return code.value == 259  # STILL_ACTIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # It exists, owned by someone else.
    if (_stat_fields(pid) or [None])[0] in ("Z", "X"):
        return False
    if started is not None:
        now = start_time(pid)
        if now is not None and now != started:
            return False
    return True


def this_process() -> dict[str, Any]:
    """`pid`, `host` and `pid_started` of the calling process, as stored on a running run."""
    pid = os.getpid()
    return {"pid": pid, "host": socket.gethostname(), "pid_started": start_time(pid)}


__all__ = [
    "WAL_WRITE_LOCK_BYTE",
    "alive",
    "command_line",
    "start_time",
    "this_process",
    "wal_writers",
]
