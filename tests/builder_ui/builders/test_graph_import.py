"""A `.keras` file opens as graph nodes, layer for layer; what a graph cannot be is refused.

Each model is made here with Keras's functional API, saved, and read back through
`keras_file_as_nodes`; the graph spec made of the nodes is then counted by the graph's own
walk (`graph_report`), which must find the weights Keras counts in the original model.
"""

from __future__ import annotations

import copy

import keras
import pytest

from builder_ui.app import uploads
from builder_ui.builders import graph_import, load_spec
from builder_ui.builders.graph_import import keras_file_as_nodes, node_id
from builder_ui.builders.graph_model import graph_report
from builder_ui.specs import SpecError
from keras_seq.layers import CECLSTM, BahdanauAttention, MaskedMeanPooling

TOKENS = {"type": "long_lag", "lag": 6, "n": 120, "encoding": "ids", "num_distractors": 4}
NUMERIC = {"type": "adding_problem", "length": 6, "n": 120}
VOCAB, LENGTH, CLASSES = 6, 6, 2  # TOKENS's vocabulary, length and classes
FEATURES = 2  # NUMERIC's features per step (one value out)


def document(nodes, task):
    return {
        "version": 2,
        "name": "imported",
        "task": task,
        "model": {"type": "graph", "nodes": copy.deepcopy(nodes)},
        "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.01, "seed": 0},
    }


def saved(model, tmp_path, name="model.keras"):
    path = tmp_path / name
    model.save(path)
    return path


def counted(nodes, task):
    """The graph's parameter count, by the graph's own walk; fails on any problem."""
    report = graph_report(document(nodes, task))
    assert not report.errors, report.errors
    return report.params


def token_inputs(name="tokens"):
    return keras.Input((LENGTH,), dtype="int32", name=name)


def test_a_recurrent_classifier_opens_as_its_stack_with_the_dense_as_the_head(tmp_path):
    inputs = token_inputs()
    x = keras.layers.Embedding(VOCAB, 8, name="embedding")(inputs)
    x = keras.layers.LSTM(12, dropout=0.1, name="encoder")(x)
    outputs = keras.layers.Dense(CLASSES, activation="softmax", name="head")(x)
    model = keras.Model(inputs, outputs)

    nodes = keras_file_as_nodes(saved(model, tmp_path))

    assert nodes == [
        {"id": "tokens", "layer": "Input"},
        {
            "id": "embedding",
            "layer": "Embedding",
            "params": {"input_dim": VOCAB, "output_dim": 8},
            "inputs": {"x": "tokens"},
        },
        {
            "id": "encoder",
            "layer": "LSTM",
            "params": {"units": 12, "dropout": 0.1},
            "inputs": {"x": "embedding"},
        },
        {"id": "head", "layer": "Output", "inputs": {"x": "encoder"}},
    ]
    assert load_spec(document(nodes, TOKENS)).model.type == "graph"
    assert counted(nodes, TOKENS) == model.count_params()


def test_keras_seq_layers_a_bidirectional_encoder_and_attention_ports_come_across(tmp_path):
    inputs = token_inputs()
    x = keras.layers.Embedding(VOCAB, 8, mask_zero=True, name="Embed")(inputs)
    encoder = keras.layers.Bidirectional(
        CECLSTM(6, return_sequences=True, forget_gate=True), merge_mode="sum", name="encoder"
    )(x)
    attended = BahdanauAttention(units=5, name="attention")(encoder, encoder)
    pooled = MaskedMeanPooling(name="pool")(attended)
    outputs = keras.layers.Dense(CLASSES, activation="softmax", name="classes")(pooled)
    model = keras.Model(inputs, outputs)

    nodes = keras_file_as_nodes(saved(model, tmp_path))

    by_id = {node["id"]: node for node in nodes}
    assert [node["id"] for node in nodes] == [
        "tokens",
        "embed",
        "encoder",
        "attention",
        "pool",
        "classes",
    ]
    assert by_id["embed"]["params"] == {"input_dim": VOCAB, "output_dim": 8, "mask_zero": True}
    assert by_id["encoder"] == {
        "id": "encoder",
        "layer": "CECLSTM",
        "params": {
            "units": 6,
            "return_sequences": True,
            "forget_gate": True,
            "bidirectional": True,
            "merge_mode": "sum",
        },
        "inputs": {"x": "embed"},
    }
    assert by_id["attention"]["layer"] == "BahdanauAttention"
    assert by_id["attention"]["params"] == {"units": 5}
    assert by_id["attention"]["inputs"] == {"query": "encoder", "value": "encoder"}
    assert by_id["pool"] == {
        "id": "pool",
        "layer": "MaskedMeanPooling",
        "inputs": {"x": "attention"},
    }
    assert by_id["classes"] == {"id": "classes", "layer": "Output", "inputs": {"x": "pool"}}
    assert counted(nodes, TOKENS) == model.count_params()


