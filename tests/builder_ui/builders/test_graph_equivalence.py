"""A short form, its graph and the `keras_seq.models` factory are one model.

For every preset and example spec of a type that builds from its graph
(every model type but `graph`: `sequence_classifier`, `sequence_regressor`,
`vision_transformer`, `seq2seq` of either architecture, `pointer_network`,
`conv_lstm`, `show_attend_tell`), three models are built: the short form as the app
trains it, the `graph` spec `keras-seq graph` writes for it, and the model a library
user gets from the factory (`recurrent_model`, `transformer_classifier`,
`vision_transformer`, `seq2seq`, `pointer_network`, `conv_lstm_predictor`,
`frame_lstm_predictor`, `ShowAttendTell`), called here by hand from the spec's
fields. They must hold the same number of parameters and, with the same random
weights copied into each (in layer order; an encoder–decoder's by each weight's
path, as its encoder is a model of its own in the graph's), give the same outputs
on the task's validation inputs (an encoder–decoder's: the teacher-forced
probabilities of the validation targets).

`atol=1e-6`: the three run the same float32 kernels on the same values in the same
order, so they agree to the last bits; 1e-6 leaves room for the round-off of a
fused CPU kernel (oneDNN) chosen differently, far below the probabilities' scale.
"""

from __future__ import annotations

import copy

import keras
import numpy as np
import pytest
import yaml

from builder_ui.builders import load_spec, prepare, presets
from builder_ui.builders.graph_model import preset_as_graph
from keras_seq.layers import CECLSTM
from keras_seq.models import (
    ShowAttendTell,
    conv_lstm_parameters,
    conv_lstm_predictor,
    frame_lstm_predictor,
    matched_units,
    pointer_network,
    recurrent_model,
    seq2seq,
    transformer_classifier,
    vision_transformer,
)

pytestmark = pytest.mark.large  # builds three models per spec and runs each

ATOL = 1e-6  # see the module docstring
TYPES = (
    "sequence_classifier",
    "sequence_regressor",
    "vision_transformer",
    "seq2seq",
    "pointer_network",
    "conv_lstm",
    "show_attend_tell",
)
# Their encoders are models of their own in the graph's model: weights are matched by path.
ENCODER_DECODERS = ("seq2seq", "pointer_network", "show_attend_tell")


def _expanded(model) -> bool:
    """Whether a spec's model builds from its graph."""
    return model.type in TYPES


def _documents() -> dict[str, dict]:
    """Each example spec of the expanded types, by file stem, without its sweep."""
    found = {}
    for path in sorted(presets.SPECS_DIR.iterdir()):
        if path.name.endswith(".yaml"):
            document = yaml.safe_load(path.read_text(encoding="utf-8"))
            document.pop("sweep", None)  # a sweep's base spec is one model
            if _expanded(load_spec(document).model):
                found[path.name.removesuffix(".yaml")] = document
    return found


def _variants(documents: dict[str, dict]) -> dict[str, dict]:
    """The branches of the expansions the example specs leave out: for the RNN seq2seq two
    layers (unidirectional LSTM, bidirectional GRU), dropout; for the Transformer seq2seq
    learned positions, post-LN, the source reversal, dropout, two blocks a side; for the
    ConvLSTM the flat layout (its sweep's other model) and one layer; a GRU pointer
    network that may point twice at a position; a captioner on patches with a GRU, no
    region positions, an attention width of its own, the penalty and dropout."""
    variant = copy.deepcopy(documents["transformer_translation"])
    variant["model"]["architecture"].update(positions="learned", norm_first=False)
    variant["model"].update(reverse_source=True, dropout=0.1, num_layers=2)
    deep = copy.deepcopy(documents["seq2seq"])  # an LSTM: each layer hands over h and c
    deep["model"].update(num_layers=2, dropout=0.1)
    deep_bidirectional = copy.deepcopy(documents["seq2seq_bahdanau"])
    deep_bidirectional["model"]["num_layers"] = 2
    pointer = copy.deepcopy(documents["pointer_network"])
    pointer["model"].update(cell="gru", exclude_chosen=False)
    flat = copy.deepcopy(documents["conv_lstm"])
    flat["model"]["layout"] = "flat"
    one_layer = copy.deepcopy(documents["conv_lstm"])
    one_layer["model"].update(num_layers=1, head_kernel_size=1)
    patches = copy.deepcopy(documents["show_attend_tell"])
    patches["model"].update(
        encoder="patches",
        patch_size=8,
        cell="gru",
        region_positions=False,
        attention_units=24,
        attention_penalty=1.0,
        dropout=0.1,
    )
    return {
        "seq2seq_two_layers": deep,
        "seq2seq_bahdanau_two_layers": deep_bidirectional,
        "transformer_translation_learned_reversed": variant,
        "pointer_network_gru_repeating": pointer,
        "conv_lstm_flat": flat,
        "conv_lstm_one_layer": one_layer,
        "show_attend_tell_patches_gru": patches,
    }


DOCUMENTS = _documents()
DOCUMENTS.update(_variants(DOCUMENTS))


def test_every_preset_of_these_types_is_an_example_spec_covered_here():
    keys = {
        preset.key for preset in presets.arc_presets() if _expanded(load_spec(preset.spec).model)
    }
    assert keys and keys <= set(DOCUMENTS)
    assert any(load_spec(document).model.type == "seq2seq" for document in DOCUMENTS.values())


