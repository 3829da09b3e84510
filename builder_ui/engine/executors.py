"""Sweep executors: run every trial of a spec's `sweep:` into one run store.

    spec ─▶ sweeps.trials (every combination validated)
         ─▶ prepare each trial (data and compatibility checks; still nothing written)
         ─▶ one `queued` run per trial, all with the same sweep id
         ─▶ executor: `local` (one after another, in this process)
                      `ray`   (one Ray task per trial, in parallel, each in its own process)

Every trial is checked before the first run is created, so a sweep with one
bad combination writes nothing and names the combination (`SpecError`).

`method: bayes` and `scheduler: asha`: one search engine, Optuna's study
(`builder_ui.engine.search`) in the driver, on both executors (and in the app's queue,
`queued_search`). A `bayes` sweep checks every combination it may choose, then creates and
trains each run as the sampler chooses it (a trial that fails the data checks ends
`failed` and the search goes on): one at a time locally; on `ray` as many at once as the
cluster trains, the next asked as each ends. A scheduler's weak trials end `pruned` at an
epoch boundary, their epochs kept: a remote trial asks the driver's study after each
recorded epoch (`remote.ask_driver`), as a local one asks it in process.

Every sweep's spec is recorded in the store beside its trials
(`RunStore.record_sweep`), once its trials are checked. A local sweep stopped
with Ctrl-C or killed leaves its trial in flight `interrupted` and the ones not
started `queued`; `resume_sweep` (`keras-seq resume SWEEP_ID`) runs what is
left, in this process. A `grid` or `random` sweep adds no trial. A search
(`bayes`, or a scheduler) goes on in a new study that its finished trials are
replayed into first (`search.Search.replay`), so ASHA prunes the rest against
them, and `bayes` then chooses its remaining trials until `num_trials` have
run, wherever the search ran before (locally, on Ray or in the app).

The `ray` executor makes each trial a Ray task that asks for one GPU when the
cluster has GPUs, else one CPU. The driver owns the store: a worker never
opens it. Each trial trains in a scratch directory of its worker, its data
file shipped to it, and streams its epochs and checkpoints back as they end,
then its model and other artifacts (`builder_ui.engine.remote`), so the
cluster's nodes need no shared disk and a trial's epochs appear in the store
as they end, as with the local executor. A trial whose worker dies is left
`interrupted`, resumable from its last streamed epoch. `address=` joins an
existing cluster (`ray.init(address=...)`; `"auto"` takes `RAY_ADDRESS` or the
latest `ray start` on this machine); otherwise a Ray instance already started
in this process is used, or a new local one is started
(`ray.init(address="local")`, stopped at the end) even when the machine runs
another cluster or a stale `ray_current_cluster` file points at one that is
gone. Ray keeps its files under `RAY_TMPDIR` (default `/tmp`), in `ray/`. Ray
is an optional dependency: `pip install "keras-seq[ray]"`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from builder_ui.builders import load_spec, memory, sweeps
from builder_ui.engine import devices, interrupts, remote, search, transfer
from builder_ui.engine.records import RunRecord
from builder_ui.engine.store import RunStore
from builder_ui.extras import import_extra
from builder_ui.specs import SpecError, shown

EXECUTORS = ("local", "ray")

# Environment variables handed to Ray workers, so they train like the driver would.
_WORKER_ENV = ("KERAS_BACKEND", "TF_CPP_MIN_LOG_LEVEL", "CUDA_VISIBLE_DEVICES", "JAX_PLATFORMS")

# How often the driver applies the epochs remote trials sent while it waits for them to end.
RAY_POLL_S = 0.5


def _training():
    """`engine.train`, which imports Keras: loaded by a sweep's first check or run, once the
    process has its backend (`_select_one_backend`; a Ray worker, its runtime environment)."""
    from builder_ui.engine import train  # Keras loads with it, on the backend chosen by now

    return train


class ExecutorError(RuntimeError):
    """An executor that cannot run here (Ray missing, cluster unreachable)."""


@dataclass(frozen=True)
class SweepResult:
    """What a sweep did: its id and the final record of each trial's run, in trial order.

    Attributes:
        sweep_id: The id shared by the runs (`RunStore.list_runs(sweep_id=...)`).
        records: One `RunRecord` per trial.
    """

    sweep_id: str
    records: tuple[RunRecord, ...]

    @property
    def run_ids(self) -> list[str]:
        return [record.id for record in self.records]

    @property
    def all_done(self) -> bool:
        """Whether every trial's run ended `done`."""
        return all(record.status == "done" for record in self.records)


