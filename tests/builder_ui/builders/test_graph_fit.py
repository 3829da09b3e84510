"""Valid means trainable (issue 39): what `model.fit` would refuse is refused before any run.

Three graphs passed the shape walk and failed once queued, and a Transformer translator
passed the memory estimate, trained an epoch and ran out of memory while decoding. Each is
refused here at its block or field, with the layer's own words or the estimate; each graph's
failure is shown independently, on the same layers made by hand with Keras and called on one
batch, and the decoder's cache is measured on a real model, not taken from the estimate.
"""

from __future__ import annotations

import copy

import keras
import numpy as np
import pytest

from builder_ui import engine
from builder_ui.builders import load_spec, load_task, memory, prepare
from builder_ui.builders.graph_model import graph_report
from builder_ui.specs import SpecError
from keras_seq.models import TransformerSeq2Seq
from tests.allocation import allocates_little
from tests.builder_ui.builders.test_graph import document, node
from tests.builder_ui.builders.test_graph_random import build_by_hand

DIGITS = {"type": "digits"}
TOKENS = {"type": "long_lag", "lag": 10, "n": 120, "encoding": "ids", "num_distractors": 4}


# The three graphs, each on its task.
IDENTITY = document([node("images", "Input"), node("head", "Output", "images")], DIGITS)
ENCODER_INTO_HEAD = document(
    [
        node("images", "Input"),
        node("patches", "PatchEmbedding", "images", patch_size=2, embedding_dim=16),
        node("class_token", "ClassToken", "patches"),
        node("encoder", "TransformerEncoderBlock", "class_token", num_heads=2, ff_dim=32),
        node("head", "Output", "encoder"),
    ],
    DIGITS,
)
FLATTENED_ATTENTION = document(
    [
        node("tokens", "Input"),
        node("embedding", "Embedding", "tokens", output_dim=8),
        node("flat", "Flatten", "embedding"),
        node(
            "attention",
            "MultiHeadAttention",
            {"query": "flat", "value": "flat"},
            num_heads=2,
            key_dim=8,
        ),
        node("head", "Output", "attention"),
    ],
    TOKENS,
)
POOLED_ENCODER = document(
    [
        *ENCODER_INTO_HEAD["model"]["nodes"][:4],
        node("pool", "ClassTokenPooling", "encoder"),
        node("head", "Output", "pool"),
    ],
    DIGITS,
)


def refusal(spec):
    """The one problem `prepare` (every path's check) raises for a spec."""
    with pytest.raises(SpecError) as caught:
        prepare(spec)
    [(path, message)] = caught.value.problems
    return path, message


def by_hand(spec):
    """The graph's layers made straight from the Keras and keras_seq classes, as a model."""
    task = load_task(load_spec(spec))
    nodes = [{"params": {}, **node} for node in spec["model"]["nodes"]]
    tensors = build_by_hand(nodes, task)
    model = keras.Model(tensors[nodes[0]["id"]], tensors[nodes[-1]["id"]])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return model, task


@pytest.mark.parametrize(
    ("spec", "path", "words"),
    [
        (
            IDENTITY,
            "model.nodes[1].inputs.x",
            "head (Output) gives (None, 8, 8, 10), but task 'digits' has targets (None,), which "
            "its loss, sparse_categorical_crossentropy, compares with outputs (None, 10)",
        ),
        (
            ENCODER_INTO_HEAD,
            "model.nodes[4].inputs.x",
            "head (Output) gives (None, 17, 10), but task 'digits' has targets (None,)",
        ),
        (
            FLATTENED_ATTENTION,
            "model.nodes[3].inputs",
            "attention (MultiHeadAttention) on query (None, 80); value (None, 80): the shapes "
            "pass, but its call fails as model.fit runs it: tuple index out of range (raised in "
            "Softmax.call())",
        ),
    ],
    ids=["input_into_output", "encoder_into_output", "attention_after_flatten"],
)
def test_a_graph_that_model_fit_refuses_is_refused_at_its_block(spec, path, words):
    found_path, message = refusal(spec)
    assert found_path == path
    assert message.startswith(words), message
    node_id = spec["model"]["nodes"][int(path.split("[")[1].split("]")[0])]["id"]
    assert graph_report(spec).errors == {node_id: message}  # the canvas and Validate
    model, task = by_hand(spec)  # and Keras itself refuses the same layers on one batch
    with pytest.raises(Exception):  # noqa: B017 - whatever the layer raises, as long as it refuses
        model.train_on_batch(task.x_train[:8], task.y_train[:8])


