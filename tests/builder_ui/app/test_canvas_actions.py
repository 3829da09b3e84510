"""The canvas's actions without a browser: spec text <-> graph JSON, and the report it shows.

The graph report comes from the real `builder_ui.builders.graph` (Keras layers built
symbolically); nothing here is a stand-in.
"""

from __future__ import annotations

import json
import re

import pytest
import yaml

from builder_ui.app import actions
from builder_ui.app.actions import canvas
from builder_ui.app.canvas import EDIT_EVENT, html_kwargs
from builder_ui.builders import presets
from builder_ui.builders.graph_model import graph_report
from builder_ui.specs import parse_yaml

TASK = {"type": "long_lag", "lag": 6, "n": 200, "encoding": "ids"}
TRAIN = {"epochs": 1, "batch_size": 16, "optimizer": "adam", "learning_rate": 0.01, "seed": 3}
# Every key of the contract used: params, a list on a variadic port, two-port attention.
NODES = [
    {"id": "tokens", "layer": "Input", "position": [40, 80]},
    {
        "id": "embedding",
        "layer": "Embedding",
        "params": {"output_dim": 8, "mask_zero": True},
        "inputs": {"x": "tokens"},
        "position": [250, 80],
    },
    {
        "id": "encoder",
        "layer": "LSTM",
        "params": {"units": 12, "return_sequences": True},
        "inputs": {"x": "embedding"},
        "position": [460, 80],
    },
    {
        "id": "attention",
        "layer": "MultiHeadAttention",
        "params": {"num_heads": 2, "key_dim": 4},
        "inputs": {"query": "encoder", "value": "encoder"},
        "position": [670, 80],
    },
    {
        "id": "pool",
        "layer": "GlobalAveragePooling1D",
        "inputs": {"x": "attention"},
        "position": [880, 80],
    },
    {
        "id": "merged",
        "layer": "Concatenate",
        "inputs": {"x": ["pool", "pool"]},
        "position": [0, 300],
    },
    {"id": "head", "layer": "Output", "inputs": {"x": "merged"}, "position": [210, 300]},
]


def spec_text(model: dict | None = None) -> str:
    """A tiny spec whose task and train sections the canvas must leave alone."""
    model = model or {"type": "sequence_classifier", "encoder": {"type": "rnn", "units": 4}}
    return actions.dump(
        {"version": 2, "name": "canvas-test", "task": TASK, "model": model, "train": TRAIN}
    )


def test_graph_json_to_yaml_and_back_keeps_nodes_params_inputs_and_positions():
    text, checked = canvas.apply_graph(spec_text(), json.dumps({"nodes": NODES, "revision": 4}))
    assert checked.ok, checked.problems
    document = parse_yaml(text)
    assert document["model"] == {"type": "graph", "nodes": NODES}
    value = canvas.canvas_value(text, revision=4, nodes=NODES)
    assert value["nodes"] == NODES
    assert value["origin"] == "canvas" and value["revision"] == 4
    # And back again: the same text.
    again, _ = canvas.apply_graph(text, value)
    assert again == text


def test_the_report_gives_every_edge_a_shape_and_the_catalog_its_blocks():
    text, _ = canvas.apply_graph(spec_text(), {"nodes": NODES})
    value = canvas.canvas_value(text)
    report = value["report"]
    assert report["errors"] == {}, report["errors"]
    assert report["params"] and report["params"] > 0
    shapes = {(e["source"], e["target"], e["port"]): e["shape"] for e in report["edges"]}
    assert shapes[("encoder", "attention", "query")] == "(None, 6, 12)"
    assert shapes[("pool", "merged", "x")] == "(None, 12)"
    names = [block["name"] for block in canvas.catalog()]
    assert {"Input", "Output", "LSTM", "MultiHeadAttention", "Add", "Concatenate"} <= set(names)


def test_a_canvas_edit_leaves_the_task_and_train_sections_and_the_name_untouched():
    before = parse_yaml(spec_text())
    text, _ = canvas.apply_graph(spec_text(), {"nodes": NODES[:3]})
    after = parse_yaml(text)
    for key in ("version", "name", "task", "train"):
        assert after[key] == before[key], key
    assert list(after) == list(before)  # the sections stay in their order


