"""Inspect tab actions: predictions, gradient flow, positional encodings, ViT position similarity.

No Gradio here.
"""

from __future__ import annotations

from typing import Any

from builder_ui.app.context import AppContext, AppError
from builder_ui.results import inspection


def _done_record(ctx: AppContext, run_id: str):
    record = ctx.record(run_id)
    if record.status != "done":
        raise AppError(
            f"Run {run_id} is {record.status!r}; only a finished ('done') run has a model to "
            "inspect."
        )
    return record


def predict(
    ctx: AppContext,
    run_id: str,
    text: str,
    index: Any = 0,
    decoding: inspection.Decoding | None = None,
):
    """The run's model on typed input, or on validation example `index` (`inspection.predict`).

    A translation is decoded as `decoding` says (greedy by default).
    """

    record = _done_record(ctx, run_id)
    task = ctx.task(run_id)
    if not (text or "").strip() and not len(task.x_val):
        raise AppError(
            f"Run {run_id} has no validation examples to show: {task.description} "
            "Type an input instead."
        )
    try:
        return inspection.predict(ctx.model(run_id), task, record.spec, text, index, decoding)
    except inspection.InspectError as error:
        raise AppError(str(error)) from None


def gradient_flow(ctx: AppContext, run_id: str, steps: Any = 50):
    """Gradient norm against lag for the run's recurrent layers, with the trained weights."""

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

    _done_record(ctx, run_id)
    try:
        return inspection.vit_similarity_figure(ctx.model(run_id))
    except inspection.InspectError as error:
        raise AppError(str(error)) from None
