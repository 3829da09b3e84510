"""`show_attend_tell`: an image captioner that attends over regions (Xu et al. 2015).

    image ─▶ CNN feature grid (or patches) ─▶ regions a_i ─▶ Bahdanau attention from h_{t−1}
          ─▶ LSTM decoder ─▶ one word per step

Built by `keras_seq.models.ShowAttendTell`, for tasks with image inputs and
sequence targets (`shape_captions`). It trains, is scored and decodes as a
`seq2seq` does (teacher forcing on `{"source": images, "target": captions}`;
`bleu` and `exact_match` from greedy decoding of the validation images). A
task that knows its objects' boxes also gets `gaze_on_object`: the mean
attention, over the validation captions' words about an object, that falls
on regions overlapping that object's box (`keras_seq.diagnostics.gaze`),
and `gaze_chance`, what a uniform gaze would put there.

Spec example:

    task: {type: shape_captions, n: 3000}
    model: {type: show_attend_tell, filters: 32, units: 64, attention_penalty: 1.0}
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from builder_ui.builders import memory
from builder_ui.builders.base import ModelBuilder
from builder_ui.builders.fields import Rate, Units
from builder_ui.builders.registry import register_model
from builder_ui.builders.seq2seq import Seq2SeqBuilder
from builder_ui.specs import ModelParams

# Mirrors keras_seq.models.captioner.MAX_CONV_LAYERS (checked by a test).
MAX_CONV_LAYERS = 8


class ShowAttendTellParams(ModelParams):
    """The captioner's fields.

    Args:
        encoder: `cnn` (3×3 convolution, ReLU and 2×2 pooling per block) or
            `patches` (a ViT's patch embedding).
        filters: Features of each region.
        conv_layers: The CNN's blocks; the grid is the image over `2^k`.
        patch_size: The patch side, with `encoder: patches`.
        region_positions: Add a learned embedding of each region's place.
        cell: The decoder's cell (`lstm` is the paper's).
        units: The decoder's state size.
        attention_units: Width of the additive score; null for `units`.
        embedding_dim: Width of the word vectors.
        attention_penalty: λ of the doubly stochastic regularisation
            λ Σ_i (1 − Σ_t α_ti)²; 0 turns it off.
        dropout: Dropout on the word vectors and the decoder outputs.
    """

    type: Literal["show_attend_tell"] = "show_attend_tell"
    encoder: Literal["cnn", "patches"] = "cnn"
    filters: Units = 32
    conv_layers: Annotated[int, Field(ge=1, le=MAX_CONV_LAYERS)] = 2
    patch_size: Annotated[int, Field(ge=1, le=1024)] = 4
    region_positions: bool = True
    cell: Literal["simple", "gru", "lstm", "cec_lstm"] = "lstm"
    units: Units = 64
    attention_units: Units | None = None
    embedding_dim: Units = 32
    attention_penalty: Annotated[float, Field(ge=0, le=1e6, allow_inf_nan=False)] = 0.0
    dropout: Rate = 0.0


@register_model("show_attend_tell")
class ShowAttendTellBuilder(ModelBuilder):
    params = ShowAttendTellParams
    input_kinds = ("image",)
    target_kinds = ("sequence",)
    description = "Show, Attend and Tell (Xu et al. 2015): captions from attention over regions."

    def _step(self, params):
        return 2**params.conv_layers if params.encoder == "cnn" else params.patch_size

    def check(self, params, task):
        height, width, step = task.inputs.height, task.inputs.width, self._step(params)
        if height % step or width % step:
            field = "conv_layers" if params.encoder == "cnn" else "patch_size"
            what = f"2^conv_layers = {step}" if params.encoder == "cnn" else f"patch_size {step}"
            return [
                (
                    field,
                    f"expected {what} to divide the image height {height} and width {width} "
                    f"(task {task.name!r}), got {getattr(params, field)}",
                )
            ]
        return []

    def estimate(self, params, task):
        """The layers `build` makes, counted from the fields (see `memory.Part`)."""
        image, d, units = task.inputs, params.filters, params.units
        step = self._step(params)
        regions = (image.height // step) * (image.width // step)
        parts = []
        channels, pixels = image.channels, image.height * image.width
        if params.encoder == "cnn":
            for index in range(params.conv_layers):
                weights = 9 * channels * d + d
                parts.append(memory.Part(f"conv_{index}", "model.filters", weights, 2 * pixels * d))
                channels, pixels = d, pixels // 4
        else:
            weights = step * step * channels * d + d
            parts.append(memory.Part("patches", "model.filters", weights, regions * d))
        if params.region_positions:
            parts.append(memory.Part("region_positions", "model.filters", regions * d, regions * d))
        target = task.targets
        cells = memory.recurrent_cell(params.cell, params.embedding_dim + d, units)
        two_states = params.cell in ("lstm", "cec_lstm")
        cells += (2 if two_states else 1) * memory.dense(d, units)  # h_0 (c_0) from ā
        kept = memory.recurrent_activations(params.cell, target.length, units)
        hidden = params.attention_units or units
        attention = units * hidden + d * hidden + hidden  # W_a, U_a, v_a
        attention_kept = target.length * regions * (hidden + 2) + target.length * d
        words = target.vocab_size * params.embedding_dim
        output = memory.dense(units + d, target.vocab_size)
        return [
            *parts,
            memory.Part(
                "target_embedding",
                "model.embedding_dim",
                words,
                target.length * params.embedding_dim,
            ),
            memory.Part("decoder", "model.units", cells, kept),
            memory.Part("attention", "model.units", attention, attention_kept),
            memory.Part(
                "output_projection", "model.units", output, 2 * target.length * target.vocab_size
            ),
        ]

    def build(self, params, task):
        # Keras loads on first use, not on import (specs and the app start without it).
        from keras_seq.models import ShowAttendTell

        return ShowAttendTell(
            task.targets.vocab_size, task.inputs.shape, **params.model_dump(exclude={"type"})
        )

    # Data, loss, metrics and scoring: those of every encoder–decoder.
    def fit_data(self, params, task):
        return _SEQ2SEQ.fit_data(params, task)

    def compile_args(self, params, task):
        return _SEQ2SEQ.compile_args(params, task)

    def monitor_metric(self, params, task):
        return _SEQ2SEQ.monitor_metric(params, task)

    def evaluate(self, model, params, prepared):
        metrics = _SEQ2SEQ.evaluate(model, params, prepared)
        task = prepared.task
        annotations = getattr(task, "annotations", None) or {}
        if "boxes_val" in annotations and "word_objects_val" in annotations:
            metrics.update(gaze_metrics(model, task))
        return metrics


_SEQ2SEQ = Seq2SeqBuilder()

# Validation images whose gaze is measured at once, to bound the memory of the weights.
_GAZE_BATCH = 256


def mean_gaze(model, task):
    """Mean `mass`, `chance` and `other` of `gaze_on_objects` over the validation captions.

    The teacher-forced weights are computed `_GAZE_BATCH` images at a time, to bound their
    memory (`keras_seq.diagnostics.gaze`).
    """
    # Keras loads on first use, not on import (specs and the app start without it).
    import keras

    from keras_seq.diagnostics.gaze import gaze_on_objects

    parts = {"mass": [], "chance": [], "other": []}
    annotations = task.annotations
    for start in range(0, len(task.x_val), _GAZE_BATCH):
        rows = slice(start, start + _GAZE_BATCH)
        weights = model.attention_weights(task.x_val[rows], task.y_val[rows])
        gaze = gaze_on_objects(
            keras.ops.convert_to_numpy(weights),
            annotations["boxes_val"][rows],
            annotations["word_objects_val"][rows],
            model.region_grid,
            task.inputs.shape[:2],
        )
        for name, values in parts.items():
            values.append(gaze[name])
    return {name: float(np.concatenate(values).mean()) for name, values in parts.items()}


def gaze_metrics(model, task):
    """`gaze_on_object` and `gaze_chance` over the validation captions (see the module)."""
    gaze = mean_gaze(model, task)
    return {"gaze_on_object": gaze["mass"], "gaze_chance": gaze["chance"]}