def test_two_branches_an_add_and_keyword_attention_ports_wire_port_by_port(tmp_path):
    inputs = keras.Input((LENGTH, FEATURES), name="sequence")
    left = keras.layers.LSTM(8, return_sequences=True, name="left")(inputs)
    right = keras.layers.GRU(8, return_sequences=True, name="right")(inputs)
    total = keras.layers.Add(name="sum")([left, right])
    attended = keras.layers.MultiHeadAttention(2, 4, name="mha")(query=total, value=right, key=left)
    pooled = keras.layers.GlobalAveragePooling1D(name="pool")(attended)
    outputs = keras.layers.Dense(1, name="value")(pooled)
    model = keras.Model(inputs, outputs)

    nodes = keras_file_as_nodes(saved(model, tmp_path))

    inputs_of = {node["id"]: node.get("inputs") for node in nodes}
    assert inputs_of == {
        "sequence": None,
        "left": {"x": "sequence"},
        "right": {"x": "sequence"},
        "sum": {"x": ["left", "right"]},
        "mha": {"query": "sum", "value": "right", "key": "left"},
        "pool": {"x": "mha"},
        "value": {"x": "pool"},
    }
    layers = {node["id"]: node["layer"] for node in nodes}
    assert layers["sum"] == "Add" and layers["mha"] == "MultiHeadAttention"
    assert layers["value"] == "Output"
    mha = next(node for node in nodes if node["id"] == "mha")
    assert {"num_heads": 2, "key_dim": 4}.items() <= mha["params"].items()
    assert counted(nodes, NUMERIC) == model.count_params()


def test_a_sequential_model_opens_as_a_chain(tmp_path):
    model = keras.Sequential(
        [
            keras.Input((LENGTH, FEATURES)),
            keras.layers.GRU(5, name="gru"),
            keras.layers.Dense(1, name="out"),
        ]
    )
    nodes = keras_file_as_nodes(saved(model, tmp_path))
    assert nodes == [
        {"id": "inputs", "layer": "Input"},
        {"id": "gru", "layer": "GRU", "params": {"units": 5}, "inputs": {"x": "inputs"}},
        {"id": "out", "layer": "Output", "inputs": {"x": "gru"}},
    ]
    assert counted(nodes, NUMERIC) == model.count_params()


def test_a_non_default_initializer_is_written_as_keras_serializes_it(tmp_path):
    inputs = keras.Input((LENGTH, FEATURES), name="sequence")
    x = keras.layers.Dense(
        4, kernel_initializer=keras.initializers.RandomNormal(stddev=0.02), name="proj"
    )(inputs)
    x = keras.layers.Flatten(name="flat")(x)
    model = keras.Model(inputs, keras.layers.Dense(1, name="out")(x))
    nodes = keras_file_as_nodes(saved(model, tmp_path))
    initializer = nodes[1]["params"]["kernel_initializer"]
    assert initializer["class_name"] == "RandomNormal"
    assert initializer["config"]["stddev"] == 0.02  # read back from the JSON written: exact
    assert counted(nodes, NUMERIC) == model.count_params()


def test_layer_names_become_unique_node_ids():
    taken: set[str] = set()
    assert node_id("Dense_1", taken) == "dense_1"
    assert node_id("dense_1", taken) == "dense_1_2"
    assert node_id("1st layer", taken) == "layer_1st_layer"
    long = node_id("x" * 100, taken)
    assert len(long) == 64 and node_id("x" * 100, taken) == "x" * 62 + "_2"


# Refused, naming the layer ---------------------------------------------------------------------


def refused(path, **kwargs) -> str:
    with pytest.raises(SpecError) as caught:
        keras_file_as_nodes(path, **kwargs)
    return str(caught.value)


def test_a_lambda_layer_is_refused_by_name_before_keras_is_asked_to_load_it(tmp_path):
    inputs = keras.Input((LENGTH, FEATURES), name="sequence")
    x = keras.layers.Lambda(lambda t: t * 2.0, name="my_lambda")(inputs)
    x = keras.layers.Flatten()(x)
    model = keras.Model(inputs, keras.layers.Dense(1)(x))
    message = refused(saved(model, tmp_path))
    assert message == "model.keras: layer 'my_lambda' (Lambda) has no block on the canvas"


def test_an_unregistered_custom_layer_is_refused_by_name(tmp_path):
    class Doubler(keras.layers.Layer):
        def call(self, x):
            return x * 2.0

    inputs = keras.Input((LENGTH, FEATURES), name="sequence")
    x = keras.layers.Flatten()(Doubler(name="twice")(inputs))
    model = keras.Model(inputs, keras.layers.Dense(1)(x))
    assert "layer 'twice' (Doubler) has no block on the canvas" in refused(saved(model, tmp_path))


