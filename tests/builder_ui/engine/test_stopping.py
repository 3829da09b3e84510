"""Stopping must not lose training: a stopped app, a kill in the final save, a killed sweep,
and a corrupt checkpoint each leave work that resumes from where it was, never marked done
before it is.

Kills are real: a child process gets SIGKILL at a moment the test sees in the store or on
disk (no Python handler runs). The specs are tiny and seeded (about a second an epoch).
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from builder_ui import cli, engine
from builder_ui.builders import load_spec
from builder_ui.engine import artifacts
from builder_ui.engine.artifacts import CHECKPOINT_LOG
from builder_ui.engine.progress import ProgressCallback
from builder_ui.engine.queue import JobQueue
from builder_ui.engine.store import RunStore

pytestmark = [
    pytest.mark.large,
    pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX"),
]

ROOT = Path(__file__).resolve().parents[3]
EPOCHS = 5
WAIT_S = 180  # hang guard only: a loaded 2-core machine is far slower than a quiet one

SPEC = {
    "version": 1,
    "name": "stopping",
    "task": {"type": "long_lag", "lag": 5, "n": 120, "num_distractors": 3},
    "model": {"type": "sequence_classifier", "encoder": {"type": "rnn", "cell": "gru", "units": 4}},
    "train": {"epochs": EPOCHS, "batch_size": 32, "learning_rate": 0.01, "seed": 3},
}


def spec(epochs: int = EPOCHS, **sweep) -> dict:
    data = copy.deepcopy(SPEC)
    data["train"]["epochs"] = epochs
    if sweep:
        data["sweep"] = sweep
    return data


class EpochsBegun(ProgressCallback):
    def __init__(self):
        self.epochs = []

    def on_epoch_begin(self, epoch, epochs):
        self.epochs.append(epoch)


class StopAfter(ProgressCallback):
    """Ctrl-C after epoch `epoch` ends (once it is backed up and recorded)."""

    def __init__(self, epoch):
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs):
        if epoch == self.epoch:
            raise KeyboardInterrupt


def child(script: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        cwd=ROOT,
        env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def kill(process: subprocess.Popen) -> None:
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    process.stderr.close()


def wait_until(condition, process=None, what="the condition"):
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if condition():
            return
        if process is not None and process.poll() is not None:
            raise AssertionError(f"the child ended early:\n{process.stderr.read()[-3000:]}")
        time.sleep(0.05)
    raise AssertionError(f"{what} did not happen within {WAIT_S} s")


INTERRUPTED_AT = 3


@pytest.fixture(scope="module")
def interrupted_store(tmp_path_factory) -> tuple[Path, str]:
    """A closed store holding one run stopped by Ctrl-C after epoch `INTERRUPTED_AT`:
    `interrupted`, with its checkpoint. Trained once; `interrupted_run` copies it per test."""
    directory = tmp_path_factory.mktemp("interrupted") / "runs"
    with RunStore(directory) as store:
        with pytest.raises(KeyboardInterrupt):
            engine.run(spec(), store=store, callbacks=[StopAfter(INTERRUPTED_AT)])
        (record,) = store.list_runs(history=True)
    assert record.status == "interrupted" and record.epochs_done == INTERRUPTED_AT
    return directory, record.id


def interrupted_run(interrupted_store, directory: Path) -> tuple[RunStore, str]:
    """The store of `interrupted_store`, copied to `directory` (not there yet) and opened."""
    source, run_id = interrupted_store
    shutil.copytree(source, directory)
    return RunStore(directory), run_id


# --- an app that stops (its queue closes) ----------------------------------------------------


def test_closing_the_app_queue_leaves_the_training_run_interrupted_with_its_checkpoint(tmp_path):
    store = RunStore(tmp_path / "runs")
    queue = JobQueue(store)  # the run trains in a slot's child process, as in the app
    (run_id,) = queue.submit([load_spec(spec(epochs=500))])
    wait_until(lambda: store.get(run_id).epochs_done >= 2, what="two recorded epochs")
    queue.close(timeout=WAIT_S)  # what SIGTERM or Ctrl+C to `keras-seq ui` does
    stopped = store.get(run_id)
    assert stopped.status == "interrupted", stopped.error
    assert "resume" in stopped.error
    assert (store.artifact_dir(run_id) / engine.BACKUP_DIR).is_dir()
    kept = stopped.epochs_done
    assert kept >= 2

    begun = EpochsBegun()
    with pytest.raises(KeyboardInterrupt):  # one more epoch is enough to see where it went on
        engine.run(
            None, store=store, run_id=run_id, resume=True, callbacks=[begun, StopAfter(kept + 1)]
        )
    assert begun.epochs == [kept + 1]  # continued after the kept epochs, not from epoch 1
    store.close()


def test_a_pending_resume_stays_interrupted_when_the_app_stops(tmp_path, interrupted_store):
    store, run_id = interrupted_run(interrupted_store, tmp_path / "runs")
    gate, busy = threading.Event(), threading.Event()

    def held(spec, **kwargs):  # the slot is busy with another run until the queue closes
        busy.set()
        gate.wait(WAIT_S)
        return engine.run(spec, **kwargs)

    queue = JobQueue(store, slots=["CPU"], runner=held)
    queue.submit([load_spec(spec(epochs=1))])
    assert busy.wait(WAIT_S)
    queue.resume(run_id)
    assert queue.position(run_id) == 0  # it waits for the busy slot
    closer = threading.Thread(target=queue.close, kwargs={"timeout": WAIT_S})
    closer.start()  # the app stops while the resume waits
    wait_until(lambda: queue.position(run_id) is None, what="the queue dropping the waiting run")
    gate.set()
    closer.join(WAIT_S)
    record = store.get(run_id)
    assert record.status == "interrupted"
    assert (store.artifact_dir(run_id) / engine.BACKUP_DIR).is_dir()
    store.close()


# --- kill -9 while the final model is saved ------------------------------------------------

# The child trains SPEC; its final `model.save` writes half a file, says so with a marker
# file and hangs there, so that the kill lands in the final save.
FINAL_SAVE_CHILD = """
    import json, sys, time
    from pathlib import Path
    import keras
    from builder_ui import engine
    from builder_ui.engine.store import RunStore

    marker = Path(sys.argv[3])

    def hanging_save(self, path, *args, **kwargs):
        Path(path).write_bytes(b"PK half a model")
        marker.write_text(str(path))
        time.sleep(600)

    keras.Model.save = hanging_save
    engine.run(json.loads(sys.argv[2]), store=RunStore(sys.argv[1]))
