"""`plot_positional_encoding`, `position_similarity` and `plot_position_similarity`.

The drawn encoding is compared with the formula of Vaswani et al. (2017)
written out here in NumPy; the similarities with a cosine computed here from
a position table set to known random values.
"""

import io
import math

import keras
import matplotlib.figure
import numpy as np
import pytest

from keras_seq.diagnostics import (
    plot_position_similarity,
    plot_positional_encoding,
    position_similarity,
)
from keras_seq.layers import LearnedPositionalEmbedding, PatchEmbedding
from keras_seq.models import vision_transformer


def _paper_encoding(length, d, base=10000.0):
    """PE(pos, 2i) = sin(pos / base^(2i/d)), PE(pos, 2i+1) = cos(pos / base^(2i/d))."""
    encoding = np.zeros((length, d))
    for pos in range(length):
        for i in range(0, d, 2):
            angle = pos / base ** (i / d)
            encoding[pos, i] = math.sin(angle)
            if i + 1 < d:
                encoding[pos, i + 1] = math.cos(angle)
    return encoding


def _cosine(u, v):
    return float(np.dot(u, v) / (np.linalg.norm(u) * np.linalg.norm(v)))


def _set_table(model, table):
    layer = next(layer for layer in model.layers if isinstance(layer, LearnedPositionalEmbedding))
    layer.embeddings.assign(table.astype("float32"))


# ---------------------------------------------------------------------- plot_positional_encoding


@pytest.mark.backend_agnostic
@pytest.mark.parametrize(("d_model", "length"), [(16, 50), (7, 12)])
def test_heatmap_draws_the_papers_sinusoids_position_by_dimension(d_model, length):
    figure = plot_positional_encoding(d_model, length)
    drawn = np.asarray(figure.axes[0].images[0].get_array())
    assert drawn.shape == (length, d_model)  # rows: positions, columns: dimensions
    np.testing.assert_allclose(drawn, _paper_encoding(length, d_model), atol=2e-5)


def test_heatmap_uses_the_given_wavelength_base():
    figure = plot_positional_encoding(8, 20, max_wavelength=100)
    drawn = np.asarray(figure.axes[0].images[0].get_array())
    np.testing.assert_allclose(drawn, _paper_encoding(20, 8, base=100.0), atol=2e-5)


def test_heatmap_is_a_labelled_figure_with_a_fixed_colour_scale():
    figure = plot_positional_encoding(32, 64)
    ax = figure.axes[0]
    assert isinstance(figure, matplotlib.figure.Figure)
    assert ax.images[0].get_clim() == (-1.0, 1.0)
    assert "position" in ax.get_ylabel() and "dimension" in ax.get_xlabel()
    assert len(figure.axes) == 2  # the heatmap and its colour bar
    figure.savefig(io.BytesIO(), format="png")


def test_heatmap_draws_on_a_given_axes():
    figure = matplotlib.figure.Figure()
    ax = figure.add_subplot()
    assert plot_positional_encoding(4, 5, ax=ax, title=None) is figure
    assert ax.images[0].get_array().shape == (5, 4)
    assert ax.get_title() == ""


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"d_model": 0, "length": 5}, "d_model"),
        ({"d_model": 4097, "length": 5}, "d_model"),
        ({"d_model": 8, "length": 10_001}, "length"),
        ({"d_model": 8, "length": 2.0}, "length"),
        ({"d_model": 8, "length": 5, "max_wavelength": 0}, "max_wavelength"),
    ],
)
def test_heatmap_bad_arguments_are_refused_naming_them(kwargs, argument):
    with pytest.raises(ValueError, match=f"`{argument}`"):
        plot_positional_encoding(**kwargs)


# --------------------------------------------------------------------------- position_similarity


@pytest.mark.large_on("jax")
@pytest.mark.backend_agnostic
def test_similarity_is_the_cosine_between_patch_position_embeddings():
    model = vision_transformer((8, 8, 1), 2, 12, 1, 2, 16, 10)  # 4 × 4 patches
    table = np.random.default_rng(0).normal(size=(17, 12))  # class token + 16 patches
    _set_table(model, table)

    similarity = position_similarity(model)

    patches = table[1:]  # the class token's row is dropped
    assert similarity.shape == (4, 4, 4, 4)
    for r in range(4):
        for c in range(4):
            for r2 in range(4):
                for c2 in range(4):
                    expected = _cosine(patches[4 * r + c], patches[4 * r2 + c2])
                    assert similarity[r, c, r2, c2] == pytest.approx(expected, abs=1e-6)


def test_similarity_follows_the_row_major_patch_order_of_a_non_square_grid():
    # 8 × 12 image, patch 4: 2 rows of 3 patches. Patch (r, c) is token 1 + 3r + c.
    model = vision_transformer((8, 12, 1), 4, 6, 1, 2, 8, 3)
    rng = np.random.default_rng(1)
    table = rng.normal(size=(7, 6))
    _set_table(model, table)

    similarity = position_similarity(model)

    assert similarity.shape == (2, 3, 2, 3)
    assert similarity[0, 1, 1, 2] == pytest.approx(_cosine(table[2], table[6]), abs=1e-6)
    assert similarity[1, 0, 0, 2] == pytest.approx(_cosine(table[4], table[3]), abs=1e-6)
    np.testing.assert_allclose(np.diagonal(similarity.reshape(6, 6)), np.ones(6), atol=1e-6)


