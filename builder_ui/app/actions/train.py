"""Train tab actions: queue specs and presets, cancel and resume, the queue table, live progress.

No Gradio here: the tab renders the DataFrames and HTML these return.
"""

from __future__ import annotations

import contextlib
import html
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pandas as pd
from matplotlib.figure import Figure

from builder_ui.app.actions.build import check
from builder_ui.app.context import AppContext, AppError
from builder_ui.builders import (
    presets,
    sweeps,
    validate_spec,
)
from builder_ui.engine import search
from builder_ui.engine.queued_search import QueuedSearch
from builder_ui.engine.records import FINAL_STATUSES, RunRecord
from builder_ui.engine.store import RunNotFoundError
from builder_ui.engine.train import preflight
from builder_ui.results.compare import label_epochs
from builder_ui.specs import ExperimentSpec, SpecError

# At most this many runs from one click (a sweep's trials, or presets).
MAX_RUNS_PER_SUBMIT = 64
# Queue rows shown: the active runs and this many recent ones.
RECENT_JOBS = 20
# The live curves' columns, numbers as numbers even when empty (an object column plots as
# categories).
CURVE_DTYPES = {"epoch": "int64", "value": "float64", "metric": "str"}


@dataclass
class Submitted:
    """Runs put in the queue: their ids and a line for the page."""

    run_ids: list[str]
    message: str


def _trial_specs(spec: ExperimentSpec) -> tuple[list[ExperimentSpec], str | None]:

    if spec.sweep is None:
        return [spec], None
    _check_count(spec)
    return sweeps.expand(spec), sweeps.sweep_id(spec)


def _check_count(spec: ExperimentSpec) -> int:
    """The runs the sweep will queue; an `AppError` when that is more than one click may."""
    count = sweeps.grid_size(spec) if spec.sweep.method == "grid" else spec.sweep.num_trials
    if count > MAX_RUNS_PER_SUBMIT:
        raise AppError(
            f"sweep: {count} trials is more than the app queues at once ({MAX_RUNS_PER_SUBMIT}); "
            "use `keras-seq sweep` for large sweeps, or sweep fewer values."
        )
    return count


def _prepare_all(specs: Iterable[ExperimentSpec]) -> list[str]:
    """Every check, data included, before any run is recorded (nothing stored on a problem).

    Returns:
        Each spec's main validation metric (its data is not kept).
    """

    problems, metrics = [], []
    for spec in specs:
        try:
            # as the engine checks it: fields, data, device, memory budget
            metrics.append(preflight(spec).monitor_metric)
        except SpecError as error:
            problems.extend(
                (path, f"{message} (run {spec.name})") for path, message in error.problems
            )
    if problems:
        raise SpecError(problems)
    return metrics


def queue_spec(ctx: AppContext, text: str) -> Submitted:
    """Queue the spec (each trial of its sweep, as one sweep) for training.

    A sweep with `method: bayes` or a `scheduler` is queued as a search
    (`_queue_search`).

    Raises:
        SpecError: an invalid spec (nothing is stored).
        AppError: too many trials, or Optuna missing for a search.
    """
    result = check(text, ctx)
    if not result.ok:
        raise SpecError(result.problems)
    if search.needs_search(result.spec.sweep):
        return _queue_search(ctx, result.spec)
    specs, sweep_id = _trial_specs(result.spec)
    ctx.data_paths.check(*specs)  # each trial's data paths, before any data is read
    _prepare_all(specs)
    if sweep_id is not None:
        ctx.store.record_sweep(sweep_id, result.spec)
    run_ids = ctx.jobs.submit(specs, sweep_id=sweep_id)
    what = f"sweep {sweep_id}: {len(run_ids)} runs" if sweep_id else f"run {run_ids[0]}"
    return Submitted(run_ids, f"Queued {what} ({result.spec.name}).")


