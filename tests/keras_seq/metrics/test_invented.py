"""Invented words: the share of output words that no training target holds, counted by hand."""

import collections

import pytest

from keras_seq.metrics.invented import WORD, invented_words

TRAINING = ["Je suis fatigué.", "Aide-nous !", "L'homme dort.", "Aujourd'hui, il pleut."]


def test_a_hand_counted_example():
    outputs = [
        "Je suis fatiguée.",  # je, suis known; fatiguée invented
        "L'ende dort.",  # l'ende invented (l'homme is the only l'… word); dort known
        "aide-nous, aide-moi !",  # aide-nous known; aide-moi invented
        "AUJOURD'HUI il pleut fatiguée",  # all known but fatiguée, invented again
        "!?",  # no word
    ]
    # 3 + 2 + 2 + 4 = 11 words, 4 of them invented.
    share, words = invented_words(outputs, TRAINING)
    assert share == pytest.approx(4 / 11)
    assert words == collections.Counter({"fatiguée": 2, "l'ende": 1, "aide-moi": 1})
    assert words.most_common(1) == [("fatiguée", 2)]


def test_case_does_not_make_a_word_invented_and_invented_words_are_lowercased():
    share, words = invented_words(["JE SUIS", "Chien", "chien"], ["je suis"])
    assert share == pytest.approx(2 / 4)
    assert words == collections.Counter({"chien": 2})


def test_outputs_with_no_word_have_no_invented_share():
    assert invented_words([".", ""], TRAINING) == (0.0, collections.Counter())


def test_every_word_known_gives_zero():
    share, words = invented_words(TRAINING, TRAINING)
    assert share == 0.0
    assert not words


def test_a_word_joins_letters_by_apostrophes_and_hyphens_only():
    assert WORD.findall("Aujourd’hui, peut-être l' homme 42 — c'est-à-dire") == [
        "Aujourd’hui",
        "peut-être",
        "l",
        "homme",
        "42",
        "c'est-à-dire",
    ]


@pytest.mark.parametrize(
    ("outputs", "training_texts"), [("le chat", ["le chat"]), (["le chat"], []), ([1], ["a"])]
)
def test_rejects_anything_but_non_empty_lists_of_strings(outputs, training_texts):
    with pytest.raises(ValueError):
        invented_words(outputs, training_texts)


def test_docstring_example_runs():
    import doctest

    from keras_seq.metrics import invented

    result = doctest.testmod(invented)
    assert result.attempted > 0
    assert result.failed == 0
