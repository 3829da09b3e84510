"""The image tasks `digits` and `shapes`, and the `ImageSpec` that describes their inputs.

Expectations come from scikit-learn's own copy of the digits (read here
independently) and from the geometry of each shape, never from the generator.
"""

import json
import math
import re

import numpy as np
import pytest

from keras_seq.tasks import ImageSpec, SequenceSpec, TargetSpec, TaskData, digits, shapes
from tests.allocation import allocates_little


def _joined(task):
    return (
        np.concatenate([task.x_train, task.x_val]),
        np.concatenate([task.y_train, task.y_val]),
    )


def _sorted_rows(images, labels):
    """Images with their labels as one sortable byte string each, for multiset comparison."""
    rows = [image.tobytes() + bytes([label]) for image, label in zip(images, labels, strict=True)]
    return sorted(rows)


# -------------------------------------------------------------------------------------- digits


def test_digits_are_sklearns_images_scaled_to_unit_range_with_their_labels():
    from sklearn.datasets import load_digits

    reference = load_digits()
    expected_images = (reference.images / 16.0).astype(np.float32)[..., None]
    expected_labels = reference.target.astype(np.int32)

    x, y = _joined(digits())

    assert x.shape == (1797, 8, 8, 1) and x.dtype == np.float32
    assert y.dtype == np.int32
    assert x.min() == 0.0 and x.max() == 1.0
    # Every image appears exactly once over the two splits, with its own label.
    assert _sorted_rows(x, y) == _sorted_rows(expected_images, expected_labels)


def test_digits_split_is_stratified_by_digit():
    task = digits(validation_split=0.2, seed=0)
    from sklearn.datasets import load_digits

    counts = np.bincount(load_digits().target, minlength=10)
    val_counts = np.bincount(task.y_val, minlength=10)
    train_counts = np.bincount(task.y_train, minlength=10)

    np.testing.assert_array_equal(val_counts, np.round(counts * 0.2).astype(int))
    np.testing.assert_array_equal(train_counts + val_counts, counts)
    assert (task.num_train, task.num_val) == (1438, 359)


def test_digits_splits_are_shuffled_not_sorted_by_digit():
    task = digits()
    # Sorted labels would change digit at most 9 times.
    assert np.count_nonzero(np.diff(task.y_train)) > 500
    assert np.count_nonzero(np.diff(task.y_val)) > 100


def test_digits_same_seed_same_split_other_seed_other_split():
    first, again, other = digits(seed=0), digits(seed=0), digits(seed=1)
    np.testing.assert_array_equal(first.x_val, again.x_val)
    np.testing.assert_array_equal(first.y_train, again.y_train)
    assert not np.array_equal(first.x_val, other.x_val)


def test_digits_describes_itself():
    task = digits(validation_split=0.25, seed=3)
    assert task.name == "digits"
    assert task.params == {"validation_split": 0.25, "seed": 3}
    assert task.inputs == ImageSpec(8, 8, 1)
    assert task.targets == TargetSpec("classification", num_classes=10)
    record = json.loads(json.dumps(task.to_dict()))
    assert record["inputs"] == {
        "kind": "image",
        "height": 8,
        "width": 8,
        "channels": 1,
        "dtype": "float32",
    }


# -------------------------------------------------------------------------------------- shapes


def _shape_kind(image):
    """Names the shape in a noiseless image from its geometry alone.

    Inside its bounding box a square fills everything, a disc π/4 ≈ 0.79, a
    plus sign with bars a third of its half extent thick 5/9 ≈ 0.56, and a
    triangle 1/2; the triangle (apex up) is the only one that is not
    symmetric top to bottom.
    """
    rows = np.flatnonzero(image.any(axis=1))
    cols = np.flatnonzero(image.any(axis=0))
    box = image[rows[0] : rows[-1] + 1, cols[0] : cols[-1] + 1]
    fill = box.mean()
    mirror_agreement = (box == box[::-1]).mean()
    if fill > 0.95:
        return 1  # square
    if mirror_agreement < 0.8:
        return 2  # triangle
    if fill > 0.7:
        return 0  # circle
    return 3  # cross