def _queue_search(ctx: AppContext, spec: ExperimentSpec) -> Submitted:
    """Queue a `bayes` or scheduled sweep, its Optuna study kept by the app's queue.

    Every combination a `bayes` search may choose is validated and its data
    paths checked before anything is stored; each is also checked as the
    engine would (data, memory) when there are at most `MAX_RUNS_PER_SUBMIT`,
    else the first only, and a later choice that fails its checks fails
    alone, the search going on (as `keras-seq sweep` does).
    """
    count = _check_count(spec)
    candidates = sweeps.expand(spec)  # bayes: every combination it may choose
    ctx.data_paths.check(*candidates)
    checked = candidates if len(candidates) <= MAX_RUNS_PER_SUBMIT else candidates[:1]
    metrics = _prepare_all(checked)
    sweep_id = sweeps.sweep_id(spec)
    metric = spec.sweep.metric or metrics[0]
    bayes = spec.sweep.method == "bayes"
    try:
        study = QueuedSearch(spec, sweep_id, metric, planned=None if bayes else candidates)
    except ImportError as error:
        raise AppError(str(error)) from None
    ctx.store.record_sweep(sweep_id, spec)
    run_ids = ctx.jobs.submit_search(study)
    scheduler = spec.sweep.scheduler
    stopping = (
        f"; ASHA stops weak trials from epoch {scheduler.grace_period} "
        f"(reduction factor {scheduler.reduction_factor})"
        if scheduler is not None
        else ""
    )
    if bayes:
        what = (
            f"search {sweep_id}: TPE chooses {count} trials on {metric}, one after another, "
            f"the first {run_ids[0]}{stopping}"
        )
    else:
        what = f"sweep {sweep_id}: {len(run_ids)} runs{stopping}"
    return Submitted(run_ids, f"Queued {what} ({spec.name}).")


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


def resume(ctx: AppContext, run_id: str) -> Submitted:
    """Queue an `interrupted` run to continue from its last epoch, or what is left of its sweep.

    A trial of a stopped sweep brings the rest of the sweep with it: its
    other `interrupted` trials continue and its `queued` ones, which no
    process was left to train, train (`JobQueue.resume_sweep`); no trial is
    added, so the sweep is not duplicated. A search (`bayes`, or a
    scheduler) whose spec the store recorded goes on as a search
    (`_resume_search`).
    """
    if not run_id:
        raise AppError("Choose an interrupted run to resume.")
    record = ctx.record(run_id)
    recorded = ctx.store.sweep_spec(record.sweep_id) if record.sweep_id is not None else None
    parent = None
    with contextlib.suppress(SpecError):  # unreadable now: resumed as a sweep without a study
        parent = validate_spec(recorded) if recorded is not None else None
    if parent is not None and search.needs_search(parent.sweep):
        return _resume_search(ctx, record, parent)
    try:
        left = [record] if record.sweep_id is None else ctx.store.remaining_trials(record.sweep_id)
        # A run of `keras-seq train` may name any file; the app reads only the user's.
        ctx.data_paths.check(*(validate_spec(r.spec) for r in left))
        if record.sweep_id is None:
            ctx.jobs.resume(record.id)
            return Submitted(
                [record.id],
                f"Queued run {run_id} ({record.name}) to continue from epoch "
                f"{record.epochs_done + 1}.",
            )
        run_ids = ctx.jobs.resume_sweep(record.sweep_id, left)  # read once, checked above
    except SpecError as error:
        raise AppError(f"Run {run_id} cannot be resumed here: {error}") from None
    except ValueError as error:
        raise AppError(str(error)) from None
    return Submitted(
        run_ids,
        f"Queued what is left of sweep {record.sweep_id} ({record.name}): "
        f"{len(run_ids)} trial{'s' if len(run_ids) > 1 else ''}, {', '.join(run_ids)}.",
    )


