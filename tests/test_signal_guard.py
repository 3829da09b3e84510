"""The signal guard of tests/conftest.py fails a test that leaves the process's signals changed.

A test that leaves a Python handler installed, or SIGINT blocked in the main thread below
Python (where `signal.getsignal` cannot see it), makes the Ctrl-C tests of a later file in the
same worker fail far from the cause. Each case runs pytest in a fresh process on a small test
file beside a copy of the project's conftest.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

pytestmark = pytest.mark.large  # runs pytest in a fresh process

CONFTEST = Path(__file__).with_name("conftest.py")

CASES = """
import signal


def test_blocks_and_unblocks_sigint():
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])


def test_leaves_sigint_blocked():
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])


def test_leaves_a_sigterm_handler():
    signal.signal(signal.SIGTERM, lambda signum, frame: None)


def test_after_them_ctrl_c_still_raises():
    try:
        signal.raise_signal(signal.SIGINT)
        for _ in range(100):
            pass
    except KeyboardInterrupt:
        return
    raise AssertionError("Ctrl-C was lost")
"""


@pytest.mark.skipif(not Path("/proc/thread-self/status").exists(), reason="reads /proc")
def test_a_test_leaving_signals_changed_fails_and_the_next_test_finds_them_put_back(pytester):
    assert hasattr(signal, "pthread_sigmask")
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makepyfile(test_cases=CASES)
    pytester.makeini("[pytest]\nmarkers =\n    large: l\n    large_on(*backends): l\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:randomly", "-rA")
    out = result.stdout.str()
    failed = {line.split("::")[1].split()[0] for line in out.splitlines() if "ERROR test_" in line}
    assert failed == {"test_leaves_sigint_blocked", "test_leaves_a_sigterm_handler"}, out
    assert "left the main thread's signals changed below Python" in out
    assert "left signal handlers changed" in out
    assert "PASSED test_cases.py::test_after_them_ctrl_c_still_raises" in out
