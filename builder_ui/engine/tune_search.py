"""Smarter search on a Ray cluster: `method: bayes` and `scheduler: asha` through Ray Tune.

The spec is the local one (`builder_ui.engine.search` runs it with Optuna alone):

    sweep: {method: bayes, num_trials: 8, seed: 0, metric: val_loss,
            parameters: {train.learning_rate: [0.001, 0.01]},
            scheduler: {type: asha, grace_period: 1, reduction_factor: 3}}

On Ray it becomes a `ray.tune.Tuner` in the driver:

- `method: bayes`: Ray Tune's `OptunaSearch` around Optuna's TPE sampler (seeded with
  `sweep.seed`), with a define-by-run space that chooses each parameter from its list of
  values (a categorical choice: the values themselves when they are numbers, strings,
  booleans or null, else their positions) or draws it from its range (`suggest_float`,
  or `suggest_int` for an `int` range, with the range's `log`: the local search's
  distributions, rather than Tune's `tune.uniform`/`randint`, so that a search resumed
  locally replays them alike), `num_trials` samples. Trials run in parallel
  as the cluster allows, so the sampler learns from the trials that ended, not from the
  ones still training; unlike the local search, a combination may be chosen twice.
- `method: grid` or `random` with a scheduler: the planned trials, in order
  (`tune.grid_search` over their positions).
- `scheduler: asha`: Ray Tune's `ASHAScheduler` (time in epochs, `max_t` =
  `train.epochs`, `grace_period`, `reduction_factor`, one bracket); without one, FIFO.

Each Tune trial is one remote trial (`builder_ui.engine.remote.run_trial`): it trains in a
scratch directory of its worker, streams its epochs and checkpoints to the driver through
a Ray queue and, after each epoch, reports `sweep.metric` to Tune (`tune.report`). The
driver owns the run store, as with every Ray sweep: a Tune callback creates each trial's
run when Tune starts it (`<sweep id>-<Tune trial id>`, named `<name>-<n>` in start
order) and writes what the queue brings at every step of Tune's loop. A trial the
scheduler stops ends `pruned`, its epochs kept; one whose worker is lost ends
`interrupted` (resumable with `keras-seq resume SWEEP`). Tune's own experiment
directory is a temporary one on the driver, removed at the end: the store is the record.

Ray Tune is part of the `ray` extra (`pip install "keras-seq[ray]"`, which asks for
`ray[tune]`), and Optuna of the `search` extra.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from typing import Any

from builder_ui.builders import load_spec, sweeps
from builder_ui.engine import devices, interrupts, remote
from builder_ui.engine.records import RunRecord
from builder_ui.engine.search import import_optuna
from builder_ui.engine.store import RunStore
from builder_ui.extras import import_extra

_PRIMITIVE = (str, int, float, bool, type(None))


def import_tune():
    """Import Ray Tune, or raise `ModuleNotFoundError` saying which extra installs it."""
    what = "A sweep with method 'bayes' or a scheduler on the 'ray' executor"
    return import_extra("ray.tune", "ray", what, "Ray Tune")


def _choices(values: Sequence[Any]) -> list[Any]:
    if all(isinstance(value, _PRIMITIVE) for value in values):
        return list(values)
    return list(range(len(values)))


class _Space:
    """OptunaSearch's define-by-run space: per sweep parameter, a categorical choice among its
    list of values, or a range's `suggest_float` / `suggest_int(low, high, log=log)` (the
    local search's distributions: `builder_ui.engine.search`; an `int` range's values are
    whole numbers from `low` to `high`, both included).

    A class at module level, so that Tune can pickle it into its experiment state (a range
    kept as a plain mapping).
    """

    def __init__(self, parameters: dict[str, Any]):
        self.parameters = {
            key: values.model_dump() if sweeps.is_range(values) else list(values)
            for key, values in parameters.items()
        }

    def __call__(self, trial: Any) -> None:
        for key, options in self.parameters.items():
            if isinstance(options, dict):
                suggest = trial.suggest_int if options["type"] == "int" else trial.suggest_float
                suggest(key, options["low"], options["high"], log=options["log"])
            else:
                trial.suggest_categorical(key, _choices(options))


def parameter_values(
    spec: Any, config: dict[str, Any], planned: Sequence[dict[str, Any]] = ()
) -> dict[str, Any]:
    """The sweep values of a Tune trial's `config`: its chosen parameters (bayes), or those of
    the planned trial at its position (grid, random: `planned`, each trial's values)."""
    if "trial" in config:
        return dict(planned[config["trial"]])
    values = {}
    for key, options in spec.sweep.parameters.items():
        if sweeps.is_range(options):  # the value itself, a number as the range's type
            values[key] = (int if options.type == "int" else float)(config[key])
            continue
        choices = _choices(options)
        values[key] = options[choices.index(config[key])]
    return values


def _trainable(config, *, spec_document, planned, sweep_id, data, channel, metric, storage):
    """One Tune trial: the remote trial of its values, reporting `metric` after each epoch."""
    from ray import tune  # Ray is optional; a worker has it, as its driver does

    spec = load_spec(spec_document)
    values = parameter_values(spec, config, planned)
    trial_spec = sweeps.trial(spec, 0, values).spec.to_dict()
    run_id = run_id_of(sweep_id, tune.get_context().get_trial_id())

    def report(epoch, metrics):
        value = metrics.get(metric)
        tune.report({metric: value, "epoch": epoch} if value is not None else {"epoch": epoch})

    # A Tune trial runs in an actor process of its own, Keras not loaded yet: its backend.
    devices.select_backend(load_spec(trial_spec).train)
    path = trial_spec.get("task", {}).get("path")
    remote.run_trial(
        trial_spec,
        run_id,
        data.get(path),
        channel,
        report=report,
        by_channel=True,
        storage_uri=storage,
    )


def run_id_of(sweep_id: str, trial_id: str) -> str:
    """The run id of a Tune trial: the sweep's id and Tune's trial id."""
    return f"{sweep_id}-{trial_id}"[:64]


def run_tune_sweep(
    ray: Any,
    spec: Any,
    store: RunStore,
    sweep_id: str,
    *,
    trials: Sequence[sweeps.Trial],
    channel: Any,
    request: dict[str, int],
    progress: Sequence[Any] = (),
    cwd: str,
    storage: str | None = None,
) -> list[RunRecord]:
    """Run a `bayes` or scheduled sweep with Ray Tune on the Ray instance `ray` is connected to.

    Args:
        ray: The `ray` module, initialised.
        spec: The `ExperimentSpec` (with `sweep.method: bayes` or a scheduler).
        store: The driver's store; the runs are created in it as Tune starts them.
        sweep_id: The id the runs share.
        trials: The trials (`sweeps.Trial`), checked: every combination `bayes`
            may choose (`sweeps.trials`), or the planned trials
            (`executors.plan_trials`), in order.
        channel: The queue remote trials send through (`executors._channel`).
        request: Each trial's resources (`{"num_cpus": 1}` or `{"num_gpus": 1}`).
        progress: Progress callbacks; each gets `on_run_end(record)` as a trial ends.
        cwd: The directory relative data paths are read from.
        storage: The trials' storage URI (`builder_ui.engine.transfer`), or None.

    Returns:
        The trials' final records, in the order Tune started them.
    """
    tune = import_tune()
    optuna = import_optuna()
    # Ray Tune is optional: `import_tune` above said how to install it if it is missing.
    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler
    from ray.tune.search.optuna import OptunaSearch

    sweep = spec.sweep
    specs = [trial.spec for trial in trials]
    # Keras loads in the driver here, for the first trial's checks (the trials train elsewhere).
    from builder_ui.engine.train import preflight

    metric = sweep.metric or preflight(specs[0]).monitor_metric
    mode = sweeps.metric_mode(metric, sweep.mode)
    if sweep.method == "bayes":
        search = OptunaSearch(
            space=_Space(sweep.parameters),
            metric=metric,
            mode=mode,
            sampler=optuna.samplers.TPESampler(seed=sweep.seed),
        )
        param_space, num_samples, planned = {}, sweep.num_trials, []
    else:
        planned = [trial.values for trial in trials]  # each trial looks its values up here
        search = None
        param_space = {"trial": tune.grid_search(list(range(len(specs))))}
        num_samples = 1
    if sweep.scheduler is not None:
        scheduler = ASHAScheduler(
            time_attr="training_iteration",
            metric=metric,
            mode=mode,
            max_t=spec.train.epochs,
            grace_period=min(sweep.scheduler.grace_period, spec.train.epochs),
            reduction_factor=sweep.scheduler.reduction_factor,
        )
    else:
        scheduler = FIFOScheduler()
    data = {}
    for trial_spec in specs:
        document = trial_spec.to_dict()
        path = document.get("task", {}).get("path")
        if isinstance(path, str) and path not in data:
            data[path] = remote.data_file(document, cwd)

    callback = _store_callback(tune, spec, planned, store, sweep_id, channel, progress, storage)
    trainable = tune.with_parameters(
        _trainable,
        spec_document=spec.to_dict(),
        planned=planned,
        sweep_id=sweep_id,
        data=data,
        channel=channel,
        metric=metric,
        storage=storage,
    )
    resources = {"gpu": request["num_gpus"]} if "num_gpus" in request else {"cpu": 1}
    directory = tempfile.mkdtemp(prefix="keras-seq-tune-")
    try:
        tuner = tune.Tuner(
            tune.with_resources(trainable, resources),
            param_space=param_space,
            tune_config=tune.TuneConfig(
                search_alg=search, scheduler=scheduler, num_samples=num_samples
            ),
            run_config=tune.RunConfig(
                name=sweep_id,
                storage_path=directory,
                callbacks=[callback],
                failure_config=tune.FailureConfig(max_failures=0),
                verbose=0,
            ),
        )
        with interrupts.handlers_kept():  # Tune leaves its SIGINT handler
            tuner.fit()
        callback.drain()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return [store.get(run_id) for run_id in callback.run_ids]


# The signals `Tuner.fit` takes in the main thread (Ray's `ray.tune.tune._setup_signal_catching`).
def _store_callback(tune, spec, planned, store, sweep_id, channel, progress, storage):
    """A `tune.Callback` that keeps the driver's store: runs created, epochs and ends written.

    Tune pickles its run config (callbacks included) into its experiment state; the store,
    the channel and the mirror are this process's and are left out of that copy
    (`__getstate__`), which nothing here reads back.
    """

    class StoreCallback(tune.Callback):
        def __init__(self, spec, planned, store, sweep_id, channel, progress, storage):
            self.sweep_id = sweep_id
            self.live = {
                "spec": spec,
                "planned": planned,
                "store": store,
                "channel": channel,
                "progress": list(progress),
                "mirror": remote.Mirror(store, storage),
            }
            self.run_ids: list[str] = []
            self.waiting: dict[str, list[dict]] = {}  # messages of runs not created yet

        def __getstate__(self):
            return {"sweep_id": self.sweep_id, "live": None, "run_ids": list(self.run_ids)}

        def drain(self):
            channel, mirror = self.live["channel"], self.live["mirror"]
            while True:
                size = channel.qsize()
                if not size:
                    return
                for message in channel.get_nowait_batch(size):
                    if message["run_id"] in self.run_ids:
                        mirror.message(message)
                    else:
                        self.waiting.setdefault(message["run_id"], []).append(message)

        def on_step_begin(self, iteration, trials, **info):
            self.drain()

        def on_trial_start(self, iteration, trials, trial, **info):
            run_id = run_id_of(self.sweep_id, trial.trial_id)
            values = parameter_values(self.live["spec"], trial.config, self.live["planned"])
            document = sweeps.trial(self.live["spec"], len(self.run_ids), values).spec
            self.live["store"].create_run(document, sweep_id=self.sweep_id, run_id=run_id)
            self.run_ids.append(run_id)
            for message in self.waiting.pop(run_id, []):
                self.live["mirror"].message(message)

        def on_trial_complete(self, iteration, trials, trial, **info):
            self._ended(trial, None)

        def on_trial_error(self, iteration, trials, trial, **info):
            self._ended(trial, RuntimeError(f"Ray Tune trial {trial.trial_id} failed"))

        def _ended(self, trial, error):
            self.drain()
            mirror, store = self.live["mirror"], self.live["store"]
            run_id = run_id_of(self.sweep_id, trial.trial_id)
            if run_id not in self.run_ids:
                return
            if run_id not in mirror.finished:
                if error is not None:
                    mirror.lost(run_id, error, self.sweep_id)
                else:
                    mirror.pruned(run_id)
            record = store.get(run_id)
            for callback in self.live["progress"]:
                callback.on_run_end(record)

    return StoreCallback(spec, planned, store, sweep_id, channel, progress, storage)


__all__ = ["import_tune", "parameter_values", "run_tune_sweep"]
