"""The tokeniser inside a translator's SavedModel (its `translate` signature) cuts text as
keras_seq's Python `tokenize` does. The SavedModel itself, served by TensorFlow alone, is
proved in tests/builder_ui/results/test_export.py."""

from __future__ import annotations

import keras
import pytest

pytestmark = pytest.mark.skipif(
    keras.backend.backend() != "tensorflow",
    reason="the tokeniser is written in TensorFlow ops",
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
