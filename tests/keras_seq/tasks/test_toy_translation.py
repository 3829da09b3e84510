"""toy_translation: the grammar's French, its lengths, its split and its vocabularies.

The French expected for sentence-initial noun phrases and short sentences is
rebuilt here from a small hand-written table of French forms and the rules
of French grammar (article by gender and number, elision, "de" before a
plural pre-nominal adjective), independently of the generator's lexicon.
"""

import collections
import itertools
import re

import numpy as np
import pytest

from keras_seq.tasks import (
    Vocabulary,
    split_pairs,
    toy_translation,
    toy_translation_pairs,
)
from keras_seq.tasks.vocabulary import tokenize

# English noun: (gender, French, plural).
NOUNS = {
    "cat": ("m", "chat", False),
    "cats": ("m", "chats", True),
    "house": ("f", "maison", False),
    "houses": ("f", "maisons", True),
    "man": ("m", "homme", False),
    "men": ("m", "hommes", True),
    "island": ("f", "île", False),
    "islands": ("f", "îles", True),
}
# English adjective: (before the noun in French?, {gender+number: French}).
ADJECTIVES = {
    "black": (False, {"ms": "noir", "fs": "noire", "mp": "noirs", "fp": "noires"}),
    "white": (False, {"ms": "blanc", "fs": "blanche", "mp": "blancs", "fp": "blanches"}),
    "happy": (False, {"ms": "heureux", "fs": "heureuse", "mp": "heureux", "fp": "heureuses"}),
    "small": (True, {"ms": "petit", "fs": "petite", "mp": "petits", "fp": "petites"}),
    "big": (True, {"ms": "grand", "fs": "grande", "mp": "grands", "fp": "grandes"}),
}
# Intransitive verbs: English singular, English plural -> French singular, plural.
VERBS = {
    "sleeps": "dort",
    "sleep": "dorment",
    "runs": "court",
    "run": "courent",
    "waits": "attend",
    "wait": "attendent",
}
VOWELS = tuple("aeiouéèêîh")


def _elide(words):
    """le/la/ne + a vowel-initial word -> l'/n' joined to it."""
    out = []
    for word in words:
        if out and out[-1] in ("le", "la", "ne") and word.startswith(VOWELS):
            out[-1] = out[-1][0] + "'" + word
        else:
            out.append(word)
    return out


def _french_noun_phrase(english):
    """French for an English noun phrase from the tables, or None if a word is not in them."""
    determiner, *adjectives, noun = english
    if noun not in NOUNS or not all(a in ADJECTIVES for a in adjectives):
        return None
    gender, french_noun, plural = NOUNS[noun]
    key = gender + ("p" if plural else "s")
    before = [ADJECTIVES[a][1][key] for a in adjectives if ADJECTIVES[a][0]]
    after = [ADJECTIVES[a][1][key] for a in adjectives if not ADJECTIVES[a][0]]
    if determiner == "the":
        article = "les" if plural else {"m": "le", "f": "la"}[gender]
    elif determiner in ("a", "an"):
        article = {"m": "un", "f": "une"}[gender]
    else:  # "some": "des", but "de" before a plural adjective
        article = "de" if before else "des"
    return _elide([article, *before, french_noun, *after])


@pytest.fixture(scope="module")
def short_pairs():
    return toy_translation_pairs(20000, 4, 12, seed=0)


@pytest.fixture(scope="module")
def long_pairs():
    return toy_translation_pairs(1500, 40, 60, seed=1)


def test_sentence_initial_noun_phrases_agree_and_put_adjectives_after_the_noun(short_pairs):
    checked = collections.Counter()
    for english, french in short_pairs:
        words = english.split()
        if words[0] not in ("the", "a", "an", "some"):
            continue
        # The subject noun phrase: determiner, adjectives, noun.
        end = next((i for i, w in enumerate(words[1:4], 1) if w in NOUNS), None)
        if end is None:
            continue
        expected = _french_noun_phrase(words[: end + 1])
        if expected is None:
            continue
        assert french.split()[: len(expected)] == expected, (english, french)
        adjectives = words[1:end]
        checked["all"] += 1
        checked["post-nominal"] += any(not ADJECTIVES[a][0] for a in adjectives)
        checked["pre and post"] += len(adjectives) == 2
        checked["elision"] += expected[0].startswith("l'")
        checked["feminine plural"] += NOUNS[words[end]][0] == "f" and NOUNS[words[end]][2]
        checked["de + adjective"] += expected[0] == "de"
    # Every case was met, often.
    assert checked["all"] >= 500, checked
    assert min(checked.values()) >= 5, checked