def _resume_search(ctx: AppContext, record: RunRecord, spec: ExperimentSpec) -> Submitted:
    """Take up the stopped search of trial `record`: a new study, its trials so far replayed.

    Its `interrupted` trials continue and its `queued` ones train, each inside
    the search (ASHA judges them against every trial so far); a `bayes`
    search then chooses the trials it has not yet (`JobQueue.resume_search`).
    """
    sweep_id = record.sweep_id
    try:
        records = ctx.store.stopped_sweep(sweep_id, history=True)
        left = [r for r in records if r.status in ("interrupted", "queued")]
        # A spec written for `keras-seq sweep` may name any file; the app reads only the user's.
        ctx.data_paths.check(spec, *(validate_spec(r.spec) for r in left))
        metric = spec.sweep.metric or preflight(validate_spec(records[0].spec)).monitor_metric
        study = QueuedSearch(spec, sweep_id, metric)
        run_ids = ctx.jobs.resume_search(study, records)
    except ImportError as error:
        raise AppError(str(error)) from None
    except SpecError as error:
        raise AppError(f"Run {record.id} cannot be resumed here: {error}") from None
    except ValueError as error:
        raise AppError(str(error)) from None
    chosen = "" if left else " (chosen now)"
    return Submitted(
        run_ids,
        f"Queued what is left of search {sweep_id} ({spec.name}): {len(run_ids)} "
        f"trial{'s' if len(run_ids) > 1 else ''}{chosen}, {', '.join(run_ids)}; "
        f"{len(records) - len(left)} finished trials replayed into its study.",
    )


def _stopped_sweeps_left(ctx: AppContext) -> list[RunRecord]:
    """The first `queued` trial of each sweep that nothing will train (no trial running,
    none in this app's queue): what a killed `keras-seq sweep` leaves behind."""
    queued = [r for r in ctx.store.list_runs(status="queued") if r.sweep_id is not None]
    mine = {job.run_id for job in ctx.jobs.jobs()}
    firsts = {}
    for record in queued:
        if record.id not in mine:
            firsts.setdefault(record.sweep_id, record)
    if not firsts:
        return []
    running = {r.sweep_id for r in ctx.store.list_runs(status="running")}
    return [record for sweep_id, record in firsts.items() if sweep_id not in running]


def interrupted_choices(ctx: AppContext) -> list[tuple[str, str]]:
    """`(label, run id)` of the runs that can be resumed, newest first.

    The interrupted runs, then one entry per stopped sweep whose trials are
    only `queued` (resuming it trains them).
    """
    interrupted = ctx.store.list_runs(status="interrupted")
    choices = [(f"{r.id} · {r.name} · interrupted", r.id) for r in reversed(interrupted)]
    interrupted_sweeps = {r.sweep_id for r in interrupted}
    choices += [
        (f"sweep {r.sweep_id} · {r.name} · trials never started", r.id)
        for r in reversed(_stopped_sweeps_left(ctx))
        if r.sweep_id not in interrupted_sweeps
    ]
    return choices


