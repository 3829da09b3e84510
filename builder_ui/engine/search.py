"""The search of a sweep: Optuna's TPE sampler (`method: bayes`) and its pruners.

    sweep: {method: bayes, num_trials: 6, seed: 0,
            parameters: {train.learning_rate: [0.001, 0.01, 0.1]},
            scheduler: {type: asha, grace_period: 1, reduction_factor: 3}}

One Optuna study per sweep, in memory, in the driver (the run store stays the
record of what ran; nothing of Optuna's is written to disk), whatever trains the
trials: this process (`executors`, local), Ray tasks (`executors`, `ray`: each remote trial
asks the study after each epoch, `remote.ask_driver`) or the app's training processes
(`queued_search`):

- `method: bayes` asks the study for each trial in turn. The TPE sampler
  (Bergstra et al. 2011, "Algorithms for Hyper-Parameter Optimization")
  chooses each parameter from the metrics of the trials so far: from a list of
  values, a categorical choice (the values as given when they are numbers,
  strings, booleans or null, else their positions in the list); from a range,
  `suggest_float(name, low, high, log=log)` or, for an `int` range,
  `suggest_int(name, low, high, log=log)` (whole numbers, both ends included). A
  combination already tried (an `int` range with few values repeats as a list does)
  is told the value it reached and asked again, so every trial runs a new one;
  after `MAX_ASKS` repeats an untried combination is drawn with the sweep's seed.
- `scheduler: asha` reports each epoch's `sweep.metric` to the trial
  (`trial.report(value, epoch)`) and asks `trial.should_prune()` at the epoch's
  end, through `optuna.pruners.SuccessiveHalvingPruner(min_resource=grace_period,
  reduction_factor=...)`; with `grid` and `random` the trials are the planned
  ones, in order, each pruned against the trials before it.

A trial's objective is `sweep.metric` at its last recorded epoch. A pruned
trial is told `PRUNED`, a failed or diverged one `FAIL` (the sampler then
avoids neither and learns nothing from it).

A stopped search goes on in a new study (`keras-seq resume`, the app's Resume):
the trials it ran are replayed into it in the order they ran (`replay`: each
trial asked again with its own values, enqueued and suggested through the same
distributions as when it was chosen, so a range's value is a `FloatDistribution`
or `IntDistribution` of the range's bounds and `log` again; its recorded epochs
reported and checked by the pruner, then told how it ended), so the sampler and
ASHA's rungs stand where they stood; an `interrupted` trial continues in it
(`resume`: its epochs so far reported), and `bayes` then asks for the trials it
never chose.

Optuna is an optional dependency: `pip install "keras-seq[search]"`.
"""

from __future__ import annotations

import copy
import json
import math
import random
from collections.abc import Sequence
from typing import Any

from builder_ui.builders import sweeps
from builder_ui.engine.records import RunRecord
from builder_ui.extras import import_extra
from builder_ui.specs.experiment import MAX_SWEEP_TRIALS
from builder_ui.specs.sweep_space import (
    combination_at,
    combinations_count,
    draw_combination,
    is_range,
    value_at,
)

# How many times a repeated combination is asked again before one is drawn at random.
MAX_ASKS = 100

_PRIMITIVE = (str, int, float, bool, type(None))


def import_optuna():
    """Import Optuna, or raise `ModuleNotFoundError` saying which extra installs it."""
    return import_extra("optuna", "search", "A sweep with method 'bayes' or a scheduler", "Optuna")


def needs_search(sweep: Any) -> bool:
    """Whether a `SweepSpec` needs a study: `method: bayes` or a scheduler."""
    return sweep is not None and (sweep.method == "bayes" or sweep.scheduler is not None)


