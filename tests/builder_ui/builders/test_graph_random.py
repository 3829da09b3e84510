"""Random graphs from the catalog's rules: what the report accepts trains, what it refuses fails.

Each seed draws a graph from token ids or numeric steps through a few
sequence blocks (recurrent layers, attention, Transformer blocks, norms,
Dense, Add and Concatenate of earlier nodes, positions) with widths and head
counts drawn so that some graphs fit and some do not, then a pooling and the
Output. A graph the report accepts is built by the builder and takes one
`train_on_batch` step with a finite loss; a graph it refuses is built again
by hand, straight from the Keras and keras_seq classes without the builder's
walk, and must fail there too. Translating graphs are drawn the same way: a
random encoder and one `RecurrentDecoder` block whose widths, attention and
state port may not fit it; a refused one must fail as an `AssembledSeq2Seq` over
an encoder made by hand.
"""

from __future__ import annotations

import copy
import math
import random

import keras
import pytest

import keras_seq.layers
from builder_ui.builders import load_spec, load_task, prepare
from builder_ui.builders.graph_model import graph_report

SEEDS = range(30)
TASKS = (
    {"type": "long_lag", "lag": 5, "n": 40, "encoding": "ids", "num_distractors": 3},
    {"type": "adding_problem", "length": 5, "n": 40},
)
WIDTHS = (4, 6, 8)
RECURRENT = ("SimpleRNN", "GRU", "LSTM", "CECLSTM")


class Draw:
    """A graph drawn node by node: each new node reads earlier ones."""

    def __init__(self, seed: int):
        self.rng = random.Random(seed)
        self.nodes: list[dict] = []

    def add(self, layer, inputs=None, **params):
        node_id = f"n{len(self.nodes)}"
        node = {"id": node_id, "layer": layer, "params": params}
        if inputs is not None:
            node["inputs"] = inputs if isinstance(inputs, dict) else {"x": inputs}
        self.nodes.append(node)
        return node_id

    def sequence_block(self, x, earlier):
        rng, width = self.rng, self.rng.choice(WIDTHS)
        others = [node for node in earlier if node != x] or earlier
        kind = rng.choice(
            ["recurrent", "mha", "sdpa", "encoder", "norm", "dense", "merge", "positions"]
        )
        if kind == "recurrent":
            params = {"units": width, "return_sequences": True}
            if rng.random() < 0.3:
                params["bidirectional"] = True
            return self.add(rng.choice(RECURRENT), x, **params)
        if kind == "mha":
            value = rng.choice(earlier)
            return self.add(
                "MultiHeadAttention",
                {"query": x, "value": value},
                num_heads=rng.choice((1, 2)),
                key_dim=width,
            )
        if kind == "sdpa":  # the query and value widths must match
            return self.add("ScaledDotProductAttention", {"query": x, "value": rng.choice(others)})
        if kind == "encoder":  # the heads must divide the width
            return self.add(
                "TransformerEncoderBlock", x, num_heads=rng.choice((2, 3, 4)), ff_dim=width
            )
        if kind == "norm":
            if rng.random() < 0.5:
                return self.add("Dropout", x, rate=0.1)
            return self.add("LayerNormalization", x)
        if kind == "dense":
            return self.add("Dense", x, units=width)
        if kind == "positions":
            return self.add(
                rng.choice(("SinusoidalPositionalEncoding", "LearnedPositionalEmbedding")), x
            )
        other = rng.choice(others)
        return self.add(rng.choice(("Add", "Concatenate")), {"x": [x, other]})


def draw_graph(seed: int) -> tuple[dict, list[dict]]:
    draw = Draw(seed)
    rng = draw.rng
    task = TASKS[seed % 2]
    x = draw.add("Input")
    if task.get("encoding") == "ids":
        x = draw.add("Embedding", x, output_dim=rng.choice(WIDTHS))
    else:
        x = draw.add("Dense", x, units=rng.choice(WIDTHS))
    earlier = [x]
    for _ in range(rng.randint(1, 4)):
        x = draw.sequence_block(x, earlier)
        earlier.append(x)
    pooling = rng.choice(("GlobalAveragePooling1D", "GlobalMaxPooling1D", "MaskedMeanPooling"))
    x = draw.add(pooling, x)
    draw.add("Output", x)
    return task, draw.nodes


def document(task, nodes):
    return {
        "version": 2,
        "name": "random-graph",
        "task": copy.deepcopy(task),
        "model": {"type": "graph", "nodes": copy.deepcopy(nodes)},
        "train": {"epochs": 1, "batch_size": 8, "learning_rate": 0.01, "seed": 0},
    }


def build_by_hand(nodes, task):
    """The graph made straight from the layer classes and called in order (no builder walk)."""
    tensors = {}
    for node in nodes:
        layer, params, inputs = node["layer"], dict(node["params"]), node.get("inputs", {})
        if layer == "Input":
            tensors[node["id"]] = keras.Input(task.inputs.shape, dtype=task.inputs.dtype)
            continue
        if layer == "Output":
            targets = task.targets
            units = targets.num_classes if targets.kind == "classification" else targets.output_dim
            made = keras.layers.Dense(units)
        else:
            cls = getattr(keras.layers, layer, None) or getattr(keras_seq.layers, layer)
            if layer == "Embedding":
                params["input_dim"] = task.inputs.vocab_size
            if layer == "LearnedPositionalEmbedding":
                params["max_length"] = tensors[inputs["x"]].shape[1]
            bidirectional = params.pop("bidirectional", False)
            made = cls(**params)
            if bidirectional:
                made = keras.layers.Bidirectional(made)
        if layer in ("Add", "Concatenate"):
            tensors[node["id"]] = made([tensors[source] for source in inputs["x"]])
        elif "query" in inputs:
            tensors[node["id"]] = made(tensors[inputs["query"]], tensors[inputs["value"]])
        else:
            tensors[node["id"]] = made(tensors[inputs["x"]])
    return tensors


