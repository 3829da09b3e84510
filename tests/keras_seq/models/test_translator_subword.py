"""A `Translator` with subword vocabularies: text in, written text out, `.keras` round trip.

The model has random weights, so its translations are gibberish but exactly
defined: each must equal the greedy decoder's ids for that text alone,
decoded by joining the pieces ("▁" → space) as written out here; the reloaded
translator (a fresh process, `safe_mode=True`) must give the same strings. The subword
SavedModel, its pieces cut and joined in the graph and served by TensorFlow alone, is proved
in tests/builder_ui/results/test_export.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
from keras import ops

pytest.importorskip("sentencepiece")

from keras_seq.models import Translator, compile_decoder, seq2seq
from keras_seq.tasks import SubwordVocabulary, Vocabulary

agnostic = pytest.mark.backend_agnostic

ENGLISH = ["I am tired.", "He is tired.", "The man is here.", "I am cold.", "We are tired."]
FRENCH = [
    "Je suis fatigué.",
    "Il est fatigué.",
    "L'homme est là.",
    "J'ai froid.",
    "Nous sommes las.",
]
TEXTS = ["I am here.", "The man is cold.", "we are tired"]
MAX_LENGTH = 12


@pytest.fixture(scope="module")
def translator():
    source = SubwordVocabulary.train(ENGLISH, 40, "bpe")
    target = SubwordVocabulary.train(FRENCH, 30, "unigram")
    keras.utils.set_random_seed(3)
    model = seq2seq(len(source), len(target), cell="gru", attention="bahdanau", units=8)
    return Translator(model, source, target, max_length=MAX_LENGTH)


def _written(vocabulary, ids):
    """The pieces up to END joined, "▁" a space: decoding written out independently."""
    pieces = []
    for i in ids:
        if i == Vocabulary.END:
            break
        if i not in (Vocabulary.PAD, Vocabulary.START):
            pieces.append("<unk>" if i == Vocabulary.UNK else vocabulary.tokens[i])
    return "".join(pieces).replace("\u2581", " ").strip()


@agnostic
def test_translations_are_the_greedy_pieces_joined_as_text(translator):
    decode = compile_decoder(translator.model, MAX_LENGTH)
    translations = translator.translate(TEXTS, batch_size=2)
    for text, translation in zip(TEXTS, translations, strict=True):
        source = np.asarray([translator.source_vocabulary.encode(text)], dtype=np.int32)
        result = decode(source)
        length = int(ops.convert_to_numpy(result.lengths)[0])
        ids = ops.convert_to_numpy(result.ids)[0, :length].tolist()
        assert translation == _written(translator.target_vocabulary, ids)
    _, alignment = translator.translate(TEXTS[0], return_attention=True)
    assert alignment.source_tokens == translator.source_vocabulary.tokenize(TEXTS[0])


def test_saved_translator_reloads_in_a_fresh_process_with_its_subword_vocabularies(
    translator, tmp_path
):
    path = tmp_path / "translator.keras"
    translator.save(path)
    expected = translator.translate(TEXTS)
    script = f"""
        import json, keras
        import keras_seq  # registers the classes
        translator = keras.saving.load_model({str(path)!r}, safe_mode=True)
        print(json.dumps({{
            "types": [type(translator.source_vocabulary).__name__,
                      type(translator.target_vocabulary).__name__],
            "models": [translator.source_vocabulary.model_type,
                       translator.target_vocabulary.model_type],
            "translations": translator.translate({TEXTS!r}),
        }}))
        """
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    reloaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert reloaded["types"] == ["SubwordVocabulary", "SubwordVocabulary"]
    assert reloaded["models"] == ["bpe", "unigram"]
    assert reloaded["translations"] == expected