def check_trial(spec: Any) -> memory.MemoryEstimate | None:
    """Everything `engine.run` checks before it writes, for one trial; raises `SpecError`.

    The same checks as `train.preflight` (fields, data, device, what `model.fit` would
    refuse, memory budget). Returns the trial's memory estimate, with its parameter count
    (None when its model type gives none).
    """
    prepared = _training().preflight(spec)
    return memory.estimate(prepared.spec, prepared.builder, prepared.task)


def plan_sweep(spec: Any) -> list[Any]:
    """The trials' specs of `spec`, each checked as `engine.run` would check it
    (`plan_trials`, their specs only)."""
    return [trial.spec for trial in plan_trials(spec)]


def plan_trials(spec: Any) -> list[sweeps.Trial]:
    """The trials of `spec` (`sweeps.Trial`: values and spec), each checked as `engine.run`
    would check it.

    Args:
        spec: An `ExperimentSpec` or anything `load_spec` reads. A spec
            without `sweep:` gives one trial, itself.

    Returns:
        Each trial, its `ExperimentSpec` named `"{name}-{i}"`.

    Raises:
        SpecError: Every invalid trial, each problem labelled with the trial's
            values (`(trial 2: model.encoder.cell='gru')`).
    """

    return check_trials(sweeps.trials(load_spec(spec)))


def check_trials(trials: Sequence[sweeps.Trial]) -> list[sweeps.Trial]:
    """`trials` (from `sweeps.trials`), once each is checked as `engine.run` would check it;
    raises as `plan_trials` does."""
    trial_estimates(trials)
    return list(trials)


def trial_estimates(trials: Sequence[sweeps.Trial]) -> list[memory.MemoryEstimate | None]:
    """Each trial checked as `engine.run` would check it (`check_trial`), and its memory
    estimate, in order; raises as `plan_trials` does."""
    problems: list[tuple[str, str]] = []
    estimates = []
    for trial in trials:
        try:
            estimates.append(check_trial(trial.spec))
        except SpecError as error:
            if not trial.values:
                raise
            label = ", ".join(f"{key}={shown(value)}" for key, value in trial.values.items())
            problems += [
                (path, f"{message} (trial {trial.index}: {label})")
                for path, message in error.problems
            ]
    if problems:
        raise SpecError(problems)
    return estimates


