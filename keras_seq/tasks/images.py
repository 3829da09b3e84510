"""Image classification tasks, for the Vision Transformer: real digits and generated shapes.

A Vision Transformer (Dosovitskiy et al. 2020) reads an image as a sequence
of patches. `digits` gives it the 1,797 8×8 handwritten digits that ship
inside scikit-learn (nothing is downloaded), small enough to train on a CPU
in seconds; `shapes` generates images of simple shapes of any size, for
larger patch grids.

Each task returns a `TaskData` whose inputs are described by an `ImageSpec`:
float32 images `(n, height, width, channels)` with values in [0, 1], and int32
class labels. Both are seeded: the same arguments give the same arrays.
"""

from __future__ import annotations

import numpy as np

from keras_seq import argument_checks
from keras_seq._extras import import_extra
from keras_seq.tasks.base import ImageSpec, TargetSpec, TaskData, check_size, split_sizes

# The largest value in scikit-learn's digits: each pixel counts the set pixels
# of a 4×4 block of the original 32×32 bitmap, 0 to 16.
DIGITS_MAX_VALUE = 16.0
DIGITS_CLASSES = 10

# Class names of `shapes`, in label order.
SHAPE_NAMES = ("circle", "square", "triangle", "cross")
# Smallest image on which the four shapes still differ, and a size past anything a
# ViT trains on here (a 1024×1024 image is 4,096 patches of 16×16).
MIN_SHAPE_SIZE = 8
MAX_SHAPE_SIZE = 1024
# Half the extent of a shape, as a fraction of the image size.
MIN_SCALE, MAX_SCALE = 0.2, 0.4
# The bars of a cross are this fraction of its half extent thick, on each side of its centre.
CROSS_BAR = 1.0 / 3.0
# Images drawn at once, to bound the memory of the intermediate masks.
_CHUNK = 256


def digits(*, validation_split=0.2, seed=0):
    """The 8×8 handwritten digits of scikit-learn, as images with a stratified split.

    The 1,797 images of the UCI "Optical Recognition of Handwritten Digits"
    test set, as scikit-learn ships them (`sklearn.datasets.load_digits`, read
    from inside the package: no download). Each pixel, 0 to 16, is divided by
    16 so that values lie in [0, 1].

    The split is stratified: each digit's images are shuffled (seeded) and
    `round(count * validation_split)` of them go to validation, so both
    splits hold every digit in about the same proportion. Each split is then
    shuffled.

    Args:
        validation_split: Fraction of each digit's images kept for
            validation, in (0, 1); both splits must hold at least one image.
            Default 0.2.
        seed: Non-negative integer seed for `numpy.random.default_rng`.

    Returns:
        A `TaskData` with inputs `(n, 8, 8, 1)` float32 in [0, 1] (an
        `ImageSpec(8, 8, 1)`) and int32 labels `(n,)`, the digits 0 to 9.
        With the default split, 1,438 training and 359 validation images.

    Example:

    >>> task = digits()
    >>> task.x_train.shape, task.x_val.shape
    ((1438, 8, 8, 1), (359, 8, 8, 1))

    References:
        - Alpaydin & Kaynak, "Optical Recognition of Handwritten Digits",
          UCI Machine Learning Repository, 1998.
        - Dosovitskiy et al., "An Image is Worth 16x16 Words: Transformers
          for Image Recognition at Scale", ICLR 2021 (arXiv:2010.11929, 2020).
    """
    validation_split = argument_checks.rate("validation_split", validation_split)
    seed = argument_checks.seed("seed", seed)
    datasets = import_extra("sklearn.datasets", "app", "keras_seq.tasks.digits", "scikit-learn")
    bunch = datasets.load_digits()
    images = (bunch.images / DIGITS_MAX_VALUE).astype(np.float32)[..., None]  # (n, 8, 8, 1)
    labels = bunch.target.astype(np.int32)

    rng = np.random.default_rng(seed)
    train_rows, val_rows = [], []
    for digit in range(DIGITS_CLASSES):
        rows = rng.permutation(np.flatnonzero(labels == digit))
        num_val = round(len(rows) * validation_split)
        if num_val < 1 or num_val > len(rows) - 1:
            raise ValueError(
                f"Received an invalid value for argument `validation_split`, expected a "
                f"fraction that leaves at least one image of each digit in each split, got "
                f"{validation_split!r} ({num_val} of the {len(rows)} images of digit {digit})."
            )
        val_rows.append(rows[:num_val])
        train_rows.append(rows[num_val:])
    train = rng.permutation(np.concatenate(train_rows))
    val = rng.permutation(np.concatenate(val_rows))
    height, width = images.shape[1:3]

    return TaskData(
        x_train=images[train],
        y_train=labels[train],
        x_val=images[val],
        y_val=labels[val],
        name="digits",
        params={"validation_split": validation_split, "seed": seed},
        inputs=ImageSpec(height, width, 1),
        targets=TargetSpec("classification", num_classes=DIGITS_CLASSES),
        description=(
            f"Classify {len(labels)} handwritten digits of {height}×{width} grey pixels "
            "(scikit-learn's copy of the UCI optical digits), split stratified by digit. "
            "Ten balanced classes; chance is 10% accuracy."
        ),
    )


