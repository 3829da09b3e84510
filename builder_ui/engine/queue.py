"""The app's training queue: runs wait for a device slot, report progress, and can be cancelled.

    submit(specs) ─▶ store: one `queued` run each (visible at once in every table)
                 ─▶ pending queue ─▶ worker thread of a free slot
                                     ─▶ its training process: engine.run(run_id=…)
                                        │ progress messages (each batch, each epoch)
                                        ▼
                                     ProgressBoard (the app's live view); the store (each epoch)

There is one worker thread per device slot, so one run trains on a device at
a time and two runs never fight over a GPU: `"CPU"` when the machine has no
GPU, else `"GPU:0"`, `"GPU:1"`, … Runs are taken in the order they were
submitted.

Each slot trains in its own child process (`builder_ui.engine.worker`,
started on first use or by `warm_up`, kept for the next runs, started again
if it dies), not in the web server's process:

- a run's initial weights come from seeds that live in the process (Python's
  `random`, which Keras' initializers draw from, and NumPy's); the web
  server's threads use them too, so a run trained beside them would not be
  reproducible. In its own process a spec gives the same history every time;
- with several GPUs, each slot's process sees only its GPU
  (`CUDA_VISIBLE_DEVICES`), so the runs train in parallel, one per GPU;
- the web process can hide the GPUs from itself (`keep_gpus_for_training`),
  so that building a model summary there never takes GPU memory from a run;
- a run that crashes its process (out of memory) fails alone: its record
  becomes `interrupted` (resumable) and the slot starts a fresh process.

Cancelling a waiting run takes it out of the queue and records it as
`cancelled` at once; cancelling a training run sets its event, which the
engine checks after every batch, so it ends `cancelled` cleanly.

A sweep with `method: bayes` or a scheduler (`submit_search`) keeps its
Optuna study here, in the app (`builder_ui.engine.queued_search`): each
trial's training process asks it after every epoch whether to stop the trial
(`pruned`), and with `bayes` each trial's end chooses the next one, which
goes to the front of the queue so that the search runs as one. Cancelling a
trial of a `bayes` search ends the search: no trial is chosen after it. A
stopped search is taken up again with `resume_search`, its trials so far
replayed into a new study (`QueuedSearch.restore`).

Closing the queue (the app stopping: Ctrl+C, SIGTERM) is not cancelling: a
training run is interrupted after its batch and ends `interrupted`, with its
finished epochs and checkpoint, so that it can be resumed from the app or with
`keras-seq resume`; a waiting resume stays `interrupted`. If the app is killed
outright, the training process sees its stdin close and does the same.

The queue marks the runs it creates with its process id (the `pid` and `host`
of a `queued` run), so that a later app finds runs whose app stopped before
they started and records them as `cancelled` (`recover_orphans`) rather than
leaving them `queued` forever. Runs queued by other tools (a CLI sweep) carry
no pid and are left alone.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from builder_ui.builders import load_spec
from builder_ui.engine import devices
from builder_ui.engine.processes import alive, this_process
from builder_ui.engine.progress import TRAINING, WAITING, ProgressBoard
from builder_ui.engine.queued_search import QueuedSearch
from builder_ui.engine.records import RunRecord
from builder_ui.engine.slots import detect_slots, slot_environment
from builder_ui.engine.store import RunStore, StatusError
from builder_ui.engine.worker import TrainingProcess

_logger = logging.getLogger(__name__)


@dataclass
class Job:
    """One run submitted to the queue.

    Attributes:
        run_id, name, sweep_id: As in the store.
        resume: Continue an `interrupted` run from its last finished epoch.
        cancel: Set to stop the run (see `JobQueue.cancel`).
        interrupt: Set when the queue closes: the run stops, resumable.
        state: `queued`, `running`, then the run's final status.
        slot: The device slot it trains on, once started.
        submitted, started, finished: `time.time()` stamps.
        error: Why it failed, when the queue knows.
        search: The study of its sweep, when the sweep is a search (`submit_search`).
    """

    run_id: str
    name: str
    sweep_id: str | None
    resume: bool = False
    cancel: threading.Event = field(default_factory=threading.Event, repr=False)
    interrupt: threading.Event = field(default_factory=threading.Event, repr=False)
    state: str = WAITING
    slot: str | None = None
    submitted: float = field(default_factory=time.time)
    started: float | None = None
    finished: float | None = None
    error: str | None = None
    search: QueuedSearch | None = field(default=None, repr=False)


def recover_orphans(store: RunStore) -> list[str]:
    """Record as `cancelled` the queued runs whose app (pid on this host) has stopped.

    Returns:
        The ids of the runs changed.
    """
    host = socket.gethostname()
    changed = []
    for record in store.list_runs(status=WAITING):
        if record.pid is None or record.host != host or alive(record.pid):
            continue
        with contextlib.suppress(StatusError):
            store.set_status(
                record.id,
                "cancelled",
                error=f"The app that queued it (pid {record.pid}) stopped before it started.",
            )
            changed.append(record.id)
    return changed


# ---------------------------------------------------------------------------
# The queue


class JobQueue:
    """Trains submitted specs one per device slot, in order; see the module docstring.

    Args:
        store: The run store the runs are recorded in.
        slots: Device slot names; default: `detect_slots()` at the first submit.
        runner: Train in this process with this function instead of in a
            slot's training process (called as `runner(None, store=…,
            run_id=…, callbacks=[…], cancel=…)`, like `engine.run`); for
            tests and for embedding the queue where child processes cannot be
            started.
    """

    def __init__(
        self,
        store: RunStore,
        *,
        slots: Sequence[str] | None = None,
        runner: Callable[..., Any] | None = None,
    ) -> None:
        self.store = store
        self.board = ProgressBoard()
        self._slots = list(slots) if slots is not None else None
        self._runner = runner
        self._condition = threading.Condition()
        self._pending: deque[Job] = deque()
        self._jobs: dict[str, Job] = {}
        self._workers: list[threading.Thread] = []
        self._processes: dict[str, TrainingProcess] = {}
        self._closed = False
        recover_orphans(store)

    @property
    def slots(self) -> list[str]:
        """The device slots (detected on first use)."""
        if self._slots is None:
            self._slots = detect_slots()
        return list(self._slots)

    # -- submitting ------------------------------------------------------------

    def submit(self, specs: Iterable[Any], *, sweep_id: str | None = None) -> list[str]:
        """Record each spec as a `queued` run and queue it; returns the run ids, in order.

        Args:
            specs: Validated `ExperimentSpec`s (or their dicts), without a
                `sweep` section (expand sweeps first, `builder_ui.builders.sweeps.expand`).
            sweep_id: Recorded on every run (the trials of one sweep).
        """
        return self._submit(list(specs), sweep_id)

    def submit_search(self, search: QueuedSearch) -> list[str]:
        """Queue a `bayes` or scheduled sweep, its study kept here; returns the run ids queued now.

        With `grid` or `random` every planned trial is queued now; with
        `bayes` the first chosen one, each next one as the one before ends.
        """
        return self._submit(search.first_specs(), search.sweep_id, search)

    def _submit(self, specs: list[Any], sweep_id: str | None, search=None, front=False):
        if self._closed:
            raise RuntimeError("The training queue is closed; restart the app to train.")
        slots = self.slots
        jobs = [self._new_job(spec, sweep_id, search) for spec in specs]
        with self._condition:
            for job in jobs:
                self._jobs[job.run_id] = job
                if front:
                    self._pending.appendleft(job)
                else:
                    self._pending.append(job)
                self.board.apply(job.run_id, "status", {"status": WAITING})
            self._start_workers(slots)
            self._condition.notify_all()
        return [job.run_id for job in jobs]

    def _new_job(self, spec: Any, sweep_id: str | None, search: QueuedSearch | None) -> Job:
        owner = this_process()
        run_id = self.store.create_run(spec, sweep_id=sweep_id)
        self.store.update(run_id, pid=owner["pid"], host=owner["host"])
        if search is not None:
            search.attach(run_id)
        return Job(run_id, self.store.get(run_id, history=False).name, sweep_id, search=search)

    def warm_up(self) -> None:
        """Start the workers and their training processes now, so the first run starts at once.

        The processes load Keras and the backend in the background; the app calls
        this once it serves its page.
        """
        with self._condition:
            if self._closed:
                return
            self._start_workers(self.slots)
        for process in self._processes.values():
            process.start()

    def resume(self, run_id: str) -> None:
        """Queue an `interrupted` run to continue from its last finished epoch.

        Raises:
            ValueError: The run is not `interrupted` (naming its status), or
                it is in the queue already.
        """
        if self._closed:
            raise RuntimeError("The training queue is closed; restart the app to train.")
        record = self.store.get(run_id, history=False)
        if record.status != "interrupted":
            raise ValueError(
                f"Run {run_id} is {record.status!r}; only an interrupted run can be resumed."
            )
        if not self._requeue([record]):
            raise ValueError(f"Run {run_id} is already in the queue.")

    def resume_sweep(self, sweep_id: str, trials: Sequence[RunRecord] | None = None) -> list[str]:
        """Queue what is left of a stopped sweep (`RunStore.remaining_trials`).

        Its `interrupted` trials continue from their last epoch and its
        `queued` ones, which no process was left to train (a killed
        `keras-seq sweep`, a stopped app), train; no trial is added. Trials
        already in this queue are left where they are.

        Args:
            sweep_id: The sweep.
            trials: What `RunStore.remaining_trials(sweep_id)` returned to a caller
                that checked them first (the app checks their data paths), so the
                trials queued are the trials checked; default None: read them here.

        Returns:
            The ids of the trials queued now.

        Raises:
            ValueError: No such sweep, a trial still running, or nothing left.
        """
        if self._closed:
            raise RuntimeError("The training queue is closed; restart the app to train.")
        if trials is None:
            trials = self.store.remaining_trials(sweep_id)
        queued = self._requeue(trials)
        if not queued:
            raise ValueError(f"What is left of sweep {sweep_id!r} is in the queue already.")
        return queued

    def resume_search(self, search: QueuedSearch, records: Sequence[RunRecord]) -> list[str]:
        """Take up a stopped search: every trial it made so far is in `records` (with history).

        Its ended trials are replayed into `search`'s study, its `interrupted`
        and `queued` ones queued inside it (`QueuedSearch.restore`); a `bayes`
        search with none left queues the next trial it chooses.

        Returns:
            The ids of the trials queued now.

        Raises:
            ValueError: Nothing is left to train, or what is left is in the queue already.
        """
        if self._closed:
            raise RuntimeError("The training queue is closed; restart the app to train.")
        left = search.restore(records)
        if left:
            queued = self._requeue(left, search)
            if not queued:
                raise ValueError(
                    f"What is left of sweep {search.sweep_id!r} is in the queue already."
                )
            return queued
        following = search.next_spec()
        if following is None:
            raise ValueError(f"Search {search.sweep_id!r} has chosen and run all its trials.")
        return self._submit([following], search.sweep_id, search)

    def _requeue(self, records: Sequence[RunRecord], search: QueuedSearch | None = None):
        """Queue existing runs (interrupted ones to resume); skip those queued already."""
        slots = self.slots
        queued = []
        with self._condition:
            for record in records:
                active = self._jobs.get(record.id)
                if active is not None and active.state in (WAITING, TRAINING):
                    continue
                resume = record.status == "interrupted"
                job = Job(record.id, record.name, record.sweep_id, resume=resume, search=search)
                self._jobs.pop(record.id, None)
                self._jobs[record.id] = job
                self._pending.append(job)
                self.board.apply(record.id, "status", {"status": WAITING})
                queued.append(record.id)
            if queued:
                self._start_workers(slots)
                self._condition.notify_all()
        return queued

    def _start_workers(self, slots: list[str]) -> None:
        if self._workers:
            return
        for slot in slots:
            if self._runner is None:
                self._processes[slot] = TrainingProcess(
                    self.store.directory,
                    slot_environment(slot, len(slots)),
                    f"keras-seq-train-{slot}",
                )
            worker = threading.Thread(
                target=self._work, args=(slot,), name=f"keras-seq-{slot}", daemon=True
            )
            worker.start()
            self._workers.append(worker)

    # -- working ---------------------------------------------------------------

    def _work(self, slot: str) -> None:
        while True:
            with self._condition:
                while not self._pending and not self._closed:
                    self._condition.wait()
                if self._closed:
                    return
                job = self._pending.popleft()
                job.state, job.slot, job.started = TRAINING, slot, time.time()
                self._condition.notify_all()
            self._train(job, slot)

    def _train(self, job: Job, slot: str) -> None:
        state, error = "failed", None
        prune = None
        try:
            if job.search is not None:
                prune = job.search.begin(job.run_id)
            if self._runner is not None:
                extra = {"prune": prune} if prune is not None else {}
                record = self._runner(
                    None,
                    store=self.store,
                    run_id=job.run_id,
                    callbacks=[self.board.callback(job.run_id)],
                    cancel=job.cancel,
                    interrupt=job.interrupt,
                    resume=job.resume,
                    **extra,
                )
                state, error = record.status, record.error
            else:
                state, error = self._train_in_process(job, self._processes[slot], prune)
        except Exception as failure:  # keep the worker alive for the next runs
            _logger.exception("Run %s could not be trained", job.run_id)
            error = f"{type(failure).__name__}: {failure}"
            self._mark_failed(job.run_id, error)
        finally:
            if job.search is not None:
                self._continue_search(job)  # its next trial waits before this one has ended
            with self._condition:
                job.state, job.error, job.finished = state, error, time.time()
                self._condition.notify_all()
            self.board.apply(job.run_id, "status", {"status": state})

    def _continue_search(self, job: Job) -> None:
        """Tell the study how the trial ended; queue the trial it chooses next (`bayes`)."""
        search = job.search
        try:
            if self._closed or job.cancel.is_set() or job.interrupt.is_set():
                search.stop()
            following = search.end(job.run_id, self.store.get(job.run_id))
            if following is not None and not self._closed:
                self._submit([following], search.sweep_id, search, front=True)
        except Exception:  # the trials so far stay as they are; the queue goes on
            _logger.exception("Search %s could not choose its next trial", search.sweep_id)
            search.stop()

    def _train_in_process(
        self, job: Job, process: TrainingProcess, prune=None
    ) -> tuple[str, str | None]:
        spec = load_spec(self.store.get(job.run_id, history=False).spec)
        state, error = process.train(
            job.run_id,
            job.cancel,
            lambda kind, payload: self.board.apply(job.run_id, kind, payload),
            resume=job.resume,
            interrupt=job.interrupt,
            prune=prune,
            run_env=devices.backend_environment(spec.train),  # its `train.backend`
        )
        if state != "lost":
            return state, error
        # The process died (out of memory, killed): a run it left `running` becomes
        # `interrupted` (resumable); one it never started fails. The next run gets a new one.
        self.store.recover_interrupted()
        with contextlib.suppress(Exception):
            if self.store.get(job.run_id, history=False).status == WAITING:
                self.store.finish(job.run_id, "failed", error=error)
        with contextlib.suppress(Exception):
            return self.store.get(job.run_id, history=False).status, error
        return "failed", error

    def _mark_failed(self, run_id: str, error: str) -> None:
        with contextlib.suppress(Exception):
            status = self.store.get(run_id, history=False).status
            if status in (WAITING, TRAINING):
                self.store.finish(run_id, "failed", error=error)

    # -- controlling -----------------------------------------------------------

    def cancel(self, run_id: str) -> str:
        """Cancel a run of this queue; returns what happened, in words.

        A waiting run is taken out of the queue and recorded `cancelled`; a
        training run stops after its current batch (then `cancelled`). A trial
        of a `bayes` search ends the search: no trial is chosen after it.

        Raises:
            KeyError: The run was not submitted to this queue.
        """
        with self._condition:
            job = self._jobs.get(run_id)
            if job is None:
                raise KeyError(
                    f"Run {run_id!r} is not in this app's training queue; only runs queued "
                    "here can be cancelled here."
                )
            job.cancel.set()
            ends_search = ""
            if job.search is not None and job.search.bayes and job.state in (WAITING, TRAINING):
                job.search.stop()
                ends_search = f" Search {job.sweep_id} chooses no more trials."
            if job in self._pending:
                self._pending.remove(job)
                job.finished = time.time()
                if job.resume:  # it keeps its epochs and can be resumed later
                    if job.search is not None:
                        job.search.forget(run_id)
                    job.state = "interrupted"
                    self.board.apply(run_id, "status", {"status": "interrupted"})
                    self._condition.notify_all()
                    return f"Run {run_id} will not be resumed now; it stays interrupted."
                job.state = "cancelled"
                self.store.finish(run_id, "cancelled", error="Cancelled before it started.")
                if job.search is not None:
                    job.search.forget(run_id)
                self.board.apply(run_id, "status", {"status": "cancelled"})
                self._condition.notify_all()
                return f"Run {run_id} was waiting; it is cancelled and will not train.{ends_search}"
            if job.state == TRAINING:
                return f"Run {run_id} stops after its current batch (then: cancelled).{ends_search}"
            return f"Run {run_id} already ended ({job.state})."

    def jobs(self) -> list[Job]:
        """Every job submitted here, in submission order (copies)."""
        with self._condition:
            return [copy.copy(job) for job in self._jobs.values()]

    def position(self, run_id: str) -> int | None:
        """0 for the next run to start, 1 for the one after, …; None if not waiting."""
        with self._condition:
            for index, job in enumerate(self._pending):
                if job.run_id == run_id:
                    return index
        return None

    def wait(self, run_ids: Iterable[str], timeout: float | None = None) -> bool:
        """Block until these runs have ended; False if `timeout` seconds passed first."""
        run_ids = list(run_ids)
        return self._wait_until(
            lambda: all(
                run_id in self._jobs and self._jobs[run_id].state not in (WAITING, TRAINING)
                for run_id in run_ids
            ),
            timeout,
        )

    def wait_sweep(self, sweep_id: str, timeout: float | None = None) -> bool:
        """Block until no run of the sweep waits or trains here (a search: its last trial
        chosen and ended); False if `timeout` seconds passed first."""
        return self._wait_until(
            lambda: (
                not any(
                    job.sweep_id == sweep_id and job.state in (WAITING, TRAINING)
                    for job in self._jobs.values()
                )
            ),
            timeout,
        )

    def _wait_until(self, ended: Callable[[], bool], timeout: float | None) -> bool:
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._condition:
            while not ended():
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._condition.wait(remaining if remaining is not None else 1.0)
        return True

    def interrupt_training(self) -> None:
        """Stop the runs training now after their batch, resumable (`interrupted`); no wait.

        The app calls it first thing on SIGTERM or Ctrl+C, then `close`.
        """
        # No lock: a signal handler calls it, maybe while this thread holds the lock.
        for job in list(self._jobs.values()):
            if job.state == TRAINING:
                job.interrupt.set()

    def close(self, timeout: float = 30.0) -> None:
        """Cancel what waits, interrupt what trains, end the training processes (in `timeout`).

        A training run ends `interrupted` with its checkpoint (resumable), and a
        waiting resume stays `interrupted`: stopping the app loses no training.
        """
        with self._condition:
            self._closed = True
            pending, self._pending = list(self._pending), deque()
            for job in self._jobs.values():
                job.interrupt.set()
                if job.search is not None:
                    job.search.stop()
            self._condition.notify_all()
        for job in pending:
            if job.resume:  # it keeps its epochs and checkpoint, to be resumed later
                job.state = "interrupted"
                continue
            job.state = "cancelled"
            with contextlib.suppress(Exception):
                self.store.finish(
                    job.run_id, "cancelled", error="The app stopped before it started."
                )
        deadline = time.monotonic() + timeout
        for worker in self._workers:
            worker.join(max(0.0, deadline - time.monotonic()))
        for process in self._processes.values():  # idle now, or past the deadline
            process.stop(1.0)
