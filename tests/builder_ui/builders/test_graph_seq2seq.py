"""A translating graph: an encoder of blocks and one `RecurrentDecoder` block feeding the Output.

The built model is `keras_seq.models.AssembledSeq2Seq`. A seq2seq preset opened
as a graph is compared with the preset's own `RNNSeq2Seq`, weights copied
across: the same float32 kernels in the same order, so the probabilities agree
to 1e-6.
"""

from __future__ import annotations

import copy

import keras
import pytest

from builder_ui import engine
from builder_ui.builders import prepare, presets
from builder_ui.builders.graph import translates
from builder_ui.builders.graph_model import graph_report, preset_as_graph
from builder_ui.engine import artifacts
from builder_ui.engine.store import RunStore
from builder_ui.results import export
from builder_ui.results.model_source import model_source
from builder_ui.specs import SpecError
from keras_seq.models import AssembledSeq2Seq

ATOL = 1e-6  # see the module docstring
TRANSLATION = {"type": "toy_translation", "n": 200, "min_len": 4, "max_len": 6}
CLASSES = {"type": "long_lag", "lag": 6, "n": 120, "encoding": "ids", "num_distractors": 4}


def node(node_id, layer, inputs=None, **params):
    found = {"id": node_id, "layer": layer}
    if params:
        found["params"] = params
    if inputs is not None:
        found["inputs"] = inputs if isinstance(inputs, dict) else {"x": inputs}
    return found


DECODER = {"cell": "gru", "units": 16, "attention": "bahdanau", "embedding_dim": 8}
GRAPH = [
    node("source", "Input"),
    node("embedding", "Embedding", "source", output_dim=8, mask_zero=True),
    node("encoder", "GRU", "embedding", units=8, return_sequences=True, bidirectional=True),
    node("encoder_state", "FinalStatePooling", "encoder", bidirectional=True),
    node("decoder", "RecurrentDecoder", {"memory": "encoder", "state": "encoder_state"}, **DECODER),
    node("words", "Output", "decoder"),
]


def document(nodes=GRAPH, task=TRANSLATION):
    return {
        "version": 2,
        "name": "translating-graph",
        "task": task,
        "model": {"type": "graph", "nodes": copy.deepcopy(nodes)},
        "train": {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 0},
    }


def replaced(index, new_node, nodes=GRAPH):
    nodes = copy.deepcopy(nodes)
    nodes[index] = new_node
    return nodes


def test_the_report_gives_the_decoders_steps_and_the_built_models_parameter_count():
    report = graph_report(document())
    assert report.errors == {}
    prepared = prepare(document())
    target = prepared.task.targets
    assert report.shapes["decoder"] == f"(None, {target.length}, 32)"  # [s_t; c_t]: 16 + 16
    assert report.shapes["words"] == f"(None, {target.length}, {target.vocab_size})"
    model = prepared.builder.build(prepared.spec.model, prepared.task)
    assert isinstance(model, AssembledSeq2Seq)
    assert report.params == model.count_params()
    assert translates(document()) and not translates({"model": {"type": "graph", "nodes": []}})


