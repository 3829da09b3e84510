"""Alignment heatmaps: which source positions each output step attended to.

Bahdanau, Cho & Bengio (2015) showed what their attention learned by drawing
the weights `α_ij` as an image, one row per output word `i` and one column
per source word `j`, in grey scale from black (0) to white (1) (their
figure 3): a monotone diagonal for English-French, with the swaps where word
order differs. The same picture shows what a pointer network points at: its
rows are the output distributions over the input positions, so a sorted
permutation is one white cell per row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from keras_seq import argument_checks
from keras_seq._extras import import_extra


def plot_alignment(weights, source_tokens, target_tokens, *, ax=None, title=None):
    """Draws an alignment matrix as a grey-scale heatmap, as in Bahdanau et al.'s figure 3.

    Cell `(i, j)` is the weight of source position `j` at output step `i`,

        α_ij ∈ [0, 1],   row i = the attention (or pointer) distribution of step i,

    drawn on a fixed grey scale, `α = 0` black and `α = 1` white, so that
    figures are comparable. The source tokens label the columns along the
    top, the target tokens the rows down the left side, first row at the top.

    Args:
        weights: A 2-D array `(len(target_tokens), len(source_tokens))` of
            finite values in [0, 1]: NumPy, a list of lists or a backend
            tensor, e.g. one sequence of the probabilities that
            `PointerNetwork.decode(..., return_probabilities=True)` returns,
            or the attention scores of an attention layer.
        source_tokens: Labels of the columns (source positions); any values,
            shown with `str()`.
        target_tokens: Labels of the rows (output steps).
        ax: A matplotlib `Axes` to draw on. Default: a new `Figure` (made
            without `pyplot`, so nothing is shown or kept open), sized to the
            matrix.
        title: The axes title; None (default) for none.

    Returns:
        The matplotlib `Figure` holding the axes (with a colour bar).

    Example:

    >>> weights = np.array([[0.9, 0.1, 0.0], [0.0, 0.2, 0.8]])
    >>> figure = plot_alignment(weights, ["le", "chat", "noir"], ["the", "cat"])
    >>> [t.get_text() for t in figure.axes[0].get_xticklabels()]
    ['le', 'chat', 'noir']

    References:
        - Bahdanau, Cho & Bengio, "Neural Machine Translation by Jointly
          Learning to Align and Translate", ICLR 2015, figure 3.
    """
    weights = _check_weights(weights)
    source_tokens = _check_tokens("source_tokens", source_tokens)
    target_tokens = _check_tokens("target_tokens", target_tokens)
    expected = (len(target_tokens), len(source_tokens))
    if weights.shape != expected:
        raise ValueError(
            f"`weights` has shape {weights.shape} (output steps, source positions), but the "
            f"tokens give shape {expected}: {len(target_tokens)} `target_tokens` (rows) by "
            f"{len(source_tokens)} `source_tokens` (columns)."
        )
    if title is not None and not isinstance(title, str):
        raise argument_checks.invalid("title", "a string or None", title)

    if ax is None:
        figures = import_extra("matplotlib.figure", "app", "keras_seq.diagnostics.plot_alignment")
        rows, columns = weights.shape
        size = (min(2.0 + 0.45 * columns, 20.0), min(1.5 + 0.45 * rows, 20.0))
        figure = figures.Figure(figsize=size, layout="constrained")
        ax = figure.add_subplot()
    image = ax.imshow(
        weights, cmap="gray", vmin=0.0, vmax=1.0, interpolation="nearest", aspect="equal"
    )
    ax.set_xticks(np.arange(len(source_tokens)), labels=source_tokens, rotation=90)
    ax.set_yticks(np.arange(len(target_tokens)), labels=target_tokens)
    ax.xaxis.tick_top()
    ax.xaxis.set_label_position("top")
    ax.tick_params(length=0)
    ax.set_xlabel("source")
    ax.set_ylabel("output")
    if title is not None:
        ax.set_title(title)
    ax.figure.colorbar(image, ax=ax, label="weight")
    return ax.figure


def _check_weights(weights):
    try:
        array = np.asarray(weights, dtype=np.float64)
    except (TypeError, ValueError):
        raise argument_checks.invalid(
            "weights", "a 2-D array of numbers", _short(weights)
        ) from None
    if array.ndim != 2 or 0 in array.shape:
        raise ValueError(
            "Received an invalid value for argument `weights`, expected a non-empty 2-D array "
            f"(output steps, source positions), got shape {array.shape}."
        )
    if not np.all(np.isfinite(array)):
        raise ValueError(
            "Received an invalid value for argument `weights`, expected finite values, got "
            f"{int(np.sum(~np.isfinite(array)))} NaN or infinite values."
        )
    if array.min() < 0.0 or array.max() > 1.0:
        raise ValueError(
            "Received an invalid value for argument `weights`, expected values in [0, 1] (the "
            f"colour scale is fixed), got values from {array.min():g} to {array.max():g}."
        )
    return array


def _check_tokens(name, tokens):
    if isinstance(tokens, np.ndarray):
        tokens = tokens.tolist() if tokens.ndim == 1 else tokens
    if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Sequence):
        raise argument_checks.invalid(name, "a list of tokens", _short(tokens))
    return [str(token) for token in tokens]


def _short(value):
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
