"""The translators' ONNX and LiteRT exports: the decode loop, beam search by default and
greedy decoding on request, run in onnxruntime and the LiteRT interpreter on padded source
batches.

Each model type that translates (the recurrent seq2seq with attention, the
Transformer seq2seq, a translating graph) is trained for one epoch and
exported (`onnx_litert_runs`) with the default decoding, beam search of width
4 with length penalty 0.6; the recurrent one also with `Greedy()`, through
`keras-seq export --decoding greedy`. The ids and lengths are integers and
must agree with Keras's `beam_search` (or `greedy_decode`) exactly (a float
discrepancy of the runtimes' size could change a top-k or an argmax only on a
near-tie between two candidates); the scores, sums of log-probabilities, to
1e-4 (float32 reassociation, as every float output of these tests). On these
sources beam search and greedy decoding give different ids (checked), so
neither file can pass for the other.
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
    # The translators: the decode loop inside the file.
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
        # With seed 6 one epoch gives greedy translations of 4 to 8 tokens and beam search's
        # (width 4, α = 0.6) of 3 to 5, each row ending at its own step, and the two differ;
        # with seeds 1 to 5 beam search ends at once (a one-step loop) on most rows.
        {**TRAIN, "seed": 6},
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
    """A finished run of each spec above, exported as ONNX and LiteRT (`exported_runs`) with
    the default decoding; the files are copied aside, since a later export of the same run
    (greedy, below) replaces those in the run's folder."""
    import shutil

    store, exported = exported_runs(tmp_path_factory.mktemp("runs"), SPECS)
    kept = tmp_path_factory.mktemp("default-decoding")
    for name, (record, onnx_path, litert_path) in list(exported.items()):
        onnx_copy, litert_copy = kept / f"{name}.onnx", kept / f"{name}.tflite"
        shutil.copyfile(onnx_path, onnx_copy)
        shutil.copyfile(litert_path, litert_copy)
        exported[name] = (record, onnx_copy, litert_copy)
    yield store, exported
    store.close()


def _decoded(model, source, task, greedy=False):
    """Keras's decode of `source`, `targets.length` steps (capped by the positions): beam search
    of width 4 with length penalty 0.6 (the exports' default), or greedy decoding."""
    from keras_seq.models import beam_search, greedy_decode

    length = task.targets.length
    if getattr(model, "max_decode_length", None):
        length = min(length, model.max_decode_length)
    if greedy:
        result = greedy_decode(model, source, length)
    else:
        result = beam_search(model, source, length, beam_width=4, length_penalty=0.6)
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
def test_the_translators_beam_search_runs_in_onnxruntime(runs, name):
    store, exported = runs
    record, onnx_path, _ = exported[name]
    model = keras_model(store, record)
    task, source = _sources(record)
    expected = _decoded(model, source, task)
    assert expected["lengths"].max() > 1  # the loop ran past its first step
    got = onnx_run(onnx_path, {"source": source}, ["ids", "scores", "lengths"])
    _same_translations(got, expected)
    assert got["ids"].shape == (len(source), task.targets.length)


@pytest.mark.parametrize("name", NAMES)
def test_the_translators_beam_search_runs_in_the_litert_interpreter(runs, name):
    store, exported = runs
    record, _, litert_path = exported[name]
    model = keras_model(store, record)
    task, source = _sources(record)
    for batch in in_chunks(source, LITERT_BATCH):
        got = litert_run(litert_path, {"source": batch})
        _same_translations(got, _decoded(model, batch, task))


