"""Vocabulary: tokenisation, the reserved ids, deterministic building, encoding and decoding.

Expected ids and token orders are worked out by hand from the definitions
(frequency first, then alphabetical; four reserved ids), never read back from
the class.
"""

import json
import unicodedata

import numpy as np
import pytest

from keras_seq.tasks import Vocabulary
from keras_seq.tasks.vocabulary import tokenize


def test_reserved_ids_are_the_same_in_every_vocabulary():
    assert (Vocabulary.PAD, Vocabulary.START, Vocabulary.END, Vocabulary.UNK) == (0, 1, 2, 3)
    for vocab in (Vocabulary([]), Vocabulary(["x", "y"]), Vocabulary.build(["b a a"])):
        assert vocab.tokens[:4] == ["<pad>", "<start>", "<end>", "<unk>"]
    assert len(Vocabulary([])) == 4
    assert Vocabulary(["x", "y"]).token_to_id("x") == 4


def test_tokenize_splits_words_and_punctuation_and_lowercases():
    assert tokenize("The cat, the DOG!") == ["the", "cat", ",", "the", "dog", "!"]
    assert tokenize("The cat", lowercase=False) == ["The", "cat"]
    assert tokenize("  spaced\tout \n words ") == ["spaced", "out", "words"]
    assert tokenize("") == []
    # Words keep inner apostrophes and hyphens; a sentence-final "." is its own token.
    assert tokenize("Don't go; l'homme est peut-être là.") == [
        "don't",
        "go",
        ";",
        "l'homme",
        "est",
        "peut-être",
        "là",
        ".",
    ]


def test_tokenize_is_unicode_aware():
    assert tokenize("Ça, c'est l'Été à Zürich… ¿Qué?") == [
        "ça",
        ",",
        "c'est",
        "l'été",
        "à",
        "zürich",
        "…",
        "¿",
        "qué",
        "?",
    ]
    assert tokenize("Москва — столица") == ["москва", "—", "столица"]
    # A decomposed "é" (e + combining accent) is the same token as the precomposed one.
    decomposed = unicodedata.normalize("NFD", "été")
    assert len(decomposed) == 5
    assert tokenize(decomposed) == ["été"]


def test_build_orders_by_count_then_alphabetically():
    texts = ["b a c a", "c d a", "e b"]
    # Counts: a 3, b 2, c 2, d 1, e 1 -> a, then b and c (tie, alphabetical), then d, e.
    vocab = Vocabulary.build(texts)
    assert vocab.tokens[4:] == ["a", "b", "c", "d", "e"]
    assert [vocab.token_to_id(t) for t in "abcde"] == [4, 5, 6, 7, 8]
    # The order of the texts does not matter.
    assert Vocabulary.build(list(reversed(texts))) == vocab


def test_build_max_size_counts_the_specials_and_min_count_drops_rare_tokens():
    texts = ["b a c a", "c d a", "e b"]
    assert Vocabulary.build(texts, max_size=6).tokens[4:] == ["a", "b"]
    assert len(Vocabulary.build(texts, max_size=6)) == 6
    assert Vocabulary.build(texts, max_size=4).tokens == list(Vocabulary.SPECIAL_TOKENS)
    assert Vocabulary.build(texts, min_count=2).tokens[4:] == ["a", "b", "c"]
    assert Vocabulary.build(texts, min_count=4).tokens[4:] == []


def test_build_lowercases_unless_asked_not_to():
    assert Vocabulary.build(["The the THE"]).tokens[4:] == ["the"]
    cased = Vocabulary.build(["The the THE the"], lowercase=False)
    assert cased.tokens[4:] == ["the", "THE", "The"]  # 2, then ties by code point
    assert cased.encode("The") == [6]
    assert cased.encode("tHe") == [Vocabulary.UNK]


def test_encode_maps_unknown_words_to_unk_and_appends_end_on_request():
    vocab = Vocabulary(["le", "chat", "noir", "."])
    assert vocab.encode("Le chat noir.") == [4, 5, 6, 7]
    assert vocab.encode("le chien noir", add_end=True) == [4, 3, 6, 2]
    assert vocab.encode("") == []


def test_encode_batch_right_pads_with_pad_as_int32():
    vocab = Vocabulary(["a", "b", "c"])
    batch = vocab.encode_batch(["a b c", "b", "c a"])
    assert batch.dtype == np.int32
    np.testing.assert_array_equal(batch, [[4, 5, 6], [5, 0, 0], [6, 4, 0]])
    batch = vocab.encode_batch(["a b", "zz"], 5, add_end=True)
    np.testing.assert_array_equal(batch, [[4, 5, 2, 0, 0], [3, 2, 0, 0, 0]])
    assert vocab.encode_batch([]).shape == (0, 0)


