"""`conv_lstm_predictor`, `frame_lstm_predictor` and `matched_units`: shapes, counts, reloading.

Parameter counts are checked against Keras's own `count_params()` of the built
models; `matched_units` against every unit count near it, each model built.
"""

import json
import zipfile

import keras
import numpy as np
import pytest

from keras_seq.models import (
    compile_for,
    conv_lstm_parameters,
    conv_lstm_predictor,
    frame_lstm_parameters,
    frame_lstm_predictor,
    matched_units,
)
from keras_seq.tasks import FramesSpec, TargetSpec

SHAPE = (4, 12, 12, 1)


def _numpy(x):
    return keras.ops.convert_to_numpy(x)


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"filters": 6, "num_layers": 1, "kernel_size": 5, "head_kernel_size": 1},
        {"filters": 4, "num_layers": 3, "kernel_size": 1},
    ],
)
def test_the_conv_lstm_maps_input_frames_to_future_frames_with_its_counted_weights(arguments):
    model = conv_lstm_predictor(SHAPE, 3, **arguments)
    x = np.random.default_rng(0).random((2, *SHAPE)).astype("float32")
    y = _numpy(model(x))
    assert y.shape == (2, 3, 12, 12, 1)
    assert (y > 0).all() and (y < 1).all()  # sigmoid pixels
    assert model.count_params() == conv_lstm_parameters(SHAPE, 3, **arguments)
    layers = [layer for layer in model.layers if isinstance(layer, keras.layers.ConvLSTM2D)]
    assert len(layers) == arguments.get("num_layers", 2)
    assert all(layer.padding == "same" and layer.return_sequences for layer in layers)


def test_each_future_frame_is_its_own_map_of_the_head():
    # Zero the head's weights but for output map t: only future frame t departs from 0.5.
    model = conv_lstm_predictor(SHAPE, 3, filters=4)
    head = model.get_layer("frame_head")
    kernel, bias = (np.zeros_like(_numpy(w)) for w in head.weights)
    bias[1] = 2.0  # map 1 is frame 1 (one channel)
    head.set_weights([kernel, bias])
    y = _numpy(model(np.zeros((1, *SHAPE), "float32")))
    np.testing.assert_allclose(y[0, [0, 2]], 0.5, atol=1e-6)
    np.testing.assert_allclose(y[0, 1], 1 / (1 + np.exp(-2.0)), atol=1e-6)


def test_the_frame_lstm_reads_flat_frames_and_its_count_matches_the_formula():
    model = frame_lstm_predictor(FramesSpec(*SHAPE), 3, units=7)
    x = np.random.default_rng(1).random((2, *SHAPE)).astype("float32")
    assert _numpy(model(x)).shape == (2, 3, 12, 12, 1)
    assert model.count_params() == frame_lstm_parameters(SHAPE, 3, 7)
    assert model.get_layer("lstm").units == 7


@pytest.mark.parametrize(
    ("shape", "frames", "arguments"),
    [
        ((5, 16, 16, 1), 5, {}),
        (SHAPE, 3, {"filters": 8, "kernel_size": 5}),
        ((3, 8, 8, 2), 2, {"filters": 2, "num_layers": 1}),
    ],
)
def test_matched_units_gives_the_frame_lstm_nearest_the_conv_lstms_count(shape, frames, arguments):
    budget = conv_lstm_predictor(shape, frames, **arguments).count_params()
    units = matched_units(budget, shape, frames)
    counts = {
        u: frame_lstm_predictor(shape, frames, units=u).count_params()
        for u in range(max(1, units - 2), units + 3)
    }
    nearest = min(counts, key=lambda u: (abs(counts[u] - budget), u))
    assert units == nearest
    assert abs(counts[units] - budget) <= abs(counts[units + 1] - counts[units])


def test_a_tiny_budget_still_gets_one_unit():
    assert matched_units(1, SHAPE, 3) == 1


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda: conv_lstm_predictor(SHAPE, 0), "output_frames"),
        (lambda: conv_lstm_predictor(SHAPE, 2, filters=0), "filters"),
        (lambda: conv_lstm_predictor(SHAPE, 2, num_layers=0), "num_layers"),
        (lambda: conv_lstm_predictor(SHAPE, 2, kernel_size=4), "kernel_size"),
        (lambda: conv_lstm_predictor(SHAPE, 2, head_kernel_size=17), "head_kernel_size"),
        (lambda: conv_lstm_predictor((12, 12, 1), 2), "input_shape"),
        (lambda: frame_lstm_predictor(SHAPE, 2, units=0), "units"),
        (lambda: matched_units(0, SHAPE, 2), "parameters"),
    ],
)
def test_bad_arguments_are_refused_naming_the_argument(make, name):
    with pytest.raises(ValueError, match=f"argument `{name}`"):
        make()


@pytest.mark.parametrize(
    "make",
    [
        lambda: conv_lstm_predictor(SHAPE, 3, filters=4),
        lambda: conv_lstm_predictor(SHAPE, 3, filters=4, num_layers=1),
        lambda: frame_lstm_predictor(SHAPE, 3, units=5),
    ],
    ids=["conv_lstm", "conv_lstm_one_layer", "frame_lstm"],
)
def test_models_reload_from_keras_files_in_safe_mode_without_lambda_layers(make, tmp_path):
    model = make()
    x = np.random.default_rng(2).random((3, *SHAPE)).astype("float32")
    path = tmp_path / "model.keras"
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        config = archive.read("config.json").decode("utf-8")
    assert "Lambda" not in config
    json.loads(config)
    reloaded = keras.saving.load_model(path, safe_mode=True)
    np.testing.assert_allclose(_numpy(reloaded(x)), _numpy(model(x)), rtol=1e-5, atol=1e-6)
    assert [layer.name for layer in reloaded.layers] == [layer.name for layer in model.layers]


def test_compile_for_frames_uses_per_pixel_cross_entropy_and_reports_mse():
    model = conv_lstm_predictor(SHAPE, 3, filters=4)
    targets = TargetSpec("frames", length=3, height=12, width=12, channels=1)
    compile_for(model, targets)
    x = np.random.default_rng(3).random((4, *SHAPE)).astype("float32")
    y = (np.random.default_rng(4).random((4, 3, 12, 12, 1)) > 0.8).astype("float32")
    results = model.evaluate(x, y, verbose=0, return_dict=True)
    p = np.clip(_numpy(model(x)), 1e-7, 1 - 1e-7)
    expected = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
    np.testing.assert_allclose(results["loss"], expected, rtol=1e-4)
    np.testing.assert_allclose(results["mean_squared_error"], np.mean((p - y) ** 2), rtol=1e-4)
    with pytest.raises(ValueError, match="argument `label_smoothing`"):
        compile_for(model, targets, label_smoothing=0.1)


def test_docstring_examples_run():
    import doctest

    from keras_seq.models import next_frame

    globs = {"np": np, "keras": keras, **vars(next_frame)}
    for name in ("conv_lstm_predictor", "frame_lstm_predictor", "matched_units"):
        function = getattr(next_frame, name)
        for test in doctest.DocTestFinder().find(function, name, globs=globs):
            runner = doctest.DocTestRunner()
            runner.run(test)
            assert runner.failures == 0, name
