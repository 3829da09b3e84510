"""BLEU by source sentence length: where the fixed-vector bottleneck shows.

Bahdanau, Cho & Bengio (2015, figure 2) plotted BLEU against the length of
the source sentence: an encoder–decoder that squeezes the source into one
vector falls off as sentences grow, an attention model does not.
`evaluate_by_length` computes that curve for any translator (BLEU, exact
match and token accuracy per length bucket) and `plot_bleu_by_length` draws
it, several models on one axes.

Both sides are compared as tokens: the text is cut with
`keras_seq.tasks.vocabulary.tokenize` (lowercased by default) and the tokens
joined by single spaces before scoring, so a raw reference ("Le chat, noir!")
and a model's output ("le chat , noir !") meet on equal terms; BLEU is then
computed by SacreBLEU without a further tokeniser (see `corpus_bleu`).
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Mapping, Sequence

import numpy as np

from keras_seq import argument_checks
from keras_seq._extras import import_extra
from keras_seq.metrics.bleu import corpus_bleu, exact_match
from keras_seq.metrics.sequence import text_token_accuracy
from keras_seq.tasks.base import TaskData
from keras_seq.tasks.vocabulary import Vocabulary, tokenize

# Metrics a bucket row holds, in column order, and their axis labels.
METRICS = {
    "bleu": "BLEU",
    "exact_match": "exact match",
    "token_accuracy": "token accuracy",
}


def length_buckets(buckets, longest=None):
    """Normalises a bucket description into a list of inclusive `(low, high)` length ranges.

    Args:
        buckets: One of
            - a list of `(low, high)` pairs: inclusive ranges of source
              lengths, e.g. `[(1, 10), (11, 20)]`, non-overlapping, in
              increasing order;
            - a list of at least two increasing integer edges, read as pandas'
              `cut` reads them (each range includes its right edge, not its
              left): `[0, 10, 20, 30, 40]` → 1–10, 11–20, 21–30, 31–40;
            - None: ranges of 10 tokens, 1–10, 11–20, …, up to `longest`.
        longest: The longest length to cover when `buckets` is None.

    Returns:
        A list of `(low, high)` integer pairs, `0 ≤ low ≤ high`.

    Example:

    >>> length_buckets([0, 10, 20])
    [(1, 10), (11, 20)]
    """
    if buckets is None:
        longest = argument_checks.positive_int("longest", longest)
        return [(low, low + 9) for low in range(1, longest + 1, 10)]
    if isinstance(buckets, (str, bytes)) or not isinstance(buckets, Sequence) or not buckets:
        raise argument_checks.invalid(
            "buckets", "a list of (low, high) pairs, a list of edges, or None", buckets
        )
    if all(_is_int(edge) for edge in buckets):
        edges = [int(edge) for edge in buckets]
        if len(edges) < 2 or edges[0] < 0 or any(b <= a for a, b in itertools.pairwise(edges)):
            raise argument_checks.invalid(
                "buckets", "at least two strictly increasing non-negative edges", buckets
            )
        return [(low + 1, high) for low, high in itertools.pairwise(edges)]
    ranges = []
    for pair in buckets:
        if (
            not isinstance(pair, (tuple, list))
            or len(pair) != 2
            or not all(_is_int(v) for v in pair)
            or not 0 <= pair[0] <= pair[1]
        ):
            raise argument_checks.invalid(
                "buckets", "(low, high) integer pairs with 0 ≤ low ≤ high", pair
            )
        if ranges and pair[0] <= ranges[-1][1]:
            raise argument_checks.invalid(
                "buckets", "non-overlapping (low, high) pairs in increasing order", buckets
            )
        ranges.append((int(pair[0]), int(pair[1])))
    return ranges


def evaluate_by_length(
    translator,
    data,
    buckets=None,
    *,
    batch_size=256,
    lowercase=True,
    decoding=None,
    translate_kwargs=None,
):
    """Scores a translator per source-length bucket: BLEU, exact match, token accuracy.

    Args:
        translator: Any object with `translate(list[str]) -> list[str]`,
            e.g. a `keras_seq.models.Translator`.
        data: The sentences to translate: a list of `(source, reference)`
            string pairs, or a sequence-to-sequence `TaskData`, whose
            validation split is decoded with its vocabularies (words the
            training split lacked read `<unk>` on both sides).
        buckets: Source-length ranges, in tokens: `(low, high)` pairs, edges,
            or None for ranges of 10 (see `length_buckets`). Sentences in no
            bucket are left out.
        batch_size: Sentences per `translate` call. Default 256.
        lowercase: Whether to lowercase both sides before scoring (and when
            counting source tokens). Default True, as `Vocabulary` does.
        decoding: How the translator decodes, passed to it as
            `translate(texts, decoding=...)`: `keras_seq.models.Greedy()`,
            `Beam(...)` or `Sample(...)` for a `Translator`; None (the
            default) calls `translate(texts)` alone.
        translate_kwargs: Other keyword arguments for `translate`, or None.

    Returns:
        A pandas DataFrame with one row per bucket and the columns `bucket`
        (e.g. `"31-40"`), `min_length`, `max_length`, `n` (sentences),
        `bleu` (corpus BLEU of the bucket, 0–100), `exact_match` and
        `token_accuracy` (`text_token_accuracy`, 0–1); NaN scores for an
        empty bucket.

    Example:

    >>> class Echo:  # a "translator" that copies its input
    ...     def translate(self, texts):
    ...         return list(texts)
    >>> pairs = [("a b", "a b"), ("a b c d", "a b c e")]
    >>> evaluate_by_length(Echo(), pairs, [(1, 2), (3, 4)])[["bucket", "n", "exact_match"]]
      bucket  n  exact_match
    0    1-2  1          1.0
    1    3-4  1          0.0

    References:
        - Bahdanau, Cho & Bengio, "Neural Machine Translation by Jointly
          Learning to Align and Translate", ICLR 2015, figure 2.
    """
    if not callable(getattr(translator, "translate", None)):
        raise argument_checks.invalid(
            "translator", "an object with a translate(list[str]) method", translator
        )
    batch_size = argument_checks.positive_int("batch_size", batch_size)
    lowercase = argument_checks.boolean("lowercase", lowercase)
    if translate_kwargs is None:
        translate_kwargs = {}
    if not isinstance(translate_kwargs, Mapping):
        raise argument_checks.invalid("translate_kwargs", "a dict or None", translate_kwargs)
    if decoding is not None:
        if "decoding" in translate_kwargs:
            raise argument_checks.invalid(
                "translate_kwargs", "no 'decoding' beside the argument `decoding`", translate_kwargs
            )
        translate_kwargs = {**translate_kwargs, "decoding": decoding}
    sources, references = _sentences(data)
    # Before the translations: a missing pandas is said first, not after every batch.
    pd = import_extra("pandas", "app", "keras_seq.metrics.evaluate_by_length")
    lengths = np.array([len(tokenize(s, lowercase=lowercase)) for s in sources])
    ranges = length_buckets(buckets, longest=int(lengths.max()))

    bucket_of = np.full(len(sources), -1)
    for b, (low, high) in enumerate(ranges):
        bucket_of[(lengths >= low) & (lengths <= high)] = b
    chosen = np.flatnonzero(bucket_of >= 0)
    hypotheses = {}
    for start in range(0, len(chosen), batch_size):
        rows = chosen[start : start + batch_size]
        outputs = translator.translate([sources[i] for i in rows], **translate_kwargs)
        if (
            isinstance(outputs, str)
            or not isinstance(outputs, Sequence)
            or len(outputs) != len(rows)
            or not all(isinstance(o, str) for o in outputs)
        ):
            raise ValueError(
                f"`translator.translate` must return one string per input sentence; for "
                f"{len(rows)} sentences it returned {_describe(outputs)}."
            )
        for i, output in zip(rows, outputs, strict=True):
            hypotheses[i] = _normalise(output, lowercase)

    records = []
    for b, (low, high) in enumerate(ranges):
        rows = np.flatnonzero(bucket_of == b)
        record = {"bucket": f"{low}-{high}", "min_length": low, "max_length": high, "n": len(rows)}
        if len(rows):
            hyps = [hypotheses[i] for i in rows]
            refs = [_normalise(references[i], lowercase) for i in rows]
            record["bleu"] = corpus_bleu(hyps, refs, tokenize="none")
            record["exact_match"] = exact_match(hyps, refs)
            record["token_accuracy"] = text_token_accuracy(hyps, refs)
        else:
            record.update(dict.fromkeys(METRICS, math.nan))
        records.append(record)
    columns = ["bucket", "min_length", "max_length", "n", *METRICS]
    return pd.DataFrame.from_records(records, columns=columns)


def plot_bleu_by_length(results, ax=None, *, metric="bleu", title=None):
    """Draws a score against source sentence length, one line per model.

    Each bucket is plotted at the middle of its length range; empty buckets
    leave a gap.

    Args:
        results: One `evaluate_by_length` DataFrame, or several to compare:
            a dict `{label: DataFrame}` or a list of `(label, DataFrame)`.
        ax: A matplotlib `Axes` to draw on. Default: a new `Figure` (made
            without `pyplot`, so nothing is shown or kept open).
        metric: The column to plot: `"bleu"` (default), `"exact_match"` or
            `"token_accuracy"`.
        title: The axes title; None (default) for none.

    Returns:
        The matplotlib `Figure` holding the axes.

    References:
        - Bahdanau, Cho & Bengio, "Neural Machine Translation by Jointly
          Learning to Align and Translate", ICLR 2015, figure 2.
    """
    metric = argument_checks.one_of("metric", metric, tuple(METRICS))
    if title is not None and not isinstance(title, str):
        raise argument_checks.invalid("title", "a string or None", title)
    curves = _labelled(results)
    if ax is None:
        figures = import_extra("matplotlib.figure", "app", "keras_seq.metrics.plot_bleu_by_length")
        figure = figures.Figure(figsize=(6.0, 4.0), layout="constrained")
        ax = figure.add_subplot()
    for label, frame in curves:
        middles = (frame["min_length"] + frame["max_length"]) / 2
        ax.plot(middles, frame[metric], marker="o", label=label)
    reference = curves[0][1]
    ax.set_xticks(
        (reference["min_length"] + reference["max_length"]) / 2, labels=reference["bucket"]
    )
    ax.set_xlabel("source sentence length (tokens)")
    ax.set_ylabel(METRICS[metric])
    if metric == "bleu":
        ax.set_ylim(0, 100)
    else:
        ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    if any(label is not None for label, _ in curves):
        ax.legend()
    if title is not None:
        ax.set_title(title)
    return ax.figure


def _sentences(data):
    """(sources, references) from pairs or a TaskData's validation split."""
    if isinstance(data, TaskData):
        if data.targets.kind != "sequence":
            raise argument_checks.invalid(
                "data", "a TaskData whose targets are of kind 'sequence'", data
            )
        source_vocabulary: Vocabulary = data.source_vocabulary
        target_vocabulary: Vocabulary = data.target_vocabulary
        sources = [source_vocabulary.decode(row) for row in data.x_val]
        references = [target_vocabulary.decode(row) for row in data.y_val]
        return sources, references
    if isinstance(data, (str, bytes)) or not isinstance(data, Sequence) or not data:
        raise argument_checks.invalid(
            "data", "a non-empty list of (source, reference) pairs or a TaskData", data
        )
    for i, pair in enumerate(data):
        if (
            not isinstance(pair, (tuple, list))
            or len(pair) != 2
            or not all(isinstance(side, str) for side in pair)
        ):
            raise ValueError(
                "Received an invalid value for argument `data`, expected (source, reference) "
                f"string pairs, got {pair!r} at position {i}."
            )
    return [s for s, _ in data], [r for _, r in data]