def run_sweep(
    spec: Any,
    *,
    store: RunStore,
    executor: str = "local",
    address: str | None = None,
    callbacks: Sequence[Any] = (),
    num_cpus: int | None = None,
    sweep_id: str | None = None,
    cancel: Any = None,
    storage: str | None = None,
) -> SweepResult:
    """Run every trial of a spec's sweep into `store`; see the module docstring.

    Args:
        spec: An `ExperimentSpec` with a `sweep:` section, or anything
            `load_spec` reads (a spec without one runs as a single trial).
        store: The `RunStore`. With `ray` it stays the driver's: workers
            never open it (`builder_ui.engine.remote`).
        executor: `"local"` (default): trials one after another in this
            process; `"ray"`: one Ray task per trial.
        address: `ray` only: the address of a running Ray cluster to join
            (`"auto"`, `"ray://host:10001"`, `"host:6379"`).
        callbacks: Progress callbacks (`builder_ui.engine.progress.ProgressCallback`)
            and Keras callbacks. `local` passes them to every trial's
            `engine.run`; `ray` (whose trials train in other processes) calls
            only `on_run_end(record)`, as each trial ends.
        num_cpus: `ray` only, when it starts a local instance: the CPUs it
            may use (default: all).
        sweep_id: The id the runs share; default `sweeps.sweep_id(spec)`, a
            hash of the spec.
        cancel: `local` only: a `threading.Event`; when set, the running trial
            stops after its current batch and the trials not started yet are
            marked `cancelled`.
        storage: `ray` only: a `pyarrow.fs` URI (`s3://bucket/prefix`,
            `file:///shared/dir`) through which the trials send their
            checkpoints and files instead of by value through Ray's object
            store (`builder_ui.engine.transfer`); checked before any run is made.

    Returns:
        A `SweepResult`: the sweep id and each trial's final `RunRecord`.

    Raises:
        SpecError: A trial is invalid; nothing is written to the store.
        ValueError: An unknown executor, or an option the executor does not take.
        StorageError: The storage URI cannot be written (a `ValueError`).
        ExecutorError: Ray is not installed, or the cluster cannot be reached.
    """

    if executor not in EXECUTORS:
        raise ValueError(
            f"Received an invalid value for argument `executor`, expected one of "
            f"{list(EXECUTORS)}, got {executor!r}."
        )
    if executor != "ray":
        for option, value in (("address", address), ("num_cpus", num_cpus), ("storage", storage)):
            if value is not None:
                raise ValueError(
                    f"Received an invalid value for argument `{option}`: it is for the 'ray' "
                    f"executor only, got {value!r} with executor {executor!r}."
                )
    if executor == "ray" and cancel is not None:
        raise ValueError(
            "Received an invalid value for argument `cancel`: the 'ray' executor cannot be "
            "cancelled from here; stop the Ray job instead."
        )
    if num_cpus is not None and (
        isinstance(num_cpus, bool) or not isinstance(num_cpus, int) or num_cpus < 1
    ):
        raise ValueError(
            "Received an invalid value for argument `num_cpus`, expected a positive integer, "
            f"got {num_cpus!r}."
        )
    ray = _import_ray() if executor == "ray" else None  # fail before any work
    spec = load_spec(spec)
    storage = transfer.check(storage)
    smart = search.needs_search(spec.sweep)
    sweep_id = sweep_id or sweeps.sweep_id(spec)
    if smart and executor == "ray":
        records = _run_ray_search(ray, spec, store, sweep_id, callbacks, address, num_cpus, storage)
        return SweepResult(sweep_id, tuple(records))
    if smart and spec.sweep.method == "bayes":
        return SweepResult(sweep_id, tuple(_run_bayes(spec, store, sweep_id, callbacks, cancel)))
    trials = sweeps.trials(spec)
    if executor == "local":  # before the checks load Keras
        _select_one_backend([trial.spec for trial in trials])
    trial_specs = [trial.spec for trial in check_trials(trials)]
    study = _search(spec, trial_specs[0]) if smart else None  # Optuna missing: nothing written
    if spec.sweep is not None:
        store.record_sweep(sweep_id, spec)
    run_ids = [store.create_run(trial, sweep_id=sweep_id) for trial in trial_specs]
    if executor == "local":
        records = _run_local(store, run_ids, callbacks, cancel, study)
    else:
        records = _run_ray(ray, store, run_ids, callbacks, address, num_cpus, storage)
    return SweepResult(sweep_id, tuple(records))


# --- local ------------------------------------------------------------------------------------


def _search(spec: Any, first_trial: Any) -> search.Search:
    """The Optuna study of a sweep, on `sweep.metric` or the model's main validation metric."""
    metric = spec.sweep.metric or _training().preflight(first_trial).monitor_metric
    try:
        return search.Search(spec.sweep, metric)
    except ImportError as error:
        raise ExecutorError(str(error)) from None