def test_shapes_labels_name_the_shape_drawn():
    x, y = _joined(shapes(400, 64, noise=0.0, seed=5))
    assert set(np.unique(x)) == {0.0, 1.0}
    recognised = np.array([_shape_kind(image[..., 0] > 0.5) for image in x])
    np.testing.assert_array_equal(recognised, y)


def test_shapes_stay_inside_the_image_and_vary_in_place_and_scale():
    x, _ = _joined(shapes(800, 32, noise=0.0, seed=2))
    masks = x[..., 0] > 0.5
    areas = masks.sum(axis=(1, 2))
    # Half extents from 0.2 to 0.4 of the size: areas vary about fourfold.
    assert areas.min() > 0 and areas.max() / areas.min() > 3
    rows = [np.flatnonzero(mask.any(axis=1)) for mask in masks]
    tops = np.array([r[0] for r in rows])
    bottoms = np.array([r[-1] for r in rows])
    assert tops.min() < 3  # shapes reach the edges ...
    assert bottoms.max() > 28
    assert len(set(tops.tolist())) > 10  # ... at many places


def test_shapes_are_balanced_shuffled_and_typed():
    task = shapes(1001, 16, seed=1)
    x, y = _joined(task)
    assert x.shape == (1001, 16, 16, 1) and x.dtype == np.float32
    assert y.dtype == np.int32
    counts = np.bincount(y, minlength=4)
    assert counts.max() - counts.min() <= 1
    for split in (task.y_train, task.y_val):
        assert np.all(np.bincount(split, minlength=4) > 0.15 * len(split))
    assert task.inputs == ImageSpec(16, 16, 1)
    assert task.targets == TargetSpec("classification", num_classes=4)


def test_shapes_noise_is_clipped_gaussian_of_the_given_deviation():
    sigma = 0.1
    clean, clean_labels = _joined(shapes(300, 32, noise=0.0, seed=4))
    noisy, labels = _joined(shapes(300, 32, noise=sigma, seed=4))
    assert noisy.min() >= 0.0 and noisy.max() <= 1.0
    # Same seed: the same shapes, only the noise differs. Clipping a zero-mean Gaussian
    # at the pixel's own value (0 or 1) leaves |noise| half the time: E = σ / sqrt(2π).
    mean_abs = np.abs(noisy - clean).mean()
    assert abs(mean_abs - sigma / math.sqrt(2 * math.pi)) < 0.002
    np.testing.assert_array_equal(labels, clean_labels)


def test_shapes_same_seed_same_images_other_seed_other_images():
    first, again, other = shapes(50, 16, seed=0), shapes(50, 16, seed=0), shapes(50, 16, seed=1)
    np.testing.assert_array_equal(first.x_train, again.x_train)
    np.testing.assert_array_equal(first.y_val, again.y_val)
    assert not np.array_equal(first.x_train, other.x_train)


def test_shapes_describes_itself():
    task = shapes(100, 24, noise=0.05, validation_split=0.3, seed=7)
    assert task.name == "shapes"
    assert task.params == {
        "n": 100,
        "size": 24,
        "noise": 0.05,
        "validation_split": 0.3,
        "seed": 7,
    }
    assert (task.num_train, task.num_val) == (70, 30)
    assert "24×24" in task.description and "circle" in task.description


# ------------------------------------------------------------------------------- bad arguments


