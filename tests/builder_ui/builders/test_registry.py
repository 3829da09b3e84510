"""The registry and `prepare`: every model type builds and trains, incompatible specs are refused.

Each built-in model type is trained for one epoch on a tiny task (module
fixture, so each model is trained once); the refusals are checked before any
model is built.
"""

from __future__ import annotations

import copy
import math

import keras
import numpy as np
import pytest
from pydantic import BaseModel

from builder_ui import builders
from builder_ui.builders import (
    BuilderError,
    ModelBuilder,
    Prepared,
    TaskBuilder,
    load_spec,
    model_types,
    prepare,
    register_model,
    task_types,
)
from builder_ui.specs import ModelParams, SpecError

TRAIN = {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "clipnorm": 1.0, "seed": 3}

# One tiny spec per model type (and encoder family); each trains in a few seconds.
TINY = {
    "rnn_classifier": {
        "task": {"type": "long_lag", "lag": 6, "n": 120, "encoding": "ids"},
        "model": {
            "type": "sequence_classifier",
            "encoder": {"type": "rnn", "cell": "cec_lstm", "units": 6, "forget_gate": True},
            "embedding_dim": 4,
        },
    },
    "transformer_classifier": {
        "task": {"type": "long_lag", "lag": 6, "n": 120, "encoding": "one_hot"},
        "model": {
            "type": "sequence_classifier",
            "encoder": {
                "type": "transformer",
                "embed_dim": 8,
                "num_heads": 2,
                "ff_dim": 16,
                "num_layers": 1,
                "pooling": "class_token",
                "positional": "learned",
                "norm_first": True,
            },
        },
    },
    "rnn_regressor": {
        "task": {"type": "adding_problem", "length": 6, "n": 120},
        "model": {
            "type": "sequence_regressor",
            "encoder": {"type": "rnn", "cell": "gru", "units": 6, "bidirectional": True},
        },
    },
    "vision_transformer": {
        "task": {"type": "shapes", "n": 120, "size": 8},
        "model": {
            "type": "vision_transformer",
            "patch_size": 4,
            "embed_dim": 8,
            "num_heads": 2,
            "ff_dim": 16,
            "num_layers": 1,
        },
    },
    "show_attend_tell": {
        "task": {"type": "shape_captions", "n": 60, "size": 16},
        "model": {"type": "show_attend_tell", "filters": 4, "units": 6, "embedding_dim": 4},
    },
    "conv_lstm": {
        "task": {"type": "moving_shapes", "n": 60, "size": 8, "frames": 4, "predict": 2},
        "model": {"type": "conv_lstm", "filters": 4, "num_layers": 1},
    },
    "pointer_network": {
        "task": {"type": "sort_numbers", "length": 4, "n": 120},
        "model": {"type": "pointer_network", "units": 6},
    },
    "graph": {
        "task": {"type": "long_lag", "lag": 6, "n": 120, "encoding": "ids"},
        "model": {
            "type": "graph",
            "nodes": [
                {"id": "tokens", "layer": "Input"},
                {
                    "id": "embedding",
                    "layer": "Embedding",
                    "params": {"output_dim": 4},
                    "inputs": {"x": "tokens"},
                },
                {
                    "id": "encoder",
                    "layer": "GRU",
                    "params": {"units": 6},
                    "inputs": {"x": "embedding"},
                },
                {"id": "head", "layer": "Output", "inputs": {"x": "encoder"}},
            ],
        },
    },
}


def make_spec(key, name=None, **train):
    data = copy.deepcopy(TINY[key])
    return {
        "version": 1,
        "name": name or key.replace("_", "-"),
        **data,
        "train": {**TRAIN, **train},
    }


@pytest.fixture(scope="module")
def trained():
    """Each tiny spec prepared, built and fitted one epoch: key → (prepared, model, history)."""
    results = {}
    for key in TINY:
        prepared = prepare(make_spec(key))
        model = prepared.build()
        history = model.fit(
            prepared.x_train,
            prepared.y_train,
            validation_data=(prepared.x_val, prepared.y_val),
            epochs=1,
            batch_size=prepared.spec.train.batch_size,
            verbose=0,
        )
        results[key] = (prepared, model, history.history)
    return results


def test_builtin_types_are_registered():
    assert {
        "sequence_classifier",
        "sequence_regressor",
        "vision_transformer",
        "pointer_network",
    } <= set(model_types())
    assert {
        "long_lag",
        "adding_problem",
        "sort_numbers",
        "digits",
        "shapes",
        "csv_sequences",
    } <= set(task_types())