def test_a_keras_ops_operation_on_the_way_is_refused_by_name(tmp_path):
    inputs = keras.Input((LENGTH, FEATURES), name="sequence")
    x = keras.layers.Flatten(name="flat")(inputs)
    x = keras.ops.multiply(x, 2.0)
    model = keras.Model(inputs, keras.layers.Dense(1)(x))
    message = refused(saved(model, tmp_path))
    assert "is a keras.ops operation (Multiply), not a layer" in message


@keras.saving.register_keras_serializable(package="test_graph_import")
class Subclassed(keras.Model):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.dense = keras.layers.Dense(1)

    def call(self, x):
        return self.dense(x)


def test_a_subclassed_model_is_refused(tmp_path):
    model = Subclassed(name="mine")
    model(keras.ops.zeros((1, 3)))
    message = refused(saved(model, tmp_path))
    assert message == (
        "model.keras: the model 'mine' (Subclassed) is not a functional model: only a "
        "keras.Model built with the functional API (or a keras.Sequential) opens as a graph"
    )


def test_a_shared_layer_is_refused_by_name(tmp_path):
    inputs = keras.Input((FEATURES,), name="values")
    shared = keras.layers.Dense(FEATURES, name="twice")
    model = keras.Model(inputs, keras.layers.Dense(1)(shared(shared(inputs))))
    assert "layer 'twice' (Dense) is called more than once (shared weights)" in refused(
        saved(model, tmp_path)
    )


def test_a_recurrent_layer_returning_its_state_is_refused(tmp_path):
    inputs = keras.Input((LENGTH, FEATURES), name="sequence")
    _, state_h, _ = keras.layers.LSTM(4, return_state=True, name="encoder")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(1)(state_h))
    assert refused(saved(model, tmp_path)) == (
        "model.keras: layer 'encoder' (LSTM) gives several outputs and its output 1 is read: "
        "a block has one output"
    )


def test_a_model_that_does_not_end_in_a_dense_head_is_refused(tmp_path):
    inputs = keras.Input((LENGTH, FEATURES), name="sequence")
    model = keras.Model(inputs, keras.layers.LSTM(4, name="last")(inputs))
    assert "the model's last layer 'last' (LSTM) is not a head" in refused(saved(model, tmp_path))
    relu = keras.Model(inputs, keras.layers.Dense(2, activation="relu", name="dense")(inputs))
    message = refused(saved(relu, tmp_path, "relu.keras"))
    assert "the model's last layer 'dense' (Dense, activation relu) is not a head" in message


def test_two_inputs_are_refused(tmp_path):
    first, second = keras.Input((3,), name="first"), keras.Input((3,), name="second")
    merged = keras.layers.Concatenate()([first, second])
    model = keras.Model([first, second], keras.layers.Dense(1)(merged))
    assert "the model has 2 inputs ('first', 'second')" in refused(saved(model, tmp_path))


def test_more_layers_than_a_graph_may_have_are_refused(tmp_path, monkeypatch):
    inputs = keras.Input((LENGTH, FEATURES), name="sequence")
    x = keras.layers.Flatten()(keras.layers.Dropout(0.1)(inputs))
    path = saved(keras.Model(inputs, keras.layers.Dense(1)(x)), tmp_path)
    monkeypatch.setattr(graph_import, "MAX_NODES", 3)
    assert refused(path) == "model.keras: 4 layers are more than a graph may have (3 nodes)"


def test_a_file_that_is_not_a_keras_zip_is_refused(tmp_path):
    path = tmp_path / "model.keras"
    path.write_text("not a zip", encoding="utf-8")
    assert refused(path) == (
        "model.keras: not a .keras file (a zip archive of config.json and the weights)"
    )
    other = tmp_path / "model.h5"
    other.write_bytes(b"")
    assert refused(other) == "model.h5: expected a .keras file, got '.h5'"


def test_a_file_over_the_upload_limit_is_refused_before_it_is_read(tmp_path):
    assert graph_import.MAX_FILE_BYTES == uploads.MAX_UPLOAD_BYTES
    path = tmp_path / "big.keras"
    with path.open("wb") as handle:  # sparse: no bytes written
        handle.truncate(uploads.MAX_UPLOAD_BYTES + 1)
    assert refused(path) == (
        f"big.keras: {uploads.MAX_UPLOAD_BYTES + 1:,} bytes is more than a .keras file may "
        f"have ({uploads.MAX_UPLOAD_BYTES:,} bytes)"
    )
    assert "more than a .keras file may have (100 bytes)" in refused(
        saved(keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)]), tmp_path),
        max_bytes=100,
    )