def test_the_class_token_row_does_not_enter_the_similarity():
    model = vision_transformer((4, 4, 1), 2, 4, 1, 2, 4, 2)
    table = np.random.default_rng(2).normal(size=(5, 4))
    _set_table(model, table)
    first = position_similarity(model)
    table[0] = [100.0, -3.0, 7.0, 0.5]
    _set_table(model, table)
    np.testing.assert_array_equal(position_similarity(model), first)


def test_without_a_class_token_every_row_is_a_patch():
    images = keras.Input((6, 6, 1))
    x = PatchEmbedding(3, 4)(images)  # 2 × 2 patches
    x = LearnedPositionalEmbedding(4)(x)
    model = keras.Model(images, x)
    table = np.random.default_rng(3).normal(size=(4, 4))
    _set_table(model, table)
    similarity = position_similarity(model)
    assert similarity[0, 0, 1, 1] == pytest.approx(_cosine(table[0], table[3]), abs=1e-6)


def test_grid_shape_can_be_given_and_a_zero_row_is_dissimilar_to_all():
    tokens = keras.Input((6, 5))
    model = keras.Model(tokens, LearnedPositionalEmbedding(6)(tokens))
    table = np.random.default_rng(4).normal(size=(6, 5))
    table[2] = 0.0
    _set_table(model, table)
    similarity = position_similarity(model, grid_shape=(2, 3))
    assert similarity.shape == (2, 3, 2, 3)
    np.testing.assert_array_equal(similarity[0, 2], np.zeros((2, 3)))
    assert similarity[1, 1, 0, 0] == pytest.approx(_cosine(table[4], table[0]), abs=1e-6)


def test_a_nested_vit_is_searched():
    inner = vision_transformer((4, 4, 1), 2, 4, 1, 2, 4, 2)
    outer = keras.Sequential([keras.Input((4, 4, 1)), inner])
    assert position_similarity(outer).shape == (2, 2, 2, 2)


@pytest.mark.parametrize(
    ("make", "kwargs", "match"),
    [
        (lambda: keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)]), {}, "exactly one"),
        (lambda: "not a model", {}, "`vit_model`"),
        (lambda: vision_transformer((4, 4, 1), 2, 4, 1, 2, 4, 2), {"grid_shape": (3, 3)}, "rows"),
        (lambda: vision_transformer((4, 4, 1), 2, 4, 1, 2, 4, 2), {"grid_shape": 4}, "grid_shape"),
    ],
)
def test_similarity_refuses_what_it_cannot_measure(make, kwargs, match):
    with pytest.raises(ValueError, match=match):
        position_similarity(make(), **kwargs)


def test_a_non_square_table_without_patches_needs_a_grid_shape():
    tokens = keras.Input((6, 5))
    model = keras.Model(tokens, LearnedPositionalEmbedding(6)(tokens))
    with pytest.raises(ValueError, match="grid_shape"):
        position_similarity(model)


# ---------------------------------------------------------------------- plot_position_similarity


def test_plot_draws_one_heatmap_per_patch_at_its_place_on_the_grid():
    model = vision_transformer((8, 12, 1), 4, 6, 1, 2, 8, 3)  # 2 × 3 patches
    table = np.random.default_rng(5).normal(size=(7, 6))
    _set_table(model, table)
    patches = table[1:]

    figure = plot_position_similarity(model)

    heatmaps = [ax for ax in figure.axes if ax.images]
    assert len(heatmaps) == 6 and len(figure.axes) == 6 + 1  # and the colour bar
    for ax in heatmaps:
        # The heatmap at grid row r, column c is patch (r, c)'s: token 1 + 3r + c.
        spec = ax.get_subplotspec()
        row, col = spec.rowspan.start, spec.colspan.start
        drawn = np.asarray(ax.images[0].get_array())
        expected = np.array([[_cosine(patches[3 * row + col], patches[3 * r + c])
                              for c in range(3)] for r in range(2)])  # fmt: skip
        np.testing.assert_allclose(drawn, expected, atol=1e-6)
        assert ax.images[0].get_clim() == (-1.0, 1.0)
    figure.savefig(io.BytesIO(), format="png")


def test_plot_accepts_a_similarity_array_and_refuses_other_shapes():
    similarity = np.random.default_rng(6).uniform(-1, 1, size=(2, 2, 2, 2))
    figure = plot_position_similarity(similarity, title=None)
    assert len(figure.axes) == 5
    with pytest.raises(ValueError, match="vit_model_or_similarity"):
        plot_position_similarity(np.zeros((2, 2, 3, 3)))
    with pytest.raises(ValueError, match="33×33"):
        plot_position_similarity(np.zeros((33, 33, 33, 33)))


def test_docstring_examples_run():
    import doctest

    from keras_seq.diagnostics import positions

    result = doctest.testmod(positions, globs=vars(positions), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
