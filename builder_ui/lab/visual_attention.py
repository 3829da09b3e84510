"""Experiment 6: visual attention looks where the word is (Show, Attend and Tell).

Xu et al. (2015) replace the source sentence of Bahdanau's attention with the
regions of a convolutional feature map: before each word the decoder scores
every region from its previous state and reads their weighted mean. They show
by drawing `α_t` over the photograph that the gaze falls on the object the
word names. Here that is measured on `shape_captions` (two coloured shapes
per image, a caption naming both and how they lie), where each word's object
and its box are known:

- `gaze on the object`: for the validation captions' size, colour and shape
  words, the share of the step's attention on regions overlapping that
  object's box (teacher-forced, so every word is the reference's);
- `uniform gaze`: the share of regions overlapping the box, what attention
  spread evenly would put there;
- `gaze on the other object`: the share on the other object's box.

Three captioners train through the engine, each a `show_attend_tell` run
over an 8×8 grid of regions from a two-block CNN: the paper's model
(`attention_penalty: 0`), the same with the paper's doubly stochastic
regularisation (λ = 1), and the same without the learned region positions,
which shows what a shallow CNN's regions lack: where they are.
"""

from __future__ import annotations

import time

import keras
import numpy as np
from matplotlib.figure import Figure

from builder_ui.builders.captioning import mean_gaze
from builder_ui.lab.catalog import DESCRIPTIONS
from builder_ui.lab.common import ExperimentResult, LabContext, fmt, table, verdict_of
from keras_seq.diagnostics import plot_gaze

NUMBER = 6
DESCRIPTION = DESCRIPTIONS["visual_attention"]
RULE = (
    "Agrees when, for the paper's model, the attention of the words about an object (its "
    "size, colour and shape) falls on that object's box at least twice as much as a uniform "
    "gaze would put there, and at least three times as much as on the other object."
)

# The runs: key, what differs from the paper's model, the model fields.
VARIANTS = (
    ("paper", "The paper's model (λ = 0)", {}),
    ("doubly-stochastic", "With λ Σ_i (1 − Σ_t α_ti)², λ = 1", {"attention_penalty": 1.0}),
    ("no-positions", "Regions without their grid position", {"region_positions": False}),
)
LABELS = {key: label for key, label, _ in VARIANTS}
IMAGE_SIZE = 32
# Images (both splits) and epochs, by the lab's mode.
SETTINGS = {"quick": {"images": 2000, "epochs": 15}, "full": {"images": 4000, "epochs": 25}}


def _spec(settings, fields):
    return {
        "task": {"type": "shape_captions", "n": settings["images"], "size": IMAGE_SIZE, "seed": 0},
        "model": {
            "type": "show_attend_tell",
            "filters": 32,
            "conv_layers": 2,
            "units": 64,
            "embedding_dim": 32,
            **fields,
        },
        "train": {
            "epochs": settings["epochs"],
            "batch_size": 64,
            "optimizer": "adam",
            "learning_rate": 0.001,
            "seed": 0,
        },
    }


def _gaze_figure(model, task, index):
    """The paper's picture: the image lit by each word's attention, for one validation image."""

    captions = task.y_val[index : index + 1]
    weights = keras.ops.convert_to_numpy(
        model.attention_weights(task.x_val[index : index + 1], captions)
    )
    length = int(np.count_nonzero(captions[0]))
    words = [task.target_vocabulary.id_to_token(int(i)) for i in captions[0, :length]]
    return plot_gaze(
        task.x_val[index],
        weights[0, :length],
        words,
        model.region_grid,
        boxes=task.annotations["boxes_val"][index],
        columns=7,
        title=f"Where the paper's model looks for each word of validation caption {index}",
    )


def run(context: LabContext) -> ExperimentResult:
    started = time.perf_counter()
    settings = dict(SETTINGS[context.mode])
    rows, measured, figures = [], {}, []
    for key, label, fields in VARIANTS:
        trained = context.train(key, _spec(settings, fields), keep_model=True)
        record = trained.record
        row = {"model": label, "status": record.status}
        if trained.model is not None:
            gaze = mean_gaze(trained.model, trained.prepared.task)
            measured[key] = gaze
            metrics = record.metrics
            row.update(
                {
                    "exact match": fmt(metrics.get("exact_match")),
                    "BLEU": fmt(metrics.get("bleu"), 1),
                    "gaze on the object": fmt(gaze["mass"]),
                    "uniform gaze": fmt(gaze["chance"]),
                    "gaze on the other object": fmt(gaze["other"]),
                }
            )
            context.add_metrics(
                record.id,
                {"gaze_on_object": gaze["mass"], "gaze_on_other": gaze["other"]},
            )
            if key == "paper":
                figure = _gaze_figure(trained.model, trained.prepared.task, 0)
                figures.append(context.save_figure(figure, "6-visual-attention-gaze"))
        rows.append(row)

    # Figure: the three shares per model.
    if measured:
        figure = Figure(figsize=(7.5, 4.0), layout="constrained")
        ax = figure.add_subplot()
        keys = list(measured)
        x = np.arange(len(keys))
        for offset, (name, label, colour) in zip(
            (-0.27, 0.0, 0.27),
            (
                ("mass", "on the named object", "tab:green"),
                ("chance", "uniform gaze", "tab:gray"),
                ("other", "on the other object", "tab:red"),
            ),
            strict=True,
        ):
            ax.bar(x + offset, [measured[k][name] for k in keys], 0.26, label=label, color=colour)
        ax.set_xticks(x, [LABELS[k] for k in keys], fontsize=8)
        ax.set_ylabel("share of a word's attention (mean)")
        ax.set_title("Attention of the words about an object, by where it falls")
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3, axis="y")
        figures.insert(0, context.save_figure(figure, "6-visual-attention"))

    checks, finding = [], "The paper's model did not finish, so nothing was measured."
    paper = measured.get("paper")
    if paper is not None:
        checks = [paper["mass"] >= 2.0 * paper["chance"], paper["mass"] >= 3.0 * paper["other"]]
        finding = (
            f"The paper's model puts {paper['mass']:.2f} of an object word's attention on that "
            f"object's box, against {paper['chance']:.2f} for a uniform gaze and "
            f"{paper['other']:.2f} on the other object."
        )
        for key in ("doubly-stochastic", "no-positions"):
            if key in measured:
                finding += (
                    f" {LABELS[key]}: {measured[key]['mass']:.2f} on the object, "
                    f"{measured[key]['other']:.2f} on the other."
                )
    notes = [
        f"{settings['images']:,} generated images of {IMAGE_SIZE}×{IMAGE_SIZE} pixels (80% for "
        f"training), {settings['epochs']} epochs; an 8×8 grid of 32-feature regions from two "
        "blocks of 3×3 convolution, ReLU and 2×2 pooling; an LSTM of 64 units.",
        "Attention is measured teacher-forced on the reference captions, so every word is "
        "the one the box belongs to; exact match and BLEU come from greedy decoding.",
        "The regions are learned from scratch here (the paper used VGG features trained on "
        "ImageNet, a download); a learned embedding of each region's position stands in for "
        "the location VGG's deep receptive fields carry.",
    ]
    return ExperimentResult(
        number=NUMBER,
        title=DESCRIPTION.title,
        claim=DESCRIPTION.claim,
        rule=RULE,
        verdict=verdict_of(checks),
        finding=finding,
        tables=[table("Captions and where their words look", rows)],
        figures=figures,
        settings=settings,
        seconds=time.perf_counter() - started,
        notes=notes,
    )