def _run_local(store, run_ids, callbacks, cancel, study=None) -> list[RunRecord]:

    records = []
    with interrupts.remembered():
        for run_id in run_ids:
            if cancel is not None and cancel.is_set():
                break
            # On Ctrl-C (or a kill) the trials not started stay `queued`, and the one
            # training `interrupted`: `resume_sweep` (`keras-seq resume SWEEP`) runs them.
            interrupts.raise_if_pressed()
            trial = study.start() if study is not None else None
            prune = study.pruner(trial) if study is not None else None
            record = _training().run(
                None, store=store, run_id=run_id, callbacks=callbacks, prune=prune
            )
            if study is not None:
                study.tell(trial, record)
            records.append(record)
    # Trials that never started because the sweep was cancelled do not stay queued.
    _cancel_queued(store, run_ids[len(records) :])
    return [store.get(run_id) for run_id in run_ids]


def _run_bayes(spec, store, sweep_id, callbacks, cancel) -> list[RunRecord]:
    """`method: bayes`: each trial chosen by the study from the results so far, then trained."""
    candidates = sweeps.trials(spec)  # every combination it may choose, validated
    _select_one_backend([candidate.spec for candidate in candidates])
    study = _search(spec, candidates[0].spec)
    store.record_sweep(sweep_id, spec)
    numbers = range(spec.sweep.num_trials)
    with interrupts.remembered():
        run_ids = _choose_and_train(spec, store, sweep_id, study, numbers, callbacks, cancel)
    return [store.get(run_id) for run_id in run_ids]


def _choose_and_train(spec, store, sweep_id, study, numbers, callbacks, cancel) -> list[str]:
    """`bayes`: trials `numbers`, each asked of the study, created, trained and told."""
    run_ids = []
    for number in numbers:
        if cancel is not None and cancel.is_set():
            break
        interrupts.raise_if_pressed()
        trial, values = study.ask()
        run_id = store.create_run(sweeps.trial(spec, number, values).spec, sweep_id=sweep_id)
        run_ids.append(run_id)
        try:
            prune = study.pruner(trial)
            _training().run(None, store=store, run_id=run_id, callbacks=callbacks, prune=prune)
        except SpecError:
            pass  # a data check failed: the engine marked the run `failed`; the search goes on
        study.tell(trial, store.get(run_id), values)
    return run_ids


def resume_sweep(store: RunStore, sweep_id: str, *, callbacks: Sequence[Any] = ()) -> SweepResult:
    """Run what is left of a stopped sweep, one trial after another, in this process.

    Its `interrupted` trials continue from their last finished epoch, its
    `queued` ones (never started: the sweep was killed or stopped with
    Ctrl-C) train; finished trials are left as they are. A `grid` or
    `random` sweep adds no trial, so it is not duplicated. A search (`bayes`
    or a scheduler) whose spec the store recorded goes on in a new study, its
    finished trials replayed first (`search.Search.replay`); `bayes` then
    chooses trials until `num_trials` have been made.

    Returns:
        A `SweepResult` with every trial of the sweep, in the order created.

    Raises:
        ValueError: No such sweep, a trial still running, or nothing left to run.
        ExecutorError: The search needs Optuna, which is not installed.
    """
    recorded = store.sweep_spec(sweep_id)
    parent = load_spec(recorded) if recorded is not None else None
    if parent is not None and search.needs_search(parent.sweep):
        return _resume_search(parent, store, sweep_id, callbacks)
    left = store.remaining_trials(sweep_id)
    _select_one_backend([load_spec(record.spec) for record in left])
    with interrupts.remembered():
        for record in left:
            interrupts.raise_if_pressed()
            resume = record.status == "interrupted"
            _training().run(None, store=store, run_id=record.id, resume=resume, callbacks=callbacks)
    records = store.list_runs(sweep_id=sweep_id, history=True)
    return SweepResult(sweep_id, tuple(records))