@pytest.mark.parametrize(
    ("nodes", "bad"),
    [
        # A width mismatch: Add of 12 and 5 features.
        (
            [
                *NODES[:3],
                {
                    "id": "small",
                    "layer": "Dense",
                    "params": {"units": 5},
                    "inputs": {"x": "encoder"},
                },
                {"id": "sum", "layer": "Add", "inputs": {"x": ["encoder", "small"]}},
                {"id": "pool", "layer": "GlobalAveragePooling1D", "inputs": {"x": "sum"}},
                {"id": "head", "layer": "Output", "inputs": {"x": "pool"}},
            ],
            "sum",
        ),
        # A dangling port: an input from a node that does not exist.
        ([NODES[0], {"id": "head", "layer": "Output", "inputs": {"x": "nowhere"}}], "head"),
        # A cycle.
        (
            [
                NODES[0],
                {"id": "a", "layer": "Dense", "params": {"units": 3}, "inputs": {"x": "b"}},
                {"id": "b", "layer": "Dense", "params": {"units": 3}, "inputs": {"x": "a"}},
                {"id": "head", "layer": "Output", "inputs": {"x": "b"}},
            ],
            None,
        ),
    ],
)
def test_a_bad_graph_gives_a_report_with_errors_never_an_exception(nodes, bad):
    # (A shape mismatch passes the spec's own validation: the report finds it.)
    text, _ = canvas.apply_graph(spec_text(), {"nodes": nodes})
    errors = canvas.canvas_value(text)["report"]["errors"]
    assert errors, "a bad graph reports an error"
    if bad is not None:
        assert bad in errors, errors
        assert bad in errors[bad]  # the message names the block


def test_junk_from_the_canvas_is_refused_with_a_message():
    with pytest.raises(actions.AppError, match="no graph"):
        canvas.apply_graph(spec_text(), "not json")
    with pytest.raises(actions.AppError, match="no graph"):
        canvas.apply_graph(spec_text(), {"nodes": "tokens"})


def test_new_graph_starts_from_a_working_graph_for_the_task_and_keeps_the_rest():
    text, checked = canvas.new_graph(spec_text())
    assert checked.ok, checked.problems
    nodes = canvas.graph_nodes(text)
    assert [n["layer"] for n in nodes] == ["Input", "Embedding", "LSTM", "Output"]
    assert canvas.canvas_value(text)["report"]["errors"] == {}
    assert parse_yaml(text)["task"] == TASK and parse_yaml(text)["train"] == TRAIN
    numeric = spec_text().replace("encoding: ids", "encoding: one_hot")
    text, checked = canvas.new_graph(numeric)
    assert checked.ok, checked.problems
    assert [n["layer"] for n in canvas.graph_nodes(text)] == ["Input", "LSTM", "Output"]
    text, checked = canvas.new_graph(actions.preset_text("pointer_network"))  # pointers
    assert checked.ok, checked.problems
    assert [n["layer"] for n in canvas.graph_nodes(text)][-2:] == ["PointerDecoder", "Output"]
    text, checked = canvas.new_graph(actions.preset_text("show_attend_tell"))  # captions
    assert checked.ok, checked.problems
    assert [n["layer"] for n in canvas.graph_nodes(text)][-2:] == ["CaptionDecoder", "Output"]


def test_yaml_that_does_not_parse_sends_no_nodes_and_keeps_the_canvas_on_its_graph():
    broken = spec_text({"type": "graph", "nodes": NODES}).replace("layer: LSTM", "layer: LSTM: x")
    value = canvas.canvas_value(broken, revision=3)
    assert value["origin"] == "unreadable" and value["nodes"] is None
    assert value["report"]["errors"]["spec"]  # the parse error, shown beside the kept graph
    assert canvas.unreadable(broken) and not canvas.unreadable(spec_text())
    assert canvas.shows_graph(value) and canvas.shows_graph(json.dumps({"nodes": []}))
    assert not canvas.shows_graph(None)
    with pytest.raises(actions.AppError, match="fix it in the editor first"):
        canvas.apply_graph(broken, {"nodes": NODES[:1]})  # no edit writes over it


