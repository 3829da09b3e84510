"""The translator's SavedModel reads and writes text: its `translate` signature, with the
vocabularies and the tokeniser inside the graph, served by TensorFlow alone."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import keras
import pytest

from builder_ui import engine
from builder_ui.engine.store import RunStore
from builder_ui.results import export

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="SavedModel export (and its text signature) needs the TensorFlow backend",
)

# Sentences that exercise every rule of `keras_seq.tasks.vocabulary.tokenize`: punctuation
# (single marks, ASCII and not), inner apostrophes and hyphens, accents precomposed and
# decomposed (NFC), full-width and non-Latin letters, digits and underscores, Unicode
# whitespace, "<unk>" as one token, case folding beyond ASCII, and texts without a token.
SENTENCES = [
    "Le chat, noir!",
    "Don't stop — l'homme peut-être… « vraiment » ?",
    "ÉCOLE école e\u0301cole E\u0301COLE",
    "Ça va? Très bien; merci.",
    "Straße İstanbul ΟΔΟΣ Ǆemal",
    "snake_case 3.14 50% $5 (a+b)=c",
    "日本語の文章。한국어 \u1100\u1161\u11a8",
    "a\u00a0b\u2003c\x1cd\te\nf",
    "<UNK> <unk> x<unk>y",
    "\u212b ngström α\u0313\u0342\u0345",
    "ｆｕｌｌｗｉｄｔｈ １２３",
    "",
    " \t ",
    "rock'n'roll l’été",
]


@pytest.mark.parametrize("lowercase", [True, False])
def test_the_tensorflow_tokeniser_cuts_text_as_tokenize_does(lowercase):
    import tensorflow as tf

    from keras_seq.tasks.vocabulary import tf_tokenizer, tokenize

    tokens = tf_tokenizer(lowercase=lowercase)(tf.constant(SENTENCES)).to_list()
    got = [[token.decode("utf-8") for token in row] for row in tokens]
    expected = [tokenize(text, lowercase=lowercase) for text in SENTENCES]
    assert got == expected


def _toy_translation_spec(name: str) -> dict:
    return {
        "version": 1,
        "name": name,
        "task": {"type": "toy_translation", "n": 200, "min_len": 4, "max_len": 6},
        "model": {
            "type": "seq2seq",
            "cell": "gru",
            "units": 8,
            "embedding_dim": 8,
            "attention": "bahdanau",
        },
        "train": {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 3},
    }


# What the translator is asked in the fresh process: sentences of the grammar, one with a
# word the vocabulary lacks and odd case and punctuation, one word; then texts with no token.
TEXTS = ["the good dog runs .", "The ZEBRA, sleeps — a doctor waits!", "dog"]
NO_TOKEN = ["", "   "]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A finished toy-translation run, its SavedModel, and what TensorFlow alone made of TEXTS.

    The run is one epoch of a tiny Bahdanau GRU; the SavedModel is served in a fresh
    interpreter that imports TensorFlow only, once on `TEXTS[0]` alone and once on every
    text of `TEXTS + NO_TOKEN` as one batch.
    """
    store = RunStore(tmp_path_factory.mktemp("runs"))
    record = engine.run(_toy_translation_spec("export-strings"), store=store)
    assert record.status == "done", record.error
    savedmodel = export.export(store, record.id, "savedmodel")
    alone, batch = _translate_in_fresh_process(savedmodel, [TEXTS[:1], TEXTS + NO_TOKEN])
    yield store, record, savedmodel, alone, batch
    store.close()


def _translate_in_fresh_process(savedmodel, batches):
    """The SavedModel's `translate` on each batch of texts, in a process importing TF only."""
    code = textwrap.dedent(
        """
        import json, sys
        import tensorflow as tf
        reloaded = tf.saved_model.load(sys.argv[1])
        out = [
            [t.decode("utf-8") for t in reloaded.translate(tf.constant(texts)).numpy()]
            for texts in json.loads(sys.argv[2])
        ]
        assert "keras_seq" not in sys.modules and "builder_ui" not in sys.modules
        print(json.dumps(out))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(savedmodel), json.dumps(batches)],
        capture_output=True,
        text=True,
        timeout=300,  # a hang guard only: loading TensorFlow takes seconds
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.large
def test_the_translator_savedmodel_translates_a_sentence_with_tensorflow_alone(served):
    from keras_seq.models.translator import Translator

    store, record, _, alone, batch = served
    task = export.stored_task(store, record.id)
    model = export.load_trained_model(store, record.id)
    translator = Translator(
        model, task.source_vocabulary, task.target_vocabulary, max_length=task.targets.length
    )
    expected = translator.translate(TEXTS)
    assert alone == expected[:1]
    assert batch[: len(TEXTS)] == expected


@pytest.mark.large
def test_a_text_without_a_token_translates_to_an_empty_string(served):
    *_, batch = served
    assert batch[len(TEXTS) :] == ["", ""]


@pytest.mark.large
def test_the_savedmodel_carries_both_vocabularies_as_json(served):
    store, record, savedmodel, *_ = served
    task = export.stored_task(store, record.id)
    written = json.loads((savedmodel / "assets.extra" / "vocabularies.json").read_text("utf-8"))
    assert written == {
        "source_vocabulary": task.source_vocabulary.get_config(),
        "target_vocabulary": task.target_vocabulary.get_config(),
    }