def _recurrent_layer(encoder) -> keras.layers.Layer:
    """The encoder's recurrent stack as a user writes it for `recurrent_model`."""
    layers = []
    for index in range(encoder.num_layers):
        options = {"return_sequences": index < encoder.num_layers - 1, "dropout": encoder.dropout}
        if encoder.cell == "cec_lstm":
            extra = {"forget_gate": bool(encoder.forget_gate), "peephole": bool(encoder.peephole)}
            layer = CECLSTM(encoder.units, **extra, **options)
        else:
            cls = {"simple": "SimpleRNN", "gru": "GRU", "lstm": "LSTM"}[encoder.cell]
            layer = getattr(keras.layers, cls)(encoder.units, **options)
        layers.append(keras.layers.Bidirectional(layer) if encoder.bidirectional else layer)
    return layers[0] if len(layers) == 1 else keras.Sequential(layers)


def _factory_model(model, task) -> keras.Model:
    """What a library user calls for this spec's model."""
    if model.type == "show_attend_tell":
        return ShowAttendTell(
            task.targets.vocab_size, task.inputs, **model.model_dump(exclude={"type"})
        )
    if model.type == "pointer_network":
        return pointer_network(
            task.inputs.features,
            units=model.units,
            cell=model.cell,
            exclude_chosen=model.exclude_chosen,
        )
    if model.type == "conv_lstm":
        fields = {
            "filters": model.filters,
            "num_layers": model.num_layers,
            "kernel_size": model.kernel_size,
            "head_kernel_size": model.head_kernel_size,
        }
        future = task.targets.length
        if model.layout == "conv":
            return conv_lstm_predictor(task.inputs, future, **fields)
        budget = conv_lstm_parameters(task.inputs.shape, future, **fields)
        units = matched_units(budget, task.inputs.shape, future)
        return frame_lstm_predictor(task.inputs, future, units=units)
    if model.type == "seq2seq" and model.architecture.type == "rnn":
        arch = model.architecture
        return seq2seq(
            task.inputs.vocab_size,
            task.targets.vocab_size,
            architecture="rnn",
            cell=arch.cell,
            units=arch.units,
            num_layers=model.num_layers,
            bidirectional=arch.bidirectional,
            attention=arch.attention,
            attention_units=arch.attention_units,
            input_feeding=arch.input_feeding,
            embedding_dim=arch.embedding_dim,
            reverse_source=model.reverse_source,
            dropout=model.dropout,
        )
    if model.type == "seq2seq":
        arch = model.architecture
        return seq2seq(
            task.inputs.vocab_size,
            task.targets.vocab_size,
            architecture="transformer",
            num_layers=model.num_layers,
            embedding_dim=arch.embedding_dim,
            num_heads=arch.num_heads,
            ff_dim=arch.ff_dim,
            norm_first=arch.norm_first,
            max_length=arch.max_length,
            positions=arch.positions,
            reverse_source=model.reverse_source,
            dropout=model.dropout,
        )
    if model.type == "vision_transformer":
        return vision_transformer(
            task.inputs,
            model.patch_size,
            model.embedding_dim,
            model.num_layers,
            model.num_heads,
            model.ff_dim,
            task.targets.num_classes,
            dropout=model.dropout,
        )
    encoder = model.encoder
    if encoder.type == "rnn":
        return recurrent_model(
            _recurrent_layer(encoder),
            task.inputs,
            task.targets,
            embedding_dim=model.embedding_dim or 16,
        )
    return transformer_classifier(
        task.inputs.vocab_size,
        task.inputs.length,
        task.targets.num_classes,
        embedding_dim=encoder.embedding_dim,
        num_layers=encoder.num_layers,
        num_heads=encoder.num_heads,
        ff_dim=encoder.ff_dim,
        pooling=encoder.pooling,
        positions=encoder.positions,
        norm_first=encoder.norm_first,
        dropout=encoder.dropout,
        mask_zero=model.mask_zero,
    )


@pytest.mark.parametrize("key", sorted(DOCUMENTS))
def test_the_short_form_its_graph_and_the_factory_are_the_same_model(key):
    prepared = prepare(DOCUMENTS[key])
    task = prepared.task
    short = prepared.builder.build(prepared.spec.model, task)
    graph_prepared = prepare(preset_as_graph(DOCUMENTS[key]))
    graph = graph_prepared.builder.build(graph_prepared.spec.model, graph_prepared.task)
    factory = _factory_model(prepared.spec.model, task)

    assert short.count_params() == graph.count_params() == factory.count_params()
    assert [layer.name for layer in graph.layers] == [layer.name for layer in short.layers]
    # Random weights (biases and norms too, not their constant starts), the same in all three.
    rng = np.random.default_rng(0)
    if prepared.spec.model.type in ENCODER_DECODERS:
        # A block's recurrent layer inside its Bidirectional is `<id>_layer`, the model's `<id>`.
        def path(weight):
            return weight.path.replace("_layer/", "/")

        values = {path(w): rng.normal(0, 0.3, w.shape).astype("float32") for w in short.weights}
        for model in (short, graph, factory):
            assert sorted(path(w) for w in model.weights) == sorted(values)
            for weight in model.weights:
                weight.assign(values[path(weight)])
        # The inputs and the targets the model is teacher-forced with.
        x = {name: array[:16] for name, array in prepared.x_val.items()}
    else:
        weights = [rng.normal(0, 0.3, w.shape).astype("float32") for w in short.get_weights()]
        for model in (short, graph, factory):
            model.set_weights(weights)  # in layer order; refused if any shape differs
        x = prepared.x_val[:16]
    expected = factory.predict(x, verbose=0)
    np.testing.assert_allclose(short.predict(x, verbose=0), expected, atol=ATOL, rtol=0)
    np.testing.assert_allclose(graph.predict(x, verbose=0), expected, atol=ATOL, rtol=0)
