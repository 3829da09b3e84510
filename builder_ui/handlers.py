"""What the builder app does, as plain Python: the app's buttons call these and nothing else.

No Gradio here: every function takes and returns plain values (text, lists,
pandas DataFrames, matplotlib figures, paths), so the whole app is tested
without a browser, and `builder_ui.app` only lays out the page and wires
events to these functions.

State lives in an `AppContext`: the run store (`<runs>/runs.sqlite`), the
training queue (`builder_ui.jobs.JobQueue`), the uploads kept for runs
(`<runs>/_uploads/`), a scratch directory for downloads (in the system's temp
directory, so the web server may serve them), and a few loaded models.

The spec the user builds is YAML text: the single source of truth that the
form and the editor both show. A form edit is `apply_field(text, path,
value)` (new text, then `check`); an editor edit is `check(text)`; the form
is redrawn from `fields(text)`.

Sections:

- Build: `check`, `problems_markdown`, `presets`, `preset_text`, `fields`,
  `apply_field`, `apply_type`, `summarize`, `upload`.
- Train: `queue_spec`, `queue_presets`, `cancel`, `resume`, `queue_frame`,
  `progress_html`, `curves_frame`.
- Compare: `results_frame`, `run_choices`, `metric_choices`, `curves_figure`,
  `bleu_by_length`, `results_csv`.
- Inspect: `predict`, `gradient_flow`, `positional_encoding`, `vit_similarity`.
- Export: `export_run`.
"""

from __future__ import annotations

import contextlib
import html
import math
import os
import shutil
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from builder_ui import forms, presets
from builder_ui.jobs import JobQueue
from builder_ui.lab_runner import LabRunner
from builder_ui.runs import FINAL_STATUSES, STATUSES, RunNotFoundError, RunStore
from builder_ui.spec import MAX_SPEC_BYTES, ExperimentSpec, SpecError, parse_yaml, validate_spec
from builder_ui.uploads import UPLOADS_DIR, Upload, check_upload

# At most this many runs from one click (a sweep's trials, or presets).
MAX_RUNS_PER_SUBMIT = 64
# Models kept loaded for the Inspect tab.
MODEL_CACHE_SIZE = 4
# Queue rows shown: the active runs and this many recent ones.
RECENT_JOBS = 20


class AppError(ValueError):
    """A request the app refuses; the message is shown on the page as it is."""


# ---------------------------------------------------------------------------
# Context


class AppContext:
    """Everything the app's handlers share: the store, the queue, uploads, downloads, models.

    Args:
        runs_dir: The run store's directory (made if missing).
        slots: Device slots of the training queue (default: detected).
    """

    def __init__(self, runs_dir: str | os.PathLike, *, slots: Sequence[str] | None = None):
        self.runs_dir = Path(runs_dir).resolve()
        self.store = RunStore(self.runs_dir)
        self.jobs = JobQueue(self.store, slots=slots)
        self.lab = LabRunner(self.runs_dir)
        self.uploads_root = self.runs_dir / UPLOADS_DIR
        self.scratch = Path(tempfile.mkdtemp(prefix="keras-seq-app-"))
        self._lock = threading.Lock()
        self._models: OrderedDict[str, Any] = OrderedDict()
        self._tasks: OrderedDict[str, Any] = OrderedDict()

    def close(self) -> None:
        """Stop the queue (cancelling what waits), forget models, remove the downloads."""
        self.jobs.close()
        self.lab.stop()
        with self._lock:
            self._models.clear()
            self._tasks.clear()
        shutil.rmtree(self.scratch, ignore_errors=True)
        self.store.close()

    # -- loaded runs --------------------------------------------------------

    def record(self, run_id: str):
        if not run_id:
            raise AppError("Choose a run first.")
        try:
            return self.store.get(run_id)
        except RunNotFoundError as error:
            raise AppError(str(error)) from None

    def model(self, run_id: str) -> Any:
        """The trained model of a `done` run (loaded once, `safe_mode=True`)."""
        from builder_ui.export import ExportError, load_trained_model

        with self._lock:
            if run_id in self._models:
                self._models.move_to_end(run_id)
                return self._models[run_id]
        try:
            model = load_trained_model(self.store, run_id)
        except ExportError as error:
            raise AppError(str(error)) from None
        with self._lock:
            self._models[run_id] = model
            while len(self._models) > MODEL_CACHE_SIZE:
                self._models.popitem(last=False)
        return model

    def task(self, run_id: str) -> Any:
        """The run's task data, made again from its (seeded) spec."""
        from builder_ui.registry import load_task
        from builder_ui.spec import load_spec

        with self._lock:
            if run_id in self._tasks:
                return self._tasks[run_id]
        record = self.record(run_id)
        try:
            task = load_task(load_spec(record.spec))
        except SpecError as error:
            raise AppError(f"The data of run {run_id} cannot be made again: {error}") from None
        with self._lock:
            self._tasks[run_id] = task
            while len(self._tasks) > MODEL_CACHE_SIZE:
                self._tasks.popitem(last=False)
        return task

    def download_path(self, name: str) -> Path:
        """A fresh path in the scratch directory for a file the page offers to download."""
        directory = Path(tempfile.mkdtemp(dir=self.scratch))
        return directory / name


