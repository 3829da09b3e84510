"""Which parameters of a sweep mattered: fANOVA over its trials, through Optuna.

    keras-seq runs --sweep ID --importance

The sweep's trials are its runs in the store, each matched to the values it set
(`search.trial_values`) and replayed into an Optuna study as a resumed search replays
them (`search.Search.replay`): a done trial is told `sweep.metric` (or the model's main
validation metric) at its last epoch, a pruned one `PRUNED`, a failed or diverged one
`FAIL`. Optuna's `FanovaImportanceEvaluator` then fits a random forest to the completed
trials and splits the variance of the metric over the parameters (Hutter, Hoos & Leyton-Brown
2014, "An Efficient Approach for Assessing Hyperparameter Importance"): each parameter's
importance is the share of that variance its own values explain, and the shares sum to 1.

fANOVA rather than Optuna's PED-ANOVA: a sweep here has a handful of trials, and PED-ANOVA,
which compares the top quantile of many trials with the rest, ranked a parameter that
changed nothing first in six made-up trials where fANOVA ranked it last.

Optuna is an optional dependency (`pip install "keras-seq[search]"`); scikit-learn, which
fANOVA's forest needs, comes with the builder's `app` extra.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from builder_ui.builders import load_spec, prepare, sweeps
from builder_ui.engine import search
from builder_ui.engine.store import RunStore

SEED = 0  # fANOVA's forest: the same importances for the same trials


class ImportanceError(ValueError):
    """The sweep cannot be measured: unknown, no search parameters, too few finished trials."""


@dataclass(frozen=True)
class Importance:
    """Each swept parameter's share of the variance of the sweep's metric.

    Attributes:
        sweep_id: The sweep.
        metric: What was compared (`sweep.metric`, else the model's main validation metric).
        trials: How many trials finished with a value of it (the ones fANOVA fits).
        shares: Parameter path → importance, largest first; they sum to 1.
    """

    sweep_id: str
    metric: str
    trials: int
    shares: dict[str, float]

    def lines(self) -> list[str]:
        """One line per parameter: its importance as a percentage and a bar, then its path."""
        width = max(len(path) for path in self.shares)
        return [
            f"{path:<{width}}  {share:6.1%}  {'█' * round(share * 20)}"
            for path, share in self.shares.items()
        ]


def sweep_importance(store: RunStore, sweep_id: str) -> Importance:
    """The importance of each parameter of the stored sweep `sweep_id` (see the module).

    Raises:
        ImportError: Optuna is not installed.
        ImportanceError: No such sweep, a sweep that varies no parameter, or fewer than two
            finished trials with different values of the metric.
    """
    document = store.sweep_spec(sweep_id)
    if document is None:
        raise ImportanceError(f"sweep: no sweep {sweep_id!r} in {str(store.directory)!r}")
    spec = load_spec(document)
    parameters = [
        key
        for key, values in spec.sweep.parameters.items()
        if sweeps.is_range(values) or len(values) > 1  # a range always varies
    ]
    if not parameters:
        raise ImportanceError(
            f"sweep {sweep_id!r} varies no parameter (each has one value): nothing to compare"
        )
    candidates = sweeps.trials(spec)
    metric = spec.sweep.metric or prepare(candidates[0].spec).monitor_metric
    with _quiet(search.import_optuna()):  # the study is made without its "created" line
        study = search.Search(spec.sweep, metric)
    records = [
        record
        for record in store.list_runs(sweep_id=sweep_id, history=True)
        if record.status not in ("queued", "running", "interrupted")
    ]
    chosen = search.trial_values(candidates, records, spec.sweep)
    for record, values in zip(records, chosen, strict=True):
        study.replay(record, values)
    optuna = study.optuna
    completed = study.study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    if len({trial.value for trial in completed}) < 2:
        raise ImportanceError(
            f"sweep {sweep_id!r} has {len(completed)} finished trial(s) with a value of "
            f"{metric!r}, not two that differ: nothing to compare"
        )
    shares = optuna.importance.get_param_importances(
        study.study,
        evaluator=optuna.importance.FanovaImportanceEvaluator(seed=SEED),
        params=parameters,
        normalize=True,
    )
    return Importance(
        sweep_id,
        metric,
        len(completed),
        {path: float(share) for path, share in shares.items()},
    )


@contextlib.contextmanager
def _quiet(optuna):
    """Optuna's log at warnings only while the block runs (its level is put back)."""
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(verbosity)


__all__ = ["SEED", "Importance", "ImportanceError", "sweep_importance"]