def _resume_search(spec, store, sweep_id, callbacks) -> SweepResult:
    """`resume_sweep` of a search: replay what ran, go on with what is left, choose the rest."""
    records = store.stopped_sweep(sweep_id, history=True)
    left = [record for record in records if record.status in ("interrupted", "queued")]
    ended = [record for record in records if record.status not in ("interrupted", "queued")]
    to_choose = spec.sweep.num_trials - len(records) if spec.sweep.method == "bayes" else 0
    if not left and to_choose <= 0:
        statuses = ", ".join(f"{record.id} {record.status}" for record in records)
        raise ValueError(f"Sweep {sweep_id!r} has nothing left to resume ({statuses}).")
    candidates = sweeps.trials(spec)
    _select_one_backend([candidate.spec for candidate in candidates])
    study = _search(spec, candidates[0].spec)
    ended_values = search.trial_values(candidates, ended, spec.sweep)
    for record, values in zip(ended, ended_values, strict=True):
        study.replay(record, values)
    left_values = search.trial_values(candidates, left, spec.sweep)
    with interrupts.remembered():
        for record, values in zip(left, left_values, strict=True):
            interrupts.raise_if_pressed()
            trial = study.resume(record, values)
            try:
                _training().run(
                    None,
                    store=store,
                    run_id=record.id,
                    resume=record.status == "interrupted",
                    callbacks=callbacks,
                    prune=study.pruner(trial),
                )
            except SpecError:
                pass  # as in `_choose_and_train`: that trial failed, the search goes on
            study.tell(trial, store.get(record.id), values)
        numbers = range(len(records), len(records) + max(to_choose, 0))
        _choose_and_train(spec, store, sweep_id, study, numbers, callbacks, None)
    return SweepResult(sweep_id, tuple(store.list_runs(sweep_id=sweep_id, history=True)))


def _select_one_backend(trial_specs: Sequence[Any]) -> None:
    """Start Keras on the trials' `train.backend`: one for all, as they train in this process."""
    wanted = sorted({devices.wanted_backend(trial.train) or "auto" for trial in trial_specs})
    if len(wanted) > 1:
        raise SpecError(
            f"train.backend: the trials of a local sweep train in one process, on one Keras "
            f"backend, but these ask for {wanted}; run the sweep with the 'ray' executor "
            "(each trial in its own worker) or one sweep per backend"
        )
    devices.select_backend(trial_specs[0].train)


def _cancel_queued(store: RunStore, run_ids: Sequence[str]) -> None:
    for run_id in run_ids:
        if store.get(run_id, history=False).status == "queued":
            store.finish(run_id, "cancelled", error="The sweep stopped before this trial started.")


# --- Ray --------------------------------------------------------------------------------------


def _import_ray():
    """Import Ray, or say which extra installs it."""
    try:
        return import_extra("ray", "ray", "The 'ray' executor", "Ray")
    except ModuleNotFoundError as error:
        raise ExecutorError(str(error)) from None


def _worker_env() -> dict[str, str]:
    env = {name: os.environ[name] for name in _WORKER_ENV if name in os.environ}
    env["KERAS_BACKEND"] = devices.current_backend()
    return env


@contextlib.contextmanager
def _ray_session(ray, address, num_cpus):
    """Ray initialised (joined, or started and stopped here); yields the channel and the request."""
    # ray.init leaves its SIGTERM handler (sys.exit) installed: put back what was there.
    with interrupts.handlers_kept():
        started_here = False
        if not ray.is_initialized():
            options: dict[str, Any] = {
                "log_to_driver": False,
                "runtime_env": {"env_vars": _worker_env()},
            }
            if address is not None:
                options["address"] = address
            else:
                # A new instance of our own: without "local", ray.init() joins whatever
                # RAY_ADDRESS or <RAY_TMPDIR>/ray/ray_current_cluster names, even a dead cluster.
                options.update(address="local", num_cpus=num_cpus, include_dashboard=False)
            try:
                ray.init(**options)
            except Exception as error:
                where = f"the Ray cluster at {address!r}" if address else "a local Ray instance"
                raise ExecutorError(
                    f"Could not start {where}: {type(error).__name__}: {error}"
                ) from None
            started_here = True
        elif address is not None or num_cpus is not None:
            raise ValueError(
                "Received an invalid value for argument `address`/`num_cpus`: Ray is already "
                "initialised in this process; call ray.shutdown() first or leave them unset."
            )
        channel = None
        try:
            resources = ray.cluster_resources()
            request = {"num_gpus": 1} if resources.get("GPU", 0) >= 1 else {"num_cpus": 1}
            channel = _channel(ray)
            yield channel, request
        finally:
            if channel is not None:
                channel.shutdown()
            if started_here:
                ray.shutdown()


