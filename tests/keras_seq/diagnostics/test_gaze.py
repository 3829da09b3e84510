"""gaze_on_objects and box_regions against cell overlaps counted by hand; plot_gaze draws."""

import numpy as np
import pytest

from keras_seq.diagnostics import box_regions, gaze_on_objects, plot_gaze

agnostic = pytest.mark.backend_agnostic


@agnostic
def test_box_regions_marks_the_cells_a_box_overlaps():
    # A 4 × 4 grid over a 32 × 32 image: cells of 8 pixels. The box spans rows 2–9 and
    # columns 17–30, so it touches cell rows 0 and 1 and cell columns 2 and 3.
    inside = box_regions(np.array([2.0, 17.0, 9.5, 30.0]), (4, 4), (32, 32))
    expected = np.zeros((4, 4), bool)
    expected[0:2, 2:4] = True
    np.testing.assert_array_equal(inside.reshape(4, 4), expected)
    # A box ending exactly on a cell border does not reach the next cell.
    inside = box_regions(np.array([0.0, 0.0, 8.0, 8.0]), (4, 4), (32, 32))
    assert inside.sum() == 1 and inside[0]


@agnostic
def test_gaze_on_objects_counts_the_mass_inside_the_named_box():
    boxes = np.array([[[0.0, 0.0, 8.0, 8.0], [24.0, 24.0, 32.0, 32.0]]])  # cells 0 and 15
    weights = np.zeros((1, 3, 16))
    weights[0, 0, 0] = 0.7  # word about object 0: 0.7 on its cell, 0.3 on object 1's
    weights[0, 0, 15] = 0.3
    weights[0, 1, :] = 1.0 / 16  # a function word: skipped
    weights[0, 2, 15] = 1.0  # word about object 1: all on its cell
    gaze = gaze_on_objects(weights, boxes, np.array([[0, -1, 1]]), (4, 4), (32, 32))
    np.testing.assert_allclose(gaze["mass"], [0.7, 1.0], atol=1e-12)
    np.testing.assert_allclose(gaze["chance"], [1 / 16, 1 / 16], atol=1e-12)
    np.testing.assert_allclose(gaze["other"], [0.3, 0.0], atol=1e-12)


@agnostic
def test_plot_gaze_draws_one_panel_per_word_and_refuses_mismatched_weights():
    image = np.random.default_rng(0).random((16, 16, 3))
    weights = np.full((3, 4), 0.25)
    figure = plot_gaze(image, weights, ["a", "red", "square"], (2, 2), boxes=[[0, 0, 8, 8]])
    assert [ax.get_title() for ax in figure.axes] == ["a", "red", "square"]
    with pytest.raises(ValueError, match="`weights`"):
        plot_gaze(image, weights[:, :3], ["a", "red", "square"], (2, 2))