def test_a_spec_that_is_not_a_graph_has_no_canvas_nodes():
    assert not canvas.is_graph(spec_text())
    assert canvas.graph_nodes(spec_text()) is None
    assert canvas.report(spec_text())["errors"] == {"spec": "the spec's model is not a graph"}


# The addresses the built canvas script may hold: SVG's namespaces, and the links to error
# pages that Svelte and Svelte Flow put in their messages. None is fetched.
DOCUMENT_HOSTS = {"www.w3.org", "svelte.dev", "svelteflow.dev", "${e}flow.dev"}


def test_the_canvas_script_ships_with_the_package_names_its_event_and_fetches_nothing():
    kwargs = html_kwargs([{"name": "Input"}])
    script = kwargs["js_on_load"]
    assert f'trigger("{EDIT_EVENT}")' in script
    start = (
        'KerasSeqCanvas.start({ element, props, trigger, watch, catalog: [{"name": "Input"}] });'
    )
    assert script.rstrip().endswith(f'{start} // trigger("graph_edit")')
    assert kwargs["css_template"] == ""  # the styles go in with the script
    hosts = set(re.findall(r"https?://([^/\"'`\s?]+)", script))
    assert hosts <= DOCUMENT_HOSTS, hosts - DOCUMENT_HOSTS
    for loader in ("import(", "importScripts", "XMLHttpRequest", "WebSocket("):
        assert loader not in script, loader


def test_the_spec_check_refuses_a_graph_whose_shapes_do_not_fit_at_the_nodes_path():
    # The editor's "Valid spec" must not stand beside a block the canvas marks red.
    nodes = [
        *NODES[:3],
        {"id": "small", "layer": "Dense", "params": {"units": 5}, "inputs": {"x": "encoder"}},
        {"id": "sum", "layer": "Add", "inputs": {"x": ["encoder", "small"]}},  # 12 + 5 features
        {"id": "pool", "layer": "GlobalAveragePooling1D", "inputs": {"x": "sum"}},
        {"id": "head", "layer": "Output", "inputs": {"x": "pool"}},
    ]
    checked = actions.check(spec_text({"type": "graph", "nodes": nodes}))
    assert not checked.ok
    ((path, message),) = checked.problems
    assert path == "model.nodes[4]" and "sum" in message, checked.problems
    assert actions.check(spec_text({"type": "graph", "nodes": NODES})).ok


def test_a_preset_of_the_arc_opens_as_the_same_model_on_the_canvas():
    from builder_ui.builders import prepare

    text = actions.preset_text("lstm_1997")  # a sequence_classifier over the 1997 CEC-LSTM
    new_text, checked = canvas.open_as_graph(text)
    assert checked.ok, checked.problems
    assert canvas.is_graph(new_text)
    layers = [node["layer"] for node in canvas.graph_nodes(new_text)]
    assert layers[0] == "Input" and layers[-1] == "Output" and "CECLSTM" in layers
    stack, graph = prepare(parse_yaml(text)), prepare(parse_yaml(new_text))
    # The same layers and widths, rewired as nodes.
    assert graph.build().count_params() == stack.build().count_params()
    assert parse_yaml(new_text)["task"] == parse_yaml(text)["task"]


def test_the_vision_transformer_preset_opens_as_a_graph_of_patches_and_blocks():
    new_text, checked = canvas.open_as_graph(actions.preset_text("vit"))
    assert checked.ok, checked.problems
    layers = [node["layer"] for node in canvas.graph_nodes(new_text)]
    assert layers[:3] == ["Input", "PatchEmbedding", "ClassToken"]
    assert "TransformerEncoderBlock" in layers and layers[-2:] == ["ClassTokenPooling", "Output"]