class Search:
    """The study of one sweep; see the module docstring.

    Args:
        sweep: The spec's `SweepSpec`.
        metric: The metric to optimise and prune on (`sweep.metric`, else the
            model's main validation metric).
    """

    def __init__(self, sweep: Any, metric: str):
        optuna = import_optuna()
        self.optuna = optuna
        self.sweep = sweep
        self.metric = metric
        self.mode = sweeps.metric_mode(metric, sweep.mode)
        pruner = optuna.pruners.NopPruner()
        if sweep.scheduler is not None:
            pruner = optuna.pruners.SuccessiveHalvingPruner(
                min_resource=sweep.scheduler.grace_period,
                reduction_factor=sweep.scheduler.reduction_factor,
                min_early_stopping_rate=0,
            )
        self.study = optuna.create_study(
            direction="minimize" if self.mode == "min" else "maximize",
            sampler=optuna.samplers.TPESampler(seed=sweep.seed),
            pruner=pruner,
        )
        self._tried: dict[str, float | None] = {}  # combination key -> its objective
        self._random = random.Random(sweep.seed)

    # --- choosing (bayes) ---------------------------------------------------------------------

    def _choices(self, key: str) -> list[Any]:
        values = self.sweep.parameters[key]
        if all(isinstance(value, _PRIMITIVE) for value in values):
            return list(values)
        return list(range(len(values)))

    def _values(self, trial: Any) -> dict[str, Any]:
        values = {}
        for key, options in self.sweep.parameters.items():
            if is_range(options):
                suggest = trial.suggest_int if options.type == "int" else trial.suggest_float
                values[key] = suggest(key, options.low, options.high, log=options.log)
                continue
            choices = self._choices(key)
            chosen = trial.suggest_categorical(key, choices)
            values[key] = options[choices.index(chosen)]
        return values

    def _enqueue(self, values: dict[str, Any]) -> None:
        """Fix the next trial's suggestions to `values` (a list's value as its choice)."""
        self.study.enqueue_trial(
            {
                key: value
                if is_range(self.sweep.parameters[key])
                else self._choices(key)[self.sweep.parameters[key].index(value)]
                for key, value in values.items()
            }
        )

    @staticmethod
    def _key(values: dict[str, Any]) -> str:
        return repr(sorted(values.items()))

    def ask(self) -> tuple[Any, dict[str, Any]]:
        """The next trial and the values it sets: a combination not tried yet."""
        for _ in range(MAX_ASKS):
            trial = self.study.ask()
            values = self._values(trial)
            key = self._key(values)
            if key not in self._tried:
                self._tried[key] = None
                return trial, values
            # Tried already: tell it the value it reached, so the sampler moves on.
            self.tell_value(trial, self._tried[key])
        self._enqueue(self._untried())
        trial = self.study.ask()
        values = self._values(trial)  # the enqueued values, as this trial's suggestions
        self._tried[self._key(values)] = None
        return trial, values

    def _untried(self) -> dict[str, Any]:
        """A combination not tried yet, drawn with the sweep's seed.

        Among every combination when there are at most `MAX_SWEEP_TRIALS` (lists and `int`
        ranges), else drawn uniformly among the distinct ones, or with a `float` range from
        the parameters' distributions, until one is new (`check_paths` keeps `num_trials`
        within the distinct combinations, so one is left).
        """
        parameters = self.sweep.parameters
        size = combinations_count(parameters)
        if size <= MAX_SWEEP_TRIALS:
            untried = [
                combination
                for combination in _combinations(parameters)
                if self._key(combination) not in self._tried
            ]
            return self._random.choice(untried)
        while True:
            if math.isfinite(size):
                values = combination_at(parameters, self._random.randrange(size))
            else:
                values = draw_combination(self._random, parameters)
            if self._key(values) not in self._tried:
                return values

    # --- following a planned trial (grid, random) ---------------------------------------------

    def start(self) -> Any:
        """A trial of the study for a planned run (grid or random): no suggestions, only reports."""
        return self.study.ask()

    # --- going on after a stop (resume) -------------------------------------------------------

    def _follow(self, record: RunRecord, values: dict[str, Any] | None) -> Any:
        """A new trial of the study with `values` (when known), its recorded epochs reported."""
        if values is not None:
            self._enqueue(values)
        trial = self.study.ask()
        if values is not None:
            self._values(trial)  # the enqueued values, as this trial's suggestions
            self._tried[self._key(values)] = None
        if self.sweep.scheduler is not None:
            for row in record.history:
                value = row.metrics.get(self.metric)
                if isinstance(value, (int, float)) and math.isfinite(value):
                    trial.report(float(value), row.epoch)
                    trial.should_prune()  # ASHA records the rung it reached, as it did then
        return trial

    def replay(self, record: RunRecord, values: dict[str, Any] | None) -> None:
        """Tell the study a trial that ran before it existed: its values, epochs and end.

        Args:
            record: The trial's run, with its history, ended (done, pruned,
                failed, diverged or cancelled).
            values: The values it set (`trial_values`); None when they are not
                among the sweep's choices (its epochs and end still count).
        """
        trial = self._follow(record, values)
        if record.status == "pruned":
            self.study.tell(trial, state=self.optuna.trial.TrialState.PRUNED)
            return
        value = self.objective(record) if record.status == "done" else None
        self.tell_value(trial, value, values)

    def resume(self, record: RunRecord, values: dict[str, Any] | None) -> Any:
        """The study's trial for an `interrupted` or `queued` run that goes on now.

        Its recorded epochs are reported to the trial first, so the pruner
        judges its next epochs as it would have. Tell the study how it ends
        with `tell(trial, record, values)`.
        """
        return self._follow(record, values)

    # --- pruning and telling ------------------------------------------------------------------

    def pruner(self, trial: Any):
        """`prune(epoch, logs)` for `engine.run`: reports the metric, says whether to stop."""
        if self.sweep.scheduler is None:
            return None

        def prune(epoch: int, logs: dict[str, Any]) -> bool:
            if self.metric not in logs:
                raise ValueError(
                    f"sweep.metric: expected one of this run's metrics "
                    f"({', '.join(sorted(logs))}), got {self.metric!r}"
                )
            value = logs[self.metric]
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                return False  # nothing to compare (NaN is the engine's `diverged`)
            trial.report(float(value), epoch)
            return trial.should_prune()

        return prune

    def objective(self, record: RunRecord) -> float | None:
        """`sweep.metric` at the run's last recorded epoch, or None."""
        for row in reversed(record.history):
            value = row.metrics.get(self.metric)
            if isinstance(value, (int, float)) and math.isfinite(value):
                return float(value)
        return None

    def tell(self, trial: Any, record: RunRecord, values: dict[str, Any] | None = None) -> None:
        """Tell the study how the trial's run ended (`values`: what `ask` gave, for `bayes`)."""
        if record.status == "pruned":
            self.study.tell(trial, state=self.optuna.trial.TrialState.PRUNED)
            if values is not None:
                self._tried[self._key(values)] = None
            return
        value = self.objective(record) if record.status == "done" else None
        self.tell_value(trial, value, values)

    def tell_value(
        self, trial: Any, value: float | None, values: dict[str, Any] | None = None
    ) -> None:
        """Tell the study a finished trial's objective (None: it failed).

        With `values` (what `ask` gave), a later repeat of them is told the same.
        """
        if value is None:
            self.study.tell(trial, state=self.optuna.trial.TrialState.FAIL)
        else:
            self.study.tell(trial, value)
        if values is not None:
            self._tried[self._key(values)] = value


