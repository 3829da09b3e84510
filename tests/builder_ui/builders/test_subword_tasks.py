"""Text tasks in specs take `tokenizer: word | bpe | unigram` and `vocab_size`; a subword run
trains through the engine, records its SentencePiece models in `vocabularies.json`, and Inspect
translates typed text with them after the run."""

from __future__ import annotations

import json

import keras
import pytest

from builder_ui.engine import artifacts

pytest.importorskip("sentencepiece")

from builder_ui import builders, engine
from builder_ui.app import actions
from builder_ui.builders import tasks as task_specs
from builder_ui.engine.artifacts import VOCABULARIES_FILE
from builder_ui.engine.store import RunStore
from builder_ui.results import export
from builder_ui.specs import SpecError
from keras_seq.models import Beam


def _spec(task: dict) -> dict:
    return {
        "version": 1,
        "name": "subword",
        "task": task,
        "model": {"type": "seq2seq", "cell": "gru", "units": 8, "embedding_dim": 8},
        "train": {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 2},
    }


def test_the_spec_bounds_mirror_the_library():
    from keras_seq.tasks import subword

    assert task_specs.MIN_SUBWORD_VOCAB_SIZE == subword.MIN_VOCAB_SIZE
    assert task_specs.MAX_SUBWORD_VOCAB_SIZE == subword.MAX_VOCAB_SIZE


@pytest.mark.parametrize(
    "task,message",
    [
        ({"type": "toy_translation", "tokenizer": "bpe"}, r"task.*vocab_size.*needs one"),
        ({"type": "toy_translation", "vocab_size": 100}, r"task.*vocab_size.*only for tokenizer"),
        ({"type": "toy_translation", "tokenizer": "chars", "vocab_size": 100}, r"task\.tokenizer"),
        ({"type": "toy_translation", "tokenizer": "bpe", "vocab_size": 4}, r"task\.vocab_size"),
        (
            {"type": "csv_sequences", "path": "x.csv", "tokenizer": "bpe", "vocab_size": 50},
            r"task.*tokenizer: only for text inputs",
        ),
    ],
)
def test_a_spec_with_tokenizer_fields_that_do_not_fit_is_refused(task, message):
    with pytest.raises(SpecError, match=message):
        builders.load_spec(_spec(task))


def test_too_large_a_vocab_size_for_the_text_is_reported_at_its_field():
    spec = builders.load_spec(
        _spec({"type": "toy_translation", "n": 100, "tokenizer": "unigram", "vocab_size": 5000})
    )
    with pytest.raises(SpecError, match=r"^task\.vocab_size: .*at most \d+ for this text"):
        builders.load_task(spec)


def test_a_word_spec_keeps_todays_vocabularies():
    from keras_seq.tasks import Vocabulary, toy_translation

    task = builders.load_task(builders.load_spec(_spec({"type": "toy_translation", "n": 200})))
    assert type(task.source_vocabulary) is Vocabulary
    assert task.source_vocabulary == toy_translation(200).source_vocabulary
    assert "tokenizer" not in task.params


def test_labelled_text_learns_subword_pieces_from_its_training_rows(tmp_path):
    from keras_seq.tasks import SubwordVocabulary

    path = tmp_path / "labelled.csv"
    words = ["chat", "chien", "cheval", "chaton", "oiseau", "poisson"]
    path.write_text(
        "".join(f"{'a' if i % 2 else 'b'},le {w} numéro {i}\n" for i, w in enumerate(words * 6)),
        encoding="utf-8",
    )
    spec = _spec(
        {
            "type": "csv_sequences",
            "path": str(path),
            "inputs": "tokens",
            "tokenizer": "bpe",
            "vocab_size": 40,
        }
    )
    spec["model"] = {
        "type": "sequence_classifier",
        "embedding_dim": 4,
        "encoder": {"type": "rnn", "cell": "gru", "units": 4},
    }
    task = builders.load_task(builders.load_spec(spec))
    vocabulary = task.source_vocabulary
    assert isinstance(vocabulary, SubwordVocabulary) and len(vocabulary) == 40
    assert task.inputs.vocab_size == 40
    assert task.params["tokenizer"] == "bpe"
    row = task.x_train[0].tolist()
    text = vocabulary.decode(row)
    assert text.startswith("le ") and "numéro" in text  # a row of the file, read back as text


@pytest.mark.large
def test_a_bpe_toy_translation_trains_through_the_engine_and_inspect_reads_its_pieces(tmp_path):
    from keras_seq.tasks import SubwordVocabulary, Vocabulary

    spec = _spec(
        {"type": "toy_translation", "n": 300, "max_len": 10, "tokenizer": "bpe", "vocab_size": 120}
    )
    store = RunStore(tmp_path / "runs")
    try:
        record = engine.run(spec, store=store)
        assert record.status == "done", record.error
        document = json.loads(
            artifacts.artifact_path(store, record.id, VOCABULARIES_FILE).read_text()
        )
        task = builders.load_task(builders.load_spec(spec))
        assert document["source_vocabulary"] == task.source_vocabulary.get_config()
        assert set(document["target_vocabulary"]) == {"subword", "lowercase"}
        recorded = export.stored_task(store, record.id)
        assert isinstance(recorded.target_vocabulary, SubwordVocabulary)
        assert recorded.target_vocabulary == task.target_vocabulary
        assert recorded.inputs.vocab_size == len(task.source_vocabulary) == 120
        if keras.backend.backend() == "tensorflow":
            # The SavedModel takes strings and returns written text, as the run's translator does.
            import tensorflow as tf

            directory = export.export(store, record.id, "savedmodel")
            translator = export._translator(
                export.load_trained_model(store, record.id), store.get(record.id), store
            )
            texts = ["the small dog sleeps .", "a cat runs ."]
            loaded = tf.saved_model.load(str(directory))  # kept: its functions use its tables
            out = loaded.translate(tf.constant(texts))
            beam = Beam()  # what the export decodes with by default
            assert [t.decode("utf-8") for t in out.numpy()] == translator.translate(
                texts, beam_width=beam.width, length_penalty=beam.length_penalty
            )
    finally:
        store.close()
    ctx = actions.AppContext(tmp_path / "runs", slots=["CPU"])
    try:
        prediction = actions.predict(ctx, record.id, "the small dog sleeps .")
    finally:
        ctx.close()
    line = next(
        line for line in prediction.summary.split("\n\n") if line.startswith("**Translation:**")
    )
    # One epoch of 300 sentences translates badly, but in pieces joined into words: no "▁".
    assert "\u2581" not in line
    assert Vocabulary.SPECIAL_TOKENS[Vocabulary.PAD] not in line