"""


def test_a_kill_during_the_final_save_resumes_without_training_again(tmp_path):
    marker = tmp_path / "saving"
    process = child(FINAL_SAVE_CHILD, str(tmp_path / "runs"), json.dumps(spec()), str(marker))
    try:
        wait_until(marker.exists, process, "the final save")
    finally:
        kill(process)
    store = RunStore(tmp_path / "runs")
    (killed,) = store.list_runs(history=True)
    assert killed.status == "interrupted"
    assert killed.epochs_done == EPOCHS
    directory = store.artifact_dir(killed.id)
    assert Path(marker.read_text()).exists()  # the half-written temporary model

    begun = EpochsBegun()
    resumed = engine.run(None, store=store, run_id=killed.id, resume=True, callbacks=[begun])
    assert resumed.status == "done", resumed.error
    assert begun.epochs == []  # every epoch was finished and checkpointed: none trains again
    assert resumed.history == killed.history
    assert (directory / engine.MODEL_FILE).is_file()
    assert not list(directory.glob(".model.tmp-*"))  # the half-written model is gone
    assert not (directory / engine.BACKUP_DIR).exists()  # removed once the model is saved
    store.close()


# --- a killed sweep --------------------------------------------------------------------------

SWEEP_CHILD = """
    import json, sys, time
    from builder_ui.engine import executors
    from builder_ui.engine.progress import ProgressCallback
    from builder_ui.engine.store import RunStore

    class Slow(ProgressCallback):
        def on_epoch_end(self, epoch, logs):
            time.sleep(0.3)

    executors.run_sweep(json.loads(sys.argv[2]), store=RunStore(sys.argv[1]), callbacks=[Slow()])
