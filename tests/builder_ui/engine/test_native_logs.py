"""TensorFlow's native start-up lines stay off the terminal; everything else still reaches it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from builder_ui.engine.native_logs import (
    filtered_native_stderr,
    is_startup_notice,
    without_startup_notices,
)

ROOT = Path(__file__).resolve().parents[3]
SPEC = ROOT / "examples" / "specs" / "gru.yaml"
# Lines TensorFlow 2.16-2.20 print while its libraries load (copied from a real start-up).
NOTICES = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n",
    "I0000 00:00:1796123075.100514    5619 port.cc:153] oneDNN custom operations are on.\n",
    "I0000 00:00:1796123075.142907    5619 cpu_feature_guard.cc:227] This TensorFlow binary is "
    "optimized to use available CPU instructions in performance-critical operations.\n",
    "To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow.\n",
    "W0000 00:00:1796123075.2    5619 gpu_device.cc:2344] Cannot dlopen some GPU libraries.\n",
]
KEPT = [
    "E0000 00:00:1796123075.3    5619 cuda_dnn.cc:8310] Unable to register cuDNN factory\n",
    "Traceback (most recent call last):\n",
    "UserWarning: something the user should see\n",
    "I think this line is ours\n",
]


@pytest.mark.parametrize("line", NOTICES)
def test_startup_notices_are_recognised(line):
    assert is_startup_notice(line)


@pytest.mark.parametrize("line", KEPT)
def test_errors_and_other_lines_are_not_startup_notices(line):
    assert not is_startup_notice(line)


def test_filtering_keeps_every_other_line_in_order():
    mixed = [NOTICES[0], KEPT[0], NOTICES[1], KEPT[2], NOTICES[3], KEPT[3]]
    assert without_startup_notices("".join(mixed)) == KEPT[0] + KEPT[2] + KEPT[3]


def test_native_writes_are_filtered_but_others_reach_stderr(capfd):
    with filtered_native_stderr():
        os.write(2, (NOTICES[1] + "kept native line\n").encode())
    assert capfd.readouterr().err == "kept native line\n"


def test_a_failing_block_replays_everything_it_captured(capfd):
    with pytest.raises(RuntimeError), filtered_native_stderr():
        os.write(2, NOTICES[1].encode())
        raise RuntimeError("import failed")
    assert capfd.readouterr().err == NOTICES[1]


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "KERAS_BACKEND": "tensorflow"}
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    command = [sys.executable, "-m", "builder_ui.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=300)


def _notices(text: str) -> list[str]:
    return [line for line in text.splitlines() if is_startup_notice(line)]


@pytest.mark.large
def test_cli_commands_print_no_startup_lines_unless_verbose():
    quiet = _cli("validate", str(SPEC))
    assert quiet.returncode == 0, quiet.stderr
    assert "valid" in quiet.stdout
    assert _notices(quiet.stderr) == [], quiet.stderr
    # What this machine's TensorFlow prints on its own, shown again with --verbose.
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    raw = subprocess.run(
        [sys.executable, "-c", "import tensorflow"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    verbose = _cli("validate", str(SPEC), "--verbose")
    assert verbose.returncode == 0, verbose.stderr
    assert len(_notices(verbose.stderr)) == len(_notices(raw.stderr))
