"""The signal guard of tests/conftest.py fails a test that leaves the process's signals changed.

A test that leaves a Python handler installed, or SIGINT blocked in the main thread below
Python (where `signal.getsignal` cannot see it), makes the Ctrl-C tests of a later file in the
same worker fail far from the cause. Each case runs pytest in a fresh process on a small test
file beside a copy of the project's conftest.
"""

from __future__ import annotations

import signal
import subprocess
import sys
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


def test_a_suite_started_with_ctrl_c_ignored_gets_it_back(pytester):
    # What a shell without job control gives a background command (`make test &`): SIGINT
    # ignored, inherited by every process below it. The tests of Ctrl-C must still see one.
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makepyfile(
        test_ctrl_c="""
import signal, subprocess, sys

import pytest


@pytest.mark.large
def test_ctrl_c_raises_here_and_in_a_child():
    try:
        signal.raise_signal(signal.SIGINT)
        for _ in range(100):
            pass
        raise AssertionError("Ctrl-C was lost")
    except KeyboardInterrupt:
        pass
    code = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert child.stdout == "True\\n", child
"""
    )
    pytester.makeini("[pytest]\nmarkers =\n    large: l\n    large_on(*backends): l\n")
    ignored = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:randomly", "-q"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        timeout=120,  # a hang guard: it takes a second or two
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
        check=False,
    )
    assert ignored.returncode == 0, ignored.stdout[-3000:] + ignored.stderr[-3000:]
