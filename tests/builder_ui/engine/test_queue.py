"""The app's training queue trains real tiny runs, one per device slot, and cancels cleanly.

The queue's own order, cancelling and failures are checked with a runner that does not train
(`QuickRunner`: the real queue and store, the training step replaced); training in the slot's
own process, as in the app, is checked on real training at the end.
"""

from __future__ import annotations

import copy
import itertools
import os
import random
import signal
import subprocess
import sys
import threading
import time

import pytest

from builder_ui.builders import load_spec
from builder_ui.engine.processes import this_process
from builder_ui.engine.progress import ProgressBoard
from builder_ui.engine.queue import JobQueue, recover_orphans
from builder_ui.engine.slots import detect_slots, slot_environment
from builder_ui.engine.store import RunStore
from tests.builder_ui.engine.quick_runner import QuickRunner

# 96 training and 24 validation sequences of 5 one-hot steps: 3 batches per epoch, ~1 s a run.
TINY = {
    "version": 1,
    "name": "tiny-rnn",
    "task": {"type": "long_lag", "lag": 5, "n": 120, "num_distractors": 3},
    "model": {
        "type": "sequence_classifier",
        "encoder": {"type": "rnn", "cell": "simple", "units": 4},
    },
    "train": {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 1},
}
WAIT_S = 120


def tiny(name: str, epochs: int = 1):
    data = copy.deepcopy(TINY)
    data["name"] = name
    data["train"]["epochs"] = epochs
    return load_spec(data)


class GatedRunner:
    """`QuickRunner`, held at a gate until released, counting how many run at once."""

    def __init__(self) -> None:
        self.runner = QuickRunner()
        self.gate = threading.Event()
        self.lock = threading.Lock()
        self.running = 0
        self.most_at_once = 0
        self.started: list[str] = []

    def __call__(self, spec, **kwargs):
        with self.lock:
            self.started.append(kwargs["run_id"])
            self.running += 1
            self.most_at_once = max(self.most_at_once, self.running)
        try:
            assert self.gate.wait(WAIT_S)
            return self.runner(spec, **kwargs)
        finally:
            with self.lock:
                self.running -= 1


@pytest.fixture
def store(tmp_path):
    with RunStore(tmp_path / "runs") as opened:
        yield opened


def test_runs_wait_queued_in_the_store_then_train_one_at_a_time_in_order(store):
    runner = GatedRunner()
    queue = JobQueue(store, slots=["CPU"], runner=runner)
    try:
        ids = queue.submit([tiny("first"), tiny("second"), tiny("third")])
        # Visible at once, before anything trains: the first is taken, the others wait in order.
        statuses = {record.id: record.status for record in store.list_runs()}
        assert set(statuses) == set(ids)
        assert all(status == "queued" for status in statuses.values())
        deadline = time.monotonic() + 10
        while queue.position(ids[1]) != 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [queue.position(run_id) for run_id in ids] == [None, 0, 1]
        assert [job.state for job in queue.jobs()] == ["running", "queued", "queued"]

        runner.gate.set()
        assert queue.wait(ids, timeout=WAIT_S)
    finally:
        queue.close()
    assert runner.started == ids
    assert runner.most_at_once == 1
    records = store.list_runs(ids=ids, history=True)
    assert [record.status for record in records] == ["done", "done", "done"]
    assert all(record.epochs_done == 1 and "accuracy" in record.metrics for record in records)
    # Each started only after the one before it had finished.
    for before, after in itertools.pairwise(records):
        assert after.started >= before.finished


def test_cancelling_a_waiting_run_records_it_cancelled_and_it_never_trains(store):
    runner = GatedRunner()
    queue = JobQueue(store, slots=["CPU"], runner=runner)
    try:
        first, second = queue.submit([tiny("keeps"), tiny("dropped")])
        said = queue.cancel(second)
        assert "will not train" in said
        record = store.get(second)
        assert record.status == "cancelled"
        assert record.error == "Cancelled before it started."
        runner.gate.set()
        assert queue.wait([first, second], timeout=WAIT_S)
    finally:
        queue.close()
    assert runner.started == [first]
    assert store.get(first).status == "done"
    assert store.get(second).history == ()
    assert not (store.directory / second).exists()


