"""Test order: the longest files first.

`make test` runs the files on two workers (`--dist loadfile`), handing the next file to the
worker that frees up first. Run in collection (alphabetical) order, a file of long learning
tests could start last and keep one worker busy minutes after the other finished; starting
the longest first and ending with the many quick files keeps both busy to the end (the
longest-processing-time rule). Tests within a file keep their order.

A file's length is the sum of its selected tests' times in `tests/durations.json`, measured
per backend by `make durations` (only the order matters, so the machine's speed does not). A
test it does not list yet counts as the median listed test of its kind (`slow` or not).
"""

from __future__ import annotations

import json
import os
import statistics
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("durations.json")
# Set to record this run's times into DURATIONS (`make durations`).
RECORD = os.environ.get("KERAS_SEQ_RECORD_DURATIONS") == "1"
_recorded: dict[str, float] = defaultdict(float)


def _backend() -> str:
    return os.environ.get("KERAS_BACKEND", "tensorflow")


def _load() -> dict[str, dict[str, float]]:
    try:
        data = json.loads(DURATIONS.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@pytest.hookimpl(trylast=True)  # after `-m`/`-k` deselected what will not run
def pytest_collection_modifyitems(items) -> None:
    data = _load()
    # A test not yet measured on this backend counts its TensorFlow time (a close enough order).
    measured = {**data.get("tensorflow", {}), **data.get(_backend(), {})}
    kinds = defaultdict(list)
    for item in items:
        if item.nodeid in measured:
            kinds[bool(item.get_closest_marker("slow"))].append(measured[item.nodeid])
    typical = {kind: statistics.median(times) for kind, times in kinds.items()}
    files: dict[Path, float] = defaultdict(float)
    for item in items:
        slow = bool(item.get_closest_marker("slow"))
        files[item.path] += measured.get(item.nodeid, typical.get(slow, 10.0 if slow else 0.1))
    first_seen = {path: index for index, path in enumerate(dict.fromkeys(i.path for i in items))}
    items.sort(key=lambda item: (-files[item.path], first_seen[item.path]))


def pytest_runtest_logreport(report) -> None:
    if RECORD:
        _recorded[report.nodeid] += report.duration  # setup, call and teardown


def pytest_sessionfinish(session) -> None:
    if RECORD and not hasattr(session.config, "workerinput") and _recorded:
        data = _load()
        # Merged: a run of some files updates theirs and keeps the others' times.
        times = {**data.get(_backend(), {}), **{k: round(v, 2) for k, v in _recorded.items()}}
        data[_backend()] = dict(sorted(times.items()))
        temporary = DURATIONS.with_suffix(".json.tmp")
        temporary.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n", encoding="utf-8")
        temporary.replace(DURATIONS)


@pytest.fixture
def ray_temp_root():
    """A fresh directory right under the system's temp directory, for `RAY_TMPDIR`; removed after.

    Ray puts its Unix sockets under `RAY_TMPDIR` (`ray/session_<date>_<pid>/sockets/...`),
    and a socket path may not exceed 107 bytes: under pytest-xdist a `tmp_path`
    (`/tmp/pytest-of-root/pytest-N/popen-gwK/rayJ`) leaves too little room. `/tmp/rayXXXXXXXX`
    leaves plenty, and is still the test's own, never the machine's `/tmp/ray`.
    """
    import shutil
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="ray", dir=tempfile.gettempdir()))
    yield root
    shutil.rmtree(root, ignore_errors=True)