def test_encode_batch_refuses_or_truncates_a_text_longer_than_length():
    vocab = Vocabulary(["a", "b", "c"])
    with pytest.raises(
        ValueError, match=r"text 1 \('a b c'\) encodes to 4 ids, more than length=3"
    ):
        vocab.encode_batch(["a", "a b c"], 3, add_end=True)
    np.testing.assert_array_equal(
        vocab.encode_batch(["a b c"], 3, add_end=True, truncate=True), [[4, 5, 2]]
    )
    np.testing.assert_array_equal(vocab.encode_batch(["a b c"], 2, truncate=True), [[4, 5]])


def test_decode_stops_at_end_and_skips_pad_and_start():
    vocab = Vocabulary(["le", "chat", "noir"])
    assert vocab.decode([1, 4, 5, 0, 6, 2, 4, 4]) == "le chat noir"
    assert vocab.decode(np.array([4, 3, 2, 0], dtype=np.int32)) == "le <unk>"
    assert vocab.decode([]) == ""
    with pytest.raises(ValueError, match=r"integer ids in \[0, 7\), got 7"):
        vocab.decode([4, 7])
    with pytest.raises(ValueError, match="1-D"):
        vocab.decode(np.zeros((2, 2), dtype=np.int32))


def test_decoded_text_encodes_back_to_the_same_ids_unk_included():
    vocab = Vocabulary.build(["the black cat sleeps .", "a dog , a cat !"])
    ids = vocab.encode("the black fox sleeps , a cat !")
    assert Vocabulary.UNK in ids
    assert vocab.encode(vocab.decode(ids)) == ids


def test_config_is_json_and_round_trips():
    vocab = Vocabulary.build(["Été à Zürich", "l'été"], lowercase=True)
    config = json.loads(json.dumps(vocab.get_config()))
    # All seen once: code-point order puts ASCII letters before "à" and "é".
    assert config == {"tokens": ["l'été", "zürich", "à", "été"], "lowercase": True}
    restored = Vocabulary.from_config(config)
    assert restored == vocab
    assert restored.encode("l'été à Zürich") == vocab.encode("l'été à Zürich")
    cased = Vocabulary(["A", "a"], lowercase=False)
    assert Vocabulary.from_config(cased.get_config()).encode("A a") == [4, 5]


@pytest.mark.parametrize(
    ("tokens", "match"),
    [
        (["a", "a"], "'a' at position 1 \\(repeated\\)"),
        (["<end>"], "'<end>' at position 0 \\(a reserved special token\\)"),
        (["two words"], "without whitespace, got 'two words' at position 0"),
        (["a", ""], "got '' at position 1"),
        (["a", 3], "got 3 at position 1"),
        ("abc", "expected a list of token strings"),
    ],
)
def test_constructor_rejects_bad_tokens(tokens, match):
    with pytest.raises(ValueError, match=match):
        Vocabulary(tokens)


def test_build_and_encode_reject_bad_arguments():
    with pytest.raises(ValueError, match="`max_size`, expected an integer from 4"):
        Vocabulary.build(["a"], max_size=3)
    with pytest.raises(ValueError, match="`min_count`, expected a positive integer, got 0"):
        Vocabulary.build(["a"], min_count=0)
    with pytest.raises(ValueError, match="expected strings, got 5 at position 1"):
        Vocabulary.build(["a", 5])
    with pytest.raises(ValueError, match="`texts`, expected an iterable of strings"):
        Vocabulary.build("a b c")
    with pytest.raises(ValueError, match="`lowercase`, expected True or False"):
        Vocabulary(["a"], lowercase="yes")
    with pytest.raises(ValueError, match="`text`, expected a string"):
        Vocabulary(["a"]).encode(["a"])
    with pytest.raises(ValueError, match="`length`, expected a positive integer"):
        Vocabulary(["a"]).encode_batch(["a"], 0)
    with pytest.raises(ValueError, match="`config`"):
        Vocabulary.from_config({"tokens": [], "extra": 1})


@pytest.mark.parametrize(
    "module_name",
    [
        "keras_seq.tasks.vocabulary",
        "keras_seq.tasks.sequences",
        "keras_seq.tasks.translation",
        "keras_seq.tasks.parallel_text",
    ],
)
def test_docstring_examples_run(module_name):
    import doctest
    import importlib

    module = importlib.import_module(module_name)
    result = doctest.testmod(module, globs={"np": np, **vars(module)})
    assert result.attempted > 0 and result.failed == 0
