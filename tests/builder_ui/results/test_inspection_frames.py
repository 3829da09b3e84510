"""Inspect on a next-frame run: the predicted frames drawn under the true ones, with their MSE.

One tiny `conv_lstm` run is trained through the engine; its model is loaded back from the
run store and its task made again from its seeded spec, as the Inspect tab does. The MSE
shown is checked against one computed here from the model's own output.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from matplotlib.figure import Figure

from builder_ui import engine
from builder_ui.builders import load_spec, load_task
from builder_ui.engine.store import RunStore
from builder_ui.results import export, inspection

SPEC = {
    "version": 2,
    "name": "inspect-frames",
    "task": {"type": "moving_shapes", "n": 40, "size": 8, "frames": 5, "predict": 3, "seed": 2},
    "model": {"type": "conv_lstm", "filters": 4, "num_layers": 1},
    "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.01, "seed": 0},
}


@pytest.fixture(scope="module")
def frames_run(tmp_path_factory):
    store = RunStore(tmp_path_factory.mktemp("runs"))
    record = engine.run(SPEC, store=store)
    assert record.status == "done", record.error
    model = export.load_trained_model(store, record.id)
    task = load_task(load_spec(record.spec))
    yield record, model, task
    store.close()


def _value(summary: str, label: str) -> float:
    (match,) = re.findall(rf"\*\*{re.escape(label)}:\*\* ([0-9.]+)", summary)
    return float(match)


def test_a_conv_lstm_run_is_inspected_as_frames():
    assert inspection.model_kind(SPEC) == "frames"
    assert inspection.model_kind({**SPEC, "model": {"type": "conv_lstm", "layout": "flat"}}) == (
        "frames"
    )


def test_the_figure_shows_true_and_predicted_frames_after_the_last_input(frames_run):
    record, model, task = frames_run
    prediction = inspection.predict(model, task, record.spec, "", 3)
    assert isinstance(prediction.figure, Figure)
    axes = prediction.figure.axes
    assert len(axes) == 2 * (1 + task.targets.length)  # two rows: last input, then t + 1 …
    assert [axis.get_title() for axis in axes[:4]] == ["last input", "t + 1", "t + 2", "t + 3"]
    assert axes[0].get_ylabel() == "true" and axes[4].get_ylabel() == "predicted"
    shown = [np.asarray(axis.images[0].get_array()) for axis in axes]
    np.testing.assert_array_equal(shown[0], task.x_val[3, -1, ..., 0])
    np.testing.assert_array_equal(shown[4], task.x_val[3, -1, ..., 0])
    for t in range(3):
        np.testing.assert_array_equal(shown[1 + t], task.y_val[3, t, ..., 0])
    predicted = np.asarray(model.predict(task.x_val[3:4], verbose=0))[0]
    np.testing.assert_allclose(np.stack(shown[5:]), predicted[..., 0], rtol=1e-6)


def test_the_summary_gives_the_mse_of_the_prediction_and_of_the_repeated_last_frame(frames_run):
    record, model, task = frames_run
    prediction = inspection.predict(model, task, record.spec, "", 0)
    predicted = np.asarray(model.predict(task.x_val[:1], verbose=0))[0]
    true = task.y_val[0]
    mse = _value(prediction.summary, "MSE, predicted against true frames")
    assert mse == pytest.approx(float(np.mean((predicted - true) ** 2)), abs=1e-4)
    baseline = _value(prediction.summary, "MSE of the last input frame repeated (baseline)")
    assert baseline == pytest.approx(float(np.mean((task.x_val[0, -1] - true) ** 2)), abs=1e-4)
    assert prediction.headers == ["future frame", "MSE", "MSE, last frame repeated"]
    assert [row[0] for row in prediction.rows] == ["t + 1", "t + 2", "t + 3"]
    assert np.mean([row[1] for row in prediction.rows]) == pytest.approx(mse, abs=1e-4)


def test_typed_input_and_an_example_out_of_range_are_refused(frames_run):
    record, model, task = frames_run
    with pytest.raises(inspection.InspectError, match="reads videos"):
        inspection.predict(model, task, record.spec, "0 1 2", 0)
    with pytest.raises(inspection.InspectError, match="Example number"):
        inspection.predict(model, task, record.spec, "", len(task.x_val))
