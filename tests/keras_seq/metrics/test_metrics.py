"""BLEU (through SacreBLEU), exact match, token accuracy and BLEU by sentence length.

The hand-computed BLEU below follows Papineni et al. (2002) in NumPy, an
independent check of how `corpus_bleu` calls SacreBLEU. The translators are
dictionaries of translations: test fixtures standing in for a model, which
is not what these tests are about.
"""

import collections
import math

import numpy as np
import pandas as pd
import pytest

from keras_seq.metrics import (
    corpus_bleu,
    evaluate_by_length,
    exact_match,
    length_buckets,
    plot_bleu_by_length,
    text_token_accuracy,
    token_accuracy,
)
from keras_seq.models import Beam, Greedy
from keras_seq.tasks import Vocabulary, toy_translation

# ------------------------------------------------------------------------------------- BLEU


def _ngrams(tokens, n):
    return collections.Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def _bleu_by_hand(hypotheses, references):
    """Corpus BLEU-4, one reference each, uniform weights, no smoothing (every order matches)."""
    matches, totals = np.zeros(4), np.zeros(4)
    hyp_length = ref_length = 0
    for hypothesis, reference in zip(hypotheses, references, strict=True):
        hyp, ref = hypothesis.split(), reference.split()
        hyp_length += len(hyp)
        ref_length += len(ref)
        for n in range(1, 5):
            counts, ref_counts = _ngrams(hyp, n), _ngrams(ref, n)
            matches[n - 1] += sum(min(c, ref_counts[g]) for g, c in counts.items())
            totals[n - 1] += max(len(hyp) - n + 1, 0)
    assert np.all(matches > 0)
    brevity = min(1.0, math.exp(1 - ref_length / hyp_length))
    return 100 * brevity * math.exp(np.mean(np.log(matches / totals)))


def test_bleu_of_a_perfect_corpus_is_100_and_of_a_disjoint_one_is_0():
    references = ["le chat noir dort .", "les maisons blanches ."]
    assert corpus_bleu(references, references) == 100.0
    assert corpus_bleu(["un deux trois quatre", "cinq six"], references) == 0.0


@pytest.mark.parametrize(
    ("hypotheses", "references"),
    [
        (
            ["the cat sat on the mat", "a dog ran in the park today"],
            ["the cat sat on a mat", "a dog ran in the big park"],
        ),
        # Shorter than the references: the brevity penalty applies.
        (
            ["le chat noir dort", "la maison blanche est grande"],
            ["le chat noir dort sur la table .", "la maison blanche est très grande ."],
        ),
    ],
)
def test_bleu_matches_the_formula_computed_by_hand(hypotheses, references):
    expected = _bleu_by_hand(hypotheses, references)
    assert 0 < expected < 100
    assert corpus_bleu(hypotheses, references) == pytest.approx(expected, abs=1e-9)


def test_bleu_takes_several_references_per_sentence():
    hypotheses = ["le chat dort", "va !"]
    one = corpus_bleu(hypotheses, ["le chat noir dort", "marche ."])
    several = corpus_bleu(hypotheses, [["le chat noir dort", "le chat dort"], ["va !"]])
    assert several == 100.0 and one < 100.0


def test_bleu_of_outputs_shorter_than_four_tokens_uses_the_orders_they_hold():
    hypotheses, references = ["le chat dort", "va !"], ["le chat dort", "va !"]
    assert corpus_bleu(hypotheses, references) == 100.0
    # Plain BLEU-4 has no 4-gram to count and gives 0.
    assert corpus_bleu(hypotheses, references, effective_order=False) == 0.0
    # With every order present it changes nothing.
    long_h, long_r = ["the cat sat on the mat"], ["the cat sat on a mat"]
    assert corpus_bleu(long_h, long_r) == corpus_bleu(long_h, long_r, effective_order=False)