class _RayTrials:
    """Trials as Ray tasks, their messages mirrored into the driver's store as they come.

    `launch(run_id)` starts the trial of a `queued` run; `wait()` applies every message
    waiting and returns the records of the trials that ended meanwhile (each reported to the
    progress callbacks). A trial given a `prune(epoch, logs)` (a search's scheduler, asked
    in the driver) asks it after each recorded epoch: the worker waits for the answer in a
    queue of its own (`remote.ask_driver`).
    """

    def __init__(self, ray, store, channel, request, storage, progress):
        self.ray, self.store, self.channel, self.storage = ray, store, channel, storage
        self.progress = progress
        self.task = ray.remote(max_retries=0, **request)(remote.run_trial)
        self.mirror = remote.Mirror(store, storage)
        self.cwd = os.getcwd()
        self.pending: dict[Any, str] = {}  # task ref -> run id
        self.asking: dict[str, tuple[Any, Any]] = {}  # run id -> (prune, its verdict queue)

    def launch(self, run_id: str, prune: Any = None) -> None:
        record = self.store.get(run_id, history=False)
        data = remote.data_file(record.spec, self.cwd)
        # Ray keeps a pool of worker processes per runtime environment: a trial whose
        # `train.backend` differs gets workers started on it (Keras fixes it at import).
        backend = devices.backend_environment(load_spec(record.spec).train)
        options = {"runtime_env": {"env_vars": {**_worker_env(), **backend}}} if backend else {}
        verdicts = None
        if prune is not None:
            verdicts = _channel(self.ray)
            self.asking[run_id] = (prune, verdicts)
        ref = self.task.options(**options).remote(
            record.spec, run_id, data, self.channel, verdicts=verdicts, storage_uri=self.storage
        )
        self.pending[ref] = run_id

    def wait(self) -> list[RunRecord]:
        ready, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=RAY_POLL_S)
        self._drain()
        ended = []
        for ref in ready:
            run_id = self.pending.pop(ref)
            try:
                result = self.ray.get(ref)
            except self.ray.exceptions.RayTaskError as error:  # raised inside the trial
                self.mirror.failed(run_id, error)
            except self.ray.exceptions.RayError as error:  # the worker or its node was lost
                self.mirror.lost(run_id, error, self.store.get(run_id, history=False).sweep_id)
            else:
                self.mirror.result(run_id, result)
            if run_id in self.asking:
                self.asking.pop(run_id)[1].shutdown()
            record = self.store.get(run_id)
            for callback in self.progress:
                callback.on_run_end(record)
            ended.append(record)
        return ended

    def _drain(self) -> None:
        """Apply every message waiting, in the order sent; answer the prune questions."""
        while waiting := self.channel.qsize():
            for message in self.channel.get_nowait_batch(waiting):
                if message["kind"] != "prune":
                    self.mirror.message(message)
                    continue
                if message["run_id"] not in self.asking:  # not a trial of this search
                    continue
                prune, verdicts = self.asking[message["run_id"]]
                try:
                    verdicts.put({"verdict": prune(message["epoch"], message["logs"])})
                except ValueError as error:  # a metric the run does not have (`Search.pruner`)
                    verdicts.put({"error": str(error)})

    def close(self) -> None:
        for _, verdicts in self.asking.values():
            verdicts.shutdown()


def _run_ray(ray, store, run_ids, callbacks, address, num_cpus, storage) -> list[RunRecord]:
    _, progress = _split_progress(callbacks)
    with _ray_session(ray, address, num_cpus) as (channel, request):
        trials = _RayTrials(ray, store, channel, request, storage, progress)
        for run_id in run_ids:
            trials.launch(run_id)
        while trials.pending:
            trials.wait()
    return [store.get(run_id) for run_id in run_ids]


