"""Train tab actions: queue specs and presets, cancel and resume, the queue table, live progress.

No Gradio here: the tab renders the DataFrames and HTML these return.
"""

from __future__ import annotations

import contextlib
import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from builder_ui.app.actions.build import check
from builder_ui.app.context import AppContext, AppError
from builder_ui.builders import (
    prepare,
    presets,
    sweeps,
    validate_spec,
)
from builder_ui.engine.store import FINAL_STATUSES, RunNotFoundError
from builder_ui.specs import ExperimentSpec, SpecError

# At most this many runs from one click (a sweep's trials, or presets).
MAX_RUNS_PER_SUBMIT = 64
# Queue rows shown: the active runs and this many recent ones.
RECENT_JOBS = 20


@dataclass
class Submitted:
    """Runs put in the queue: their ids and a line for the page."""

    run_ids: list[str]
    message: str


def _trial_specs(spec: ExperimentSpec) -> tuple[list[ExperimentSpec], str | None]:

    if spec.sweep is None:
        return [spec], None
    count = sweeps.grid_size(spec) if spec.sweep.method == "grid" else spec.sweep.num_trials
    if count > MAX_RUNS_PER_SUBMIT:
        raise AppError(
            f"sweep: {count} trials is more than the app queues at once ({MAX_RUNS_PER_SUBMIT}); "
            "use `keras-seq sweep` for large sweeps, or sweep fewer values."
        )
    return sweeps.expand(spec), sweeps.sweep_id(spec)


def _prepare_all(specs: Iterable[ExperimentSpec]) -> None:
    """Every check, data included, before any run is recorded (nothing stored on a problem)."""

    problems = []
    for spec in specs:
        try:
            prepare(spec)
        except SpecError as error:
            problems.extend(
                (path, f"{message} (run {spec.name})") for path, message in error.problems
            )
    if problems:
        raise SpecError(problems)


def queue_spec(ctx: AppContext, text: str) -> Submitted:
    """Queue the spec (each trial of its sweep, as one sweep) for training.

    Raises:
        SpecError: an invalid spec (nothing is stored).
        AppError: too many trials.
    """
    result = check(text)
    if not result.ok:
        raise SpecError(result.problems)
    specs, sweep_id = _trial_specs(result.spec)
    _prepare_all(specs)
    run_ids = ctx.jobs.submit(specs, sweep_id=sweep_id)
    what = f"sweep {sweep_id}: {len(run_ids)} runs" if sweep_id else f"run {run_ids[0]}"
    return Submitted(run_ids, f"Queued {what} ({result.spec.name}).")


def queue_presets(ctx: AppContext, keys: Sequence[str], epochs: int | None = None) -> Submitted:
    """Queue several presets at once, each as it is (optionally with `epochs` changed)."""
    keys = list(keys or [])
    if not keys:
        raise AppError("Choose at least one preset to queue.")
    if len(keys) > MAX_RUNS_PER_SUBMIT:
        raise AppError(f"At most {MAX_RUNS_PER_SUBMIT} presets at once, got {len(keys)}.")
    specs = []
    for key in keys:
        try:
            document = presets.spec(key)
        except KeyError as error:
            raise AppError(str(error.args[0])) from None
        if epochs is not None:
            document["train"]["epochs"] = epochs
        specs.append(validate_spec(document))
    _prepare_all(specs)
    run_ids = ctx.jobs.submit(specs)
    return Submitted(run_ids, f"Queued {len(run_ids)} runs: {', '.join(run_ids)}.")


def resume(ctx: AppContext, run_id: str) -> str:
    """Queue an `interrupted` run (its process was killed) to continue from its last epoch."""
    if not run_id:
        raise AppError("Choose an interrupted run to resume.")
    record = ctx.record(run_id)
    try:
        ctx.jobs.resume(record.id)
    except ValueError as error:
        raise AppError(str(error)) from None
    return f"Queued run {run_id} ({record.name}) to continue from epoch {record.epochs_done + 1}."


def interrupted_choices(ctx: AppContext) -> list[tuple[str, str]]:
    """`(label, run id)` of the runs that can be resumed, newest first."""
    return [
        (f"{r.id} · {r.name} · interrupted", r.id)
        for r in reversed(ctx.store.list_runs(status="interrupted"))
    ]


def cancel(ctx: AppContext, run_id: str) -> str:
    """Cancel a waiting or training run of this app's queue; returns what happened."""
    if not run_id:
        raise AppError("Choose a run to cancel.")
    try:
        return ctx.jobs.cancel(run_id)
    except KeyError as error:
        raise AppError(str(error.args[0])) from None


QUEUE_COLUMNS = (
    "id",
    "name",
    "status",
    "place",
    "progress",
    "epoch",
    "loss",
    "metric",
    "device",
    "precision",
)


def _main_metric(logs: Mapping[str, float]) -> str:
    for name in (
        "val_accuracy",
        "val_token_accuracy",
        "val_mean_absolute_error",
        "val_loss",
        "accuracy",
    ):
        value = logs.get(name)
        if value is not None and math.isfinite(value):
            return f"{name} {value:.4g}"
    return ""