@pytest.mark.parametrize(
    ("nodes", "task", "where", "words"),
    [
        (
            GRAPH,
            CLASSES,
            "decoder",
            "the task's targets are classification, which a RecurrentDecoder does not write",
        ),
        (
            [
                node("source", "Input"),
                node("e", "Embedding", "source", output_dim=4),
                node("words", "Output", "e"),
            ],
            TRANSLATION,
            "spec",
            "needs one decoder block (RecurrentDecoder or TransformerDecoder)",
        ),
        (
            replaced(
                4,
                node(
                    "decoder",
                    "RecurrentDecoder",
                    {"memory": "encoder"},
                    cell="gru",
                    units=16,
                    attention=None,
                ),
            ),
            TRANSLATION,
            "decoder",
            "without attention the decoder reads the source only through its initial state",
        ),
        (
            replaced(
                4,
                node(
                    "decoder",
                    "RecurrentDecoder",
                    {"memory": "encoder", "state": "encoder_state"},
                    units=12,
                    attention="bahdanau",
                ),
            ),
            TRANSLATION,
            "decoder",
            "'state' of shape (batch, 12): the decoder's units",
        ),
        (
            # Reading a recurrent block, the port gets its final state: one GRU's h for
            # two decoder layers, each of which needs its own.
            replaced(
                4,
                node(
                    "decoder",
                    "RecurrentDecoder",
                    {"memory": "encoder", "state": "encoder"},
                    **{**DECODER, "num_layers": 2},
                ),
            ),
            TRANSLATION,
            "decoder",
            "the initial state of each of the 2 decoder layer(s) (h per layer for a gru decoder)",
        ),
        (
            replaced(
                4,
                node(
                    "decoder",
                    "RecurrentDecoder",
                    {"memory": "encoder"},
                    target_length=3,
                    attention="bahdanau",
                ),
            ),
            TRANSLATION,
            "decoder",
            "argument `target_length` comes from the task; leave it out",
        ),
        (
            [
                *replaced(5, node("words", "Output", "squash")),
                node("squash", "Dense", "decoder", units=4),
            ],
            TRANSLATION,
            "words",
            "the Output reads the RecurrentDecoder (decoder) directly",
        ),
    ],
    ids=[
        "decoder-on-classes",
        "no-decoder",
        "fixed-vector-without-state",
        "state-width",
        "one-state-for-two-layers",
        "target-length-given",
        "output-not-after-decoder",
    ],
)
def test_a_graph_that_cannot_translate_is_marked_at_its_node(nodes, task, where, words):
    report = graph_report(document(nodes, task))
    assert where in report.errors, report.errors
    assert words in report.errors[where]
    with pytest.raises(SpecError):
        prepare(document(nodes, task))


def _seq2seq_preset(key):
    spec = presets.spec(key)
    spec["task"] = dict(TRANSLATION)
    return spec


def test_the_lstm_preset_opens_with_its_reversal_and_the_transformer_with_its_decoder_block():
    graph_document = preset_as_graph(_seq2seq_preset("seq2seq"))
    layers = [n["layer"] for n in graph_document["model"]["nodes"]]
    assert layers[:3] == ["Input", "ReverseWithinLength", "Embedding"]
    assert graph_report(graph_document).errors == {}
    graph_document = preset_as_graph(_seq2seq_preset("transformer_translation"))
    layers = [n["layer"] for n in graph_document["model"]["nodes"]]
    assert layers[-2:] == ["TransformerDecoder", "Output"]
    assert graph_report(graph_document).errors == {}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    store = RunStore(tmp_path_factory.mktemp("runs"))
    record = engine.run(document(), store=store)
    yield store, record
    store.close()


@pytest.mark.large
def test_a_translating_graph_trains_and_is_scored_as_a_seq2seq(trained):
    _, record = trained
    assert record.status == "done", record.error
    assert {"bleu", "exact_match", "token_accuracy"} <= set(record.metrics)
    assert 0 <= record.metrics["bleu"] <= 100


@pytest.mark.large
def test_its_python_export_rebuilds_the_encoder_with_the_functional_api(trained):
    store, record = trained
    model = keras.saving.load_model(
        artifacts.artifact_path(store, record.id, "model.keras"), safe_mode=True
    )
    source = model_source(model)  # checked: it rebuilds the same parameters and configs
    assert "def build_encoder():" in source and "AssembledSeq2Seq(" in source
    namespace = {}
    exec(compile(source, "translating_graph.py", "exec"), namespace)
    assert namespace["build_model"]().count_params() == model.count_params()


@pytest.mark.large
def test_its_savedmodel_translates_strings_with_tensorflow_alone(trained, tmp_path):
    import tensorflow as tf

    store, record = trained
    path = export.export(store, record.id, "savedmodel", out=tmp_path / "exported")
    reloaded = tf.saved_model.load(str(path))
    (translation,) = reloaded.translate(tf.constant(["the cat sleeps ."])).numpy()
    assert isinstance(translation, bytes)
