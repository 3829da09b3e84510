"""Remote trials without Ray: the worker's side (`run_trial`) and the driver's (`Mirror`).

`run_trial` is called here as a Ray worker calls it, with a list as its channel; the messages
and the result are then applied to a separate driver store, as `run_sweep` does with what
Ray brings back. The cluster itself is tested in `test_ray_no_shared_disk.py`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import keras
import pytest

from builder_ui.builders import load_spec
from builder_ui.engine import artifacts, remote, transfer
from builder_ui.engine.store import RunStore
from tests.builder_ui.engine.walks import write_walks

EPOCHS = 2


class ListChannel:
    """What a trial puts into its Ray queue, kept in order."""

    def __init__(self):
        self.messages = []

    def put(self, message):
        self.messages.append(message)


def _csv_spec(path):
    return load_spec(
        {
            "version": 2,
            "name": "walks",
            "task": {"type": "csv_sequences", "path": str(path), "inputs": "numeric"},
            "model": {
                "type": "sequence_classifier",
                "encoder": {"type": "rnn", "cell": "gru", "units": 4},
            },
            "train": {"epochs": EPOCHS, "batch_size": 16, "learning_rate": 0.01, "seed": 0},
        }
    ).to_dict()


@pytest.fixture(params=["by value", "storage URI"])
def trained(request, tmp_path, monkeypatch):
    """One trial run as a worker runs it, its data file gone from the driver's path meanwhile;
    its files sent by value, or under a `file://` storage URI (a bucket both sides reach)."""
    uri = None
    if request.param == "storage URI":
        pytest.importorskip("pyarrow")
        uri = transfer.check((tmp_path / "bucket").as_uri())
    (tmp_path / "worker-tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "worker-tmp"))  # the worker's /tmp
    data_path = tmp_path / "driver" / "walks.csv"
    data_path.parent.mkdir()
    write_walks(data_path, count=80, steps=6)
    spec = _csv_spec(data_path)
    driver = RunStore(tmp_path / "driver" / "runs")
    run_id = driver.create_run(spec, sweep_id="sweep1")
    data = remote.data_file(spec, tmp_path)
    data_path.rename(tmp_path / "elsewhere.csv")  # the worker must use the bytes it was sent
    channel = ListChannel()
    result = remote.run_trial(spec, run_id, data, channel, storage_uri=uri)
    yield driver, run_id, channel.messages, result, tmp_path / "worker-tmp", uri
    driver.close()


def _bucket_files(uri):
    """Every file under a `file://` storage URI."""
    if uri is None:
        return []
    root = Path(uri.removeprefix("file://"))
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_the_worker_sends_start_then_each_epoch_with_its_checkpoint(trained):
    _, run_id, messages, result, worker_tmp, uri = trained
    assert [m["kind"] for m in messages] == ["start"] + ["epoch"] * EPOCHS
    assert all(m["run_id"] == run_id for m in messages)
    assert (
        messages[0]["info"]["backend"] == keras.backend.backend() and messages[0]["info"]["params"]
    )
    assert [m["epoch"] for m in messages[1:]] == list(range(1, EPOCHS + 1))
    for message in messages[1:]:
        checkpoint = transfer.receive(message["checkpoint"], uri=uri)
        assert checkpoint, "each epoch carries the checkpoint written before it"
        assert "val_loss" in message["metrics"]
        # Under a storage URI the message names the files; their bytes wait there.
        assert ("files" in message["checkpoint"]) == (uri is None)
    assert result["status"] == "done", result["error"]
    files = transfer.receive(result["directory"], uri=uri)
    assert "model.keras" in files and result["artifacts"]["model.keras"] == "model.keras"
    assert [row["epoch"] for row in result["history"]] == list(range(1, EPOCHS + 1))
    assert not any(name.startswith("backup/") for name in files)  # done: no checkpoint
    if uri is not None:
        assert f"{run_id}/result/model.keras" in _bucket_files(uri)
        assert any(name.startswith(f"{run_id}/epoch-1/") for name in _bucket_files(uri))
    left = [p.name for p in worker_tmp.iterdir() if p.name.startswith(remote.SCRATCH_PREFIX)]
    assert left == []  # the scratch directory is gone


def test_the_driver_writes_the_epochs_checkpoints_and_files_as_a_local_run(trained):
    driver, run_id, messages, result, _, uri = trained
    mirror = remote.Mirror(driver, uri)
    mirror.message(messages[0])
    assert driver.get(run_id).status == "running"
    sent = transfer.receive(messages[1]["checkpoint"], uri=uri)
    mirror.message(messages[1])
    assert [row.epoch for row in driver.history(run_id)] == [1]
    backup = driver.artifact_dir(run_id) / "backup"
    assert {
        p.relative_to(backup).as_posix(): p.read_bytes() for p in backup.rglob("*") if p.is_file()
    } == sent
    # What was read from the storage URI is deleted there; the next epoch's still waits.
    assert not any(name.startswith(f"{run_id}/epoch-1/") for name in _bucket_files(uri))
    for message in messages[2:]:
        mirror.message(message)
    mirror.result(run_id, result)
    record = driver.get(run_id)
    assert record.status == "done" and record.sweep_id == "sweep1"
    assert [row.epoch for row in record.history] == list(range(1, EPOCHS + 1))
    assert record.metrics == pytest.approx(result["metrics"])
    assert record.params == messages[0]["info"]["params"]
    model = keras.saving.load_model(
        artifacts.artifact_path(driver, run_id, "model.keras"), safe_mode=True
    )
    assert model.count_params() == record.params
    assert not backup.exists()  # a done run keeps no checkpoint, as locally
    # A late message for the finished run changes nothing.
    mirror.message(messages[-1])
    assert not backup.exists() and driver.get(run_id).status == "done"
    # The stored spec is the driver's: its own data path, not the worker's scratch copy.
    assert record.spec["task"]["path"].endswith(str(Path("driver") / "walks.csv"))
    assert _bucket_files(uri) == []  # the storage URI is a transfer area, emptied as it is read


def test_a_lost_worker_leaves_a_started_trial_interrupted_and_a_queued_one_queued(trained):
    driver, run_id, messages, _, _, uri = trained
    mirror = remote.Mirror(driver, uri)
    for message in messages[:2]:
        mirror.message(message)
    mirror.lost(run_id, RuntimeError("worker died"), "sweep1")
    # The lost trial's later uploads (epoch 2's checkpoint, its result) are gone from the URI.
    assert _bucket_files(uri) == []
    record = driver.get(run_id)
    assert record.status == "interrupted"
    assert "after 1 epoch(s)" in record.error and "keras-seq resume sweep1" in record.error
    assert (driver.artifact_dir(run_id) / "backup").is_dir()  # what resuming reads

    queued = driver.create_run(_csv_spec("unused.csv"), sweep_id="sweep1")
    remote.Mirror(driver).lost(queued, RuntimeError("worker died"), "sweep1")
    assert driver.get(queued).status == "queued"


@pytest.mark.large
def test_a_killed_trials_scratch_directory_is_removed_by_the_next_one(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    abandoned = tmp_path / f"{remote.SCRATCH_PREFIX}abandoned"
    (abandoned / "store").mkdir(parents=True)
    (abandoned / remote.OWNER_FILE).write_text(dead.stdout.strip(), encoding="ascii")
    live = tmp_path / f"{remote.SCRATCH_PREFIX}live"
    live.mkdir()
    (live / remote.OWNER_FILE).write_text(str(os.getppid()), encoding="ascii")
    unowned = tmp_path / f"{remote.SCRATCH_PREFIX}being-made"
    unowned.mkdir()
    assert remote.remove_abandoned_scratch() == [abandoned]
    assert not abandoned.exists() and live.is_dir() and unowned.is_dir()


def _sent(directory: dict, artifacts: dict) -> dict:
    """A finished trial's result as a worker sends it, its files by value."""
    return {
        "status": "done",
        "error": None,
        "metrics": {"accuracy": 0.5},
        "wall_time": 1.0,
        "examples_per_sec": 10.0,
        **dict.fromkeys(remote.RESULT_FIELDS),
        "history": [{"epoch": 1, "metrics": {"loss": 1.0}, "time": 0.0, "seconds": 1.0}],
        "artifacts": artifacts,
        "directory": {"files": directory},
    }