def test_a_graph_says_it_is_one_already_when_opened_as_a_graph():
    with pytest.raises(actions.AppError, match=r"cannot open as a graph.*a graph already"):
        canvas.open_as_graph(spec_text({"type": "graph", "nodes": NODES}))


def test_show_attend_tell_opens_as_its_cnn_and_one_caption_decoder():
    new_text, checked = canvas.open_as_graph(actions.preset_text("show_attend_tell"))
    assert checked.ok, checked.problems
    layers = [node["layer"] for node in canvas.graph_nodes(new_text)]
    assert layers == ["Input", *["Conv2D", "MaxPooling2D"] * 2, "CaptionDecoder", "Output"]
    assert canvas.canvas_value(new_text)["report"]["errors"] == {}


TRANSLATION = {"type": "toy_translation", "n": 200, "min_len": 4, "max_len": 6}


def test_a_new_graph_on_a_translation_task_is_a_working_encoder_decoder():
    document = {"version": 2, "name": "t", "task": TRANSLATION, "train": TRAIN}
    text, check = canvas.new_graph(yaml.safe_dump(document))
    assert check.problems == [], check.problems
    layers = [node["layer"] for node in parse_yaml(text)["model"]["nodes"]]
    assert layers[-2:] == ["RecurrentDecoder", "Output"]
    assert graph_report(parse_yaml(text)).errors == {}


def test_an_attention_seq2seq_preset_opens_as_a_graph_with_one_decoder_block():
    spec = {**presets.spec("seq2seq_bahdanau"), "task": TRANSLATION}
    text, check = canvas.open_as_graph(yaml.safe_dump(spec))
    assert check.problems == [], check.problems
    layers = [node["layer"] for node in parse_yaml(text)["model"]["nodes"]]
    assert layers.count("RecurrentDecoder") == 1


def test_a_keras_file_opens_as_the_specs_graph_keeping_its_task_and_training(tmp_path):
    import keras

    inputs = keras.Input((6,), dtype="int32", name="tokens")
    x = keras.layers.Embedding(10, 8, name="embedding")(inputs)
    x = keras.layers.GRU(12, name="encoder")(x)
    model = keras.Model(inputs, keras.layers.Dense(2, activation="softmax", name="head")(x))
    path = tmp_path / "classifier.keras"
    model.save(path)

    before = parse_yaml(spec_text())
    text, checked = canvas.open_keras_file(spec_text(), str(path))

    assert checked.ok, checked.problems
    after = parse_yaml(text)
    for key in ("version", "name", "task", "train"):
        assert after[key] == before[key], key
    assert [(node["id"], node["layer"]) for node in after["model"]["nodes"]] == [
        ("tokens", "Input"),
        ("embedding", "Embedding"),
        ("encoder", "GRU"),
        ("head", "Output"),
    ]
    assert canvas.canvas_value(text)["report"]["params"] == model.count_params()


def test_a_keras_file_that_cannot_be_a_graph_is_refused_and_nothing_written(tmp_path):
    import keras

    inputs = keras.Input((6, 2), name="sequence")
    x = keras.layers.Flatten()(keras.layers.Lambda(lambda t: t + 1.0, name="shift")(inputs))
    keras.Model(inputs, keras.layers.Dense(1)(x)).save(tmp_path / "lambda.keras")
    with pytest.raises(actions.AppError) as caught:
        canvas.open_keras_file(spec_text(), str(tmp_path / "lambda.keras"))
    assert str(caught.value) == (
        "This file cannot open as a graph: lambda.keras: layer 'shift' (Lambda) has no block "
        "on the canvas"
    )
    with pytest.raises(actions.AppError, match="No file was uploaded"):
        canvas.open_keras_file(spec_text(), "")
    with pytest.raises(actions.AppError, match="fix it in the editor first"):
        canvas.open_keras_file("version: 1\nname: [unclosed\n", str(tmp_path / "lambda.keras"))


# Groups: "repeat ×N" on the canvas -----------------------------------------------------------

