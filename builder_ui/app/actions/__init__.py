"""The plain-Python actions the app's tabs call: one module per tab, no Gradio.

Every function takes and returns plain values (text, lists, pandas DataFrames,
matplotlib figures, paths), so the whole app is tested without a browser; the
tabs (`builder_ui.app.tabs`) only lay out components and wire events to these.
They share an `AppContext` (`builder_ui.app.context`). This package re-exports
every action, so `actions.check(text)` and `actions.queue_spec(ctx, text)` read
the same from a tab or a test.
"""

from builder_ui.app.actions.build import (
    Check,
    ModelSummary,
    apply_field,
    apply_task,
    apply_type,
    check,
    dump,
    fields,
    model_types,
    preset_description,
    preset_text,
    presets_list,
    problems_markdown,
    section_types,
    summarize,
    task_types,
    upload,
)
from builder_ui.app.actions.compare import (
    BLEU_ARTIFACT,
    bleu_by_length,
    bleu_table,
    curves_figure,
    metric_choices,
    results_csv,
    results_frame,
    run_choices,
)
from builder_ui.app.actions.export import (
    EXPORT_FORMATS,
    Exported,
    export_run,
)
from builder_ui.app.actions.inspect import (
    gradient_flow,
    positional_encoding,
    predict,
    vit_similarity,
)
from builder_ui.app.actions.train import (
    MAX_RUNS_PER_SUBMIT,
    QUEUE_COLUMNS,
    RECENT_JOBS,
    Submitted,
    active_run,
    cancel,
    curves_frame,
    interrupted_choices,
    progress_html,
    queue_choices,
    queue_frame,
    queue_presets,
    queue_spec,
    resume,
)
from builder_ui.app.context import MODEL_CACHE_SIZE, AppContext, AppError

__all__ = [
    "BLEU_ARTIFACT",
    "EXPORT_FORMATS",
    "MAX_RUNS_PER_SUBMIT",
    "MODEL_CACHE_SIZE",
    "QUEUE_COLUMNS",
    "RECENT_JOBS",
    "AppContext",
    "AppError",
    "Check",
    "Exported",
    "ModelSummary",
    "Submitted",
    "active_run",
    "apply_field",
    "apply_task",
    "apply_type",
    "bleu_by_length",
    "bleu_table",
    "cancel",
    "check",
    "curves_figure",
    "curves_frame",
    "dump",
    "export_run",
    "fields",
    "gradient_flow",
    "interrupted_choices",
    "metric_choices",
    "model_types",
    "positional_encoding",
    "predict",
    "preset_description",
    "preset_text",
    "presets_list",
    "problems_markdown",
    "progress_html",
    "queue_choices",
    "queue_frame",
    "queue_presets",
    "queue_spec",
    "results_csv",
    "results_frame",
    "resume",
    "run_choices",
    "section_types",
    "summarize",
    "task_types",
    "upload",
    "vit_similarity",
]
