"""Token accuracy: how many target positions a model gets right, padding left out.

For target ids `y` (the sentence, END, then PAD) and predicted ids `ŷ`,

    accuracy = Σ_{i,t} [y_it ≠ PAD] · [ŷ_it = y_it]  /  Σ_{i,t} [y_it ≠ PAD]

so the END position counts (a model must learn where to stop) and what a
model writes after the target's END does not.
"""

from __future__ import annotations

import numpy as np

from keras_seq import argument_checks
from keras_seq.metrics.bleu import _same_length, _strings

_END = "<end>"


def token_accuracy(predicted_ids, target_ids, pad=0):
    """The fraction of non-padding target positions where the prediction is right.

    Args:
        predicted_ids: Integer ids `(n, T')`, e.g. greedy decoder output, or
            per-step probabilities `(n, T', vocab_size)` (their argmax is
            taken). A narrower array counts the missing positions as wrong;
            columns past the target's width are ignored.
        target_ids: Integer ids `(n, T)`, right-padded with `pad`. A 1-D
            array is one sequence (then `predicted_ids` must be 1-D, or 2-D
            probabilities).
        pad: The padding id, left out of the count. Default 0 (PAD).

    Returns:
        A float in [0, 1].

    Example:

    >>> token_accuracy([[5, 6, 2, 9]], [[5, 7, 2, 0]])  # 2 of 3 target tokens
    0.6666666666666666
    """
    target = _int_array("target_ids", target_ids)
    predicted = np.asarray(predicted_ids)
    if predicted.ndim == target.ndim + 1 and np.issubdtype(predicted.dtype, np.floating):
        predicted = predicted.argmax(axis=-1)
    predicted = _int_array("predicted_ids", predicted)
    if target.ndim == 1:  # one sequence
        target = target[None]
        if predicted.ndim == 1:
            predicted = predicted[None]
    if target.ndim != 2 or predicted.ndim != 2:
        raise ValueError(
            "Received an invalid value for argument `target_ids`, expected ids of shape "
            f"(n, T) and predictions of shape (n, T') or (n, T', vocab_size), got "
            f"{np.shape(target_ids)} and {np.shape(predicted_ids)}."
        )
    if len(predicted) != len(target):
        raise ValueError(
            f"`predicted_ids` holds {len(predicted)} sequences but `target_ids` {len(target)}."
        )
    pad = argument_checks.int_in_range("pad", pad, np.iinfo(np.int64).min)
    width = target.shape[1]
    aligned = np.full(target.shape, pad, dtype=np.int64)  # a missing position never matches
    aligned[:, : min(width, predicted.shape[1])] = predicted[:, :width]
    counted = target != pad
    if not counted.any():
        raise ValueError("`target_ids` holds only padding: there is no position to score.")
    return float(np.sum((aligned == target) & counted) / np.sum(counted))


def text_token_accuracy(hypotheses, references):
    """`token_accuracy` on whitespace-separated tokens, an END position included.

    Each reference is read as its tokens followed by an END position, and
    so is each hypothesis; position `t` of a reference is right if the
    hypothesis has the same token there. This is `token_accuracy` on the ids
    a vocabulary holding every word would give, without needing one.

    Args:
        hypotheses: A sequence of output strings.
        references: One reference string per hypothesis.

    Returns:
        A float in [0, 1].

    Example:

    >>> text_token_accuracy(["le chat noir"], ["le chien noir"])  # le, noir, END of 4
    0.75
    """
    hypotheses = _strings("hypotheses", hypotheses)
    references = _strings("references", references)
    _same_length(hypotheses, references)
    right = total = 0
    for hypothesis, reference in zip(hypotheses, references, strict=True):
        hyp = [*hypothesis.split(), _END]
        ref = [*reference.split(), _END]
        right += sum(h == r for h, r in zip(hyp, ref, strict=False))
        total += len(ref)
    return right / total


def _int_array(name, values):
    """NumPy, a list of lists or a backend tensor, as int64."""
    if isinstance(values, (str, bytes)):
        raise argument_checks.invalid(name, "an array of integer ids", values)
    try:
        array = np.asarray(values)
    except (TypeError, ValueError):
        raise argument_checks.invalid(name, "a rectangular array of integer ids", "…") from None
    if array.size and not np.issubdtype(array.dtype, np.integer):
        raise ValueError(
            f"Received an invalid value for argument `{name}`, expected integer ids, got an "
            f"array of dtype {array.dtype}."
        )
    return array.astype(np.int64)
