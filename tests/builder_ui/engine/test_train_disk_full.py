"""A run store on a nearly full disk (issue 42): the run is interrupted, never crashed.

With a few hundred kB free, HDF5 failed to write the first checkpoint and h5py crashed the
process (exit 139): the run stayed `running`, then became `interrupted` with no epoch, and
its resume trained from epoch 1. Now the free space is checked before a checkpoint or the
model is written: one message naming the path and the space needed, the run `interrupted`
with every epoch recorded before it, resumable once there is room.

Each case runs in a mount namespace (`unshare --mount`) on a small tmpfs, in one fresh
interpreter that prints what happened as JSON; the store is copied out for the test to read.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from builder_ui.engine.store import RunStore

pytestmark = [
    pytest.mark.large,
    pytest.mark.skipif(sys.platform != "linux", reason="tmpfs in a mount namespace is Linux"),
]

# 13,954 parameters: a checkpoint with Adam's state is about 180 kB (HDF5).
SPEC = {
    "version": 1,
    "name": "tight",
    "task": {"type": "long_lag", "lag": 5, "n": 80, "num_distractors": 4},
    "model": {
        "type": "sequence_classifier",
        "encoder": {"type": "rnn", "cell": "gru", "units": 64},
    },
    "train": {"epochs": 3, "batch_size": 32, "learning_rate": 0.01, "seed": 2},
}

PRELUDE = """
import contextlib, io, json, os, shutil, subprocess, sys
from builder_ui import cli
from builder_ui.engine.store import RunStore

mount, out, spec_file = sys.argv[1:4]
runs = os.path.join(mount, "runs")
said = {}

def main(*argv):
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = cli.main([*argv, "--runs", runs])
    return {"code": code, "stdout": stdout.getvalue(), "stderr": stderr.getvalue()}

def state():
    with RunStore(runs, recover=False) as store:
        (record,) = store.list_runs(history=True)
    backup = os.path.join(runs, record.id, "backup")
    return {
        "id": record.id, "status": record.status, "error": record.error,
        "epochs": [[row.epoch, row.time] for row in record.history],
        "backup": sorted(os.listdir(backup)) if os.path.isdir(backup) else None,
    }
"""

EPILOGUE = """
shutil.copytree(runs, os.path.join(out, "runs"))
print("RESULTS", json.dumps(said))
"""

# `keras-seq train` with 400 kB on the disk: refused before the first epoch; `resume` once
# the tmpfs is grown to 8 MB trains every epoch.
TOO_SMALL = """
said["train"] = main("train", spec_file)
said["after_train"] = state()
subprocess.run(["mount", "-o", "remount,size=8m", mount], check=True)
said["resume"] = main("resume", said["after_train"]["id"])
"""

# Another process fills the disk after epoch 1 is recorded (a Keras callback here, last in
# `fit`'s list), leaving 64 kB: the checkpoint of epoch 2 does not fit.
FILLED_MID_RUN = """
import keras
from builder_ui import engine

class Fill(keras.callbacks.Callback):
    def on_epoch_end(self, epoch, logs=None):
        if epoch == 0:
            free = shutil.disk_usage(mount).free
            with open(os.path.join(mount, "filler"), "wb") as handle:
                handle.write(b"x" * (free - 64 * 1024))

with RunStore(runs) as store:
    with open(spec_file) as handle:
        engine.run(json.load(handle), store=store, callbacks=[Fill()])
said["interrupted"] = state()
os.remove(os.path.join(mount, "filler"))
said["resume"] = main("resume", said["interrupted"]["id"])
"""


def on_small_tmpfs(tmp_path, size: str, script: str) -> dict:
    """Run PRELUDE + `script` + EPILOGUE on a tmpfs of `size`; returns what it said."""
    if shutil.which("unshare") is None:
        pytest.skip("no `unshare` to mount a tmpfs with")
    mount, out = tmp_path / "mnt", tmp_path / "out"
    mount.mkdir()
    out.mkdir()
    spec_file = tmp_path / "spec.json"
    spec_file.write_text(json.dumps(SPEC))
    code = textwrap.dedent(PRELUDE) + textwrap.dedent(script) + textwrap.dedent(EPILOGUE)
    shell = f'mount -t tmpfs -o size={size} tmpfs "$0" && exec "$@"'
    user = [] if os.geteuid() == 0 else ["--map-root-user"]
    driver = [sys.executable, "-c", code, str(mount), str(out), str(spec_file)]
    result = subprocess.run(
        ["unshare", "--mount", *user, "sh", "-c", shell, str(mount), *driver],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "CUDA_VISIBLE_DEVICES": ""},
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULTS ")]
    if not lines and "mount" in result.stderr and result.returncode not in (0, -11, 139):
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()[-500:]}")
    assert lines, f"exit {result.returncode}\n{result.stderr[-3000:]}"
    return json.loads(lines[-1].removeprefix("RESULTS "))


def test_train_on_a_nearly_full_disk_is_interrupted_before_its_first_epoch_and_resumes(tmp_path):
    said = on_small_tmpfs(tmp_path, "400k", TOO_SMALL)
    run = said["after_train"]
    assert said["train"]["code"] == 1  # the run did not end `done`
    assert "Traceback" not in said["train"]["stderr"]
    assert (run["status"], run["epochs"], run["backup"]) == ("interrupted", [], None)
    directory = tmp_path / "mnt" / "runs" / run["id"]
    assert run["error"].startswith(f"No space left for its checkpoints and model in {directory}:")
    assert "it needs about" in run["error"] and "is free" in run["error"]
    assert run["error"].endswith("free some space, then resume it to continue from epoch 1.")
    assert said["train"]["stdout"].splitlines()[:1] == [f"run {run['id']} (tight): interrupted"]
    assert run["error"] in said["train"]["stdout"]

    assert said["resume"]["code"] == 0, said["resume"]["stderr"]
    with RunStore(tmp_path / "out" / "runs") as store:
        record = store.get(run["id"])
    assert record.status == "done"
    assert [row.epoch for row in record.history] == [1, 2, 3]


def test_a_disk_filled_mid_run_interrupts_it_with_its_epochs_kept_and_resumable(tmp_path):
    said = on_small_tmpfs(tmp_path, "2m", FILLED_MID_RUN)
    run = said["interrupted"]
    assert run["status"] == "interrupted"
    assert [epoch for epoch, _ in run["epochs"]] == [1]
    assert run["backup"] == ["latest.weights.h5", "training_metadata.json"]
    backup = tmp_path / "mnt" / "runs" / run["id"] / "backup"
    assert run["error"].startswith(f"No space left for the checkpoint of epoch 2 in {backup}:")
    assert run["error"].endswith(
        "its 1 finished epochs and checkpoint are kept: free some space, then resume it to "
        "continue from epoch 2."
    )

    assert said["resume"]["code"] == 0, said["resume"]["stderr"]
    assert "warning" not in said["resume"]["stderr"]  # no checkpoint problem noted
    with RunStore(tmp_path / "out" / "runs") as store:
        record = store.get(run["id"])
    assert record.status == "done"
    assert [row.epoch for row in record.history] == [1, 2, 3]
    assert record.history[0].time == run["epochs"][0][1]  # epoch 1 kept, not trained again