def test_greedy_decoding_on_request_through_the_command_line(runs, tmp_path, capsys):
    """`keras-seq export --decoding greedy` writes greedy files; they differ from beam search's."""
    from builder_ui import cli
    from builder_ui.results import export
    from keras_seq.models import Greedy

    store, exported = runs
    record, beam_onnx, _ = exported["seq2seq-rnn"]
    model = keras_model(store, record)
    task, source = _sources(record)
    greedy = _decoded(model, source, task, greedy=True)
    assert (greedy["ids"] != _decoded(model, source, task)["ids"]).any()  # they differ here
    onnx_path = tmp_path / "greedy.onnx"
    argv = ["export", record.id, "--format", "onnx", "--decoding", "greedy", "--out"]
    assert cli.main([*argv, str(onnx_path), "--runs", str(store.directory)]) == 0
    assert capsys.readouterr().out.strip() == str(onnx_path)
    _same_translations(onnx_run(onnx_path, {"source": source}, list(greedy)), greedy)
    # The same ids through the default file would not pass:
    with pytest.raises(AssertionError):
        _same_translations(onnx_run(beam_onnx, {"source": source}, list(greedy)), greedy)
    litert_path = export.export(
        store,
        record.id,
        "litert",
        out=tmp_path / "greedy.tflite",
        batch_size=LITERT_BATCH,
        decoding=Greedy(),
    )
    for start, batch in zip(
        range(0, len(source), LITERT_BATCH), in_chunks(source, LITERT_BATCH), strict=True
    ):
        rows = slice(start, start + LITERT_BATCH)
        _same_translations(
            litert_run(litert_path, {"source": batch}),
            {key: value[rows] for key, value in greedy.items()},
        )


def test_the_translators_source_length_stays_free(runs):
    store, exported = runs
    record, onnx_path, litert_path = exported["seq2seq-rnn"]
    model = keras_model(store, record)
    task, source = _sources(record)
    longer = np.pad(source, [(0, 0), (0, 3)])  # three more PAD columns, masked
    expected = _decoded(model, longer, task)
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
    from builder_ui.results.onnx_file import DECODING_KEY, VOCABULARIES_KEY
    from keras_seq.tasks import Vocabulary

    store, exported = runs
    record, onnx_path, _ = exported[name]
    session = onnxruntime.InferenceSession(str(onnx_path), providers=["CPUExecutionProvider"])
    metadata = session.get_modelmeta().custom_metadata_map
    document = json.loads(metadata[VOCABULARIES_KEY])
    task = stored_task(store, record.id)
    source = Vocabulary.from_config(document["source_vocabulary"])
    target = Vocabulary.from_config(document["target_vocabulary"])
    assert source == task.source_vocabulary and target == task.target_vocabulary
    assert len(target) == task.targets.vocab_size
    # How the loop decodes, and for how many steps (the ids' second axis).
    assert json.loads(metadata[DECODING_KEY]) == {
        "method": "beam",
        "width": 4,
        "length_penalty": 0.6,
        "coverage_penalty": 0.0,
        "max_length": task.targets.length,
    }


def test_a_selection_beside_an_infinity_converts_exactly():
    """`keras.ops.where` between computed values, one of them −inf, as beam search's scores are.

    tf2onnx's own conversion, `c·x + (1 − c)·y`, gives `0 · −inf = NaN` where `x` is chosen
    (checked by hand without `CUSTOM_OPS`: [nan, -inf, -inf, nan] below); the export writes
    ONNX's `Where`, which must give exactly what TensorFlow gives, the −inf included.
    """
    import onnx
    import onnxruntime
    import tensorflow as tf
    import tf2onnx

    from builder_ui.results.onnx_file import CUSTOM_OPS, ONNX_OPSET

    def select(x):
        dead = keras.ops.log(keras.ops.zeros_like(x))  # −inf, computed in the graph
        return keras.ops.where(x > 0, x, dead)

    signature = [tf.TensorSpec((None,), tf.float32, name="x")]
    function = tf.function(select, input_signature=signature)
    proto, _ = tf2onnx.convert.from_function(
        function, signature, opset=ONNX_OPSET, custom_op_handlers=CUSTOM_OPS
    )
    onnx.checker.check_model(proto)
    session = onnxruntime.InferenceSession(
        proto.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    x = np.array([1.5, -2.0, 0.0, 3.0], np.float32)
    (got,) = session.run(None, {"x": x})
    np.testing.assert_array_equal(got, [1.5, -np.inf, -np.inf, 3.0])  # exact: no arithmetic
