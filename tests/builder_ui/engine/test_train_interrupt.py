"""A run killed mid-training shows as `interrupted`, keeps its epochs and resumes from them.

The run trains in a real child process that is killed with SIGKILL: no Python
handler runs, exactly as when a machine's process is killed.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from builder_ui import engine
from builder_ui.engine.progress import ProgressCallback
from builder_ui.engine.store import RunStore

pytestmark = [
    pytest.mark.large,
    pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX"),
]

ROOT = Path(__file__).resolve().parents[3]
EPOCHS = 6

SPEC = {
    "version": 1,
    "name": "killed",
    "task": {"type": "long_lag", "lag": 6, "n": 200, "num_distractors": 4},
    "model": {"type": "sequence_classifier", "encoder": {"type": "rnn", "cell": "gru", "units": 6}},
    "train": {"epochs": EPOCHS, "batch_size": 40, "learning_rate": 0.01},
}

# The child trains SPEC and pauses half a second after each epoch, once the epoch
# is recorded and backed up, so that the kill comes while it trains.
CHILD = textwrap.dedent(
    """
    import json, sys, time
    from builder_ui import engine
    from builder_ui.engine.progress import ProgressCallback
    from builder_ui.engine.store import RunStore

    class Slow(ProgressCallback):
        def on_epoch_end(self, epoch, logs):
            time.sleep(0.5)

    engine.run(json.loads(sys.argv[2]), store=RunStore(sys.argv[1]), callbacks=[Slow()])
    """
)


class EpochsBegun(ProgressCallback):
    def __init__(self):
        self.epochs = []

    def on_epoch_begin(self, epoch, epochs):
        self.epochs.append(epoch)


def _wait_for_epochs(store, process, count, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        runs = store.list_runs()
        if runs and len(store.history(runs[0].id)) >= count:
            return runs[0].id
        if process.poll() is not None:
            raise AssertionError(f"the child ended early:\n{process.stderr.read()[-3000:]}")
        time.sleep(0.1)
    raise AssertionError(f"no {count} epochs recorded within {timeout} s")


def test_killed_run_is_interrupted_keeps_its_epochs_and_resumes(tmp_path):
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(tmp_path), json.dumps(SPEC)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        watcher = RunStore(tmp_path, recover=False)
        run_id = _wait_for_epochs(watcher, process, 2)
        time.sleep(0.3)  # into the pause after the epoch: its backup is written
        assert watcher.get(run_id).status == "running"
        assert watcher.get(run_id).pid == process.pid
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        process.stderr.close()
    watcher.close()
    assert process.returncode == -signal.SIGKILL

    store = RunStore(tmp_path)  # opening the store notices the dead process
    killed = store.get(run_id)
    assert killed.status == "interrupted"
    assert f"pid {process.pid}" in killed.error
    before = {row.epoch: row for row in killed.history}
    assert len(before) >= 2 and sorted(before) == list(range(1, len(before) + 1))
    assert engine.MODEL_FILE not in killed.artifacts
    assert (store.artifact_dir(run_id) / engine.BACKUP_DIR).is_dir()

    begun = EpochsBegun()
    resumed = engine.run(None, store=store, run_id=run_id, resume=True, callbacks=[begun])
    assert resumed.status == "done", resumed.error
    assert resumed.id == run_id and resumed.error is None
    # BackupAndRestore continued from the last backed-up epoch, not from the first.
    first = begun.epochs[0]
    assert first in (len(before), len(before) + 1) and first >= 2
    assert begun.epochs == list(range(first, EPOCHS + 1))
    # Every epoch is recorded once; those finished before the kill are untouched.
    assert [row.epoch for row in resumed.history] == list(range(1, EPOCHS + 1))
    for row in resumed.history[: first - 1]:
        assert row == before[row.epoch]
    assert (store.artifact_dir(run_id) / engine.MODEL_FILE).is_file()
    assert not (store.artifact_dir(run_id) / engine.BACKUP_DIR).exists()
    # examples/s counts the epochs this process trained.
    assert resumed.examples_per_sec > 0
    store.close()
