"""A `Translator` with subword vocabularies: text in, written text out, `.keras` round trip.

The model has random weights, so its translations are gibberish but exactly
defined: each must equal the greedy decoder's ids for that text alone,
decoded by joining the pieces ("▁" → space) as written out here; the reloaded
translator (a fresh process, `safe_mode=True`; tests/keras_seq/models/test_saved_models.py)
must give the same strings. The subword
SavedModel, its pieces cut and joined in the graph and served by TensorFlow alone, is proved
in tests/builder_ui/results/test_export.py.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
from keras import ops

pytest.importorskip("sentencepiece")

from keras_seq.models import Translator, compile_decoder, seq2seq
from keras_seq.tasks import SubwordVocabulary, Vocabulary

# Under JAX each test compiles its models with XLA: 5-20 s each, so the file is large there.
pytestmark = pytest.mark.large_on("jax")

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


def make_translator():
    """A Translator over a BPE source and a unigram target vocabulary, random weights."""
    source = SubwordVocabulary.train(ENGLISH, 40, "bpe")
    target = SubwordVocabulary.train(FRENCH, 30, "unigram")
    keras.utils.set_random_seed(3)
    model = seq2seq(len(source), len(target), cell="gru", attention="bahdanau", units=8)
    return Translator(model, source, target, max_length=MAX_LENGTH)


@pytest.fixture(scope="module")
def translator():
    return make_translator()


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
