"""A run's row of the store's database read back as a `RunRecord`, or why it cannot be; and
the JSON its columns are written as (`dumps`, `clean_metrics`, `spec_to_dict`).

A row whose JSON columns are malformed, or whose status is unknown, raises an
`UnreadableRunError` naming the run and the column; `RunStore.list_runs` leaves such a run out
and `RunStore.unreadable_runs` says why.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from builder_ui.engine.records import STATUSES, EpochRecord, RunRecord
from builder_ui.engine.store_errors import UnreadableRunError
from builder_ui.engine.store_schema import DB_NAME


def run_record(
    row: sqlite3.Row,
    history: tuple[EpochRecord, ...],
    tags: tuple[str, ...] = (),
    *,
    database: Path,
) -> RunRecord:
    """The run of a `runs` row of `database`, with its epochs and tags, or an
    `UnreadableRunError` naming the run and the column that cannot be read."""
    run_id = row["id"]
    if row["status"] not in STATUSES:
        raise unknown_status(run_id, row["status"], database=database)
    return RunRecord(
        id=run_id,
        name=row["name"],
        sweep_id=row["sweep_id"],
        spec=json_object(run_id, row["spec"], "spec", database=database),
        status=row["status"],
        created=row["created"],
        started=row["started"],
        finished=row["finished"],
        backend=row["backend"],
        device=row["device"],
        precision=row["precision"],
        params=row["params"],
        history=history,
        metrics=json_object(run_id, row["metrics"], "metrics", database=database),
        wall_time=row["wall_time"],
        examples_per_sec=row["examples_per_sec"],
        artifacts=json_object(run_id, row["artifacts"], "artifacts", database=database),
        error=row["error"],
        pid=row["pid"],
        host=row["host"],
        tags=tags,
        note=row["note"],
        starred=bool(row["starred"]),
        archived=bool(row["archived"]),
    )


def json_object(run_id: str, text: Any, what: str, *, database: Path) -> dict[str, Any]:
    """A column's JSON object, or `UnreadableRunError` naming the run and the column."""
    try:
        value = json.loads(text)
    except (TypeError, ValueError) as error:
        raise unreadable(run_id, f"its {what} is not valid JSON ({error})", database) from None
    if not isinstance(value, dict):
        raise unreadable(run_id, f"its {what} is {type(value).__name__}, not an object", database)
    return value


def unknown_status(run_id: str, status: Any, *, database: Path) -> UnreadableRunError:
    """The error of a run whose status is none of `STATUSES`."""
    return unreadable(run_id, f"its status {status!r} is none of {', '.join(STATUSES)}", database)


def unreadable(run_id: str, problem: str, database: Path) -> UnreadableRunError:
    """The error of one run of `database` that cannot be read, and what to do."""
    return UnreadableRunError(
        f"run {run_id!r} in {str(database)!r} cannot be read: {problem}; the other runs "
        f"are not affected: restore {DB_NAME} from a backup copy to get this one back"
    )


def finite_or_none(value: Any) -> Any:
    """JSON has no NaN or infinity: store them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def clean_metrics(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Logs as plain JSON values: floats (None when not finite), ints, strings."""
    clean = {}
    for key, value in metrics.items():
        if hasattr(value, "item") and callable(value.item):  # NumPy scalar or 0-d array
            value = value.item()
        if isinstance(value, bool) or value is None or isinstance(value, str):
            clean[str(key)] = value
        elif isinstance(value, (int, float)):
            clean[str(key)] = finite_or_none(float(value) if isinstance(value, float) else value)
        else:
            clean[str(key)] = finite_or_none(float(value))
    return clean


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, allow_nan=False)


def spec_to_dict(spec: Any) -> dict[str, Any]:
    """A spec as a JSON-compatible dict: pydantic models via `model_dump(mode="json")`."""
    if hasattr(spec, "model_dump"):
        spec = spec.model_dump(mode="json")
    if not isinstance(spec, Mapping):
        raise ValueError(
            "Received an invalid value for argument `spec`, expected an ExperimentSpec or a "
            f"dict, got {type(spec).__name__}."
        )
    return json.loads(json.dumps(dict(spec), allow_nan=False))