def test_every_model_family_has_a_tiny_training_spec():
    families = {TINY[key]["model"]["type"] for key in TINY}
    builtin = {
        name
        for name in model_types()
        if type(builders.model_builder(name)).__module__.startswith("builder_ui.builders.")
    }
    # seq2seq trains in test_seq2seq.py (beside this file), on its own translation task.
    assert families == builtin - {"seq2seq"}


@pytest.mark.large
@pytest.mark.parametrize("key", list(TINY))
def test_each_model_type_trains_one_epoch_and_reports_its_monitor_metric(trained, key):
    prepared, model, history = trained[key]
    assert isinstance(prepared, Prepared)
    assert prepared.monitor_metric in history
    assert all(math.isfinite(value) for values in history.values() for value in values)
    metrics = prepared.evaluate(model)
    assert all(isinstance(value, float) and math.isfinite(value) for value in metrics.values())
    # evaluate() measures the validation split: its loss is the last epoch's val_loss.
    assert metrics["loss"] == pytest.approx(history["val_loss"][-1], rel=1e-4)


def test_build_compiles_with_the_train_section():
    prepared = prepare(make_spec("rnn_regressor", optimizer="rmsprop", learning_rate=0.02))
    model = prepared.build()
    assert isinstance(model.optimizer, keras.optimizers.RMSprop)
    assert float(keras.ops.convert_to_numpy(model.optimizer.learning_rate)) == pytest.approx(0.02)
    assert model.optimizer.clipnorm == 1.0
    assert model.loss == "mean_squared_error"
    assert prepared.monitor_metric == "val_loss"


def test_build_is_seeded_by_train_seed():
    first = prepare(make_spec("rnn_classifier")).build().get_weights()
    again = prepare(make_spec("rnn_classifier")).build().get_weights()
    other = prepare(make_spec("rnn_classifier", seed=4)).build().get_weights()
    assert all(np.array_equal(a, b) for a, b in zip(first, again, strict=True))
    assert not all(np.array_equal(a, b) for a, b in zip(first, other, strict=True))


def test_rnn_encoder_fields_reach_the_layers():
    spec = make_spec("rnn_classifier")
    spec["model"]["encoder"] = {
        "type": "rnn",
        "cell": "cec_lstm",
        "units": 5,
        "num_layers": 2,
        "bidirectional": True,
        "dropout": 0.1,
        "forget_gate": True,
        "peephole": True,
    }
    model = prepare(spec).build()
    first = model.get_layer("bidirectional_0")
    last = model.get_layer("bidirectional_1")
    cell = first.forward_layer.cell
    assert (cell.units, cell.forget_gate, cell.peephole, cell.dropout) == (5, True, True, 0.1)
    assert first.forward_layer.return_sequences and not last.forward_layer.return_sequences
    assert model.get_layer("token_embedding").output_dim == 4
    assert model.output_shape == (None, 2)


def test_every_cec_lstm_option_of_the_spec_reaches_the_layer():
    spec = make_spec("rnn_classifier")
    spec["model"]["encoder"] = {
        "type": "rnn",
        "cell": "cec_lstm",
        "units": 3,
        "forget_gate": True,
        "truncated_gradients": True,
        "input_gate_bias": -1.5,
        "forget_gate_bias": 2.5,
        "output_gate_bias": 0.5,
        "cell_activation": "sigmoid",
        "output_activation": "softsign",
        "gate_activation": "hard_sigmoid",
    }
    cell = prepare(spec).build().get_layer("cec_lstm_0").cell
    assert cell.truncated_gradients and cell.forget_gate
    assert cell.cell_activation is keras.activations.sigmoid
    assert cell.output_activation is keras.activations.softsign
    assert cell.gate_activation is keras.activations.hard_sigmoid
    bias = keras.ops.convert_to_numpy(cell.bias).reshape(4, 3)  # blocks i, f, c, o
    np.testing.assert_array_equal(bias[:, 0], [-1.5, 2.5, 0.0, 0.5])


def test_a_cec_lstm_spec_left_at_its_defaults_keeps_the_1997_biases():
    spec = make_spec("rnn_classifier")
    spec["model"]["encoder"] = {"type": "rnn", "cell": "cec_lstm", "units": 2}
    cell = prepare(spec).build().get_layer("cec_lstm_0").cell
    bias = keras.ops.convert_to_numpy(cell.bias).reshape(3, 2)  # blocks i, c, o
    np.testing.assert_array_equal(bias[:, 0], [-3.0, 0.0, -2.0])


