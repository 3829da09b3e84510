"""The translators' ONNX and LiteRT exports: the greedy decode loop, run in onnxruntime and
the LiteRT interpreter on padded source batches.

Each model type that translates (the recurrent seq2seq with attention, the
Transformer seq2seq, a translating graph) is trained for one epoch and
exported (`onnx_litert_runs`). The greedy ids and lengths are integers and
must agree with Keras's `greedy_decode` exactly (a float discrepancy of the
runtimes' size could change an argmax only on a near-tie between two tokens);
the scores, sums of log-probabilities, to 1e-4 (float32 reassociation, as
every float output of these tests).
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

from builder_ui import builders
from tests.builder_ui.results.onnx_litert_runs import (
    ATOL,
    LITERT_BATCH,
    TRAIN,
    TRANSLATION,
    exported_runs,
    in_chunks,
    keras_model,
    litert_run,
    node,
    onnx_run,
    spec,
)

pytestmark = [
    pytest.mark.large,
    pytest.mark.skipif(
        keras.backend.backend() != "tensorflow",
        reason="the ONNX and LiteRT exports convert TensorFlow graphs",
    ),
]
pytest.importorskip("onnxruntime")
pytest.importorskip("ai_edge_litert.interpreter")

SPECS = [
    # The translators: greedy decoding, the loop inside the file.
    spec(
        "seq2seq-rnn",
        TRANSLATION,
        {
            "type": "seq2seq",
            "architecture": {
                "type": "rnn",
                "cell": "gru",
                "units": 8,
                "embedding_dim": 8,
                "bidirectional": True,
                "attention": "bahdanau",
            },
        },
        # With seed 1 one epoch teaches it to end at once (a one-step loop); with seed 2 its
        # translations end after 2 or 3 tokens, each row at its own step.
        {**TRAIN, "seed": 2},
    ),
    spec(
        "seq2seq-transformer",
        TRANSLATION,
        {
            "type": "seq2seq",
            "architecture": {
                "type": "transformer",
                "embedding_dim": 8,
                "num_heads": 2,
                "ff_dim": 16,
                "max_length": 16,
            },
        },
        # At 0.01 one epoch teaches it to end at once (a one-step loop); at 0.007 its
        # translations end after 2 to 4 tokens, each row at its own step.
        {**TRAIN, "learning_rate": 0.007},
    ),
    spec(
        "graph-seq2seq",
        TRANSLATION,
        {
            "type": "graph",
            "nodes": [
                node("source", "Input"),
                node("embedding", "Embedding", "source", output_dim=8, mask_zero=True),
                node("encoder", "GRU", "embedding", units=8, return_sequences=True),
                node("encoder_state", "FinalStatePooling", "encoder"),
                node(
                    "decoder",
                    "RecurrentDecoder",
                    {"memory": "encoder", "state": "encoder_state"},
                    cell="gru",
                    units=8,
                    attention="luong_general",
                    embedding_dim=8,
                ),
                node("words", "Output", "decoder"),
            ],
        },
    ),
]
NAMES = [document["name"] for document in SPECS]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A finished run of each spec above, exported as ONNX and LiteRT (`exported_runs`)."""
    store, exported = exported_runs(tmp_path_factory.mktemp("runs"), SPECS)
    yield store, exported
    store.close()


def _greedy(model, source, task):
    """Keras's greedy decode of `source`, `targets.length` steps (capped by the positions)."""
    from keras_seq.models import greedy_decode

    length = task.targets.length
    if getattr(model, "max_decode_length", None):
        length = min(length, model.max_decode_length)
    result = greedy_decode(model, source, length)
    return {key: np.asarray(getattr(result, key)) for key in ("ids", "scores", "lengths")}


def _same_translations(got, expected):
    np.testing.assert_array_equal(got["ids"], expected["ids"])
    np.testing.assert_array_equal(got["lengths"], expected["lengths"])
    np.testing.assert_allclose(got["scores"], expected["scores"], atol=ATOL, rtol=0)


def _sources(record):
    task = builders.prepare(record.spec).task
    source = task.x_val[: 2 * LITERT_BATCH].astype("int32")
    assert (source == 0).any(), "the batch should hold padded sources"
    return task, source


@pytest.mark.parametrize("name", NAMES)
def test_the_translators_decode_loop_runs_in_onnxruntime(runs, name):
    store, exported = runs
    record, onnx_path, _ = exported[name]
    model = keras_model(store, record)
    task, source = _sources(record)
    expected = _greedy(model, source, task)
    assert expected["lengths"].max() > 1  # the loop ran past its first step
    got = onnx_run(onnx_path, {"source": source}, ["ids", "scores", "lengths"])
    _same_translations(got, expected)
    assert got["ids"].shape == (len(source), task.targets.length)


@pytest.mark.parametrize("name", NAMES)
def test_the_translators_decode_loop_runs_in_the_litert_interpreter(runs, name):
    store, exported = runs
    record, _, litert_path = exported[name]
    model = keras_model(store, record)
    task, source = _sources(record)
    for batch in in_chunks(source, LITERT_BATCH):
        got = litert_run(litert_path, {"source": batch})
        _same_translations(got, _greedy(model, batch, task))


def test_the_translators_source_length_stays_free(runs):
    store, exported = runs
    record, onnx_path, litert_path = exported["seq2seq-rnn"]
    model = keras_model(store, record)
    task, source = _sources(record)
    longer = np.pad(source, [(0, 0), (0, 3)])  # three more PAD columns, masked
    expected = _greedy(model, longer, task)
    _same_translations(onnx_run(onnx_path, {"source": longer}, list(expected)), expected)
    for start, batch in zip(
        range(0, len(longer), LITERT_BATCH), in_chunks(longer, LITERT_BATCH), strict=True
    ):
        rows = slice(start, start + LITERT_BATCH)
        _same_translations(
            litert_run(litert_path, {"source": batch}),
            {key: value[rows] for key, value in expected.items()},
        )


@pytest.mark.parametrize("name", NAMES)
def test_the_onnx_file_carries_the_runs_vocabularies(runs, name):
    import json

    import onnxruntime

    from builder_ui.results.export import stored_task
    from builder_ui.results.onnx_litert import VOCABULARIES_KEY
    from keras_seq.tasks import Vocabulary

    store, exported = runs
    record, onnx_path, _ = exported[name]
    session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    document = json.loads(session.get_modelmeta().custom_metadata_map[VOCABULARIES_KEY])
    task = stored_task(store, record.id)
    source = Vocabulary.from_config(document["source_vocabulary"])
    target = Vocabulary.from_config(document["target_vocabulary"])
    assert source == task.source_vocabulary and target == task.target_vocabulary
    assert len(target) == task.targets.vocab_size