def test_short_sentences_conjugate_and_wrap_negation_around_the_verb(short_pairs):
    pattern = re.compile(r"^(the \w+) (does not |doesn't |do not |don't )?(\w+) \.$")
    checked = collections.Counter()
    for english, french in short_pairs:
        match = pattern.match(english)
        if not match or match.group(3) not in VERBS:
            continue
        subject = _french_noun_phrase(match.group(1).split())
        if subject is None:
            continue
        verb = VERBS[match.group(3)] if not match.group(2) else None
        if match.group(2):
            plural = match.group(2) in ("do not ", "don't ")
            verb = VERBS[match.group(3) + ("" if plural else "s")]
            expected = [*subject, *_elide(["ne", verb]), "pas", "."]
        else:
            expected = [*subject, verb, "."]
        assert french.split() == expected, (english, french)
        checked["negated" if match.group(2) else "plain"] += 1
        checked["n'"] += match.group(2) is not None and match.group(3).startswith("wait")
    assert min(checked.values()) >= 3, checked


def _count_relatives(english):
    """(subject relatives, object relatives): "that"/"who" then a verb, or then an article."""
    words = english.split()
    subject = obj = 0
    for word, following in itertools.pairwise(words):
        if word in ("that", "who"):
            if following in ("the", "a", "an", "some"):
                obj += 1
            else:
                subject += 1
    return subject, obj


def test_relative_pronouns_negation_and_conjunctions_are_translated(long_pairs):
    relatives = 0
    for english, french in long_pairs:
        en, fr = english.split(), french.split()
        subject, obj = _count_relatives(english)
        relatives += subject + obj
        assert fr.count("qui") == subject, (english, french)
        # "que"/"qu'..." marks object relatives and the second half of "parce que",
        # "pendant que".
        que = sum(w == "que" or w.startswith("qu'") for w in fr)
        assert que == obj + en.count("because") + en.count("while"), (english, french)
        negations = en.count("not") + en.count("doesn't") + en.count("don't")
        assert fr.count("pas") == negations, (english, french)
        assert sum(w == "ne" or w.startswith("n'") for w in fr) == negations
        assert fr.count("et") == en.count("and") and fr.count("mais") == en.count("but")
    assert relatives >= len(long_pairs)  # long sentences hold relative clauses


def test_french_applies_elision_and_contractions(long_pairs, short_pairs):
    for _, french in long_pairs + short_pairs[:3000]:
        words = french.split()
        for word, following in itertools.pairwise(words):
            if word in ("le", "la", "de", "que", "ne"):
                assert not following.startswith(VOWELS), french
            assert (word, following) not in {("de", "le"), ("de", "les"), ("à", "le"), ("à", "les")}
    joined = " ".join(f for _, f in long_pairs)
    for contraction in (" du ", " au ", " aux ", " des ", " l'", " d'", " qu'", " n'"):
        assert contraction in joined


def test_lengths_are_counted_in_source_tokens_and_stay_in_range(short_pairs, long_pairs):
    for pairs, low, high in ((short_pairs, 4, 12), (long_pairs, 40, 60)):
        lengths = np.array([len(tokenize(english)) for english, _ in pairs])
        assert lengths.min() == low and lengths.max() == high
        # Every length in the range is made.
        assert set(lengths.tolist()) == set(range(low, high + 1))
    # The two sides differ in length in most sentences.
    different = [len(e.split()) != len(f.split()) for e, f in long_pairs]
    assert np.mean(different) > 0.6
    conjunctions = [any(w in e.split() for w in ("and", "but")) for e, _ in long_pairs]
    assert np.mean(conjunctions) > 0.8


