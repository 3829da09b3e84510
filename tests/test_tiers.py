"""The tier guard of tests/conftest.py fails a test that should be marked `large`, and only it.

Each case runs pytest in a fresh process on a small test file beside a copy of the project's
conftest, with the bound lowered to 0.5 s so that a long test need not take 5 s.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.large  # runs pytest in a fresh process

CONFTEST = Path(__file__).with_name("conftest.py")

CASES = """
import subprocess
import sys
import time

import pytest


def busy(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_quick():
    assert sum(range(1000)) == 499500


def test_starts_a_process():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_busy_past_twice_the_bound():
    busy(1.3)


def test_busy_a_little_past_the_bound():
    busy(0.7)


@pytest.mark.large
def test_marked_large_starts_a_process_and_runs_long():
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    busy(1.3)


@pytest.mark.large_on("tensorflow", "jax", "torch")
def test_large_on_every_backend():
    busy(1.3)


@pytest.mark.large_on("no-such-backend")
def test_large_on_another_backend_only():
    busy(1.3)
"""


@pytest.fixture
def outcome(pytester, monkeypatch):
    monkeypatch.setenv("KERAS_SEQ_LARGE_SECONDS", "0.5")
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makepyfile(test_cases=CASES)
    pytester.makeini("[pytest]\nmarkers =\n    large: l\n    large_on(*backends): l\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rf")
    return {
        name: ("failed" if f"FAILED test_cases.py::{name}" in result.stdout.str() else "passed")
        for name in (
            "test_quick",
            "test_starts_a_process",
            "test_busy_past_twice_the_bound",
            "test_busy_a_little_past_the_bound",
            "test_marked_large_starts_a_process_and_runs_long",
            "test_large_on_every_backend",
            "test_large_on_another_backend_only",
        )
    }, result.stdout.str()


def test_an_unmarked_test_that_starts_a_process_or_runs_long_fails_and_a_marked_one_passes(
    outcome,
):
    states, out = outcome
    assert states == {
        "test_quick": "passed",
        "test_starts_a_process": "failed",
        "test_busy_past_twice_the_bound": "failed",
        "test_busy_a_little_past_the_bound": "passed",
        "test_marked_large_starts_a_process_and_runs_long": "passed",
        "test_large_on_every_backend": "passed",
        "test_large_on_another_backend_only": "failed",
    }, out
    assert "it started 1 process(es), the first: subprocess.Popen" in out
    assert "is not marked large" in out
    # The one a little past the bound passes, and is listed at the end of the run.
    summary = out.split("over the large tier's bound", 1)[-1]
    assert "test_cases.py::test_busy_a_little_past_the_bound: setup and call took" in summary
    assert "test_quick" not in summary


def test_under_backend_agnostic_a_file_that_never_names_the_mark_is_not_imported(pytester):
    """What make runs on JAX and PyTorch (`-m "backend_agnostic ..."`) imports only the test
    files that name the mark; any other selection (here `large`, what CI's TensorFlow run
    selects among others) imports every file. Each selection is a pytest of its own (a
    fresh interpreter loading the conftest: seconds each), so only these three."""
    pytester.makeconftest(CONFTEST.read_text(encoding="utf-8"))
    pytester.makeini("[pytest]\nmarkers =\n    large: l\n    backend_agnostic: b\n")
    pytester.makepyfile(
        test_agnostic="import pytest\n\n@pytest.mark.backend_agnostic\ndef test_a():\n    pass\n",
        test_other="raise RuntimeError('imported')\n\ndef test_b():\n    pass\n",
    )
    for selection, imported in (
        ("backend_agnostic", False),
        ("backend_agnostic and not large", False),
        ("large", True),
    ):
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-m", selection)
        assert ("RuntimeError: imported" in result.stdout.str()) is imported, selection
        if not imported:
            result.assert_outcomes(passed=1)