def trial_values(
    candidates: Sequence[sweeps.Trial], records: Sequence[RunRecord], sweep: Any = None
) -> list[dict[str, Any] | None]:
    """The values each recorded trial set: the candidate whose spec its run holds, or None.

    `candidates` are the sweep's trials (`sweeps.trials(spec)`, every
    combination for `bayes`, a range at its ends); a trial's run holds its validated
    spec, so the two are compared whole, apart from the name (`"{name}-{number}"`) and
    the fields of the sweep's ranges, whose values are read from the run's spec (None
    when one is not within its range). `sweep` is the sweep's `SweepSpec`, needed when
    it has a range (without it, such runs match no candidate).
    """
    parameters = sweep.parameters if sweep is not None else {}
    ranges = {key: values for key, values in parameters.items() if is_range(values)}

    def fingerprint(spec: dict[str, Any]) -> str:
        spec = {**spec, "name": None}
        if ranges:
            spec = copy.deepcopy(spec)
            for key in ranges:
                _blank(spec, key)
        return json.dumps(spec, sort_keys=True, default=repr)

    known = {fingerprint(trial.spec.to_dict()): trial.values for trial in candidates}
    found: list[dict[str, Any] | None] = []
    for record in records:
        values = known.get(fingerprint(record.spec))
        if values is not None and ranges:
            drawn = {key: value_at(record.spec, key) for key in ranges}
            if all(ranges[key].contains(value) for key, value in drawn.items()):
                values = {key: drawn.get(key, values[key]) for key in values}
            else:
                values = None
        found.append(values)
    return found


def _blank(data: dict[str, Any], path: str) -> None:
    """Set the field at `path` to None in `data`, when it is there."""
    parent, _, name = path.rpartition(".")
    node = value_at(data, parent) if parent else data
    if isinstance(node, dict) and name in node:
        node[name] = None


def _combinations(parameters: dict[str, Any]) -> list[dict[str, Any]]:
    """Every combination of lists and `int` ranges (a range's whole numbers from `low`)."""
    combos: list[dict[str, Any]] = [{}]
    for key, options in parameters.items():
        if is_range(options):
            options = list(range(options.low, options.high + 1))
        combos = [{**combo, key: option} for combo in combos for option in options]
    return combos


__all__ = [
    "MAX_ASKS",
    "Search",
    "import_optuna",
    "needs_search",
    "trial_values",
]