def test_a_runner_that_raises_fails_its_run_and_the_queue_goes_on(store):
    calls, runner = [], QuickRunner()

    def flaky(spec, **kwargs):
        calls.append(kwargs["run_id"])
        if len(calls) == 1:
            raise RuntimeError("device lost")
        return runner(spec, **kwargs)

    queue = JobQueue(store, slots=["CPU"], runner=flaky)
    try:
        ids = queue.submit([tiny("breaks"), tiny("works")])
        assert queue.wait(ids, timeout=WAIT_S)
    finally:
        queue.close()
    broken, fine = (store.get(run_id) for run_id in ids)
    assert broken.status == "failed" and broken.error == "RuntimeError: device lost"
    assert fine.status == "done"


@pytest.mark.large  # a process, to have the pid of one that ended
def test_runs_queued_by_an_app_that_stopped_are_recovered_as_cancelled(store):
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    dead_pid = int(ended.stdout)
    orphan = store.create_run(tiny("orphan"))
    store.update(orphan, pid=dead_pid, host=this_process()["host"])
    from_cli = store.create_run(tiny("cli-sweep-trial"))  # no pid: someone else's queue
    alive = store.create_run(tiny("live-app"))
    store.update(alive, **{k: v for k, v in this_process().items() if k in ("pid", "host")})

    assert recover_orphans(store) == [orphan]
    record = store.get(orphan)
    assert record.status == "cancelled"
    assert f"pid {dead_pid}" in record.error
    assert store.get(from_cli).status == "queued"
    assert store.get(alive).status == "queued"


def test_closing_the_queue_cancels_waiting_runs(store):
    runner = GatedRunner()
    queue = JobQueue(store, slots=["CPU"], runner=runner)
    first, second = queue.submit([tiny("in-flight"), tiny("waiting")])
    deadline = time.monotonic() + 10
    while not runner.started and time.monotonic() < deadline:
        time.sleep(0.01)
    runner.gate.set()
    queue.close(timeout=WAIT_S)
    assert store.get(second).status == "cancelled"
    # Closing is the app stopping: the run in flight stays resumable (test_stopping.py).
    assert store.get(first).status in ("interrupted", "done")
    with pytest.raises(RuntimeError, match="closed"):
        queue.submit([tiny("late")])


def test_progress_fraction_counts_batches_over_all_epochs():
    board = ProgressBoard()
    board.apply("r1", "epoch_begin", {"epoch": 2, "epochs": 4})
    board.apply("r1", "batch_end", {"step": 5, "steps": 10, "logs": {"loss": 0.5}})
    assert board.get("r1").fraction == pytest.approx((1 + 5 / 10) / 4)
    board.apply("r1", "run_end", {"status": "done"})
    assert board.get("r1").fraction == 1.0


