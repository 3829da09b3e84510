"""How a captioner trains and is scored: `show_attend_tell` and graphs with a `CaptionDecoder`.

Training, decoding and scoring are those of every encoder–decoder
(`translating`): teacher forcing on `{"source": images, "target": captions}`,
`bleu` and `exact_match` from greedy decoding of the validation images. A
task that knows its objects' boxes also gets `gaze_on_object`: the mean
attention, over the validation captions' words about an object, that falls
on regions overlapping that object's box (`keras_seq.diagnostics.gaze`),
and `gaze_chance`, what a uniform gaze would put there.
"""

from __future__ import annotations

import keras
import numpy as np

from builder_ui.builders.translating import Translating
from keras_seq.diagnostics.gaze import gaze_on_objects


class Captioning(Translating):
    """A translator's training and scores, and the gaze metrics (see the module docstring)."""

    def evaluate(self, model, params, prepared):
        metrics = super().evaluate(model, params, prepared)
        task = prepared.task
        annotations = getattr(task, "annotations", None) or {}
        if "boxes_val" in annotations and "word_objects_val" in annotations:
            metrics.update(gaze_metrics(model, task))
        return metrics


# Validation images whose gaze is measured at once, to bound the memory of the weights.
_GAZE_BATCH = 256


def mean_gaze(model, task):
    """Mean `mass`, `chance` and `other` of `gaze_on_objects` over the validation captions.

    The teacher-forced weights are computed `_GAZE_BATCH` images at a time, to bound their
    memory (`keras_seq.diagnostics.gaze`).
    """
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