def queue_frame(ctx: AppContext):
    """The queue as a table: waiting and training runs (this app's and others'), recent ones."""
    # pandas loads when a table is made, not on import.
    import pandas as pd

    jobs = ctx.jobs.jobs()
    ours = {job.run_id for job in jobs}
    active = [job for job in jobs if job.state in ("queued", "running")]
    recent = [job for job in jobs if job.state not in ("queued", "running")][-RECENT_JOBS:]
    rows = []
    for job in active + list(reversed(recent)):
        progress = ctx.jobs.board.get(job.run_id)
        record = None
        with contextlib.suppress(RunNotFoundError):
            record = ctx.store.get(job.run_id, history=False)
        status = record.status if record is not None else job.state
        position = ctx.jobs.position(job.run_id)
        place = f"waiting #{position + 1}" if position is not None else (job.slot or "")
        history = progress.history if progress else []
        last = history[-1] if history else (progress.logs if progress else {})
        loss = last.get("loss") if last else None
        rows.append(
            {
                "id": job.run_id,
                "name": job.name,
                "status": status,
                "place": place,
                "progress": f"{100 * (progress.fraction if progress else 0):.0f}%",
                "epoch": f"{progress.epoch}/{progress.epochs}"
                if progress and progress.epochs
                else "",
                "loss": f"{loss:.4g}" if isinstance(loss, float) and math.isfinite(loss) else "",
                "metric": _main_metric(last or {}),
                "device": (record.device if record else None)
                or (progress.device if progress else "")
                or "",
                "precision": (record.precision if record else None) or "",
            }
        )
    for record in ctx.store.list_runs(status=("queued", "running")):
        if record.id in ours:
            continue
        rows.append(
            {
                "id": record.id,
                "name": record.name,
                "status": record.status,
                "place": "another process",
                "progress": "",
                "epoch": "",
                "loss": "",
                "metric": "",
                "device": record.device or "",
                "precision": record.precision or "",
            }
        )
    return pd.DataFrame(rows, columns=list(QUEUE_COLUMNS))


def active_run(ctx: AppContext) -> str | None:
    """The run to follow: the one training now, else the next waiting, else the last one."""
    jobs = ctx.jobs.jobs()
    for state in ("running", "queued"):
        for job in jobs:
            if job.state == state:
                return job.run_id
    return jobs[-1].run_id if jobs else None


def queue_choices(ctx: AppContext) -> list[tuple[str, str]]:
    """`(label, run id)` of this app's runs, newest first, for following and cancelling."""
    return [
        (f"{job.run_id} · {job.name} · {job.state}", job.run_id)
        for job in reversed(ctx.jobs.jobs())
    ]


def progress_html(ctx: AppContext, run_id: str | None) -> str:
    """A progress bar and a status line for one run (HTML)."""
    if not run_id:
        return '<div id="ks-progress" class="ks-progress-empty">No run queued yet.</div>'
    progress = ctx.jobs.board.get(run_id)
    try:
        record = ctx.store.get(run_id, history=False)
    except RunNotFoundError:
        return f'<div id="ks-progress">No run {html.escape(run_id)}.</div>'
    fraction = progress.fraction if progress else (1.0 if record.status in FINAL_STATUSES else 0)
    status = record.status
    parts = [f"<b>{html.escape(record.name)}</b> ({html.escape(run_id)}): <b>{status}</b>"]
    if status == "queued":
        position = ctx.jobs.position(run_id)
        if position is not None:
            parts.append(f"waiting, #{position + 1} in the queue")
    if progress and progress.epochs and status == "running":
        parts.append(
            f"epoch {progress.epoch}/{progress.epochs}, batch {progress.step}/{progress.steps}"
        )
        logs = ", ".join(
            f"{k} {v:.4g}" for k, v in list(progress.logs.items())[:3] if math.isfinite(v)
        )
        if logs:
            parts.append(logs)
    device = record.device or (progress.device if progress else None)
    if device:
        parts.append(f"on {html.escape(device)} ({html.escape(record.precision or '?')})")
    if record.params:
        parts.append(f"{record.params:,} parameters")
    if status in FINAL_STATUSES:
        metrics = ", ".join(
            f"{k} {v:.4g}" for k, v in record.metrics.items() if isinstance(v, float)
        )
        if metrics:
            parts.append(metrics)
        if record.wall_time:
            parts.append(f"{record.wall_time:.1f} s")
        if record.error and status != "done":
            parts.append(html.escape(record.error))
    width = f"{100 * fraction:.1f}%"
    colour = {"failed": "#dc2626", "diverged": "#dc2626", "cancelled": "#9ca3af"}.get(
        status, "#2563eb"
    )
    return (
        f'<div id="ks-progress" data-status="{status}" data-run="{html.escape(run_id)}">'
        f'<div style="background:#e5e7eb;border-radius:4px;height:14px;overflow:hidden">'
        f'<div style="width:{width};background:{colour};height:14px"></div></div>'
        f'<div style="margin-top:4px">{" · ".join(parts)}</div></div>'
    )


def curves_frame(ctx: AppContext, run_id: str | None):
    """A run's per-epoch metrics in long form (`epoch`, `value`, `metric`), for a line plot."""
    # pandas loads when a table is made, not on import.
    import pandas as pd

    columns = ["epoch", "value", "metric"]
    if not run_id:
        return pd.DataFrame(columns=columns)
    try:
        history = ctx.store.history(run_id)
    except RunNotFoundError:
        return pd.DataFrame(columns=columns)
    rows = []
    for epoch in history:
        for name, value in epoch.metrics.items():
            if isinstance(value, (int, float)) and math.isfinite(value):
                rows.append({"epoch": epoch.epoch, "value": float(value), "metric": name})
    return pd.DataFrame(rows, columns=columns)