def test_slots_follow_the_visible_gpus_and_each_process_sees_its_own(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert detect_slots() == ["GPU:0", "GPU:1"]
    assert slot_environment("GPU:1", 2) == {"CUDA_VISIBLE_DEVICES": "5"}
    assert slot_environment("GPU:0", 1) == {"CUDA_VISIBLE_DEVICES": "3,5"}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert detect_slots() == ["CPU"]


# ---------------------------------------------------------------------------
# Training in the slot's own process (the default)


@pytest.fixture(scope="module")
def process_queue(tmp_path_factory):
    """A queue whose CPU slot trains in a child process, as in the app."""
    store = RunStore(tmp_path_factory.mktemp("runs"))
    queue = JobQueue(store)  # slots detected: the CPU here
    yield queue
    queue.close()
    store.close()


@pytest.fixture(scope="module")
def twins(process_queue):
    """The same spec twice, trained while this process keeps drawing from `random`."""
    stop = threading.Event()

    def draw() -> None:  # what a web server's threads may do between and during runs
        while not stop.is_set():
            random.random()
            time.sleep(0.0005)

    drawer = threading.Thread(target=draw, daemon=True)
    drawer.start()
    try:
        ids = process_queue.submit([tiny("twin", epochs=2), tiny("twin", epochs=2)])
        assert process_queue.wait(ids, timeout=WAIT_S)
    finally:
        stop.set()
        drawer.join()
    return ids


@pytest.mark.large
def test_a_spec_trains_to_the_same_history_every_time_in_its_own_process(process_queue, twins):
    first, second = (process_queue.store.get(run_id) for run_id in twins)
    assert first.status == second.status == "done"
    assert first.pid != os.getpid() and first.pid == second.pid  # the slot's process, kept
    assert [e.metrics for e in first.history] == [e.metrics for e in second.history]
    assert first.metrics == second.metrics


@pytest.mark.large
def test_progress_board_follows_the_run_to_the_end(process_queue, twins):
    assert process_queue.slots == ["CPU"]
    run_id = twins[0]
    progress = process_queue.board.get(run_id)
    record = process_queue.store.get(run_id)
    assert progress.status == "done" and progress.fraction == 1.0
    assert (progress.epochs, progress.steps, progress.step) == (2, 3, 3)
    assert progress.device == record.device == "CPU"
    assert progress.precision == record.precision == "float32"
    assert progress.params == record.params
    # The per-epoch logs the board received are those the store recorded.
    assert [round(epoch["val_loss"], 5) for epoch in progress.history] == [
        round(epoch.metrics["val_loss"], 5) for epoch in record.history
    ]


def wait_for_an_epoch(queue: JobQueue, run_id: str):
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        progress = queue.board.get(run_id)
        if progress is not None and progress.history:
            return progress
        time.sleep(0.02)
    pytest.fail(f"run {run_id} did not finish an epoch in time")


@pytest.mark.large
def test_cancelling_a_training_run_stops_it_after_a_batch_with_status_cancelled(
    process_queue, twins
):
    (run_id,) = process_queue.submit([tiny("long", epochs=500)])
    wait_for_an_epoch(process_queue, run_id)
    assert "stops after its current batch" in process_queue.cancel(run_id)
    assert process_queue.wait([run_id], timeout=WAIT_S)
    record = process_queue.store.get(run_id)
    assert record.status == "cancelled"
    assert 1 <= record.epochs_done < 500
    assert "model.keras" not in record.artifacts
    with pytest.raises(KeyError, match="not in this app's training queue"):
        process_queue.cancel("no-such-run")


@pytest.mark.large
def test_a_run_whose_process_dies_is_interrupted_and_the_slot_trains_on(process_queue, twins):
    victim, after = process_queue.submit([tiny("killed", epochs=500), tiny("after")])
    wait_for_an_epoch(process_queue, victim)
    pid = process_queue.store.get(victim).pid
    os.kill(pid, signal.SIGKILL)  # as the kernel does when memory runs out
    assert process_queue.wait([victim, after], timeout=WAIT_S)
    killed = process_queue.store.get(victim)
    assert killed.status == "interrupted"  # resumable, epochs kept
    assert killed.epochs_done >= 1
    (job,) = [job for job in process_queue.jobs() if job.run_id == victim]
    assert job.error == "The training process ended unexpectedly (exit code -9)."
    record = process_queue.store.get(after)
    assert record.status == "done" and record.pid != pid

    # Resumed, it continues after the epochs it had finished (then it is cancelled here).
    before = killed.epochs_done
    process_queue.resume(victim)
    deadline = time.monotonic() + WAIT_S
    while process_queue.store.get(victim).epochs_done <= before:
        (job,) = [job for job in process_queue.jobs() if job.run_id == victim]
        assert job.state in ("queued", "running"), job.error
        assert time.monotonic() < deadline, "the resumed run recorded no new epoch"
        time.sleep(0.05)
    process_queue.cancel(victim)
    assert process_queue.wait([victim], timeout=WAIT_S)
    resumed = process_queue.store.get(victim)
    assert resumed.status == "cancelled"
    epochs = [epoch.epoch for epoch in resumed.history]
    assert epochs == list(range(1, len(epochs) + 1)) and len(epochs) > before
    with pytest.raises(ValueError, match="only an interrupted run can be resumed"):
        process_queue.resume(after)


@pytest.mark.large
def test_each_run_trains_on_its_train_backend_in_a_process_started_on_it(process_queue, twins):
    """`train.backend` per run: the slot's process is replaced only when the backend changes."""

    def on(backend, name):
        data = copy.deepcopy(TINY)
        data["name"] = name
        data["train"]["backend"] = backend
        return load_spec(data)

    default = os.environ.get("KERAS_BACKEND", "tensorflow")  # the app's: `auto`
    first, second = [name for name in ("tensorflow", "jax", "torch") if name != default]
    default_pid = process_queue.store.get(twins[0]).pid
    ids = process_queue.submit(
        [on(first, "a"), on(first, "a-again"), on("auto", "back"), on(second, "b")]
    )
    assert process_queue.wait(ids, timeout=WAIT_S)
    records = [process_queue.store.get(run_id) for run_id in ids]
    assert [r.status for r in records] == ["done"] * 4, [r.error for r in records]
    assert [r.backend for r in records] == [first, first, default, second]
    a, a_again, back, b = (r.pid for r in records)
    assert a == a_again  # the same backend: the same process, kept
    assert len({default_pid, a, back, b}) == 4  # each change: a new process