@pytest.mark.parametrize(
    ("make", "argument", "value"),
    [
        (lambda: shapes(0, 16), "n", "0"),
        (lambda: shapes(10.0, 16), "n", "10.0"),
        (lambda: shapes(10, 7), "size", "7"),
        (lambda: shapes(10, 1025), "size", "1025"),
        (lambda: shapes(10, "16"), "size", "'16'"),
        (lambda: shapes(10, 16, noise=-0.1), "noise", "-0.1"),
        (lambda: shapes(10, 16, noise=1.5), "noise", "1.5"),
        (lambda: shapes(10, 16, validation_split=1.0), "validation_split", "1.0"),
        (lambda: shapes(1, 16), "validation_split", "0.2"),
        (lambda: shapes(10, 16, seed=-2), "seed", "-2"),
        (lambda: digits(validation_split=0.0), "validation_split", "0.0"),
        (lambda: digits(validation_split=0.001), "validation_split", "0.001"),
        (lambda: digits(seed=None), "seed", "None"),
    ],
)
def test_bad_arguments_raise_naming_the_argument_and_value(make, argument, value):
    with pytest.raises(ValueError, match=f"`{argument}`.*got {re.escape(value)}"):
        make()


@pytest.mark.parametrize("n, size", [(10**9, 64), (10**6, 1024), (2**20, 512)])
def test_absurd_sizes_are_refused_before_allocating(n, size):
    with allocates_little(), pytest.raises(ValueError, match="`n`"):
        shapes(n, size)


# ------------------------------------------------------------------------------------ ImageSpec


def test_image_spec_shape_dtype_and_kind():
    spec = ImageSpec(6, 10, 3)
    assert spec.shape == (6, 10, 3)
    assert spec.dtype == "float32"
    assert spec.kind == "image"
    assert ImageSpec(4, 4).channels == 1


@pytest.mark.parametrize(
    ("make", "argument"),
    [
        (lambda: ImageSpec(0, 8), "height"),
        (lambda: ImageSpec(8, -1), "width"),
        (lambda: ImageSpec(8, 8, 0), "channels"),
        (lambda: ImageSpec(8.0, 8), "height"),
    ],
)
def test_inconsistent_image_specs_are_refused(make, argument):
    with pytest.raises(ValueError, match=f"`{argument}`"):
        make()


def _image_task(**overrides):
    arrays = {
        "x_train": np.zeros((3, 4, 5, 2), np.float32),
        "y_train": np.zeros((3,), np.int32),
        "x_val": np.zeros((2, 4, 5, 2), np.float32),
        "y_val": np.zeros((2,), np.int32),
    }
    common = {
        "name": "toy",
        "inputs": ImageSpec(4, 5, 2),
        "targets": TargetSpec("classification", num_classes=2),
        "description": "toy",
    }
    return TaskData(**{**arrays, **common, **overrides})


def test_task_data_accepts_images_that_match_their_spec():
    task = _image_task()
    assert task.to_dict()["inputs"]["kind"] == "image"
    assert "train: 3" in task.summary()


@pytest.mark.parametrize(
    ("name", "bad"),
    [
        ("x_train", np.zeros((3, 5, 4, 2), np.float32)),
        ("x_val", np.zeros((2, 4, 5), np.float32)),
        ("x_train", np.zeros((3, 4, 5, 2), np.float64)),
    ],
)
def test_task_data_refuses_images_that_do_not_match_their_spec(name, bad):
    with pytest.raises(ValueError, match=f"`{name}`"):
        _image_task(**{name: bad})


def test_task_data_refuses_pointer_targets_for_images():
    with pytest.raises(ValueError, match="`targets`"):
        _image_task(
            targets=TargetSpec("pointer", num_positions=4, length=4),
            y_train=np.zeros((3, 4), np.int32),
            y_val=np.zeros((2, 4), np.int32),
        )


def test_image_spec_is_not_a_sequence_spec():
    # A recurrent model builder that checks for SequenceSpec refuses an image task.
    assert not isinstance(ImageSpec(8, 8), SequenceSpec)


def test_docstring_examples_run():
    import doctest

    from keras_seq.tasks import images

    result = doctest.testmod(images, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
