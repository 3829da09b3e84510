"""Inspect on a trained Show-Attend-Tell run: the caption, the gaze per word, its exports.

One small captioning run trains through the engine (the store, the `.keras` file loaded
back, the task made again from its seeded spec), as the app's Inspect tab reads it.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

from builder_ui import engine
from builder_ui.builders import load_spec, load_task
from builder_ui.engine import artifacts
from builder_ui.engine.store import RunStore
from builder_ui.results import export, inspection
from keras_seq.models import beam_search, greedy_decode

pytestmark = pytest.mark.large


@pytest.fixture(scope="module")
def captioner_run(tmp_path_factory):
    spec = {
        "version": 2,
        "name": "inspect-captioner",
        "task": {"type": "shape_captions", "n": 120, "size": 16},
        "model": {"type": "show_attend_tell", "filters": 8, "units": 16, "embedding_dim": 8},
        "train": {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 2},
    }
    store = RunStore(tmp_path_factory.mktemp("runs"))
    record = engine.run(spec, store=store)
    assert record.status == "done", record.error
    assert {"bleu", "exact_match", "gaze_on_object", "gaze_chance"} <= set(record.metrics)
    model = export.load_trained_model(store, record.id)
    task = load_task(load_spec(record.spec))
    yield store, record, model, task
    store.close()


def _caption(prediction):
    (line,) = [line for line in prediction.summary.split("\n\n") if "**Caption:**" in line]
    return line.removeprefix("**Caption:**").strip()


def test_inspect_shows_the_greedy_caption_and_one_gaze_panel_per_word(captioner_run):
    _, record, model, task = captioner_run
    assert inspection.model_kind(record.spec) == "captioner"
    prediction = inspection.predict(model, task, record.spec, "", 3)
    result = greedy_decode(model, task.x_val[3:4], task.targets.length, return_attention=True)
    expected = task.target_vocabulary.decode(keras.ops.convert_to_numpy(result.ids)[0])
    assert _caption(prediction) == expected
    emitted = int(keras.ops.convert_to_numpy(result.lengths)[0])
    titles = [ax.get_title() for ax in prediction.figure.axes]
    assert len(titles) == emitted == len(prediction.rows)  # END has a panel too
    assert prediction.headers == ["word", "most attended region", "its weight"]
    weights = [row[2] for row in prediction.rows]
    assert all(0.0 < w <= 1.0 for w in weights)
    assert "**Reference:** " + task.target_vocabulary.decode(task.y_val[3]) in prediction.summary


def test_a_beam_caption_is_the_beam_searchs(captioner_run):
    _, record, model, task = captioner_run
    decoding = inspection.Decoding(method="beam", beam_width=3, length_penalty=0.0)
    prediction = inspection.predict(model, task, record.spec, "", 5, decoding)
    result = beam_search(model, task.x_val[5:6], task.targets.length, beam_width=3)
    ids = keras.ops.convert_to_numpy(result.ids)[0]
    assert _caption(prediction) == task.target_vocabulary.decode(ids)
    assert "beam search, width 3" in prediction.summary


def test_typed_text_and_a_bad_example_number_are_refused(captioner_run):
    _, record, model, task = captioner_run
    with pytest.raises(inspection.InspectError, match="reads images"):
        inspection.predict(model, task, record.spec, "a red square", 0)
    with pytest.raises(inspection.InspectError, match="Example number"):
        inspection.predict(model, task, record.spec, "", len(task.x_val))


@pytest.mark.parametrize("format", ["savedmodel", "onnx", "litert"])
def test_text_only_exports_are_refused_naming_the_formats_that_work(captioner_run, format):
    store, record, *_ = captioner_run
    folder = artifacts.artifact_path(store, record.id, "model.keras").parent
    before = sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))
    with pytest.raises(export.ExportError, match="export it as 'keras' or 'python'"):
        export.export(store, record.id, format)
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) == before
    assert sorted(store.get(record.id, history=False).artifacts) == [
        "model.keras",
        "vocabularies.json",
    ]


def test_the_keras_export_loads_safely_and_captions_the_same(captioner_run):
    store, record, model, task = captioner_run
    path = export.export(store, record.id, "keras")
    loaded = keras.saving.load_model(path, safe_mode=True)
    a = greedy_decode(model, task.x_val[:4], 13).ids
    b = greedy_decode(loaded, task.x_val[:4], 13).ids
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(a), keras.ops.convert_to_numpy(b))
