"""The `conv_lstm` model type and the `moving_shapes` task type, from spec to trained run.

Parameter estimates are compared with Keras's `count_params()` of the built models; the
flat layout's matched size with the frame LSTMs of one unit more and one less, each built.
"""

from __future__ import annotations

import copy

import keras
import pytest
import yaml

from builder_ui import cli
from builder_ui.builders import load_spec, memory, prepare, spatiotemporal, tasks
from builder_ui.engine.store import RunStore
from builder_ui.results import export
from builder_ui.specs import SpecError

TINY = {
    "version": 2,
    "name": "tiny-conv-lstm",
    "task": {"type": "moving_shapes", "n": 60, "size": 8, "frames": 4, "predict": 2, "seed": 1},
    "model": {"type": "conv_lstm", "filters": 4, "num_layers": 1},
    "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.01, "seed": 0},
}


def _spec(**model):
    document = copy.deepcopy(TINY)
    document["model"].update(model)
    return document


def _problems(document) -> str:
    with pytest.raises(SpecError) as caught:
        prepare(document)
    return str(caught.value)


def test_the_task_types_limits_mirror_the_generators():
    from keras_seq.models import next_frame
    from keras_seq.tasks import frames

    assert tasks.MAX_FRAME_SIZE == frames.MAX_FRAME_SIZE
    assert tasks.MAX_FRAMES == frames.MAX_FRAMES
    assert tasks.MAX_SHAPES == frames.MAX_SHAPES
    assert tasks.MAX_SPEED == frames.MAX_SPEED
    assert spatiotemporal.MAX_KERNEL_SIZE == next_frame.MAX_KERNEL_SIZE


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"model": {"kernel_size": 4}}, "model.kernel_size"),
        ({"model": {"head_kernel_size": 0}}, "model.head_kernel_size"),
        ({"model": {"units": 8}}, "model"),  # units with layout conv
        ({"model": {"layout": "grid"}}, "model.layout"),
        ({"task": {"predict": 4}}, "task"),  # predict ≥ frames
        ({"task": {"size": 4}}, "task.size"),
        ({"task": {"num_shapes": 5}}, "task.num_shapes"),
    ],
)
def test_bad_fields_are_refused_naming_them(change, field):
    document = copy.deepcopy(TINY)
    for section, values in change.items():
        document[section].update(values)
    with pytest.raises(SpecError) as caught:
        load_spec(document)
    assert any(path == field or path.startswith(field) for path, _ in caught.value.problems)


def test_a_model_that_cannot_read_frames_is_refused_and_the_fitting_type_named():
    document = copy.deepcopy(TINY)
    document["model"] = {"type": "vision_transformer"}
    message = _problems(document)
    assert "gives frames inputs" in message and "model types that fit: conv_lstm" in message
    document = copy.deepcopy(TINY)
    document["task"] = {"type": "digits"}
    assert "reads frames inputs" in _problems(document)


@pytest.mark.parametrize(
    "model",
    [
        {},
        {"num_layers": 2, "kernel_size": 5, "head_kernel_size": 1},
        {"layout": "flat"},
        {"layout": "flat", "units": 7},
    ],
    ids=["conv", "conv_deeper", "flat_matched", "flat_units"],
)
def test_estimated_parameters_equal_the_built_models_count_params(model):
    prepared = prepare(_spec(**model))
    estimate = memory.estimate(prepared.spec, prepared.builder, prepared.task)
    built = prepared.builder.build(prepared.spec.model, prepared.task)
    assert estimate.parameters == built.count_params()
    assert estimate.activation_memory > 0


def test_the_flat_layout_has_the_conv_layouts_parameter_count_as_near_as_units_allow():
    from keras_seq.models import frame_lstm_predictor

    conv = prepare(_spec(filters=6))
    flat = prepare(_spec(filters=6, layout="flat"))
    budget = conv.builder.build(conv.spec.model, conv.task).count_params()
    model = flat.builder.build(flat.spec.model, flat.task)
    units = model.get_layer("lstm").units
    for other in (units - 1, units + 1):
        count = frame_lstm_predictor(flat.task.inputs, 2, units=other).count_params()
        assert abs(model.count_params() - budget) <= abs(count - budget)


def test_a_tiny_spec_trains_through_the_cli_and_its_model_reloads(tmp_path, capsys):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(TINY, sort_keys=False))
    runs = tmp_path / "runs"
    assert cli.main(["train", str(path), "--runs", str(runs)]) == 0
    assert "mean_squared_error" in capsys.readouterr().out
    with RunStore(runs) as store:
        (record,) = store.list_runs()
        assert record.status == "done"
        assert {"loss", "mean_squared_error"} <= set(record.metrics)
        model = export.load_trained_model(store, record.id)
    assert model.output_shape == (None, 2, 8, 8, 1)
    assert any(isinstance(layer, keras.layers.ConvLSTM2D) for layer in model.layers)


@pytest.mark.large
def test_a_sweep_over_the_layout_trains_both_models_at_equal_size(tmp_path):
    document = {**copy.deepcopy(TINY), "name": "layouts"}
    document["sweep"] = {"method": "grid", "parameters": {"model.layout": ["conv", "flat"]}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    runs = tmp_path / "runs"
    assert cli.main(["sweep", str(path), "--runs", str(runs)]) == 0
    with RunStore(runs) as store:
        records = store.list_runs()
        assert sorted(r.spec["model"]["layout"] for r in records) == ["conv", "flat"]
        assert all(r.status == "done" for r in records)
        counts = {
            r.spec["model"]["layout"]: export.load_trained_model(store, r.id).count_params()
            for r in records
        }
    assert abs(counts["flat"] - counts["conv"]) / counts["conv"] < 0.15
