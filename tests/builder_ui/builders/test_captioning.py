"""The `show_attend_tell` model type and the `shape_captions` task type: fields, fit, scores."""

from __future__ import annotations

import math

import pytest

from builder_ui.builders import prepare
from builder_ui.builders.show_attend_tell import MAX_CONV_LAYERS
from builder_ui.specs import SpecError


def spec(task=None, **model):
    return {
        "version": 2,
        "name": "captions",
        "task": task or {"type": "shape_captions", "n": 80, "size": 16},
        "model": {
            "type": "show_attend_tell",
            "filters": 4,
            "units": 6,
            "embedding_dim": 4,
            **model,
        },
        "train": {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 1},
    }


def test_the_fields_reach_the_model():
    from keras_seq.models import ShowAttendTell

    prepared = prepare(spec(cell="gru", attention_penalty=0.5, encoder="patches", patch_size=4))
    model = prepared.build()
    assert isinstance(model, ShowAttendTell)
    assert (model.cell, model.attention_penalty) == ("gru", 0.5)
    assert "patches" in [layer.name for layer in model.image_encoder.layers]
    assert model.region_grid == (4, 4) and model.image_shape == (16, 16, 3)
    assert set(prepared.x_train) == {"source", "target"}
    assert prepared.x_train["source"].shape == (64, 16, 16, 3)


@pytest.mark.large
def test_one_epoch_is_scored_by_decoding_and_by_the_gaze():
    prepared = prepare(spec())
    model = prepared.build()
    model.fit(prepared.x_train, prepared.y_train, epochs=1, verbose=0)
    metrics = prepared.evaluate(model)
    assert {"bleu", "exact_match", "gaze_on_object", "gaze_chance"} <= set(metrics)
    assert all(math.isfinite(value) for value in metrics.values())
    assert 0.0 < metrics["gaze_chance"] < 1.0 and 0.0 <= metrics["gaze_on_object"] <= 1.0


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            spec({"type": "shape_captions", "n": 80, "size": 18}, conv_layers=2),
            "model.conv_layers: expected 2^conv_layers = 4 to divide the image height 18",
        ),
        (spec(encoder="patches", patch_size=3), "model.patch_size: expected patch_size 3"),
        (spec(conv_layers=MAX_CONV_LAYERS + 1), "model.conv_layers"),
        (spec(attention_penalty=-1), "model.attention_penalty"),
        (spec({"type": "shape_captions", "n": 80, "size": 8}), "task.size"),
        (spec({"type": "digits"}), "show_attend_tell"),
    ],
)
def test_fields_that_do_not_fit_are_refused_naming_the_field(document, message):
    with pytest.raises(SpecError, match=message.replace("^", r"\^")):
        prepare(document)


def test_a_seq2seq_cannot_read_the_captioning_images():
    document = spec()
    document["model"] = {"type": "seq2seq"}
    with pytest.raises(SpecError, match="'seq2seq' reads tokens inputs, but task 'shape_captions'"):
        prepare(document)


def test_the_mirrored_bound_is_the_models():
    from keras_seq.models.captioner import MAX_CONV_LAYERS as LIBRARY_MAX

    assert MAX_CONV_LAYERS == LIBRARY_MAX