def test_bleu_scores_the_tokens_as_given_unless_a_tokenizer_is_named():
    # "peut-être" is one Vocabulary token; the reference was cut differently.
    hypotheses, references = ["il dort peut-être ."], ["il dort peut - être ."]
    assert corpus_bleu(hypotheses, references) < 100.0
    assert corpus_bleu(hypotheses, references, tokenize="intl") == 100.0


def test_bleu_refuses_bad_input():
    with pytest.raises(ValueError, match="`hypotheses` holds 1 strings but `references` 2"):
        corpus_bleu(["a"], ["a", "b"])
    with pytest.raises(ValueError, match="`hypotheses`, expected a non-empty list"):
        corpus_bleu([], [])
    with pytest.raises(ValueError, match="expected strings, got 3 at position 1"):
        corpus_bleu(["a", 3], ["a", "b"])
    with pytest.raises(ValueError, match="`tokenize`, expected one of"):
        corpus_bleu(["a"], ["a"], tokenize="moses")


def test_exact_match_compares_tokens_not_spacing():
    hypotheses = ["le chat", "la  maison ", "les chats", "Le chat"]
    references = ["le chat", "la maison", "les chiens", "le chat"]
    assert exact_match(hypotheses, references) == 0.5


# ------------------------------------------------------------------------------ token accuracy


def test_token_accuracy_counts_only_non_padding_target_positions():
    target = np.array([[5, 6, 7, 2, 0, 0], [8, 2, 0, 0, 0, 0]])
    predicted = np.array([[5, 9, 7, 2, 4, 4], [8, 8, 2, 0, 3, 3]])
    # Row 0: 3 of 4 right (6 missed); row 1: 1 of 2 (END missed). The rest is padding.
    assert token_accuracy(predicted, target) == pytest.approx(4 / 6)
    assert token_accuracy(predicted.tolist(), target.tolist()) == pytest.approx(4 / 6)


def test_token_accuracy_aligns_widths_and_reads_probabilities():
    target = np.array([[5, 6, 7, 2]])
    assert token_accuracy([[5, 6]], target) == 0.5  # missing positions are wrong
    assert token_accuracy([[5, 6, 7, 2, 9, 9, 9]], target) == 1.0  # extra ones ignored
    probabilities = np.full((1, 4, 10), 0.01, dtype=np.float32)
    probabilities[0, np.arange(4), [5, 6, 1, 2]] = 0.9
    assert token_accuracy(probabilities, target) == 0.75
    # A custom padding id, and one sequence as a 1-D array.
    assert token_accuracy([4, 4, 1], [4, 5, -1], pad=-1) == 0.5


def test_token_accuracy_refuses_bad_input():
    with pytest.raises(ValueError, match="only padding"):
        token_accuracy([[1, 2]], [[0, 0]])
    with pytest.raises(ValueError, match="holds 2 sequences but `target_ids` 1"):
        token_accuracy([[1], [2]], [[1]])
    with pytest.raises(ValueError, match="`target_ids`, expected integer ids"):
        token_accuracy([[1]], [[1.5]])


def test_text_token_accuracy_counts_an_end_position():
    # 4 positions (3 tokens and END): "le" and "noir" right, END right, "chien" wrong.
    assert text_token_accuracy(["le chat noir"], ["le chien noir"]) == 0.75
    # Stopping early misses the remaining tokens and END: 1 of 3.
    assert text_token_accuracy(["le"], ["le chat"]) == pytest.approx(1 / 3)
    # Writing on past the reference's END misses END only: 2 of 3.
    assert text_token_accuracy(["le chat noir"], ["le chat"]) == pytest.approx(2 / 3)


# --------------------------------------------------------------------------- BLEU by length


class DictTranslator:
    """A stand-in for a trained model: looks each sentence up in a dict of translations."""

    def __init__(self, translations):
        self.translations = translations
        self.calls = []

    def translate(self, texts, **kwargs):
        self.calls.append((len(texts), kwargs))
        return [self.translations.get(text, "") for text in texts]