"""


def kill_sweep_in_its_second_trial(runs: Path, document: dict, trials: int) -> list:
    """Run the sweep of `document` in a child process and SIGKILL it once its first trial is
    done and its second has recorded an epoch (the store holding `trials` runs by then).

    Returns:
        The sweep's runs after the kill (the killed trial recovered as `interrupted`).
    """
    process = child(SWEEP_CHILD, str(runs), json.dumps(document))
    watcher = RunStore(runs, recover=False)

    def second_trial_training():
        records = watcher.list_runs(history=True)
        return (
            len(records) == trials and records[0].status == "done" and records[1].epochs_done >= 1
        )

    try:
        wait_until(second_trial_training, process, "the second trial's first epoch")
    finally:
        kill(process)
    watcher.close()
    with RunStore(runs) as store:
        return store.list_runs()


def test_resume_with_a_sweep_id_finishes_a_killed_sweep_without_duplicating_it(tmp_path, capsys):
    runs = tmp_path / "runs"
    data = spec(epochs=3, parameters={"model.encoder.units": [3, 4, 5]})
    before = kill_sweep_in_its_second_trial(runs, data, trials=3)
    sweep_id = before[0].sweep_id
    assert [r.status for r in before] == ["done", "interrupted", "queued"]

    assert cli.main(["resume", sweep_id, "--runs", str(runs)]) == 0
    out = capsys.readouterr().out
    assert sweep_id in out
    with RunStore(runs) as store:
        after = store.list_runs(history=True)
    assert [r.id for r in after] == [r.id for r in before]  # no trial was added
    assert [r.status for r in after] == ["done"] * 3
    assert all([e.epoch for e in r.history] == [1, 2, 3] for r in after)
    # A finished sweep has nothing left to resume: refused, naming the sweep.
    assert cli.main(["resume", sweep_id, "--runs", str(runs)]) == 2
    assert sweep_id in capsys.readouterr().err


# --- corrupt checkpoints -------------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


CORRUPTIONS = {
    # name: (how the backup is damaged, the epoch training resumes at, words in the note)
    "both weights files garbage": (
        lambda b: [
            _write(b / n, "garbage") for n in ("latest.weights.h5", "latest.weights.h5.bkp")
        ],
        1,
        "weights",
    ),
    "latest metadata says epoch 99": (
        lambda b: _write(b / "training_metadata.json", '{"epoch": 99, "batch": 0}'),
        3,  # from the previous checkpoint (epoch 2)
        "99",
    ),
    "both metadata files say epoch 99": (
        lambda b: [
            _write(b / n, '{"epoch": 99}')
            for n in ("training_metadata.json", "training_metadata.json.bkp")
        ],
        1,
        "99",
    ),
    "metadata garbage": (
        lambda b: [
            _write(b / n, "{not json")
            for n in ("training_metadata.json", "training_metadata.json.bkp")
        ],
        1,
        "metadata",
    ),
}


@pytest.mark.parametrize("case", sorted(CORRUPTIONS))
def test_a_corrupt_checkpoint_is_reported_set_aside_and_training_restarts_cleanly(
    tmp_path, case, capsys, interrupted_store
):
    damage, first_epoch, words = CORRUPTIONS[case]
    store, run_id = interrupted_run(interrupted_store, tmp_path / "runs")
    directory = store.artifact_dir(run_id)
    damage(directory / engine.BACKUP_DIR)
    bad = {p.name: p.read_bytes() for p in (directory / engine.BACKUP_DIR).iterdir()}
    store.close()

    assert cli.main(["resume", run_id, "--runs", str(tmp_path / "runs")]) == 0
    err = capsys.readouterr().err
    assert "checkpoint" in err and words in err, err
    with RunStore(tmp_path / "runs") as store:
        resumed = store.get(run_id)
        note = artifacts.artifact_path(store, run_id, CHECKPOINT_LOG).read_text(encoding="utf-8")
    assert resumed.status == "done", resumed.error
    assert [e.epoch for e in resumed.history] == list(range(1, EPOCHS + 1))
    assert words in note and f"epoch {first_epoch}" in note, note
    if first_epoch == 1:  # nothing usable: the damaged backup is kept aside, not deleted
        (aside,) = directory.glob(f"{engine.BACKUP_DIR}.bad-*")
        assert {p.name: p.read_bytes() for p in aside.iterdir()} == bad


def test_a_sweep_stopped_with_ctrl_c_keeps_its_trials_to_resume(tmp_path):
    from builder_ui.engine import executors

    store = RunStore(tmp_path / "runs")
    data = spec(epochs=2, parameters={"model.encoder.units": [3, 4, 5]})
    with pytest.raises(KeyboardInterrupt):
        executors.run_sweep(data, store=store, callbacks=[StopAfter(1)])
    before = store.list_runs()
    assert [r.status for r in before] == ["interrupted", "queued", "queued"]
    result = executors.resume_sweep(store, before[0].sweep_id)
    assert result.run_ids == [r.id for r in before] and result.all_done
    store.close()


class _PressesCtrlCWhenCollected:
    """Its finalizer presses Ctrl-C: the handler's KeyboardInterrupt is raised inside
    `__del__`, where Python prints "Exception ignored" and drops it, as it does when the
    garbage collector runs a weakref callback at the moment Ctrl-C arrives."""

    def __del__(self):
        signal.raise_signal(signal.SIGINT)
        for _ in range(100):  # the handler runs at one of these bytecodes, inside __del__
            pass


def lose_ctrl_c():
    _PressesCtrlCWhenCollected()  # collected at once: no reference is kept


class LoseCtrlCAfter(ProgressCallback):
    """Ctrl-C after epoch `epoch` ends, lost the way a finalizer loses it."""

    def __init__(self, epoch):
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs):
        if epoch == self.epoch:
            lose_ctrl_c()


class LoseCtrlCAtRunEnd(ProgressCallback):
    def on_run_end(self, record):
        lose_ctrl_c()


class TurnCtrlCIntoAnErrorAfter(ProgressCallback):
    """Ctrl-C after epoch `epoch`, caught by code that raises an error of its own instead."""

    def __init__(self, epoch):
        self.epoch = epoch

    def on_epoch_end(self, epoch, logs):
        if epoch == self.epoch:
            try:
                signal.raise_signal(signal.SIGINT)
                for _ in range(100):
                    pass
            except KeyboardInterrupt as error:
                raise RuntimeError("a library that wraps whatever it catches") from error


@pytest.fixture
def dropped(monkeypatch):
    """The exceptions Python drops as unraisable (in `__del__`, weakref callbacks) meanwhile."""
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: seen.append(unraisable))
    return seen


def test_a_ctrl_c_lost_in_a_finalizer_still_stops_the_sweep_resumably(tmp_path, dropped):
    from builder_ui.engine import executors

    store = RunStore(tmp_path / "runs")
    data = spec(epochs=EPOCHS, parameters={"model.encoder.units": [3, 4, 5]})
    with pytest.raises(KeyboardInterrupt):
        executors.run_sweep(data, store=store, callbacks=[LoseCtrlCAfter(1)])
    assert [type(u.exc_value) for u in dropped] == [KeyboardInterrupt]  # it was lost
    before = store.list_runs(history=True)
    assert [r.status for r in before] == ["interrupted", "queued", "queued"]
    assert len(before[0].history) < EPOCHS  # stopped within epoch 2, not trained to the end
    result = executors.resume_sweep(store, before[0].sweep_id)
    assert result.all_done
    store.close()


def test_a_ctrl_c_lost_after_a_trial_ends_starts_no_other_trial(tmp_path, dropped):
    from builder_ui.engine import executors

    store = RunStore(tmp_path / "runs")
    data = spec(epochs=2, parameters={"model.encoder.units": [3, 4]})
    with pytest.raises(KeyboardInterrupt):
        executors.run_sweep(data, store=store, callbacks=[LoseCtrlCAtRunEnd()])
    assert [type(u.exc_value) for u in dropped] == [KeyboardInterrupt]
    assert [r.status for r in store.list_runs()] == ["done", "queued"]
    store.close()


def test_a_ctrl_c_turned_into_another_error_interrupts_the_run_instead_of_failing_it(tmp_path):
    store = RunStore(tmp_path / "runs")
    with pytest.raises(KeyboardInterrupt) as raised:
        engine.run(spec(), store=store, callbacks=[TurnCtrlCIntoAnErrorAfter(1)])
    assert isinstance(raised.value.__cause__, RuntimeError)
    (record,) = store.list_runs(history=True)
    assert record.status == "interrupted", record.error
    assert [e.epoch for e in record.history] == [1]
    resumed = engine.run(None, store=store, run_id=record.id, resume=True)
    assert resumed.status == "done" and len(resumed.history) == EPOCHS
    store.close()


def test_without_ctrl_c_the_handler_is_put_back_and_nothing_is_noted(tmp_path):
    from builder_ui.engine import interrupts

    before = signal.getsignal(signal.SIGINT)
    record = engine.run(spec(epochs=1), store=RunStore(tmp_path / "runs"))
    assert record.status == "done"
    assert signal.getsignal(signal.SIGINT) is before
    assert not interrupts.pressed() and not interrupts.watching()


def test_ctrl_c_of_keras_seq_sweep_says_how_to_resume_the_sweep(tmp_path):
    runs = tmp_path / "runs"
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(spec(epochs=60, parameters={"model.encoder.units": [3, 4]})))
    argv = [sys.executable, "-m", "builder_ui.cli", "sweep", str(path), "--runs", str(runs)]
    process = subprocess.Popen(
        argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    watcher = RunStore(runs, recover=False)
    try:
        wait_until(
            lambda: any(r.epochs_done >= 1 for r in watcher.list_runs(history=True)),
            process,
            "an epoch",
        )
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=WAIT_S)
    finally:
        if process.poll() is None:
            kill(process)
        watcher.close()
    assert process.returncode == 130, err[-3000:]
    with RunStore(runs) as store:
        (sweep_id,) = {r.sweep_id for r in store.list_runs()}
    assert f"keras-seq resume {sweep_id} --runs {runs}" in err


def test_a_process_that_ignores_ctrl_c_keeps_ignoring_it_while_training(tmp_path):
    # The app's worker processes ignore SIGINT (the app stops them); a run must not undo that.
    seen = []

    class Handler(ProgressCallback):
        def on_epoch_end(self, epoch, logs):
            seen.append(signal.getsignal(signal.SIGINT))

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        record = engine.run(
            spec(epochs=1), store=RunStore(tmp_path / "runs"), callbacks=[Handler()]
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    assert record.status == "done" and seen == [signal.SIG_IGN]