def test_sentences_are_distinct_and_each_english_has_one_french():
    translations = collections.defaultdict(set)
    for seed in range(4):
        pairs = toy_translation_pairs(2000, 4, 6, seed=seed)
        assert len({english for english, _ in pairs}) == 2000
        for english, french in pairs:
            translations[english].add(french)
    assert sum(len(t) == 1 for t in translations.values()) == len(translations)
    assert len(translations) < 8000  # the seeds did make the same sentences


def test_same_seed_same_pairs_other_seed_other_pairs():
    assert toy_translation_pairs(300, 5, 30, seed=7) == toy_translation_pairs(300, 5, 30, seed=7)
    assert toy_translation_pairs(300, 5, 30, seed=7) != toy_translation_pairs(300, 5, 30, seed=8)


def test_validation_shares_no_sentence_with_training_and_vocabularies_come_from_training():
    task = toy_translation(3000, 5, 30, seed=2, validation_split=0.2)
    assert (task.num_train, task.num_val) == (2400, 600)
    train_sources = {task.source_vocabulary.decode(row) for row in task.x_train}
    val_sources = {task.source_vocabulary.decode(row) for row in task.x_val}
    assert len(train_sources) == 2400 and len(val_sources) == 600
    assert not train_sources & val_sources

    train, val = split_pairs(toy_translation_pairs(3000, 5, 30, seed=2), 0.2, seed=2)
    assert val_sources == {english for english, _ in val}
    english_tokens = {t for english, _ in train for t in tokenize(english)}
    french_tokens = {t for _, french in train for t in tokenize(french)}
    assert set(task.source_vocabulary.tokens[4:]) == english_tokens
    assert set(task.target_vocabulary.tokens[4:]) == french_tokens
    assert not np.any(task.x_train == Vocabulary.UNK)
    assert not np.any(task.y_train == Vocabulary.UNK)
    # Targets decode back to the French, and each row holds its sentence, END, padding.
    assert {task.target_vocabulary.decode(row) for row in task.y_val} == {f for _, f in val}
    for source, target in zip(task.x_val[:50], task.y_val[:50], strict=True):
        end = int(np.flatnonzero(target == Vocabulary.END)[0])
        assert np.all(target[:end] > Vocabulary.UNK) and np.all(target[end + 1 :] == 0)
        length = int(np.sum(source != Vocabulary.PAD))
        assert 5 <= length <= 30 and np.all(source[length:] == 0)


def test_task_shapes_and_description():
    task = toy_translation(400, 8, 16, seed=0)
    assert task.name == "toy_translation"
    assert task.inputs.kind == "tokens" and task.inputs.length == 16
    assert task.targets.kind == "sequence"
    assert task.y_train.shape[1] == task.targets.length
    assert task.params == {
        "n": 400,
        "min_len": 8,
        "max_len": 16,
        "seed": 0,
        "validation_split": 0.1,
    }
    assert "adjectives after the noun" in task.description


def test_ten_thousand_distinct_pairs_are_made():
    # How fast is benchmarks' business (a timed assertion fails on a busy machine).
    pairs = toy_translation_pairs(10_000, 5, 40, seed=0)
    assert len(pairs) == 10_000
    assert len({source for source, _ in pairs}) == 10_000


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((10, 3, 10), "`min_len`, expected an integer from 4 to 200, got 3"),
        ((10, 12, 10), "`max_len`, expected an integer from 12 to 200, got 10"),
        ((0, 5, 10), "`n`, expected a positive integer"),
        ((2000, 4, 4), "made only \\d+ distinct sentences of 4 to 4 tokens"),
    ],
)
def test_bad_arguments_are_refused(args, match):
    with pytest.raises(ValueError, match=match):
        toy_translation_pairs(*args)


def test_task_refuses_a_split_that_empties_a_side():
    with pytest.raises(ValueError, match="`validation_split`"):
        toy_translation(5, 5, 10, validation_split=0.01)