def test_length_buckets_from_edges_pairs_or_a_default():
    assert length_buckets([0, 10, 20, 40]) == [(1, 10), (11, 20), (21, 40)]
    assert length_buckets([(1, 5), (6, 6), (10, 30)]) == [(1, 5), (6, 6), (10, 30)]
    assert length_buckets(None, longest=25) == [(1, 10), (11, 20), (21, 30)]
    for bad in ([10], [0, 10, 10], [(5, 1)], [(1, 10), (10, 20)], "1-10", [(1, 2, 3)]):
        with pytest.raises(ValueError, match="`buckets`"):
            length_buckets(bad)


def test_evaluate_by_length_scores_each_bucket_separately():
    pairs = [
        ("a b", "x y"),
        ("a b c", "x y z"),
        ("a b c d e", "u v w x y"),
        ("a b c d e f", "u v w x y z"),
        ("a b c d e f g h i j", "k l m n o p q r s t"),
    ]
    translations = {
        "a b": "x y",
        "a b c": "x y z",
        "a b c d e": "u v w x q",  # one wrong token
        "a b c d e f": "u v w x y z",
        # The longest sentence is left untranslated: "".
    }
    translator = DictTranslator(translations)
    frame = evaluate_by_length(
        translator, pairs, [0, 3, 6, 12], batch_size=2, translate_kwargs={"beam_width": 3}
    )
    assert list(frame.columns) == [
        "bucket",
        "min_length",
        "max_length",
        "n",
        "bleu",
        "exact_match",
        "token_accuracy",
    ]
    assert frame["bucket"].tolist() == ["1-3", "4-6", "7-12"]
    assert frame["n"].tolist() == [2, 2, 1]
    assert frame["exact_match"].tolist() == [1.0, 0.5, 0.0]
    assert frame["bleu"].iloc[0] == 100.0 and frame["bleu"].iloc[2] == 0.0
    middle = corpus_bleu(["u v w x q", "u v w x y z"], ["u v w x y", "u v w x y z"])
    assert frame["bleu"].iloc[1] == pytest.approx(middle)
    # Bucket 2: 5 + 1 and 6 + 1 positions, one wrong; bucket 3: nothing written, 0 of 11.
    assert frame["token_accuracy"].tolist() == pytest.approx([1.0, 12 / 13, 0.0])
    # Five sentences in batches of at most 2, with the extra arguments.
    assert translator.calls == [(2, {"beam_width": 3})] * 2 + [(1, {"beam_width": 3})]


def test_evaluate_by_length_passes_its_decoding_to_every_translate_call():
    pairs = [("a b", "x y"), ("a b c", "x y z"), ("a", "x")]
    translator = DictTranslator({"a b": "x y"})
    beam = Beam(width=3, length_penalty=0.5)
    evaluate_by_length(translator, pairs, [0, 3], batch_size=2, decoding=beam)
    assert translator.calls == [(2, {"decoding": beam}), (1, {"decoding": beam})]
    with pytest.raises(ValueError, match=r"`translate_kwargs`.*'decoding'"):
        evaluate_by_length(
            translator, pairs, decoding=beam, translate_kwargs={"decoding": Greedy()}
        )


def test_evaluate_by_length_compares_tokens_lowercased_and_leaves_empty_buckets_nan():
    pairs = [("Le chat, noir!", "The cat, black!")]
    frame = evaluate_by_length(
        DictTranslator({"Le chat, noir!": "the cat , black !"}), pairs, [0, 4, 8]
    )
    assert frame["n"].tolist() == [0, 1]
    assert frame[["bleu", "exact_match", "token_accuracy"]].iloc[0].isna().all()
    assert frame["bleu"].iloc[1] == 100.0 and frame["exact_match"].iloc[1] == 1.0


