"""The `graph` model type: a graph of blocks is the model written by hand, bad graphs are named.

Every comparison of outputs copies the graph model's weights into a model
written by hand with Keras and compares predictions with `atol=1e-5`: the two
run the same float32 kernels in the same order, so they differ only by the
round-off of fused CPU kernels (oneDNN), far below 1e-5 for these sizes.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import yaml

from builder_ui import cli, engine
from builder_ui.builders import expand, load_spec, memory, prepare
from builder_ui.builders.graph_blocks import GROUPS
from builder_ui.builders.graph_model import block_catalog, graph_report, preset_as_graph
from builder_ui.engine import artifacts
from builder_ui.engine.store import RunStore
from builder_ui.results.model_source import model_source, normalized
from builder_ui.specs import SpecError
from keras_seq.layers import (
    CECLSTM,
    ClassToken,
    ClassTokenPooling,
    LearnedPositionalEmbedding,
    PatchEmbedding,
    TransformerEncoderBlock,
)

ATOL = 1e-5  # see the module docstring
TOKENS = {"type": "long_lag", "lag": 6, "n": 120, "encoding": "ids", "num_distractors": 4}
NUMERIC = {"type": "adding_problem", "length": 6, "n": 120}


def node(node_id, layer, inputs=None, **params):
    found = {"id": node_id, "layer": layer}
    if params:
        found["params"] = params
    if inputs is not None:
        found["inputs"] = inputs if isinstance(inputs, dict) else {"x": inputs}
    return found


def document(nodes, task=TOKENS, **extra):
    return {
        "version": 2,
        "name": "graph-test",
        "task": task,
        "model": {"type": "graph", "nodes": copy.deepcopy(nodes)},
        "train": {"epochs": 1, "batch_size": 16, "learning_rate": 0.01, "seed": 0},
        **extra,
    }


STACK = [
    node("tokens", "Input"),
    node("embedding", "Embedding", "tokens", output_dim=8),
    node("encoder", "LSTM", "embedding", units=12),
    node("head", "Output", "encoder"),
]


def built(nodes, task=TOKENS):
    prepared = prepare(document(nodes, task))
    keras.utils.set_random_seed(0)
    return prepared, prepared.builder.build(prepared.spec.model, prepared.task)


def strip(config):
    return {key: value for key, value in config.items() if key != "build_config"}


def assert_same_model(graph_model, hand_model, x):
    """Same layer classes and configs in order, and the same outputs with copied weights."""
    assert [type(layer).__name__ for layer in graph_model.layers] == [
        type(layer).__name__ for layer in hand_model.layers
    ]
    for ours, theirs in zip(graph_model.layers, hand_model.layers, strict=True):
        assert strip(ours.get_config()) == strip(theirs.get_config()), ours.name
    assert graph_model.count_params() == hand_model.count_params()
    hand_model.set_weights(graph_model.get_weights())
    np.testing.assert_allclose(
        graph_model.predict(x, verbose=0), hand_model.predict(x, verbose=0), atol=ATOL
    )


def head(task, name="head"):
    targets = task.targets
    if targets.kind == "classification":
        return keras.layers.Dense(
            targets.num_classes, activation="softmax", dtype="float32", name=name
        )
    return keras.layers.Dense(targets.output_dim, dtype="float32", name=name)


# Graph -> model equals the model written by hand --------------------------------------------


def test_a_stack_is_the_hand_written_model():
    prepared, model = built(STACK)
    task = prepared.task
    inputs = keras.Input(task.inputs.shape, dtype=task.inputs.dtype, name="tokens")
    x = keras.layers.Embedding(task.inputs.vocab_size, 8, name="embedding")(inputs)
    x = keras.layers.LSTM(12, name="encoder")(x)
    hand = keras.Model(inputs, head(task)(x))
    assert [layer.name for layer in model.layers] == ["tokens", "embedding", "encoder", "head"]
    assert_same_model(model, hand, prepared.x_val[:8])


def test_a_branch_joined_by_concatenate_is_the_hand_written_model():
    nodes = [
        node("steps", "Input"),
        node("gru", "GRU", "steps", units=6),
        node("lstm", "LSTM", "steps", units=5),
        node("joined", "Concatenate", {"x": ["gru", "lstm"]}),
        node("hidden", "Dense", "joined", units=7, activation="relu"),
        node("value", "Output", "hidden"),
    ]
    prepared, model = built(nodes, NUMERIC)
    task = prepared.task
    inputs = keras.Input(task.inputs.shape, dtype=task.inputs.dtype, name="steps")
    gru = keras.layers.GRU(6, name="gru")(inputs)
    lstm = keras.layers.LSTM(5, name="lstm")(inputs)
    x = keras.layers.Concatenate(name="joined")([gru, lstm])
    x = keras.layers.Dense(7, activation="relu", name="hidden")(x)
    hand = keras.Model(inputs, head(task, "value")(x))
    assert_same_model(model, hand, prepared.x_val[:8])


ATTENTION = [
    node("tokens", "Input"),
    node("embedding", "Embedding", "tokens", output_dim=8, mask_zero=True),
    node(
        "encoder",
        "CECLSTM",
        "embedding",
        units=6,
        forget_gate=True,
        return_sequences=True,
        bidirectional=True,
    ),
    node(
        "attention",
        "MultiHeadAttention",
        {"query": "encoder", "value": "encoder"},
        num_heads=2,
        key_dim=4,
    ),
    node("pool", "GlobalAveragePooling1D", "attention"),
    node("head", "Output", "pool"),
]


def test_attention_over_a_bidirectional_encoder_is_the_hand_written_model():
    prepared, model = built(ATTENTION)
    task = prepared.task
    inputs = keras.Input(task.inputs.shape, dtype=task.inputs.dtype, name="tokens")
    x = keras.layers.Embedding(task.inputs.vocab_size, 8, mask_zero=True, name="embedding")(inputs)
    cell = CECLSTM(6, forget_gate=True, return_sequences=True, name="encoder_layer")
    x = keras.layers.Bidirectional(cell, name="encoder")(x)
    x = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4, name="attention")(x, x)
    x = keras.layers.GlobalAveragePooling1D(name="pool")(x)
    hand = keras.Model(inputs, head(task)(x))
    assert_same_model(model, hand, prepared.x_val[:8])


VIT = [
    node("image", "Input"),
    node("patches", "PatchEmbedding", "image", patch_size=4, embedding_dim=8),
    node("cls", "ClassToken", "patches"),
    node("positions", "LearnedPositionalEmbedding", "cls"),
    node("block", "TransformerEncoderBlock", "positions", num_heads=2, ff_dim=16, norm_first=True),
    node("norm", "LayerNormalization", "block", epsilon=1e-5),
    node("pooled", "ClassTokenPooling", "norm"),
    node("digit", "Output", "pooled"),
]


def test_a_small_vit_over_images_is_the_hand_written_model():
    prepared, model = built(VIT, {"type": "digits"})
    task = prepared.task
    inputs = keras.Input(task.inputs.shape, dtype=task.inputs.dtype, name="image")
    x = PatchEmbedding(4, 8, name="patches")(inputs)
    x = ClassToken(name="cls")(x)
    x = LearnedPositionalEmbedding(x.shape[1], name="positions")(x)  # 4 patches + the token
    x = TransformerEncoderBlock(2, 16, norm_first=True, name="block")(x)
    x = keras.layers.LayerNormalization(epsilon=1e-5, name="norm")(x)
    x = ClassTokenPooling(name="pooled")(x)
    hand = keras.Model(inputs, head(task, "digit")(x))
    assert_same_model(model, hand, prepared.x_val[:8])


# Bad graphs: each error names the block and the port ----------------------------------------


def problems(nodes, task=TOKENS):
    """The `SpecError` problems of `prepare` (structure from load_spec, layers from check)."""
    with pytest.raises(SpecError) as caught:
        prepare(document(nodes, task))
    return dict(caught.value.problems)


def with_node(index, replacement, nodes=STACK):
    changed = copy.deepcopy(nodes)
    changed[index] = replacement
    return changed


def test_a_cycle_is_refused_at_the_inputs_of_each_node_on_it():
    nodes = [*STACK[:2], node("encoder", "LSTM", "later", units=4)]
    nodes += [node("later", "Dense", "encoder", units=4), node("head", "Output", "encoder")]
    found = problems(nodes)
    assert "encoder (LSTM) is on a cycle (through encoder, later)" in found["model.nodes[2].inputs"]
    assert "later (Dense) is on a cycle" in found["model.nodes[3].inputs"]


def test_a_port_left_unconnected_is_named():
    found = problems(with_node(2, node("encoder", "LSTM", units=4)))
    assert found["model.nodes[2].inputs.x"] == "encoder (LSTM) port x is not connected"


def test_two_inputs_into_a_one_input_port_are_refused():
    found = problems(with_node(2, node("encoder", "LSTM", ["embedding", "tokens"], units=4)))
    message = found["model.nodes[2].inputs.x"]
    assert message.startswith("encoder (LSTM) port x takes one input, got 2")


def test_an_unknown_port_and_an_unknown_node_are_named():
    found = problems(with_node(2, node("encoder", "LSTM", {"x": "embedding", "query": "nope"})))
    assert found["model.nodes[2].inputs.query"] == (
        "encoder (LSTM) has no port 'query'; its ports: x"
    )
    found = problems(with_node(2, node("encoder", "LSTM", "embeding", units=4)))
    assert found["model.nodes[2].inputs.x"] == "encoder (LSTM) port x: no node 'embeding'"


def test_a_node_that_leads_nowhere_and_a_second_input_are_refused():
    found = problems([*STACK, node("spare", "Dense", "encoder", units=3)])
    assert "spare (Dense) does not lead to the Output node" in found["model.nodes[4]"]
    found = problems([*STACK, node("more", "Input")])
    assert "expected exactly one Input node, got 2 (tokens, more)" in found["model.nodes[4].layer"]


def test_ids_blocks_and_variadic_ports_are_checked():
    found = problems(with_node(2, node("Encoder", "LSTM", "embedding", units=4)))
    assert "model.nodes[2].id" in found
    found = problems(with_node(2, node("encoder", "Transformer", "embedding")))
    assert "unknown block; expected one of Input, Output" in found["model.nodes[2].layer"]
    nodes = [*STACK[:3], node("sum", "Add", {"x": ["encoder"]}), node("head", "Output", "sum")]
    assert "expected a list of 2 or more node ids" in problems(nodes)["model.nodes[3].inputs.x"]


def test_a_shape_mismatch_names_the_ports_their_shapes_and_the_layers_words():
    nodes = [
        node("tokens", "Input"),
        node("narrow", "Embedding", "tokens", output_dim=4),
        node("wide", "Embedding", "tokens", output_dim=8),
        node("attention", "ScaledDotProductAttention", {"query": "narrow", "value": "wide"}),
        node("pool", "GlobalAveragePooling1D", "attention"),
        node("head", "Output", "pool"),
    ]
    message = problems(nodes)["model.nodes[3].inputs"]
    assert message.startswith(
        "attention (ScaledDotProductAttention) on query (None, 6, 4); value (None, 6, 8): "
    )
    report = graph_report(document(nodes))
    assert report.errors == {"attention": message}
    assert report.shapes["wide"] == "(None, 6, 8)"
    assert "pool" not in report.shapes and report.params is None


def test_heads_that_do_not_divide_the_width_are_the_layers_refusal():
    nodes = with_node(
        2, node("encoder", "TransformerEncoderBlock", "embedding", num_heads=3, ff_dim=8)
    )
    nodes[3] = node("pool", "GlobalAveragePooling1D", "encoder")
    nodes.append(node("head", "Output", "pool"))
    message = problems(nodes)["model.nodes[2].inputs.x"]
    assert message.startswith("encoder (TransformerEncoderBlock) on x (None, 6, 8): ")
    assert "num_heads" in message and "3" in message


def test_parameters_are_the_constructors_and_validated_as_it_validates_them():
    found = problems(with_node(2, node("encoder", "LSTM", "embedding", unitz=4)))
    assert found["model.nodes[2].params.unitz"].startswith(
        "encoder (LSTM): unknown parameter 'unitz'; its parameters: units, activation"
    )
    assert found["model.nodes[2].params.units"] == "encoder (LSTM): parameter 'units' is required"
    found = problems(with_node(2, node("encoder", "LSTM", "embedding", units=-3)))
    assert "units" in found["model.nodes[2].params"] and "-3" in found["model.nodes[2].params"]
    found = problems(with_node(2, node("encoder", "LSTM", "embedding", units=4, name="x")))
    assert "unknown parameter 'name'" in found["model.nodes[2].params.name"]


def test_an_initializer_may_be_given_as_keras_serializes_it_and_reaches_the_layer():
    normal = {"class_name": "RandomNormal", "config": {"stddev": 0.02}}
    embedding = node("embedding", "Embedding", "tokens", output_dim=8)
    embedding["params"]["embeddings_initializer"] = normal
    _, model = built(with_node(1, embedding))
    initializer = model.get_layer("embedding").embeddings_initializer
    assert isinstance(initializer, keras.initializers.RandomNormal)
    assert initializer.stddev == pytest.approx(0.02)  # the value given, passed through
    embedding["params"] = {"output_dim": normal}
    found = problems(with_node(1, embedding))
    assert found["model.nodes[1].params.output_dim"].startswith(
        "a {class_name, config} mapping is only for an initializer (a parameter named "
    )


def test_an_embedding_needs_its_vocabulary_on_numeric_inputs():
    nodes = with_node(0, node("steps", "Input"))
    nodes[1] = node("embedding", "Embedding", "steps", output_dim=8)
    message = problems(nodes, NUMERIC)["model.nodes[1].params"]
    assert "input_dim" in message and "not token ids" in message


# The report ---------------------------------------------------------------------------------


def test_the_report_gives_every_shape_and_edge_and_the_parameter_count():
    report = graph_report(document(ATTENTION))
    assert report.errors == {}
    assert report.shapes["encoder"] == "(None, 6, 12)"
    assert report.shapes["pool"] == "(None, 12)"
    assert {
        "source": "encoder",
        "target": "attention",
        "port": "value",
        "shape": "(None, 6, 12)",
    } in report.edges
    _, model = built(ATTENTION)
    assert report.params == model.count_params()
    assert json.loads(json.dumps(report.to_json())) == report.to_json()


def test_the_report_never_raises_and_files_other_problems_under_spec():
    bad = document(STACK)
    bad["train"]["epochs"] = 0
    bad["model"]["nodes"][2]["params"]["units"] = 0
    report = graph_report(bad)
    assert report.errors["spec"].startswith("train.epochs: expected an integer ≥ 1")
    assert "units" in report.errors["encoder"]
    assert report.shapes["embedding"] == "(None, 6, 8)"
    assert graph_report({"nodes": "not a spec"}).errors["spec"]


def test_the_catalog_lists_every_block_with_its_ports_and_constructor_params():
    catalog = block_catalog()
    groups = [entry["group"] for entry in catalog]
    assert groups == sorted(groups, key=GROUPS.index)
    by_name = {entry["name"]: entry for entry in catalog}
    assert by_name["MultiHeadAttention"]["ports"] == ["query", "value", "key"]
    assert by_name["MultiHeadAttention"]["optional_ports"] == ["key"]
    assert by_name["Concatenate"]["variadic"] == ["x"]
    assert by_name["TransformerDecoderBlock"]["ports"] == ["x", "context"]
    units = next(p for p in by_name["LSTM"]["params"] if p["name"] == "units")
    assert units == {
        "name": "units",
        "kind": "int",
        "default": None,
        "required": True,
        "choices": None,
        "help": "Required.",
    }
    score = next(p for p in by_name["LuongAttention"]["params"] if p["name"] == "score")
    assert score["kind"] == "choice" and score["choices"] == ["dot", "general", "concat"]
    names = {p["name"] for entry in catalog for p in entry["params"]}
    assert not names & {"name", "dtype", "kwargs", "return_state"}
    assert json.loads(json.dumps(catalog)) == catalog


MEMORY_CHECK = textwrap.dedent(
    """
    import json, resource
    import keras
    from builder_ui.builders.graph_model import graph_report
    keras.ops.ones((2, 2))  # the backend's own start-up memory, before the baseline
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    document = {
        "version": 2, "name": "huge", "task": {"type": "long_lag", "lag": 6, "n": 60},
        "model": {"type": "graph", "nodes": [
            {"id": "tokens", "layer": "Input"},
            {"id": "big", "layer": "Embedding", "params": {"input_dim": 1000000,
             "output_dim": 1000}, "inputs": {"x": "tokens"}},
            {"id": "pool", "layer": "GlobalAveragePooling1D", "inputs": {"x": "big"}},
            {"id": "head", "layer": "Output", "inputs": {"x": "pool"}}]}}
    document["task"]["encoding"] = "ids"
    report = graph_report(document)
    with keras.StatelessScope():  # a later scope must not allocate the report's weights
        pass
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"params": report.params, "errors": report.errors,
                      "grown_kib": after - before}))
    """
)


@pytest.mark.large
def test_the_report_of_a_billion_weight_embedding_allocates_none_of_them():
    result = subprocess.run(
        [sys.executable, "-c", MEMORY_CHECK], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["errors"] == {}
    assert found["params"] >= 10**9
    # The weights would take 4 GB in float32; 1 GB is a generous bound for everything else.
    assert found["grown_kib"] < 1024**2


# The engine, sweeps, export and the CLI on a graph spec -------------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    store = RunStore(tmp_path_factory.mktemp("runs"))
    record = engine.run(document(ATTENTION), store=store)
    yield store, record
    store.close()


@pytest.mark.large
def test_one_epoch_of_a_graph_spec_ends_done(trained):
    store, record = trained
    assert record.status == "done", record.error
    assert len(store.history(record.id)) == 1


@pytest.mark.large
def test_the_exported_code_of_a_trained_graph_rebuilds_its_params_and_configs(trained):
    store, record = trained
    model = keras.saving.load_model(artifacts.artifact_path(store, record.id, "model.keras"))
    namespace = {}
    exec(compile(model_source(model), "graph_model.py", "exec"), namespace)
    rebuilt = namespace["build_model"]()
    assert rebuilt.count_params() == model.count_params()
    assert [normalized(layer.get_config()) for layer in rebuilt.layers] == [
        normalized(layer.get_config()) for layer in model.layers
    ]


def test_a_sweep_addresses_a_node_by_its_id():
    spec = load_spec(
        document(STACK, sweep={"parameters": {"model.nodes.encoder.params.units": [8, 16]}})
    )
    trials = expand(spec)
    assert [trial.model.nodes[2].params["units"] for trial in trials] == [8, 16]
    assert [trial.model.nodes[1].params["output_dim"] for trial in trials] == [8, 8]
    with pytest.raises(SpecError) as caught:
        load_spec(document(STACK, sweep={"parameters": {"model.nodes.nope.params.units": [8]}}))
    assert caught.value.problems[0][0] == 'sweep.parameters["model.nodes.nope.params.units"]'
    assert "nodes has ids: tokens, embedding, encoder, head" in caught.value.problems[0][1]


def test_keras_seq_validate_accepts_a_graph_and_names_a_bad_block(tmp_path, capsys):
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump(document(STACK)), encoding="utf-8")
    assert cli.main(["validate", str(path)]) == 0
    first, count, budget = capsys.readouterr().out.splitlines()
    assert first == f"{path}: valid (model 'graph' on task 'long_lag')"
    _, model = built(STACK)  # Keras' own count of the weights
    assert count.startswith(f"  {model.count_params():,} parameters; training needs about ")
    assert budget.startswith("  within the memory budget of ")
    bad = document(with_node(2, node("encoder", "LSTM", "embedding", units=0)))
    path.write_text(yaml.safe_dump(bad), encoding="utf-8")
    assert cli.main(["validate", str(path)]) == 2
    assert "model.nodes[2].params: encoder (LSTM): " in capsys.readouterr().err


@pytest.mark.large
def test_keras_seq_train_trains_a_graph_spec(tmp_path, capsys):
    path = tmp_path / "graph.yaml"
    path.write_text(yaml.safe_dump(document(STACK)), encoding="utf-8")
    assert cli.main(["train", str(path), "--runs", str(tmp_path / "runs")]) == 0
    with RunStore(tmp_path / "runs") as store:
        (record,) = store.list_runs()
        assert record.status == "done" and record.spec["model"]["type"] == "graph"


# Presets --------------------------------------------------------------------------------------


def test_the_graph_preset_is_a_valid_attention_graph():
    from builder_ui.builders import presets

    path = presets.SPECS_DIR / "graph_attention_classifier.yaml"
    document_ = yaml.safe_load(path.read_text(encoding="utf-8"))
    report = graph_report(document_)
    assert report.errors == {}
    assert report.shapes["encoder"] == "(None, 10, 16)"  # both directions of 8 units
    # No positions: the canvas lays the blocks out by depth, top to bottom.
    assert all(node.position is None for node in load_spec(document_).model.nodes)


def test_only_plain_stacks_open_as_graphs():
    with pytest.raises(SpecError) as caught:
        preset_as_graph(document(STACK))
    assert caught.value.problems[0][0] == "model.type"


def test_a_graph_too_large_for_the_memory_budget_is_refused_at_its_node(monkeypatch):
    # 8,000 LSTM units: 256 million weights (under the one-layer limit of 2**31), ~4 GB
    # with Adam. The estimate counts them with the layers built symbolically, so the refusal
    # comes before any weight exists.
    monkeypatch.setenv("KERAS_SEQ_MEMORY_BUDGET", "1GB")
    nodes = copy.deepcopy(STACK)
    nodes[2]["params"]["units"] = 8_000
    with pytest.raises(SpecError) as caught:
        engine.preflight(document(nodes))  # what `engine.run` and the app's queue call first
    [(path, message)] = caught.value.problems
    assert path == "model.nodes[2].params", caught.value.problems
    assert "over the memory budget of 1.0 GB" in message


def test_a_graph_gets_a_memory_estimate_of_its_real_parameter_count():
    prepared, model = built(STACK)
    found = memory.estimate(prepared.spec, prepared.builder, prepared.task)
    assert found.parameters == model.count_params()


def test_a_layer_over_keras_seqs_size_limit_is_refused_in_a_hand_written_graph_too():
    """A Keras `Dense` has no limit of its own; 65,536 → 65,536 is 2**32 weights, 16 GiB."""
    nodes = [
        *STACK[:2],
        node("wide", "Embedding", "tokens", output_dim=65536),
        node("encoder", "Dense", "wide", units=65536),
        node("pooled", "GlobalAveragePooling1D", "encoder"),
        node("head", "Output", "pooled"),
    ]
    del nodes[1]
    found = problems(nodes)
    assert found == {
        "model.nodes[2].params": "encoder (Dense) would hold 4,295,032,832 weights, more than "
        "2,147,483,648"
    }