@pytest.mark.parametrize(
    ("cell", "layer_class"),
    [("simple", "SimpleRNN"), ("gru", "GRU"), ("lstm", "LSTM"), ("cec_lstm", "CECLSTM")],
)
def test_each_cell_builds_its_layer(cell, layer_class):
    spec = make_spec("rnn_classifier")
    spec["model"]["encoder"] = {"type": "rnn", "cell": cell, "units": 3}
    model = prepare(spec).build()
    assert type(model.get_layer(f"{cell}_0")).__name__ == layer_class


@pytest.mark.large
def test_transformer_fields_reach_the_blocks(trained):
    _, model, _ = trained["transformer_classifier"]
    block = model.get_layer("encoder_block_0")
    assert (block.num_heads, block.ff_dim, block.norm_first) == (2, 16, True)
    assert model.get_layer("input_projection").units == 8
    assert model.get_layer("position_embedding").max_length == 6 + 1  # class token
    assert model.get_layer("class_token_pooling") is not None


@pytest.mark.large
def test_pointer_network_evaluation_decodes_greedily(trained):
    prepared, model, _ = trained["pointer_network"]
    metrics = prepared.evaluate(model)
    decoded = model.decode(prepared.task.x_val)
    expected = np.mean(np.all(decoded == prepared.task.y_val, axis=1))
    assert metrics["sequence_accuracy"] == pytest.approx(expected)
    assert 0.0 <= metrics["pointer_accuracy"] <= 1.0
    assert set(prepared.x_train) == {"sequence", "pointers"}


def spec_with(key, **model_fields):
    data = make_spec(key)
    data["model"].update(model_fields)
    return data


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {**make_spec("rnn_classifier"), "task": {"type": "digits"}},
            [
                "model.type: 'sequence_classifier' reads tokens or numeric inputs, but task "
                "'digits' gives image inputs"
            ],
        ),
        (
            {**make_spec("rnn_regressor"), "task": {"type": "sort_numbers", "n": 50}},
            [
                "model.type: 'sequence_regressor' predicts regression targets, but task "
                "'sort_numbers' has pointer targets; model types that fit: graph, pointer_network"
            ],
        ),
        (
            {**make_spec("pointer_network"), "task": {"type": "long_lag", "n": 50}},
            [
                "model.type: 'pointer_network' predicts pointer targets, but task 'long_lag' "
                "has classification targets; model types that fit: graph, sequence_classifier"
            ],
        ),
        (
            spec_with("vision_transformer", patch_size=3),
            [
                "model.patch_size: expected a divisor of the image height 8 and width 8 "
                "(task 'shapes'), got 3"
            ],
        ),
        (
            spec_with("rnn_regressor", embedding_dim=8, mask_zero=True),
            [
                "model.embedding_dim: only for token inputs; task 'adding_problem' has "
                "numeric inputs",
                "model.mask_zero: only for token inputs; task 'adding_problem' has numeric inputs",
            ],
        ),
        (
            {
                **make_spec("rnn_classifier"),
                "task": {"type": "long_lag", "n": 2, "lag": 3, "encoding": "ids"},
            },
            [
                "task.validation_split: Received an invalid value for argument "
                "`validation_split`, expected a fraction that leaves at least one sequence in "
                "each split, got 0.2 with n=2 (0 validation sequences)."
            ],
        ),
    ],
)
def test_incompatible_choices_are_refused_before_building(data, expected):
    with pytest.raises(SpecError) as excinfo:
        prepare(data)
    assert str(excinfo.value).splitlines() == expected


def test_weights_beyond_the_budget_are_refused_without_allocating():
    data = make_spec("rnn_regressor")
    data["model"]["encoder"] = {"type": "rnn", "cell": "lstm", "units": 65536}
    with pytest.raises(SpecError, match=r"^model\.encoder\.units: lstm_0 \(LSTM\) would hold"):
        prepare(data)


def test_unknown_early_stopping_metric_is_refused_with_the_known_ones():
    data = make_spec("rnn_classifier", early_stopping={"monitor": "val_bleu"})
    with pytest.raises(SpecError) as excinfo:
        prepare(data)
    assert str(excinfo.value) == (
        "train.early_stopping.monitor: expected one of 'loss', 'accuracy', 'val_loss', "
        "'val_accuracy', got 'val_bleu'"
    )