def test_an_output_with_the_targets_shape_for_the_loss_still_trains():
    assert graph_report(POOLED_ENCODER).errors == {}
    prepared = prepare(POOLED_ENCODER)
    model = prepared.build()
    loss = model.train_on_batch(prepared.x_train[:8], prepared.y_train[:8])
    assert np.isfinite(float(loss[0] if isinstance(loss, list) else loss))


def test_a_regression_output_that_would_broadcast_is_refused_too():
    # Keras' mean squared error broadcasts (None, 1) targets against (None, 6, 1) outputs
    # without a word, and trains on the wrong loss: refused, naming both shapes.
    spec = document(
        [node("steps", "Input"), node("dense", "Dense", "steps", units=4)],
        {"type": "adding_problem", "length": 6, "n": 60},
    )
    spec["model"]["nodes"].append(node("value", "Output", "dense"))
    path, message = refusal(spec)
    assert path == "model.nodes[2].inputs.x"
    assert "gives (None, 6, 1)" in message and "targets (None, 1)" in message
    assert "model.fit would not refuse it, but broadcast the targets" in message


def test_the_check_allocates_no_weight_of_the_layers_it_calls():
    # 1.6 × 10⁸ weights (640 MB in float32) in a layer whose call the check runs.
    spec = document(
        [
            node("tokens", "Input"),
            node("embedding", "Embedding", "tokens", output_dim=8),
            node("flat", "Flatten", "embedding"),
            node("wide", "Dense", "flat", units=2_000_000),
            node(
                "attention",
                "MultiHeadAttention",
                {"query": "wide", "value": "wide"},
                num_heads=1,
                key_dim=1,
            ),
            node("head", "Output", "attention"),
        ],
        TOKENS,
    )
    with allocates_little():
        path, _ = refusal(spec)
    assert path == "model.nodes[4].inputs"


# The translator whose decoding did not fit ---------------------------------------------------

TRANSLATOR = {
    "version": 2,
    "name": "long-positions",
    "task": {"type": "toy_translation", "n": 2000, "min_len": 5, "max_len": 12},
    "model": {
        "type": "seq2seq",
        "architecture": {
            "type": "transformer",
            "embedding_dim": 64,
            "num_heads": 4,
            "ff_dim": 128,
            "max_length": 1_048_576,
        },
    },
    "train": {"epochs": 1, "batch_size": 64, "optimizer": "adam", "seed": 0},
}


def test_a_translator_whose_decoding_exceeds_the_budget_is_refused_at_max_length(monkeypatch):
    # The cache alone: 200 sources × 2 × 2²⁰ positions × 64 floats × 4 bytes ≈ 215 GB.
    monkeypatch.setenv(memory.BUDGET_ENV, "64GB")
    with allocates_little(), pytest.raises(SpecError) as caught:
        engine.preflight(TRANSLATOR)  # what `engine.run`, sweeps and the app's queue call
    [(path, message)] = caught.value.problems
    assert path == "model.architecture.max_length"
    assert message.startswith("1048576 makes this model need about ")
    assert "; decoding 200 examples at once: " in message
    assert "over the memory budget of 64.0 GB" in message


def test_the_decoding_estimate_covers_the_cache_the_decoder_allocates():
    spec = copy.deepcopy(TRANSLATOR)
    spec["model"]["architecture"]["max_length"] = 48
    prepared = prepare(spec)
    found = memory.estimate(prepared.spec, prepared.builder, prepared.task)
    # Independently: the state a real model's decoder starts from, for the same batch.
    arch = prepared.spec.model.architecture
    model = TransformerSeq2Seq(
        prepared.task.inputs.vocab_size,
        prepared.task.targets.vocab_size,
        embedding_dim=arch.embedding_dim,
        num_heads=arch.num_heads,
        ff_dim=arch.ff_dim,
        max_length=arch.max_length,
    )
    sources = prepared.task.x_val[: found.decode_batch]
    state = model.initial_state(sources)
    held = sum(int(np.prod(value.shape)) for value in state.values() if len(value.shape) == 4)
    assert found.decode_batch == min(256, prepared.num_val)  # `evaluate`'s batch
    assert held * 4 <= found.decode_memory <= 3 * held * 4
