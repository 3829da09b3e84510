"""Corpus BLEU through SacreBLEU, and exact match.

BLEU (Papineni et al. 2002) compares the n-grams of the outputs with those of
the references over the whole corpus:

    p_n  = Σ_sentences clipped matching n-grams / Σ_sentences output n-grams
    BP   = min(1, exp(1 − r / c))      r: reference tokens, c: output tokens
    BLEU = 100 · BP · exp( Σ_{n=1..4} ¼ · log p_n )

where "clipped" counts an n-gram at most as often as the reference holds it.
The score is computed by SacreBLEU (Post 2018), not here.

Tokenisation: keras_seq models read and write tokens that a `Vocabulary`
cut (words and punctuation marks, joined by single spaces, lowercased by
default), so the text is already tokenised and SacreBLEU's own tokeniser is
switched off (`tokenize="none"`: split on whitespace only). SacreBLEU's
default, `"13a"`, would cut some of these tokens again (`"<unk>"` into
`"< unk >"`, `"x_y"` into `"x _ y"`), and `"intl"` also cuts `"l'homme"` and
`"peut-être"`, counting n-grams that the model never wrote as units.
Scores computed this way are comparable with each other, not with published
detokenised SacreBLEU scores.
"""

from __future__ import annotations

from collections.abc import Sequence

import sacrebleu

from keras_seq import argument_checks

# The n-gram smoothing: SacreBLEU's default for corpus BLEU ("exp", Chen &
# Cherry 2014, method 3) changes only a score with no matching n-gram of
# some order.
SMOOTH_METHOD = "exp"


def corpus_bleu(hypotheses, references, *, tokenize="none", lowercase=False, effective_order=True):
    """Corpus BLEU of `hypotheses` against `references`, from 0 to 100, by SacreBLEU.

    Args:
        hypotheses: A sequence of output strings, tokens separated by spaces.
        references: One reference string per hypothesis, or one list of
            reference strings per hypothesis (several references; the lists
            may differ in length).
        tokenize: The SacreBLEU tokeniser. Default `"none"`: the text is
            already tokenised (see the module docstring); `"13a"` for raw,
            detokenised text.
        lowercase: Whether SacreBLEU lowercases both sides. Default False.
        effective_order: SacreBLEU's `use_effective_order`: leave out the
            n-gram orders the outputs are too short to hold (a corpus of 2-
            and 3-token outputs has no 4-grams, and BLEU-4 would be 0 however
            good they are). It changes nothing once some output has 4 tokens
            or more. Default True, so that a bucket of short sentences in
            `evaluate_by_length` gets a score.

    Returns:
        The BLEU score as a float in [0, 100].

    Example:

    >>> corpus_bleu(["le chat noir dort ."], ["le chat noir dort ."])
    100.0

    References:
        - Papineni, Roukos, Ward & Zhu, "BLEU: a Method for Automatic
          Evaluation of Machine Translation", ACL 2002.
        - Post, "A Call for Clarity in Reporting BLEU Scores", WMT 2018.
    """
    hypotheses = _strings("hypotheses", hypotheses)
    streams = _reference_streams(references, len(hypotheses))
    argument_checks.one_of("tokenize", tokenize, tuple(sacrebleu.BLEU.TOKENIZERS))
    argument_checks.boolean("lowercase", lowercase)
    argument_checks.boolean("effective_order", effective_order)
    score = sacrebleu.corpus_bleu(
        hypotheses,
        streams,
        tokenize=tokenize,
        lowercase=lowercase,
        smooth_method=SMOOTH_METHOD,
        use_effective_order=effective_order,
        # The text is tokenised on purpose (keras_seq's Vocabulary), so SacreBLEU's
        # "that looks tokenised" warning does not apply.
        force=tokenize == "none",
    )
    # Clamp float noise: a perfect corpus can score 100.00000000000004.
    return min(100.0, max(0.0, float(score.score)))


def exact_match(hypotheses, references):
    """The fraction of hypotheses whose tokens equal their reference's.

    Both sides are compared as whitespace-separated tokens, so spacing does
    not count; case and punctuation do.

    Args:
        hypotheses: A sequence of output strings.
        references: One reference string per hypothesis.

    Returns:
        A float in [0, 1].

    Example:

    >>> exact_match(["le chat", "la  maison "], ["le chat", "la maison blanche"])
    0.5
    """
    hypotheses = _strings("hypotheses", hypotheses)
    references = _strings("references", references)
    _same_length(hypotheses, references)
    equal = sum(h.split() == r.split() for h, r in zip(hypotheses, references, strict=True))
    return equal / len(hypotheses)


def _strings(name, values) -> list[str]:
    if isinstance(values, str) or not isinstance(values, Sequence):
        raise argument_checks.invalid(name, "a list of strings", values)
    values = list(values)
    if not values:
        raise argument_checks.invalid(name, "a non-empty list of strings", values)
    for i, value in enumerate(values):
        if not isinstance(value, str):
            raise ValueError(
                f"Received an invalid value for argument `{name}`, expected strings, got "
                f"{value!r} at position {i}."
            )
    return values


def _same_length(hypotheses, references):
    if len(hypotheses) != len(references):
        raise ValueError(
            f"`hypotheses` holds {len(hypotheses)} strings but `references` "
            f"{len(references)}; they must match one to one."
        )


def _reference_streams(references, count):
    """SacreBLEU's layout: one stream per reference rank, None where a sentence has fewer."""
    if isinstance(references, str) or not isinstance(references, Sequence):
        raise argument_checks.invalid("references", "a list of strings or of lists of strings", "…")
    references = list(references)
    if references and all(isinstance(r, str) for r in references):
        _same_length(range(count), references)
        return [references]
    per_sentence = []
    for i, refs in enumerate(references):
        if isinstance(refs, str):
            refs = [refs]
        if not isinstance(refs, Sequence) or not refs or not all(isinstance(r, str) for r in refs):
            raise ValueError(
                "Received an invalid value for argument `references`, expected a string or a "
                f"non-empty list of strings per hypothesis, got {refs!r} at position {i}."
            )
        per_sentence.append(list(refs))
    _same_length(range(count), per_sentence)
    depth = max(len(refs) for refs in per_sentence)
    return [[refs[k] if k < len(refs) else None for refs in per_sentence] for k in range(depth)]