def test_prepare_accepts_text_and_paths(tmp_path):
    import yaml

    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(make_spec("rnn_classifier")))
    prepared = prepare(str(path))
    assert prepared.spec == load_spec(make_spec("rnn_classifier"))
    assert prepared.num_train == 96 and prepared.num_val == 24


# --- Registering builders in process --------------------------------------------------


class TinyParams(ModelParams):
    type: str = "tiny_dense"


def test_decorator_registers_a_builder_usable_from_a_spec():
    from typing import Literal

    class DenseParams(ModelParams):
        type: Literal["flat_dense"] = "flat_dense"
        hidden: int = 4

    @register_model("flat_dense")
    class FlatDense(ModelBuilder):
        params = DenseParams
        input_kinds = ("numeric",)
        target_kinds = ("classification",)

        def build(self, params, task):
            inputs = keras.Input(task.inputs.shape)
            hidden = keras.layers.Dense(params.hidden, activation="relu")(
                keras.layers.Flatten()(inputs)
            )
            outputs = keras.layers.Dense(task.targets.num_classes, activation="softmax")(hidden)
            return keras.Model(inputs, outputs)

    try:
        assert "flat_dense" in model_types()
        data = make_spec("transformer_classifier")
        data["model"] = {"type": "flat_dense", "hidden": 3}
        model = prepare(data).build()
        assert model.layers[-2].units == 3
        with pytest.raises(SpecError, match=r"^model\.hidden: expected an integer, got 'x'"):
            load_spec({**data, "model": {"type": "flat_dense", "hidden": "x"}})
    finally:
        builders.unregister("model", "flat_dense")
    assert "flat_dense" not in model_types()


def _builder(**attributes):
    return type("Broken", (ModelBuilder,), {"build": lambda self, p, t: None, **attributes})


@pytest.mark.parametrize(
    ("cls", "message"),
    [
        (object, "expected a subclass of builder_ui.builders.ModelBuilder"),
        (_builder(), "`Broken.params` must be a pydantic model"),
        (_builder(params=BaseModel), "`Broken.params` must subclass builder_ui.specs.ModelParams"),
        (_builder(params=TinyParams), 'must declare `type: Literal["tiny_dense"]'),
    ],
)
def test_incomplete_builders_are_refused_with_what_is_missing(cls, message):
    with pytest.raises(BuilderError, match=message.replace("[", r"\[").replace("(", r"\(")):
        register_model("tiny_dense")(cls)
    assert "tiny_dense" not in model_types()


def test_builder_kinds_and_build_are_checked():
    from typing import Literal

    class KindParams(ModelParams):
        type: Literal["kinds_check"] = "kinds_check"

    without_build = type(
        "NoBuild",
        (ModelBuilder,),
        {"params": KindParams, "input_kinds": ("numeric",), "target_kinds": ("regression",)},
    )
    with pytest.raises(BuilderError, match=r"`NoBuild` must define build\(\)"):
        register_model("kinds_check")(without_build)
    bad_kinds = _builder(params=KindParams, input_kinds=("audio",), target_kinds=("regression",))
    with pytest.raises(BuilderError, match=r"`Broken\.input_kinds` must be a non-empty tuple"):
        register_model("kinds_check")(bad_kinds)
    with pytest.raises(BuilderError, match="type name must match"):
        register_model("Bad Name")(bad_kinds)


def test_a_taken_type_name_is_refused_unless_replaced():
    from builder_ui.builders.sequence import SequenceClassifierParams

    clash = _builder(
        params=SequenceClassifierParams,
        input_kinds=("numeric",),
        target_kinds=("classification",),
    )
    with pytest.raises(BuilderError, match="'sequence_classifier' is already registered by"):
        register_model("sequence_classifier")(clash)
    assert type(builders.model_builder("sequence_classifier")).__name__ == "SequenceClassifier"


def test_task_builders_need_load():
    from builder_ui.builders.tasks import ShapesParams

    no_load = type("NoLoad", (TaskBuilder,), {"params": ShapesParams})
    with pytest.raises(BuilderError, match=r"`NoLoad` must define load\(\)"):
        builders.register_task("shapes")(no_load)


def test_describe_types_reports_kinds_for_the_app():
    described = builders.describe_types()
    assert described["vision_transformer"]["input_kinds"] == ["image"]
    assert described["pointer_network"]["target_kinds"] == ["pointer"]
    assert described["sequence_classifier"]["description"]
    tasks = builders.describe_tasks()
    assert set(tasks) == set(task_types())
    assert all(entry["description"] for entry in tasks.values())