# ---------------------------------------------------------------------------
# Build: the spec text


@dataclass
class Check:
    """The spec text checked: parsed, validated, model against task (no data made).

    Attributes:
        text: The YAML text checked.
        document: The parsed document (None when the YAML is malformed).
        spec: The validated spec, when there are no problems.
        problems: `(field path, message)` pairs; empty when valid.
    """

    text: str
    document: dict[str, Any] | None
    spec: ExperimentSpec | None
    problems: list[tuple[str, str]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def errors_by_field(self) -> dict[str, str]:
        """`{path: message}` (messages of one path joined), for errors beside the fields."""
        found: dict[str, str] = {}
        for path, message in self.problems:
            found[path] = f"{found[path]}; {message}" if path in found else message
        return found


def check(text: str) -> Check:
    """Parse and validate spec text, and check the model against the task's kinds."""
    from builder_ui.registry import check_kinds

    text = text or ""
    if len(text.encode("utf-8")) > MAX_SPEC_BYTES:
        return Check(text, None, None, [("", f"the spec is larger than {MAX_SPEC_BYTES:,} bytes")])
    try:
        document = parse_yaml(text)
    except SpecError as error:
        return Check(text, None, None, list(error.problems))
    if not isinstance(document, dict):
        return Check(
            text,
            None,
            None,
            [("", "expected a mapping of spec fields (version, name, task, model, train)")],
        )
    try:
        spec = validate_spec(document)
        check_kinds(spec)
    except SpecError as error:
        return Check(text, document, None, list(error.problems))
    return Check(text, document, spec)


def problems_markdown(problems: Sequence[tuple[str, str]]) -> str:
    """The problems as Markdown, one bullet per field path; a tick when there are none."""
    if not problems:
        return "✓ **Valid spec.** Every field checks out; the model fits the task."
    lines = [f"✗ **{len(problems)} problem{'s' if len(problems) > 1 else ''}:**"]
    for path, message in problems:
        where = f"`{path}`: " if path else ""
        lines.append(f"- {where}{html.escape(message, quote=False)}")
    return "\n".join(lines)


def dump(document: Mapping[str, Any]) -> str:
    """A spec document as the YAML the editor shows (the order of its fields kept)."""
    return yaml.safe_dump(dict(document), sort_keys=False, allow_unicode=True, width=100)


def presets_list() -> list[tuple[str, str]]:
    """`(label, key)` of every preset: the arc's stages, then plugin model types."""
    return [(preset.label, preset.key) for preset in presets.all_presets()]


def preset_text(key: str) -> str:
    """The YAML of a preset."""
    try:
        return dump(presets.spec(key))
    except KeyError as error:
        raise AppError(str(error.args[0])) from None


def preset_description(key: str) -> str:
    try:
        preset = presets.get(key)
    except KeyError:
        return ""
    return f"**{preset.label}** — {preset.description}"


def task_types() -> list[str]:
    from builder_ui import registry

    return registry.task_types()


def model_types() -> list[tuple[str, str]]:
    """`(label, type)` of the registered model types, with their one-line description."""
    from builder_ui import registry

    return [
        (f"{name} — {info['description']}" if info["description"] else name, name)
        for name, info in registry.describe_types().items()
    ]


def fields(text: str) -> list[forms.FormField]:
    """The form's fields for spec text (none while the YAML is malformed)."""
    result = check(text)
    return forms.form_fields(result.document) if result.document is not None else []


def section_types(text: str) -> tuple[str | None, str | None]:
    """The `task.type` and `model.type` of spec text (None where missing or malformed)."""
    result = check(text)
    document = result.document or {}
    task = document.get("task") if isinstance(document.get("task"), Mapping) else {}
    model = document.get("model") if isinstance(document.get("model"), Mapping) else {}
    return task.get("type"), model.get("type")


def _document(text: str) -> dict[str, Any]:
    result = check(text)
    if result.document is None:
        raise AppError(
            "The YAML spec has an error; fix it in the editor first: "
            + "; ".join(f"{p}: {m}" if p else m for p, m in result.problems)
        )
    return result.document


def apply_field(text: str, path: str, value: Any) -> tuple[str, Check, bool]:
    """Set one form field in the spec text.

    Returns:
        `(new text, its check, whether the form's fields changed)`; the last
        is true after choosing another `type` or turning a block on or off.

    Raises:
        AppError: malformed YAML, or `path` is not a field of the spec.
    """
    document = _document(text)
    before = forms.structure(document)
    try:
        changed = forms.set_field(document, path, value)
    except forms.FieldError as error:
        raise AppError(str(error)) from None
    new_text = dump(changed)
    return new_text, check(new_text), forms.structure(changed) != before


def apply_type(text: str, section: str, type_name: str) -> tuple[str, Check]:
    """Choose the task or model type: that section becomes the type's defaults."""
    from builder_ui import registry

    document = _document(text)
    known = registry.task_types() if section == "task" else registry.model_types()
    if type_name not in known:
        raise AppError(f"{section}.type: expected one of {', '.join(known)}, got {type_name!r}")
    if isinstance(document.get(section), Mapping) and document[section].get("type") == type_name:
        return text, check(text)
    new_text = dump(forms.set_type(document, section, type_name))
    return new_text, check(new_text)


def apply_task(text: str, task: Mapping[str, Any]) -> tuple[str, Check]:
    """Put a whole `task:` section (e.g. from an upload) into the spec text."""
    document = _document(text)
    document["task"] = dict(task)
    new_text = dump(document)
    return new_text, check(new_text)


# ---------------------------------------------------------------------------
# Build: model summary and uploads


@dataclass
class ModelSummary:
    """A spec's model, built (not trained): its layers, parameter count and diagram.

    Attributes:
        params: Parameters in total; trainable: the trainable ones.
        headline: One line of Markdown.
        headers, rows: The layer table (name, type, output shape, parameters, inputs).
        diagram: The layer graph as HTML.
    """

    params: int
    trainable: int
    headline: str
    headers: list[str]
    rows: list[list[Any]]
    diagram: str


def summarize(text: str) -> ModelSummary:
    """Make the task's data, run every check, and build the model to describe it.

    Raises:
        SpecError: any problem, with its field path (the data and the builder's checks too).
    """
    import keras

    from builder_ui import model_view
    from builder_ui.registry import prepare

    result = check(text)
    if not result.ok:
        raise SpecError(result.problems)
    prepared = prepare(result.spec)
    spec = prepared.spec
    model = prepared.builder.build(spec.model, prepared.task)
    if not model.built:
        model(keras.tree.map_structure(lambda array: array[:1], prepared.x_train))
    layers = model_view.describe(model)
    graph = model_view.is_graph(model)
    params = int(model.count_params())
    trainable = int(sum(math.prod(w.shape) for w in model.trainable_weights))
    task = prepared.task
    headline = (
        f"**{model.name}** ({type(model).__name__}): **{params:,} parameters** "
        f"({trainable:,} trainable) · task `{task.name}`: {prepared.num_train:,} training and "
        f"{prepared.num_val:,} validation examples · monitors `{prepared.monitor_metric}`"
    )
    return ModelSummary(
        params,
        trainable,
        headline,
        list(model_view.TABLE_HEADERS),
        model_view.table(layers),
        model_view.diagram_html(layers, graph=graph, title=f"{model.name}: layer graph"),
    )


def upload(ctx: AppContext, path: str | os.PathLike | None, kind: str) -> Upload:
    """Check an uploaded data file and keep it for runs (see `builder_ui.uploads`)."""
    return check_upload(path, kind, ctx.uploads_root)


# ---------------------------------------------------------------------------
# Train


@dataclass
class Submitted:
    """Runs put in the queue: their ids and a line for the page."""

    run_ids: list[str]
    message: str


def _trial_specs(spec: ExperimentSpec) -> tuple[list[ExperimentSpec], str | None]:
    from builder_ui import sweeps

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
    from builder_ui.registry import prepare

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


# ---------------------------------------------------------------------------
# Compare


def results_frame(
    ctx: AppContext, query: str = "", statuses: Sequence[str] | None = None, *, rounded: bool = True
):
    """Every run in the store as a comparison table (`builder_ui.compare`), filtered.

    Args:
        query: Keep rows where any cell contains this text (case-insensitive).
        statuses: Keep only these statuses (None or empty: all).
        rounded: Round numbers for reading (the CSV keeps them whole).
    """
    from builder_ui import compare

    if statuses:
        unknown = [s for s in statuses if s not in STATUSES]
        if unknown:
            raise AppError(f"Unknown status {unknown[0]!r}; statuses: {', '.join(STATUSES)}.")
    table = compare.compare(ctx.store, where={"status": list(statuses)} if statuses else None)
    if query and query.strip():
        needle = query.strip().lower()
        keep = table.astype(str).apply(
            lambda row: any(needle in cell.lower() for cell in row), axis=1
        )
        table = table[keep] if len(table) else table
    table = table.iloc[::-1].reset_index(drop=True)  # newest first
    if rounded:
        for column in table.columns:
            if table[column].dtype.kind == "f":
                table[column] = table[column].map(_rounded)
    return table


def _rounded(value: Any) -> Any:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return value
    if isinstance(value, float):
        return float(f"{value:.4g}")
    return value


def run_choices(ctx: AppContext, statuses: Sequence[str] | None = None) -> list[tuple[str, str]]:
    """`(label, run id)` of the store's runs, newest first (only `statuses` if given)."""
    records = ctx.store.list_runs(status=list(statuses) if statuses else None)
    return [
        (f"{r.id} · {r.name} · {r.spec.get('model', {}).get('type', '?')} · {r.status}", r.id)
        for r in reversed(records)
    ]


def metric_choices(ctx: AppContext, run_ids: Sequence[str]) -> list[str]:
    """The metrics the runs logged per epoch (val_ ones first)."""
    names: list[str] = []
    for run_id in run_ids or []:
        with contextlib.suppress(RunNotFoundError):
            for epoch in ctx.store.history(run_id):
                names += [n for n in epoch.metrics if n not in names]
    return sorted(names, key=lambda n: (not n.startswith("val_"), n))


def curves_figure(ctx: AppContext, run_ids: Sequence[str], metric: str):
    """One metric per epoch of several runs, overlaid (a matplotlib figure)."""
    from builder_ui import compare

    run_ids = list(run_ids or [])
    if not run_ids:
        raise AppError("Select one or more runs to overlay their curves.")
    try:
        return compare.plot_curves(ctx.store, run_ids, metric or "val_loss")
    except (KeyError, ValueError) as error:
        raise AppError(str(error.args[0]) if error.args else str(error)) from None


BLEU_ARTIFACT = "bleu_by_length.csv"


def bleu_table(ctx: AppContext, run_id: str):
    """BLEU per source-length bucket of a finished seq2seq run, computed once and kept."""
    import pandas as pd

    from builder_ui.inspection import translator
    from keras_seq.metrics import evaluate_by_length

    record = ctx.record(run_id)
    if record.spec.get("model", {}).get("type") != "seq2seq":
        raise AppError(f"Run {run_id} is not a seq2seq run; BLEU by length needs a translator.")
    if BLEU_ARTIFACT in record.artifacts:
        path = ctx.store.directory / record.artifacts[BLEU_ARTIFACT]
        if path.is_file():
            return pd.read_csv(path)
    model, task = ctx.model(run_id), ctx.task(run_id)
    table = evaluate_by_length(translator(model, task), task)
    with ctx.store.atomic_artifact(run_id, BLEU_ARTIFACT) as path:
        table.to_csv(path, index=False)
    return table


def bleu_by_length(ctx: AppContext, run_ids: Sequence[str]):
    """BLEU against source length for the selected seq2seq runs: `(figure, table)`.

    Raises:
        AppError: none of the runs is a finished seq2seq run.
    """
    import pandas as pd

    from keras_seq.metrics import plot_bleu_by_length

    curves, frames = [], []
    for run_id in run_ids or []:
        record = ctx.record(run_id)
        if record.status != "done" or record.spec.get("model", {}).get("type") != "seq2seq":
            continue
        table = bleu_table(ctx, run_id)
        label = f"{record.name} ({run_id})"
        curves.append((label, table))
        frames.append(table.assign(run=label))
    if not curves:
        raise AppError("Select at least one finished seq2seq run to see BLEU by source length.")
    figure = plot_bleu_by_length(curves, title="BLEU by source sentence length")
    table = pd.concat(frames, ignore_index=True)
    columns = ["run", *[c for c in table.columns if c != "run"]]
    return figure, table[columns]


def results_csv(ctx: AppContext, query: str = "", statuses: Sequence[str] | None = None) -> Path:
    """The (filtered) results table as a CSV file to download, numbers unrounded."""
    from builder_ui import compare

    table = results_frame(ctx, query, statuses, rounded=False)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return compare.to_csv(table, ctx.download_path(f"keras-seq-runs-{stamp}.csv"))


# ---------------------------------------------------------------------------
# Inspect


def _done_record(ctx: AppContext, run_id: str):
    record = ctx.record(run_id)
    if record.status != "done":
        raise AppError(
            f"Run {run_id} is {record.status!r}; only a finished ('done') run has a model to "
            "inspect."
        )
    return record


def predict(ctx: AppContext, run_id: str, text: str, index: Any = 0):
    """The run's model on typed input, or on validation example `index` (`inspection.predict`)."""
    from builder_ui import inspection

    record = _done_record(ctx, run_id)
    try:
        return inspection.predict(ctx.model(run_id), ctx.task(run_id), record.spec, text, index)
    except inspection.InspectError as error:
        raise AppError(str(error)) from None


def gradient_flow(ctx: AppContext, run_id: str, steps: Any = 50):
    """Gradient norm against lag for the run's recurrent layers, with the trained weights."""
    from builder_ui import inspection

    _done_record(ctx, run_id)
    try:
        steps = int(steps)
    except (TypeError, ValueError):
        raise AppError(f"Steps: expected an integer, got {steps!r}.") from None
    try:
        return inspection.gradient_flow_figure(ctx.model(run_id), steps)
    except inspection.InspectError as error:
        raise AppError(str(error)) from None


def positional_encoding(ctx: AppContext, run_id: str | None, d_model: Any = 64, length: Any = 50):
    """The sinusoidal positional encoding: the run's (if it has one) or `d_model` × `length`."""
    from builder_ui import inspection

    try:
        d_model, length = int(d_model), int(length)
    except (TypeError, ValueError):
        raise AppError("Dimensions and positions: expected integers.") from None
    if not (2 <= d_model <= 1024 and 1 <= length <= 2000):
        raise AppError(
            f"Dimensions: 2 to 1024 and positions: 1 to 2000, got {d_model} and {length}."
        )
    model = task = None
    if run_id:
        record = ctx.record(run_id)
        if record.status == "done":
            model, task = ctx.model(run_id), ctx.task(run_id)
    return inspection.positional_figure(model, task, d_model=d_model, length=length)


def vit_similarity(ctx: AppContext, run_id: str):
    """The ViT position-similarity grid of a finished vision_transformer run."""
    from builder_ui import inspection

    _done_record(ctx, run_id)
    try:
        return inspection.vit_similarity_figure(ctx.model(run_id))
    except inspection.InspectError as error:
        raise AppError(str(error)) from None


# ---------------------------------------------------------------------------
# Export

EXPORT_FORMATS = {
    "savedmodel": "TensorFlow SavedModel (zip)",
    "keras": "Keras file (.keras)",
    "python": "Python code (.py)",
}


@dataclass
class Exported:
    """A download: the file and a snippet that loads or runs it."""

    path: Path
    snippet: str


def _snippet(fmt: str, name: str, record) -> str:
    if fmt == "keras":
        return (
            "import keras\n"
            "import keras_seq  # registers keras_seq's layers and models\n\n"
            f'model = keras.saving.load_model("{name}", safe_mode=True)\n'
            "model.summary()\n"
        )
    if fmt == "savedmodel":
        folder = name.removesuffix(".zip")
        serve = (
            "target_ids = reloaded.serve(source_ids)  # int ids (batch, time) -> greedy target ids"
            if record.spec.get("model", {}).get("type") == "seq2seq"
            else "outputs = reloaded.serve(inputs)  # a batch shaped like the training inputs"
        )
        return (
            "import zipfile\n\nimport tensorflow as tf  # TensorFlow alone: no keras_seq needed\n\n"
            f'zipfile.ZipFile("{name}").extractall("{folder}")\n'
            f'reloaded = tf.saved_model.load("{folder}/savedmodel")\n'
            f"{serve}\n"
        )
    module = name.removesuffix(".py").replace("-", "_")
    return (
        f"# Save the file as {module}.py, then:\n"
        f"from {module} import build_model\n\n"
        "model = build_model()  # the same architecture, fresh weights\n"
        "model.summary()\n"
    )


def export_run(ctx: AppContext, run_id: str, fmt: str) -> Exported:
    """Export a finished run (`builder_ui.export`) and copy it to a download."""
    from builder_ui import export

    if fmt not in EXPORT_FORMATS:
        raise AppError(f"Format: expected one of {', '.join(EXPORT_FORMATS)}, got {fmt!r}.")
    record = ctx.record(run_id)
    try:
        path = export.export(ctx.store, run_id, fmt)
    except export.ExportError as error:
        raise AppError(str(error)) from None
    safe_id = run_id.replace("-", "_")
    if fmt == "savedmodel":
        source = path.parent / export.SAVEDMODEL_ZIP
        name = f"{run_id}-savedmodel.zip"
    elif fmt == "keras":
        source, name = path, f"{run_id}.keras"
    else:
        source, name = path, f"model_{safe_id}.py"
    target = ctx.download_path(name)
    shutil.copyfile(source, target)
    return Exported(target, _snippet(fmt, name, record))