def resume_offer(ctx: AppContext) -> str:
    """Markdown offering to resume the interrupted runs (shown when the Train tab loads).

    After the app was stopped (or killed) mid-run, the run is `interrupted`
    with its epochs and checkpoint; the restarted app says so here, newest
    first, so that one click on Resume continues it. Empty when there is none.
    """
    records = list(reversed(ctx.store.list_runs(status="interrupted", history=True)))
    if not records:
        return ""
    lines = [
        f"- `{r.id}` · {r.name} · {r.epochs_done} of {r.spec['train']['epochs']} epochs kept"
        for r in records
    ]
    return (
        f"**{len(records)} interrupted run{'s' if len(records) > 1 else ''} can be resumed** "
        "(stopped before it finished; the finished epochs and the checkpoint are kept). "
        "Choose one below and press Resume:\n\n" + "\n".join(lines)
    )


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
    "backend",
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
    jobs = ctx.jobs.jobs()
    ours = {job.run_id for job in jobs}
    active = [job for job in jobs if job.state in ("queued", "running")]
    recent = [job for job in jobs if job.state not in ("queued", "running")][-RECENT_JOBS:]
    rows = []
    recorded: dict[str, int] | None = None  # run id -> epochs in the store, read when needed
    for job in active + list(reversed(recent)):
        progress = ctx.jobs.board.get(job.run_id)
        record = None
        with contextlib.suppress(RunNotFoundError):
            record = ctx.store.get(job.run_id, history=False)
        if record is None and job not in active:
            continue  # deleted (in Compare, or with `keras-seq runs --delete`): gone here too
        status = record.status if record is not None else job.state
        position = ctx.jobs.position(job.run_id)
        place = f"waiting #{position + 1}" if position is not None else (job.slot or "")
        history = progress.history if progress else []
        last = history[-1] if history else (progress.logs if progress else {})
        loss = last.get("loss") if last else None
        # An ended run shows the epochs the store recorded (the one a cancel cut short is not
        # one, though the page saw its logs), a training run the epoch it is in.
        if record is not None and record.status not in ("queued", "running"):
            if recorded is None:
                recorded = ctx.store.epoch_counts()  # one query, for every ended row
            epoch = recorded.get(job.run_id, 0)
        else:
            epoch = progress.epoch if progress else None
        rows.append(
            {
                "id": job.run_id,
                "name": job.name,
                "status": status,
                "place": place,
                "progress": f"{100 * (progress.fraction if progress else 0):.0f}%",
                "epoch": f"{epoch}/{progress.epochs}" if progress and progress.epochs else "",
                "loss": f"{loss:.4g}" if isinstance(loss, float) and math.isfinite(loss) else "",
                "metric": _main_metric(last or {}),
                "device": (record.device if record else None)
                or (progress.device if progress else "")
                or "",
                "backend": (record.backend if record else None) or "",
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
                "backend": record.backend or "",
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
    """`(label, run id)` of the runs to follow, newest first: this app's, then other tools'.

    Read from the queue and the store at each call, so a reloaded page or a new
    tab lists every queued and running run (and each trial of a sweep), not
    only those its own session queued.
    """
    jobs = ctx.jobs.jobs()
    choices = [(f"{job.run_id} · {job.name} · {job.state}", job.run_id) for job in reversed(jobs)]
    ours = {job.run_id for job in jobs}
    for record in reversed(ctx.store.list_runs(status=("queued", "running"))):
        if record.id not in ours:
            choices.append((f"{record.id} · {record.name} · {record.status} elsewhere", record.id))
    return choices


def followed_run(ctx: AppContext, mine: Sequence[str] = ()) -> str | None:
    """The run the Train tab follows unless one is pinned: the newest that trains.

    The run that started training last; else the next to start; else the last
    one this app queued; else a run training in another process (a CLI sweep).
    So the view moves on from trial to trial of a sweep and preset to preset.
    A session that queued runs (`mine`) follows its own while one trains, the
    one training now while its own wait, and the last of its own once they all
    ended: another user's later run does not take its view. The trials a
    search of its own chose later (`bayes`) are its own too.
    """
    jobs = ctx.jobs.jobs()
    mine = set(mine)
    own_sweeps = {job.sweep_id for job in jobs if job.run_id in mine and job.sweep_id}
    own = [job for job in jobs if job.run_id in mine or job.sweep_id in own_sweeps]
    if own and not any(job.state in ("queued", "running") for job in own):
        return own[-1].run_id
    own_training = [job for job in own if job.state == "running"]
    training = own_training or [job for job in jobs if job.state == "running"]
    if training:
        return max(training, key=lambda job: job.started or 0.0).run_id
    waiting = [job for job in jobs if job.state == "queued"]
    if waiting:
        return min(waiting, key=lambda job: ctx.jobs.position(job.run_id) or 0).run_id
    if jobs:
        return jobs[-1].run_id
    elsewhere = ctx.store.list_runs(status="running")
    return elsewhere[-1].id if elsewhere else None


def training_now(ctx: AppContext) -> bool:
    """Whether a run waits or trains in this app's queue, or trains in another process.

    The Train tab refreshes itself only while this is true.
    """
    if any(job.state in ("queued", "running") for job in ctx.jobs.jobs()):
        return True
    return bool(ctx.store.list_runs(status="running"))


def _fraction(status: str, progress, epochs_done: int, planned: int) -> float:
    """The bar's share: live batches when the board has them, else the stored epochs."""
    if status == "done":
        return 1.0
    if progress is not None and progress.epochs and progress.steps:
        return progress.fraction
    return min(1.0, epochs_done / planned) if planned else 0.0


def _duration(seconds: float) -> str:
    """`42 s`, `3 min 5 s`, `2 h 10 min`: a time left, as a person says it."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60} min"


def _live_parts(progress, batch_size: object) -> list[str]:
    """Epoch and batch, the last logs, the measured throughput and the time left."""
    parts = [f"epoch {progress.epoch}/{progress.epochs}, batch {progress.step}/{progress.steps}"]
    logs = ", ".join(f"{k} {v:.4g}" for k, v in list(progress.logs.items())[:3] if math.isfinite(v))
    if logs:
        parts.append(logs)
    if progress.rate:
        speed = f"{progress.rate:,.1f} batches/s"
        if isinstance(batch_size, int) and batch_size > 0:
            speed += f" ({progress.rate * batch_size:,.0f} examples/s)"
        parts.append(speed)
    if progress.eta_s is not None:
        parts.append(f"about {_duration(progress.eta_s)} left")
    return parts


def _sweep_line(ctx: AppContext, sweep_id: str) -> str:
    """`sweep S: 4 trials, 1 done, 1 running, 2 queued`: where the whole sweep is.

    A `bayes` search of this app's queue says how many of its trials are chosen:
    `search S: 2 of 6 trials chosen, 1 done, 1 running`.
    """
    trials = ctx.store.list_runs(sweep_id=sweep_id)
    counts: dict[str, int] = {}
    for trial in trials:
        counts[trial.status] = counts.get(trial.status, 0) + 1
    states = ", ".join(f"{n} {status}" for status, n in counts.items())
    study = next(
        (job.search for job in ctx.jobs.jobs() if job.sweep_id == sweep_id and job.search),
        None,
    )
    if study is not None and study.bayes:
        ending = (
            " (no more will be chosen)"
            if study.stopped and study.asked < study.planned_trials
            else ""
        )
        return (
            f"search {html.escape(sweep_id)}: {len(trials)} of {study.planned_trials} trials "
            f"chosen{ending}, {states}"
        )
    return f"sweep {html.escape(sweep_id)}: {len(trials)} trials, {states}"


def progress_html(ctx: AppContext, run_id: str | None) -> str:
    """A progress bar and a status line for one run (HTML).

    While it trains: epoch and batch, the last batch's logs, the throughput and
    the time left at the rate the board measured. After it ended: its final
    metrics, and for a run that did not finish (cancelled, failed, interrupted)
    the epochs it trained, with the bar at that share (never 100%).
    """
    if not run_id:
        return '<div id="ks-progress" class="ks-progress-empty">No run queued yet.</div>'
    progress = ctx.jobs.board.get(run_id)
    try:
        record = ctx.store.get(run_id, history=False)
    except RunNotFoundError:
        return f'<div id="ks-progress">No run {html.escape(run_id)}.</div>'
    epochs_done = len(ctx.store.history(run_id))
    planned = int(record.spec.get("train", {}).get("epochs") or 0)
    fraction = _fraction(record.status, progress, epochs_done, planned)
    status = record.status
    parts = [f"<b>{html.escape(record.name)}</b> ({html.escape(run_id)}): <b>{status}</b>"]
    if status == "queued":
        position = ctx.jobs.position(run_id)
        if position is not None:
            parts.append(f"waiting, #{position + 1} in the queue")
    if progress and progress.epochs and status == "running":
        parts.extend(_live_parts(progress, record.spec.get("train", {}).get("batch_size")))
    elif status in FINAL_STATUSES and status != "done" and planned:
        parts.append(f"{epochs_done} of {planned} epochs trained")
    if record.sweep_id is not None:
        parts.append(_sweep_line(ctx, record.sweep_id))
    device = record.device or (progress.device if progress else None)
    if device:
        setup = ", ".join(x for x in (record.backend, record.precision or "?") if x)
        parts.append(f"on {html.escape(device)} ({html.escape(setup)})")
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
    colour = {
        "failed": "#dc2626",
        "diverged": "#dc2626",
        "cancelled": "#9ca3af",
        "pruned": "#d97706",
    }.get(status, "#2563eb")
    return (
        f'<div id="ks-progress" data-status="{status}" data-run="{html.escape(run_id)}">'
        f'<div style="background:#e5e7eb;border-radius:4px;height:14px;overflow:hidden">'
        f'<div style="width:{width};background:{colour};height:14px"></div></div>'
        f'<div style="margin-top:4px">{" · ".join(parts)}</div></div>'
    )


def curves_frame(ctx: AppContext, run_id: str | None):
    """A run's per-epoch metrics in long form (`epoch`, `value`, `metric`), for a line plot."""
    columns = ["epoch", "value", "metric"]
    if not run_id:
        return pd.DataFrame(columns=columns).astype(CURVE_DTYPES)
    try:
        history = ctx.store.history(run_id)
    except RunNotFoundError:
        return pd.DataFrame(columns=columns).astype(CURVE_DTYPES)
    rows = []
    for epoch in history:
        for name, value in epoch.metrics.items():
            if isinstance(value, (int, float)) and math.isfinite(value):
                rows.append({"epoch": epoch.epoch, "value": float(value), "metric": name})
    frame = pd.DataFrame(rows, columns=columns)
    return frame.astype(CURVE_DTYPES)


def _is_loss(metric: str) -> bool:
    """Losses and errors go on their own axes: their scale is not that of accuracies."""
    return "loss" in metric or "error" in metric


def live_curves_figure(ctx: AppContext, run_id: str | None):
    """The followed run's metrics per finished epoch: a matplotlib figure, or None.

    Losses (and errors) on the left axes and the other metrics on the right,
    each with its legend inside the axes so that it is never cut off; None
    while the run has no finished epoch. A new figure every time, so each run
    is drawn from its own data alone.
    """
    frame = curves_frame(ctx, run_id)
    if frame.empty:
        return None

    names = list(dict.fromkeys(frame["metric"]))
    groups = [
        g for g in ([n for n in names if _is_loss(n)], [n for n in names if not _is_loss(n)]) if g
    ]
    figure = Figure(figsize=(10, 3.6), layout="constrained")
    for index, group in enumerate(groups):
        axes = figure.add_subplot(1, len(groups), index + 1)
        for name in group:
            rows = frame[frame["metric"] == name]
            axes.plot(rows["epoch"], rows["value"], marker="o", markersize=3, label=name)
        axes.set_xlabel("epoch")
        axes.set_ylabel("loss" if _is_loss(group[0]) else "metric")
        axes.grid(alpha=0.3)
        axes.legend(fontsize="small", loc="best")
        label_epochs(axes, frame["epoch"])
    figure.suptitle(f"{ctx.store.get(run_id, history=False).name} ({run_id})", fontsize="medium")
    return figure


def curves_key(ctx: AppContext, run_id: str | None) -> str:
    """What the live curves show, in short: the figure is drawn again only when this changes."""
    if not run_id:
        return ""
    try:
        history = ctx.store.history(run_id)
    except RunNotFoundError:
        return f"{run_id}:missing"
    return f"{run_id}:{len(history)}"