def _labelled(results):
    pd = import_extra("pandas", "app", "keras_seq.metrics.plot_bleu_by_length")
    if isinstance(results, pd.DataFrame):
        curves = [(None, results)]
    elif isinstance(results, Mapping):
        curves = list(results.items())
    elif isinstance(results, Sequence) and not isinstance(results, str):
        curves = list(results)
    else:
        raise argument_checks.invalid(
            "results", "a DataFrame, a dict of DataFrames or (label, DataFrame) pairs", results
        )
    needed = {"bucket", "min_length", "max_length", *METRICS}
    if not curves:
        raise argument_checks.invalid("results", "at least one DataFrame", results)
    for item in curves:
        if (
            not isinstance(item, (tuple, list))
            or len(item) != 2
            or not isinstance(item[1], pd.DataFrame)
            or not needed <= set(item[1].columns)
        ):
            raise ValueError(
                "Received an invalid value for argument `results`, expected evaluate_by_length "
                f"DataFrames (columns {sorted(needed)}), got {_describe(item)}."
            )
    return [(None if label is None else str(label), frame) for label, frame in curves]


def _normalise(text, lowercase):
    return " ".join(tokenize(text, lowercase=lowercase))


def _is_int(value):
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _describe(value):
    if isinstance(value, Sequence) and not isinstance(value, str):
        return f"a {type(value).__name__} of {len(value)} items"
    return repr(type(value))