GROUPED_NODES = [
    {"id": "tokens", "layer": "Input"},
    {
        "id": "embedding",
        "layer": "Embedding",
        "params": {"output_dim": 8},
        "inputs": {"x": "tokens"},
    },
    {
        "id": "block",
        "layer": "TransformerEncoderBlock",
        "params": {"num_heads": 2, "ff_dim": 16},
        "inputs": {"x": "embedding"},
    },
    {"id": "pool", "layer": "GlobalAveragePooling1D", "inputs": {"x": "block"}},
    {"id": "head", "layer": "Output", "inputs": {"x": "pool"}},
]
GROUPS = [{"id": "encoder_stack", "nodes": ["block"], "repeat": 3, "collapsed": True}]


def test_apply_graph_writes_the_canvas_groups_and_canvas_value_returns_them():
    sent = {"nodes": GROUPED_NODES, "groups": GROUPS, "revision": 2}
    text, checked = canvas.apply_graph(spec_text(), json.dumps(sent))
    assert checked.ok, checked.problems
    assert parse_yaml(text)["model"] == {"type": "graph", "nodes": GROUPED_NODES, "groups": GROUPS}
    value = canvas.canvas_value(text, revision=2, nodes=GROUPED_NODES, groups=GROUPS)
    assert value["groups"] == GROUPS and value["origin"] == "canvas"
    report = value["report"]
    assert report["errors"] == {}
    assert set(report["shapes"]) == {node["id"] for node in GROUPED_NODES}
    assert report["groups"]["encoder_stack"]["shape"] == "(None, 6, 8)"
    assert report["groups"]["encoder_stack"]["params"] == report["blocks"]["block"]["params"]
    assert canvas.sent_groups(value) == GROUPS
    again, _ = canvas.apply_graph(text, value)  # and back again: the same text
    assert again == text


def test_the_canvas_origin_needs_both_its_nodes_and_its_groups_to_be_the_texts():
    text, _ = canvas.apply_graph(spec_text(), {"nodes": GROUPED_NODES, "groups": GROUPS})
    other = [{**GROUPS[0], "repeat": 2}]
    assert canvas.canvas_value(text, nodes=GROUPED_NODES, groups=GROUPS)["origin"] == "canvas"
    assert canvas.canvas_value(text, nodes=GROUPED_NODES, groups=other)["origin"] == "spec"
    assert canvas.canvas_value(text, nodes=GROUPED_NODES)["origin"] == "spec"  # sent none
    assert canvas.canvas_value(text, nodes=GROUPED_NODES[:4], groups=GROUPS)["origin"] == "spec"
    assert canvas.canvas_value(text, nodes=GROUPED_NODES, groups=other)["groups"] == GROUPS
    plain, _ = canvas.apply_graph(spec_text(), {"nodes": GROUPED_NODES})
    assert canvas.canvas_value(plain, nodes=GROUPED_NODES)["origin"] == "canvas"
    assert canvas.canvas_value(plain, nodes=GROUPED_NODES, groups=[])["groups"] == []


def test_groups_are_normalized_kept_without_a_groups_list_and_dropped_when_emptied():
    messy = [{"collapsed": False, "repeat": 2, "nodes": ["block"], "id": "g", "junk": 1}, "x"]
    assert canvas.normalized_groups(messy) == [
        {"id": "g", "nodes": ["block"], "repeat": 2, "collapsed": False}
    ]
    assert canvas.sent_groups({"nodes": []}) is None
    assert canvas.sent_groups('{"nodes": [], "groups": "no"}') is None
    text, _ = canvas.apply_graph(spec_text(), {"nodes": GROUPED_NODES, "groups": GROUPS})
    moved = [{**node, "position": [10, 20]} for node in GROUPED_NODES]
    kept, _ = canvas.apply_graph(text, {"nodes": moved})  # a canvas that sends no groups
    assert parse_yaml(kept)["model"]["groups"] == GROUPS
    emptied, checked = canvas.apply_graph(text, {"nodes": GROUPED_NODES, "groups": []})
    assert checked.ok and "groups" not in parse_yaml(emptied)["model"]
    assert canvas.graph_groups(emptied) == [] and canvas.graph_groups(spec_text()) is None