def shapes(n, size, *, noise=0.1, validation_split=0.2, seed=0):
    """Generated images of four simple shapes, at random positions and scales.

    Each image is `size × size` grey pixels showing one filled, axis-aligned
    shape, white (1.0) on black (0.0): a circle (a disc), a square, a triangle
    (apex up) or a cross (a plus sign). Its label is the shape's index in
    `SHAPE_NAMES`: circle 0, square 1, triangle 2, cross 3. With the shape's
    centre `(c_y, c_x)`, half extent `r`, and `(d_y, d_x)` a pixel centre
    minus `(c_y, c_x)` (rows grow downwards), a pixel is set when:

        circle    d_x² + d_y² ≤ r²
        square    |d_x| ≤ r  and  |d_y| ≤ r
        triangle  |d_y| ≤ r  and  |d_x| ≤ (d_y + r) / 2
        cross     (|d_x| ≤ r/3 and |d_y| ≤ r)  or  (|d_y| ≤ r/3 and |d_x| ≤ r)

    `r` is drawn uniformly from `[0.2, 0.4] · size` and the centre uniformly
    among the positions that keep the whole shape inside the image. Then
    Gaussian noise of standard deviation `noise` is added to every pixel and
    the result clipped to [0, 1]. The four classes are balanced (they differ by
    at most one image over all `n`) and shuffled.

    A shape covers a few patches at random places, so a classifier must
    combine patches wherever they are: what a ViT's attention does. With
    `size` a multiple of the patch size, the patch grid is `size / patch`
    on each side.

    Args:
        n: Number of images, train and validation together.
        size: Height and width in pixels, from 8 to 1024.
        noise: Standard deviation of the pixel noise, in [0, 1). Default 0.1;
            0 gives binary images.
        validation_split: Fraction of the `n` images kept for validation, in
            (0, 1); both splits must hold at least one image.
        seed: Non-negative integer seed for `numpy.random.default_rng`.

    Returns:
        A `TaskData` with inputs `(n, size, size, 1)` float32 in [0, 1] (an
        `ImageSpec(size, size, 1)`) and int32 labels `(n,)` in `[0, 4)`.

    Example:

    >>> task = shapes(1000, 32)
    >>> task.x_train.shape, task.y_train.shape
    ((800, 32, 32, 1), (800,))

    References:
        - Dosovitskiy et al., "An Image is Worth 16x16 Words: Transformers
          for Image Recognition at Scale", ICLR 2021 (arXiv:2010.11929, 2020).
    """
    n = argument_checks.positive_int("n", n)
    size = argument_checks.int_in_range("size", size, MIN_SHAPE_SIZE, MAX_SHAPE_SIZE)
    check_size(n, size * size, f"{size}×{size} pixels")
    noise = argument_checks.rate("noise", noise)
    validation_split, num_train, _ = split_sizes(n, validation_split)
    seed = argument_checks.seed("seed", seed)

    rng = np.random.default_rng(seed)
    num_classes = len(SHAPE_NAMES)
    labels = rng.permutation(np.arange(n) % num_classes).astype(np.int32)
    radius = rng.uniform(MIN_SCALE, MAX_SCALE, size=n) * size
    # Every shape fits in the square of half side r around its centre.
    centre_y = rng.uniform(radius, size - radius)
    centre_x = rng.uniform(radius, size - radius)

    images = np.empty((n, size, size, 1), dtype=np.float32)
    pixel = np.arange(size, dtype=np.float64) + 0.5  # pixel centres
    for start in range(0, n, _CHUNK):
        rows = slice(start, min(start + _CHUNK, n))
        r = radius[rows, None, None]
        d_y = pixel[None, :, None] - centre_y[rows, None, None]  # (chunk, size, 1)
        d_x = pixel[None, None, :] - centre_x[rows, None, None]  # (chunk, 1, size)
        images[rows, ..., 0] = _draw(labels[rows, None, None], np.abs(d_y), np.abs(d_x), d_y, r)
        if noise > 0.0:
            chunk = images[rows]  # a view: changed in place
            chunk += rng.normal(0.0, noise, size=chunk.shape).astype(np.float32)
            np.clip(chunk, 0.0, 1.0, out=chunk)

    return TaskData(
        x_train=images[:num_train],
        y_train=labels[:num_train],
        x_val=images[num_train:],
        y_val=labels[num_train:],
        name="shapes",
        params={
            "n": n,
            "size": size,
            "noise": noise,
            "validation_split": validation_split,
            "seed": seed,
        },
        inputs=ImageSpec(size, size, 1),
        targets=TargetSpec("classification", num_classes=num_classes),
        description=(
            f"Name the shape ({', '.join(SHAPE_NAMES)}) in a {size}×{size} image, drawn at a "
            f"random position and scale, with Gaussian pixel noise of standard deviation "
            f"{noise:g}. Four balanced classes; chance is 25% accuracy."
        ),
    )


def _draw(label, abs_y, abs_x, d_y, r):
    """The shape masks, as float32: `label` (chunk, 1, 1) picks one per image."""
    circle = abs_x**2 + abs_y**2 <= r**2
    square = (abs_x <= r) & (abs_y <= r)
    triangle = (abs_y <= r) & (abs_x <= (d_y + r) / 2)
    bar = CROSS_BAR * r
    cross = ((abs_x <= bar) & (abs_y <= r)) | ((abs_y <= bar) & (abs_x <= r))
    masks = np.select([label == 0, label == 1, label == 2], [circle, square, triangle], cross)
    return masks.astype(np.float32)