@pytest.mark.parametrize(
    "files, artifacts",
    [
        ({"../../outside/planted": b"x"}, {}),
        ({"/tmp/planted": b"x"}, {}),
        ({"model.keras": b"x"}, {"model.keras": "../../outside/shadow"}),
        ({"linked/planted": b"x"}, {}),  # `linked` a symbolic link out of the run's folder
    ],
    ids=["dotdot", "absolute", "artifact", "through a link"],
)
def test_a_worker_result_naming_a_file_outside_the_run_fails_it_and_writes_nothing(
    tmp_path, files, artifacts
):
    outside = tmp_path / "outside"
    outside.mkdir()
    with RunStore(tmp_path / "driver" / "runs") as driver:
        run_id = driver.create_run(_csv_spec("unused.csv"), sweep_id="sweep1")
        folder = driver.artifact_dir(run_id)
        folder.mkdir(parents=True)
        (folder / "linked").symlink_to(outside)
        remote.Mirror(driver).result(run_id, _sent(files, artifacts))
        record = driver.get(run_id)
        assert record.status == "failed"
        assert record.error.startswith(
            "Its worker's result was refused, and nothing of it written: ValueError: "
        )
        assert repr(next(iter(artifacts.values() or files))) in record.error  # the name
        assert not record.history and record.artifacts == {}
        assert sorted(p.name for p in folder.iterdir()) == ["linked"]
    assert list(outside.iterdir()) == [] and not Path("/tmp/planted").exists()


def test_an_epoch_whose_checkpoint_names_a_file_outside_the_run_fails_it(tmp_path):
    with RunStore(tmp_path / "runs") as driver:
        run_id = driver.create_run(_csv_spec("unused.csv"), sweep_id="sweep1")
        remote.Mirror(driver).message(
            {
                "kind": "epoch",
                "run_id": run_id,
                "epoch": 1,
                "metrics": {"loss": 1.0},
                "seconds": 1.0,
                "time": 0.0,
                "checkpoint": {"files": {"../../planted.h5": b"x"}},
            }
        )
        record = driver.get(run_id)
        assert record.status == "failed" and not record.history
        assert "An epoch its worker sent was refused, and nothing of it written" in record.error
        assert "'../../planted.h5'" in record.error
    assert not (tmp_path / "planted.h5").exists() and not (tmp_path.parent / "planted.h5").exists()
