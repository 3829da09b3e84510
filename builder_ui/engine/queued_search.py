"""A `bayes` or scheduled sweep in the app's training queue: the study stays in the app.

    sweep: {method: bayes, num_trials: 6, parameters: {...},
            scheduler: {type: asha, grace_period: 1, reduction_factor: 3}}

The queue (`builder_ui.engine.queue`) trains one run per job in a slot's
training process; a search needs more than that, so `QueuedSearch` keeps the
sweep's Optuna study (`builder_ui.engine.search.Search`) in the app's process
and the queue asks it at three points:

- `first_specs()` when the sweep is submitted: with `grid` or `random` every
  planned trial (all shown `queued` at once); with `bayes` the first trial the
  study chooses (the others do not exist until the results so far choose them);
- `begin(run_id)` when a trial starts: its `prune(epoch, logs)`, which the
  training process calls through the queue after each recorded epoch
  (`TrainingProcess.train`), so that ASHA's decision is the study's, with the
  epochs of every trial so far; None without a scheduler;
- `end(run_id, record)` when it ends: the study is told (its metric,
  `PRUNED` or `FAIL`), and with `bayes` the next trial's spec is asked for,
  until `num_trials` have run or `stop()` was called (the user cancelled a
  trial of it, or the app closed).

A stopped search (the app closed, a trial's process killed) goes on in a new
`QueuedSearch` made from the spec the store recorded for the sweep
(`RunStore.record_sweep`): `restore(records)` replays the trials that ended
into its study (`Search.replay`) and ties each `interrupted` or `queued` one
to a trial of it (`Search.resume`), so they train inside the search again,
pruned against every trial so far, and with `bayes` the trials not chosen yet
follow as before.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from builder_ui.builders import sweeps
from builder_ui.engine import search
from builder_ui.engine.records import RunRecord

Prune = Callable[[int, dict[str, Any]], bool]


class QueuedSearch:
    """The study of one sweep queued in the app; see the module docstring.

    Args:
        spec: The sweep's `ExperimentSpec` (`search.needs_search(spec.sweep)`).
        sweep_id: The id its runs share.
        metric: The metric the study optimises and prunes on (`sweep.metric`,
            else the model's main validation metric).
        planned: `grid` and `random` only: the trials' specs, when the caller
            has them already (`sweeps.expand(spec)`); default: expanded here.

    Raises:
        ImportError: Optuna is not installed (the message says how to install it).
    """

    def __init__(self, spec: Any, sweep_id: str, metric: str, planned: list[Any] | None = None):
        self.spec = spec
        self.sweep_id = sweep_id
        self.study = search.Search(spec.sweep, metric)
        self.bayes = spec.sweep.method == "bayes"
        if self.bayes:
            self.planned = []
        else:
            self.planned = list(planned) if planned is not None else sweeps.expand(spec)
        self._lock = threading.Lock()
        self._pending: list[tuple[Any, dict[str, Any]]] = []  # asked, not yet given a run
        self._trials: dict[str, tuple[Any, dict[str, Any] | None]] = {}
        self._asked = 0
        self._stopped = False

    @property
    def planned_trials(self) -> int:
        """How many trials the search runs: `num_trials` (bayes), else the planned ones."""
        return self.spec.sweep.num_trials if self.bayes else len(self.planned)

    @property
    def asked(self) -> int:
        """How many trials `bayes` has chosen so far."""
        with self._lock:
            return self._asked

    @property
    def stopped(self) -> bool:
        """Whether `stop` was called: no more trials are asked for."""
        with self._lock:
            return self._stopped

    def _ask(self) -> Any:
        trial, values = self.study.ask()
        number = self._asked
        self._asked += 1
        self._pending.append((trial, values))
        return sweeps.trial(self.spec, number, values).spec

    def restore(self, records: Sequence[RunRecord]) -> list[RunRecord]:
        """Take up a stopped search: its trials so far (`records`, with their history).

        The ended trials are replayed into the study in order; each
        `interrupted` or `queued` one gets a trial of the study, with its
        epochs so far reported, for `begin` and `end` when it trains again.

        Returns:
            The trials left to train (`interrupted` and `queued`), in order.
        """
        left = [record for record in records if record.status in ("interrupted", "queued")]
        ended = [record for record in records if record.status not in ("interrupted", "queued")]
        candidates = sweeps.trials(self.spec)
        with self._lock:
            ended_values = search.trial_values(candidates, ended, self.spec.sweep)
            for record, values in zip(ended, ended_values, strict=True):
                self.study.replay(record, values)
            left_values = search.trial_values(candidates, left, self.spec.sweep)
            for record, values in zip(left, left_values, strict=True):
                self._trials[record.id] = (self.study.resume(record, values), values)
            if self.bayes:
                self._asked = len(records)
        return left

    def next_spec(self) -> Any | None:
        """`bayes`: the spec of the next trial to queue, None when the search has chosen all."""
        with self._lock:
            if not self.bayes or self._stopped or self._asked >= self.spec.sweep.num_trials:
                return None
            return self._ask()

    def first_specs(self) -> list[Any]:
        """The trials to queue now: every planned one (grid, random) or the first chosen (bayes)."""
        with self._lock:
            return [self._ask()] if self.bayes else list(self.planned)

    def attach(self, run_id: str) -> None:
        """Tie the run created for the oldest spec given out to its trial of the study."""
        with self._lock:
            self._trials[run_id] = self._pending.pop(0) if self._pending else (None, None)

    def begin(self, run_id: str) -> Prune | None:
        """The trial `run_id` starts now: its pruning check, or None without a scheduler."""
        with self._lock:
            trial, values = self._trials.get(run_id, (None, None))
            if trial is None:  # planned (grid, random): a study trial from now on
                trial = self.study.start()
                self._trials[run_id] = (trial, values)
        return self.study.pruner(trial)

    def end(self, run_id: str, record: RunRecord) -> Any | None:
        """Tell the study how trial `run_id` ended; returns the next trial's spec, or None."""
        with self._lock:
            trial, values = self._trials.pop(run_id, (None, None))
            if trial is not None:
                self.study.tell(trial, record, values)
        return self.next_spec()

    def stop(self) -> None:
        """Ask for no more trials; those queued already still train."""
        with self._lock:
            self._stopped = True
            for trial, values in self._pending:  # asked, but no run was made for it
                self.study.tell_value(trial, None, values)
            self._pending.clear()

    def forget(self, run_id: str) -> None:
        """Trial `run_id` will not train (cancelled before it started): the study is told so."""
        with self._lock:
            trial, values = self._trials.pop(run_id, (None, None))
            if trial is not None:
                self.study.tell_value(trial, None, values)


__all__ = ["QueuedSearch"]
