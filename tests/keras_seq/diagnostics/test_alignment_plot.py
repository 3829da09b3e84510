"""plot_alignment draws the matrix it is given, labelled as in Bahdanau et al.'s figure 3.

Rows are output steps (target tokens down the left side), columns are source
positions (source tokens along the top), grey scale from black (0) to white
(1). Expected values are the inputs themselves or fixed by the figure's
definition, never read back from the function.
"""

import io
import re

import keras
import matplotlib
import matplotlib.figure
import numpy as np
import pytest

from keras_seq.diagnostics import plot_alignment

matplotlib.use("Agg")

SOURCE = ["the", "agreement", "on", "the", "European", "Economic", "Area"]
TARGET = ["l'", "accord", "sur", "la", "zone"]


def _weights(rows=5, columns=7, seed=0):
    """Random rows that sum to 1, as attention weights do; by default TARGET x SOURCE."""
    scores = np.random.default_rng(seed).standard_normal((rows, columns))
    weights = np.exp(scores)
    return weights / weights.sum(axis=1, keepdims=True)


def _labels(ticks):
    return [tick.get_text() for tick in ticks]


def test_draws_the_given_matrix_once_on_a_new_figure():
    weights = _weights()

    figure = plot_alignment(weights, SOURCE, TARGET)

    assert isinstance(figure, matplotlib.figure.Figure)
    ax = figure.axes[0]
    [image] = ax.get_images()
    np.testing.assert_array_equal(image.get_array(), weights)
    figure.savefig(io.BytesIO(), format="png")


def test_source_tokens_label_the_columns_along_the_top():
    figure = plot_alignment(_weights(), SOURCE, TARGET)
    ax = figure.axes[0]

    assert _labels(ax.get_xticklabels()) == SOURCE
    np.testing.assert_array_equal(ax.get_xticks(), np.arange(len(SOURCE)))
    assert ax.xaxis.get_ticks_position() == "top"
    assert ax.xaxis.get_label_position() == "top"


def test_target_tokens_label_the_rows_first_at_the_top():
    figure = plot_alignment(_weights(), SOURCE, TARGET)
    ax = figure.axes[0]

    assert _labels(ax.get_yticklabels()) == TARGET
    np.testing.assert_array_equal(ax.get_yticks(), np.arange(len(TARGET)))
    bottom, top = ax.get_ylim()
    assert top < bottom  # row 0 (the first output step) is drawn at the top


def test_grey_scale_is_fixed_from_black_at_zero_to_white_at_one():
    # A matrix that spans only 0.2-0.3 is still drawn on the 0-1 scale.
    weights = np.full((2, 3), 0.2)
    weights[0, 0] = 0.3
    figure = plot_alignment(weights, ["a", "b", "c"], ["x", "y"])
    [image] = figure.axes[0].get_images()

    assert image.get_clim() == (0.0, 1.0)
    assert image.get_cmap().name == "gray"
    np.testing.assert_allclose(image.cmap(image.norm(0.0))[:3], [0.0, 0.0, 0.0])
    np.testing.assert_allclose(image.cmap(image.norm(1.0))[:3], [1.0, 1.0, 1.0])
    assert len(figure.axes) == 2  # the heatmap and its colour bar


def test_draws_on_a_given_axes_with_a_title_and_returns_its_figure():
    figure = matplotlib.figure.Figure()
    ax = figure.add_subplot()

    returned = plot_alignment(np.eye(3), [1, 2, 3], ("one", "two", "three"), ax=ax, title="sort")

    assert returned is figure
    assert ax.get_title() == "sort"
    assert _labels(ax.get_xticklabels()) == ["1", "2", "3"]  # any tokens, shown with str()
    np.testing.assert_array_equal(ax.get_images()[0].get_array(), np.eye(3))


def test_accepts_nested_lists_and_numpy_token_arrays():
    figure = plot_alignment([[1.0, 0.0], [0.25, 0.75]], np.array(["a", "b"]), ["x", "y"])

    np.testing.assert_array_equal(
        figure.axes[0].get_images()[0].get_array(), [[1, 0], [0.25, 0.75]]
    )
    assert _labels(figure.axes[0].get_xticklabels()) == ["a", "b"]


@pytest.mark.backend_agnostic
def test_accepts_a_backend_tensor():
    weights = _weights(2, 4, seed=1).astype("float32")

    figure = plot_alignment(keras.ops.convert_to_tensor(weights), list("abcd"), ["x", "y"])

    np.testing.assert_array_equal(figure.axes[0].get_images()[0].get_array(), weights)


def test_a_matrix_that_does_not_fit_the_tokens_is_refused_naming_both_shapes():
    message = re.escape("`weights` has shape (5, 7)") + r".*" + re.escape("shape (5, 6)")
    with pytest.raises(ValueError, match=message):
        plot_alignment(_weights(), SOURCE[:6], TARGET)
    message = re.escape("`weights` has shape (5, 7)") + r".*" + re.escape("shape (4, 7)")
    with pytest.raises(ValueError, match=message):
        plot_alignment(_weights(), SOURCE, TARGET[:4])


@pytest.mark.parametrize(
    ("weights", "match"),
    [
        (np.ones(3) / 3, r"2-D array.*got shape \(3,\)"),
        (np.ones((2, 3, 4)) / 4, r"2-D array.*got shape \(2, 3, 4\)"),
        (np.zeros((0, 3)), r"non-empty 2-D array.*got shape \(0, 3\)"),
        (np.array([[0.5, np.nan], [0.5, 0.5]]), r"finite values, got 1 NaN or infinite"),
        (np.array([[np.inf, 0.0], [0.5, 0.5]]), r"finite values, got 1 NaN or infinite"),
        (np.array([[1.5, -0.5], [0.5, 0.5]]), r"values in \[0, 1\].*from -0.5 to 1.5"),
        ([["a", "b"], ["c", "d"]], r"a 2-D array of numbers"),
        ([[0.5, 0.5], [1.0]], r"a 2-D array of numbers"),
    ],
    ids=["1d", "3d", "empty", "nan", "inf", "outside-0-1", "strings", "ragged"],
)
def test_weights_that_cannot_be_drawn_are_refused(weights, match):
    # The weights are checked before they are compared with the tokens.
    with pytest.raises(ValueError, match=r"argument `weights`.*" + match):
        plot_alignment(weights, ["a", "b"], ["x", "y"])


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"source_tokens": "ab"}, "source_tokens"),
        ({"source_tokens": None}, "source_tokens"),
        ({"target_tokens": 3}, "target_tokens"),
        ({"target_tokens": np.array([["x"], ["y"]])}, "target_tokens"),
        ({"title": 3}, "title"),
    ],
)
def test_bad_tokens_and_title_are_refused_naming_the_argument(kwargs, argument):
    arguments = {"source_tokens": ["a", "b"], "target_tokens": ["x", "y"], **kwargs}
    with pytest.raises(ValueError, match=f"argument `{argument}`"):
        plot_alignment(np.eye(2), **arguments)


def test_docstring_examples_run():
    import doctest

    from keras_seq.diagnostics import alignment

    globs = {"np": np, **vars(alignment)}
    result = doctest.testmod(alignment, globs=globs, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