def _run_ray_search(
    ray, spec, store, sweep_id, callbacks, address, num_cpus, storage
) -> list[RunRecord]:
    """`bayes` or a scheduler on Ray: the sweep's study in this process (`search.Search`, as a
    local search), each trial a Ray task that reports its epochs to it.

    `bayes` asks the study for as many trials as the cluster trains at once, and for the
    next one as each ends, until `num_trials` have run; `grid` and `random` start every
    planned trial. With a scheduler each trial asks the study after each recorded epoch
    whether it goes on (`_RayTrials`), so ASHA judges it against every trial so far.
    """
    _, progress = _split_progress(callbacks)
    bayes = spec.sweep.method == "bayes"
    # Every combination `bayes` may choose, validated; else the planned trials, each checked
    # with its data. Nothing is written until they are.
    trials = sweeps.trials(spec) if bayes else plan_trials(spec)
    study = _search(spec, trials[0].spec)
    with _ray_session(ray, address, num_cpus) as (channel, request):
        store.record_sweep(sweep_id, spec)  # the cluster answered: its trials are made next
        remote_trials = _RayTrials(ray, store, channel, request, storage, progress)
        asked: dict[str, tuple[Any, Any]] = {}  # run id -> (the study's trial, its values)
        order: list[str] = []

        def start(run_id: str, trial: Any, values: Any) -> None:
            asked[run_id] = (trial, values)
            order.append(run_id)
            remote_trials.launch(run_id, study.pruner(trial))

        try:
            if bayes:
                at_once = _concurrent_trials(ray, request)
                numbers = iter(range(spec.sweep.num_trials))
                for number in itertools.islice(numbers, at_once):
                    start(*_ask(study, spec, store, sweep_id, number))
            else:
                numbers = iter(())
                for trial in trials:
                    run_id = store.create_run(trial.spec, sweep_id=sweep_id)
                    start(run_id, study.start(), None)
            while remote_trials.pending:
                for record in remote_trials.wait():
                    trial, values = asked[record.id]
                    study.tell(trial, record, values)
                    number = next(numbers, None)
                    if number is not None:
                        start(*_ask(study, spec, store, sweep_id, number))
        finally:
            remote_trials.close()
    return [store.get(run_id) for run_id in order]


def _ask(study, spec, store, sweep_id, number) -> tuple[str, Any, Any]:
    """`bayes`: trial `number` asked of the study, its run created `queued`."""
    trial, values = study.ask()
    run_id = store.create_run(sweeps.trial(spec, number, values).spec, sweep_id=sweep_id)
    return run_id, trial, values


def _concurrent_trials(ray, request: dict[str, int]) -> int:
    """How many trials the cluster trains at once: its GPUs, else its CPUs, one per trial."""
    resource, amount = ("GPU", request["num_gpus"]) if "num_gpus" in request else ("CPU", 1)
    return max(1, int(ray.cluster_resources().get(resource, 1) // amount))


def _channel(ray):
    """The queue remote trials send their epochs through, its actor on the driver's node."""
    # Ray is optional: imported when a Ray sweep runs (`_import_ray` said if it is missing).
    from ray.util.queue import Queue
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = ray.get_runtime_context().get_node_id()
    return Queue(
        actor_options={
            "num_cpus": 0,
            "scheduling_strategy": NodeAffinitySchedulingStrategy(here, soft=False),
        }
    )


def _split_progress(callbacks: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """Keras callbacks (not used by Ray trials) and progress callbacks, keeping the latter."""
    keras_callbacks, progress = [], []
    for callback in callbacks:
        if hasattr(callback, "on_run_end") and not hasattr(callback, "set_model"):
            progress.append(callback)
        else:
            keras_callbacks.append(callback)
    return keras_callbacks, progress


__all__ = [
    "EXECUTORS",
    "ExecutorError",
    "SweepResult",
    "check_trial",
    "plan_sweep",
    "resume_sweep",
    "run_sweep",
    "trial_estimates",
]
