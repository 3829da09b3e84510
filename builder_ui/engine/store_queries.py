"""What the run store answers about many runs at once: a sweep's spec and its trials left to
run, the counts and the epochs' metrics the app's views read (`RunStore`'s base).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

from builder_ui.engine.records import RunRecord, check_run_id
from builder_ui.engine.store_rows import dumps, spec_to_dict


class StoreQueries:
    """Sweeps and the views' counts and curves; see the module docstring."""

    def record_sweep(self, sweep_id: str, spec: Any) -> None:
        """Keep the spec of sweep `sweep_id` (with its `sweep:` section) beside its trials.

        The first spec recorded for an id stays: a sweep's id is a hash of its
        spec (`builder_ui.specs.sweep_space.sweep_id`), so running the same spec again
        adds trials to the same sweep.
        """
        check_run_id(sweep_id)
        spec_dict = spec_to_dict(spec)
        with self._write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO sweeps (id, spec, created) VALUES (?, ?, ?)",
                (sweep_id, dumps(spec_dict), time.time()),
            )

    def sweep_spec(self, sweep_id: str) -> dict[str, Any] | None:
        """The spec recorded for sweep `sweep_id` (a dict), or None (a store from before
        sweeps were recorded, a lab experiment, or no such sweep)."""
        rows = self._read("SELECT spec FROM sweeps WHERE id = ?", (sweep_id,))
        return json.loads(rows[0]["spec"]) if rows else None

    def stopped_sweep(self, sweep_id: str, *, history: bool = False) -> list[RunRecord]:
        """Every trial of sweep `sweep_id`, in order, once none of them is `running`.

        A sweep is stopped when none of its trials is `running` (after
        `recover_interrupted`, so a trial whose process died counts as
        `interrupted`); its `queued` trials then have no process to train them.

        Raises:
            ValueError: No such sweep, or a trial still running.
        """
        self.recover_interrupted()
        records = self.list_runs(sweep_id=sweep_id, history=history)
        if not records:
            raise ValueError(f"No run or sweep with id {sweep_id!r} in {str(self.directory)!r}.")
        running = [record for record in records if record.status == "running"]
        if running:
            raise ValueError(
                f"Sweep {sweep_id!r} is still running (trial {running[0].id}, pid "
                f"{running[0].pid}); stop it before resuming it."
            )
        return records

    def remaining_trials(self, sweep_id: str) -> list[RunRecord]:
        """The trials of a stopped sweep still to train: `interrupted` and `queued`, in order.

        Raises:
            ValueError: No such sweep, a trial still running (`stopped_sweep`),
                or nothing left.
        """
        records = self.stopped_sweep(sweep_id)
        left = [record for record in records if record.status in ("interrupted", "queued")]
        if not left:
            statuses = ", ".join(f"{record.id} {record.status}" for record in records)
            raise ValueError(f"Sweep {sweep_id!r} has nothing left to resume ({statuses}).")
        return left

    def run_counts(self) -> tuple[int, int]:
        """`(runs, runs neither queued nor running)`, in one query, loading no run.

        A cheap sign that the store changed (a run added, ended or deleted), for a view
        that looks often; `list_runs` would read and parse every run to tell.
        """
        ((total, ended),) = self._read(
            "SELECT COUNT(*), COALESCE(SUM(status NOT IN ('queued', 'running')), 0) FROM runs"
        )
        return int(total), int(ended)

    def epoch_metrics(
        self, ids: Iterable[str] | None = None
    ) -> dict[str, list[tuple[int, dict[str, Any]]]]:
        """Run id -> its epochs' (epoch, metrics) in epoch order, in one query: of the runs
        `ids`, or of every run.

        What Compare's best-epoch columns read for a thousand runs at once (`history` is a
        query a run). An epoch whose metrics cannot be read is left out.
        """
        query, params = "SELECT run_id, epoch, metrics FROM epochs", []
        if ids is not None:
            params = list(ids)
            query += f" WHERE run_id IN ({', '.join('?' * len(params))})"
        epochs: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        for run_id, epoch, text in self._read(query + " ORDER BY run_id, epoch", params):
            try:
                metrics = json.loads(text)
            except ValueError:
                continue
            if isinstance(metrics, dict):
                epochs.setdefault(run_id, []).append((epoch, metrics))
        return epochs

    def epoch_counts(self) -> dict[str, int]:
        """Run id -> number of epochs recorded, for every run with at least one, in one query.

        What a run actually trained (early stopping, a failure, a resume), read without
        loading every epoch's metrics; compare with the spec's planned `train.epochs`.
        """
        rows = self._read("SELECT run_id, COUNT(*) FROM epochs GROUP BY run_id")
        return {run_id: count for run_id, count in rows}