@pytest.fixture(scope="module")
def toy_task():
    return toy_translation(400, 5, 25, seed=0, validation_split=0.25)


def test_evaluate_by_length_decodes_a_task_validation_split(toy_task):
    sources = [toy_task.source_vocabulary.decode(row) for row in toy_task.x_val]
    references = [toy_task.target_vocabulary.decode(row) for row in toy_task.y_val]
    # Perfect below 16 source tokens, the last word dropped from 16 on.
    translations = {
        source: reference if len(source.split()) < 16 else reference.rsplit(" ", 1)[0]
        for source, reference in zip(sources, references, strict=True)
    }
    frame = evaluate_by_length(DictTranslator(translations), toy_task, [(1, 15), (16, 25)])
    lengths = np.sum(toy_task.x_val != Vocabulary.PAD, axis=1)
    assert frame["n"].tolist() == [int(np.sum(lengths <= 15)), int(np.sum(lengths >= 16))]
    assert frame["n"].sum() == 100
    assert frame["bleu"].iloc[0] == 100.0 and frame["exact_match"].iloc[0] == 1.0
    assert 50.0 < frame["bleu"].iloc[1] < 100.0 and frame["exact_match"].iloc[1] == 0.0


def test_evaluate_by_length_refuses_bad_input(toy_task):
    pairs = [("a", "b")]
    with pytest.raises(ValueError, match="`translator`, expected an object with a translate"):
        evaluate_by_length(object(), pairs)
    with pytest.raises(ValueError, match="must return one string per input sentence"):
        evaluate_by_length(type("Bad", (), {"translate": lambda self, t: "x"})(), pairs)
    with pytest.raises(ValueError, match="expected \\(source, reference\\) string pairs"):
        evaluate_by_length(DictTranslator({}), [("a", 1)])
    with pytest.raises(ValueError, match="`data`, expected a non-empty list"):
        evaluate_by_length(DictTranslator({}), [])


def test_plot_draws_one_curve_per_model_at_bucket_middles():
    buckets = {"bucket": ["1-10", "11-20", "21-30"], "min_length": [1, 11, 21]}
    buckets["max_length"] = [10, 20, 30]
    attention = pd.DataFrame(
        {**buckets, "n": [5, 5, 5], "bleu": [90.0, 88.0, 87.0], "exact_match": [0.5] * 3}
    ).assign(token_accuracy=0.9)
    fixed = attention.assign(bleu=[85.0, 60.0, np.nan])
    figure = plot_bleu_by_length({"attention": attention, "no attention": fixed}, title="BLEU")
    ax = figure.axes[0]
    assert [line.get_label() for line in ax.get_lines()] == ["attention", "no attention"]
    np.testing.assert_allclose(ax.get_lines()[0].get_xdata(), [5.5, 15.5, 25.5])
    np.testing.assert_allclose(ax.get_lines()[1].get_ydata(), [85.0, 60.0, np.nan])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1-10", "11-20", "21-30"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["attention", "no attention"]
    assert ax.get_ylabel() == "BLEU" and ax.get_title() == "BLEU"

    figure = plot_bleu_by_length(attention, metric="token_accuracy")
    assert figure.axes[0].get_legend() is None and figure.axes[0].get_ylim() == (0, 1)
    with pytest.raises(ValueError, match="`results`, expected evaluate_by_length DataFrames"):
        plot_bleu_by_length([("a", attention.drop(columns="bleu"))])
    with pytest.raises(ValueError, match="`metric`, expected one of"):
        plot_bleu_by_length(attention, metric="rouge")


@pytest.mark.parametrize("module_name", ["bleu", "sequence", "by_length"])
def test_docstring_examples_run(module_name):
    import doctest
    import importlib

    module = importlib.import_module(f"keras_seq.metrics.{module_name}")
    result = doctest.testmod(module, globs={"np": np, **vars(module)})
    assert result.attempted > 0 and result.failed == 0
