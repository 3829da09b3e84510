"""Plugins: a real distribution with `keras_seq.builders` entry points, found by importlib.metadata.

The test writes two installed distributions into a directory put on
`sys.path` (a package plus its `.dist-info` with `METADATA` and
`entry_points.txt`, what pip leaves in site-packages): a working plugin with a
model type and a task type, and a broken one. The working types are used from
a spec through `prepare()` and trained; the broken entry points are reported
by name without breaking anything else.
"""

from __future__ import annotations

import math
import sys
import textwrap

import pytest

from builder_ui import builders
from builder_ui.builders import json_schema, load_spec
from builder_ui.specs import SpecError

PLUGIN_CODE = '''
"""A tiny keras_seq plugin: a mean-pooling classifier and a parity task."""

from typing import Literal

import numpy as np

from builder_ui.builders import ModelBuilder, TaskBuilder
from builder_ui.specs import ModelParams, TaskParams


class MeanPoolParams(ModelParams):
    type: Literal["mean_pool_classifier"] = "mean_pool_classifier"
    hidden: int = 8


class MeanPoolClassifier(ModelBuilder):
    params = MeanPoolParams
    input_kinds = ("numeric",)
    target_kinds = ("classification",)
    description = "Mean over time, one hidden layer, softmax."

    def build(self, params, task):
        import keras

        inputs = keras.Input(task.inputs.shape, name="sequence")
        pooled = keras.layers.GlobalAveragePooling1D(name="mean")(inputs)
        hidden = keras.layers.Dense(params.hidden, activation="relu", name="hidden")(pooled)
        outputs = keras.layers.Dense(task.targets.num_classes, activation="softmax")(hidden)
        return keras.Model(inputs, outputs, name="mean_pool")


class ParityParams(TaskParams):
    type: Literal["mean_sign"] = "mean_sign"
    length: int = 5
    n: int = 200


class MeanSign(TaskBuilder):
    params = ParityParams

    def kinds(self, params):
        return "numeric", "classification"

    def load(self, params):
        from keras_seq.tasks import SequenceSpec, TargetSpec, TaskData

        rng = np.random.default_rng(0)
        x = rng.normal(size=(params.n, params.length, 1)).astype("float32")
        y = (x.mean(axis=(1, 2)) > 0).astype("int32")
        split = params.n * 4 // 5
        return TaskData(
            x_train=x[:split], y_train=y[:split], x_val=x[split:], y_val=y[split:],
            name="mean_sign", description="Is the mean positive?", params=params.model_dump(),
            inputs=SequenceSpec("numeric", length=params.length, features=1),
            targets=TargetSpec("classification", num_classes=2),
        )


NOT_A_BUILDER = 42
'''


def write_distribution(site, name, entry_points, code=None):
    """Install a distribution the way pip does: the package and its .dist-info."""
    if code is not None:
        package = site / name
        package.mkdir()
        (package / "__init__.py").write_text(code)
    info = site / f"{name}-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    lines = "\n".join(f"{key} = {value}" for key, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{builders.ENTRY_POINT_GROUP}]\n{lines}\n")


@pytest.fixture(scope="module")
def plugins(tmp_path_factory):
    site = tmp_path_factory.mktemp("site-packages")
    write_distribution(
        site,
        "kseq_demo_plugin",
        {
            "mean_pool_classifier": "kseq_demo_plugin:MeanPoolClassifier",
            "mean_sign": "kseq_demo_plugin:MeanSign",
        },
        textwrap.dedent(PLUGIN_CODE),
    )
    write_distribution(
        site,
        "kseq_broken_plugin",
        {
            "missing_module": "kseq_no_such_module:Builder",
            "not_a_builder": "kseq_demo_plugin:NOT_A_BUILDER",
            "sequence_classifier": "kseq_demo_plugin:MeanPoolClassifier",
        },
    )
    sys.path.insert(0, str(site))
    builders.reload_plugins()
    yield site
    sys.path.remove(str(site))
    for kind, name in (("model", "mean_pool_classifier"), ("task", "mean_sign")):
        builders.unregister(kind, name)
    sys.modules.pop("kseq_demo_plugin", None)
    builders.reload_plugins()


SPEC = {
    "version": 1,
    "name": "plugin",
    "task": {"type": "mean_sign", "length": 6, "n": 200},
    "model": {"type": "mean_pool_classifier", "hidden": 4},
    "train": {"epochs": 1, "batch_size": 32, "learning_rate": 0.01},
}


def test_plugin_types_are_listed_beside_the_builtins(plugins):
    assert "mean_pool_classifier" in builders.model_types()
    assert "mean_sign" in builders.task_types()
    assert "sequence_classifier" in builders.model_types()
    described = builders.describe_types()["mean_pool_classifier"]
    assert described["module"] == "kseq_demo_plugin"
    assert described["input_kinds"] == ["numeric"]


def test_plugin_types_train_from_a_spec_through_prepare(plugins):
    prepared = builders.prepare(SPEC)
    model = prepared.build()
    assert model.get_layer("hidden").units == 4
    history = model.fit(
        prepared.x_train,
        prepared.y_train,
        validation_data=(prepared.x_val, prepared.y_val),
        epochs=1,
        verbose=0,
    )
    assert prepared.monitor_metric == "val_accuracy"
    assert math.isfinite(history.history["val_loss"][0])
    assert set(prepared.evaluate(model)) == {"loss", "accuracy"}


def test_plugin_fields_are_validated_like_builtin_ones(plugins):
    with pytest.raises(SpecError) as excinfo:
        load_spec({**SPEC, "model": {"type": "mean_pool_classifier", "hidden": "wide"}})
    assert str(excinfo.value) == "model.hidden: expected an integer, got 'wide'"


def test_plugin_compatibility_is_checked_like_builtin_ones(plugins):
    with pytest.raises(SpecError, match="'mean_pool_classifier' reads numeric inputs, but task"):
        builders.prepare({**SPEC, "task": {"type": "digits"}})


def test_plugin_types_are_in_the_json_schema(plugins):
    schema = json_schema()
    assert "mean_pool_classifier" in schema["properties"]["model"]["discriminator"]["mapping"]
    assert "mean_sign" in schema["properties"]["task"]["discriminator"]["mapping"]


def test_broken_entry_points_are_reported_by_name_without_breaking_others(plugins):
    errors = builders.plugin_errors()
    assert errors["missing_module"].startswith(
        "entry point 'missing_module' = 'kseq_no_such_module:Builder' (from kseq_broken_plugin "
        "0.1.0) failed to import: ModuleNotFoundError"
    )
    assert "entry point 'not_a_builder'" in errors["not_a_builder"]
    assert (
        "expected a subclass of builder_ui.builders.ModelBuilder, got 42"
        in (errors["not_a_builder"])
    )
    assert (
        "type 'sequence_classifier' is built in and cannot be replaced by a plugin"
        in (errors["sequence_classifier"])
    )
    assert type(builders.model_builder("sequence_classifier")).__module__ == (
        "builder_ui.builders.sequence"
    )


def test_a_spec_naming_a_broken_plugin_gets_its_error(plugins):
    with pytest.raises(SpecError) as excinfo:
        load_spec({**SPEC, "model": {"type": "missing_module"}})
    (line,) = str(excinfo.value).splitlines()
    assert line.startswith("model.type: entry point 'missing_module' = 'kseq_no_such_module")