@pytest.mark.large
@pytest.mark.parametrize("seed", SEEDS)
def test_a_random_graph_trains_if_accepted_and_fails_by_hand_if_refused(seed):
    task_section, nodes = draw_graph(seed)
    report = graph_report(document(task_section, nodes))
    assert "spec" not in report.errors, report.errors  # drawn well formed: only layers refuse
    prepared = prepare(document(task_section, nodes)) if not report.errors else None
    if prepared is not None:
        model = prepared.build()
        loss = model.train_on_batch(prepared.x_train[:8], prepared.y_train[:8])
        loss = loss[0] if isinstance(loss, list) else loss
        assert math.isfinite(float(loss))
        assert report.params == model.count_params()
        return
    task = load_task(load_spec(document(task_section, nodes)))
    with pytest.raises(Exception):  # noqa: B017 - whatever the layer raises, as long as it refuses
        build_by_hand(nodes, task)


def test_the_random_graphs_include_both_accepted_and_refused_ones():
    outcomes = {not graph_report(document(*draw_graph(seed))).errors for seed in SEEDS}
    assert outcomes == {True, False}


# Translating graphs: a random encoder and one RecurrentDecoder block ---------------------------

TRANSLATION_SEEDS = range(12)
TRANSLATION = {"type": "toy_translation", "n": 60, "min_len": 4, "max_len": 5}
ATTENTIONS = (None, "bahdanau", "luong_dot", "luong_general", "luong_concat")


def draw_translating_graph(seed: int) -> list[dict]:
    """Source ids through an encoder drawn at random to a decoder whose widths may not fit it.

    The state port is left open now and then (only an attention decoder can do without it),
    and the decoder's units are drawn so that the state's width and `luong_dot`'s memory
    width sometimes differ from them.
    """
    draw = Draw(1000 + seed)
    rng = draw.rng
    x = draw.add("Input")
    if rng.random() < 0.3:
        x = draw.add("ReverseWithinLength", x)
    x = draw.add("Embedding", x, output_dim=rng.choice(WIDTHS), mask_zero=True)
    widths = []
    for _ in range(rng.randint(1, 2)):
        width = rng.choice(WIDTHS)
        params = {"units": width, "return_sequences": True}
        if rng.random() < 0.4:
            params["bidirectional"] = True
            width *= 2
        x = draw.add(rng.choice(RECURRENT), x, **params)
        widths.append(width)
    ports = {"memory": x}
    if rng.random() < 0.7:
        both = rng.random() < 0.5
        ports["state"] = draw.add("FinalStatePooling", x, bidirectional=both)
    units = rng.choice((widths[-1], widths[-1], *WIDTHS))
    decoder = {"cell": rng.choice(("simple", "gru", "lstm")), "units": units}
    decoder.update(attention=rng.choice(ATTENTIONS), embedding_dim=rng.choice(WIDTHS))
    decoder_id = draw.add("RecurrentDecoder", ports, **decoder)
    draw.add("Output", decoder_id)
    return draw.nodes


def build_translator_by_hand(nodes, task):
    """`AssembledSeq2Seq` over an encoder made straight from the layer classes, then called."""
    from keras_seq.models import AssembledSeq2Seq

    *encoder_nodes, decoder, _ = nodes
    tensors = build_by_hand(encoder_nodes, task)
    ports = decoder["inputs"]
    outputs = {port: tensors[source] for port, source in ports.items()}
    if decoder["params"]["attention"] is None:
        outputs.pop("memory")
    encoder = keras.Model(tensors[encoder_nodes[0]["id"]], outputs)
    model = AssembledSeq2Seq(
        task.inputs.vocab_size, task.targets.vocab_size, encoder, **decoder["params"]
    )
    model({"source": task.x_train[:2], "target": task.y_train[:2]})


@pytest.mark.large
@pytest.mark.parametrize("seed", TRANSLATION_SEEDS)
def test_a_random_translating_graph_trains_if_accepted_and_fails_by_hand_if_refused(seed):
    nodes = draw_translating_graph(seed)
    report = graph_report(document(TRANSLATION, nodes))
    assert "spec" not in report.errors, report.errors
    if not report.errors:
        prepared = prepare(document(TRANSLATION, nodes))
        model = prepared.build()
        x, y, _, _ = prepared.builder.fit_data(prepared.spec.model, prepared.task)
        loss = model.train_on_batch({key: value[:8] for key, value in x.items()}, y[:8])
        loss = loss[0] if isinstance(loss, list) else loss
        assert math.isfinite(float(loss))
        assert report.params == model.count_params()
        return
    task = load_task(load_spec(document(TRANSLATION, nodes)))
    with pytest.raises(Exception):  # noqa: B017 - whatever the layer raises, as long as it refuses
        build_translator_by_hand(nodes, task)


def test_the_random_translating_graphs_include_both_accepted_and_refused_ones():
    outcomes = {
        not graph_report(document(TRANSLATION, draw_translating_graph(seed))).errors
        for seed in TRANSLATION_SEEDS
    }
    assert outcomes == {True, False}
