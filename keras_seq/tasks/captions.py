"""A generated captioning task, for attention over image regions (Show, Attend and Tell).

Xu et al. (2015) caption photographs with a recurrent decoder that, before
each word, reads a weighted average of the regions of a convolutional feature
map, the weights scored from its previous state: Bahdanau's attention with
the source sentence replaced by a grid of image regions. Their claim is that
the model learns to look at the object a word names. Photographs and their
captions are downloads; `shape_captions` generates images where the claim can
be checked exactly, because every word's object and its box are known.

Each RGB image holds two filled shapes (`SHAPE_NAMES` of
`keras_seq.tasks.images`) of a colour and a size each, placed on opposite
sides of the image, and a caption names both and how they lie:

    "a small red square above a large blue circle"
    "a large green cross to the left of a small yellow triangle"

The first object named is always the top one (for "above") or the left one
(for "to the left of"), so a caption is a function of the image: to write
the first colour the model must find the upper (or left) object, and to
write the second the other one. Chance for a whole caption is 1 in 2,048.

`TaskData.annotations` keeps what a check of the gaze needs, for both splits:
`boxes_train` / `boxes_val`, float32 `(n, 2, 4)`, the box `(top, left,
bottom, right)` in pixels of the first and second object named; and
`word_objects_train` / `word_objects_val`, int8 `(n, length)`, for each
target position the object (0 or 1) its word describes, or −1 for "a",
the relation words, END and padding.
"""

from __future__ import annotations

import numpy as np

from keras_seq import argument_checks
from keras_seq.tasks.base import ImageSpec, TargetSpec, TaskData, check_size, split_sizes
from keras_seq.tasks.images import SHAPE_NAMES, _draw
from keras_seq.tasks.vocabulary import Vocabulary

COLOURS = {
    "red": (1.0, 0.0, 0.0),
    "green": (0.0, 1.0, 0.0),
    "blue": (0.0, 0.0, 1.0),
    "yellow": (1.0, 1.0, 0.0),
}
# Half the extent of a shape, as a fraction of the image size, by size word. The two
# ranges do not overlap, and a large shape still fits in half the image.
SIZES = {"small": (0.09, 0.13), "large": (0.18, 0.23)}
RELATIONS = ("above", "to the left of")
# Relation words carry no object; neither does "a".
_FUNCTION_WORDS = ("a", "above", "to", "the", "left", "of")

MIN_CAPTION_SIZE = 16
MAX_CAPTION_SIZE = 256
# The longest caption: "a large green cross to the left of a small yellow triangle", END.
CAPTION_LENGTH = 13
# Images drawn at once, to bound the memory of the intermediate masks.
_CHUNK = 256


def caption_vocabulary() -> Vocabulary:
    """The fixed word vocabulary of `shape_captions` (every word it can write)."""
    words = [*_FUNCTION_WORDS, *SIZES, *COLOURS, *SHAPE_NAMES]
    return Vocabulary(words)


def shape_captions(n, size=32, *, noise=0.05, validation_split=0.2, seed=0):
    """Images of two coloured shapes and a caption that names both and how they lie.

    Each `size × size` RGB image (black background) holds two objects. Each
    object has a shape (circle, square, triangle, cross: the masks of
    `keras_seq.tasks.shapes`), a colour (red, green, blue, yellow) and a size
    word: "small" (half extent `r ∈ [0.09, 0.13] · size`) or "large"
    (`r ∈ [0.18, 0.23] · size`), all drawn uniformly and independently. A
    relation is drawn with equal chances: for "above" the first object lies
    wholly in the top half and the second in the bottom half; for "to the left
    of", in the left and right halves. Within its half each object's centre is
    uniform among the positions that keep it inside. Then Gaussian noise of
    standard deviation `noise` is added and the pixels clipped to [0, 1].

    The caption is `"a <size> <colour> <shape> <relation> a <size> <colour>
    <shape>"`, first object first, encoded with `caption_vocabulary()`,
    followed by END and padded with PAD to 13 ids.

    Args:
        n: Number of images, train and validation together.
        size: Height and width in pixels, 16 to 256. Default 32.
        noise: Standard deviation of the pixel noise, in [0, 1). Default 0.05.
        validation_split: Fraction of the `n` images kept for validation, in
            (0, 1); both splits must hold at least one image.
        seed: Non-negative integer seed for `numpy.random.default_rng`.

    Returns:
        A `TaskData` with inputs `(n, size, size, 3)` float32 in [0, 1] (an
        `ImageSpec(size, size, 3)`), targets `(n, 13)` int32 caption ids (a
        `"sequence"` target with `target_vocabulary`), no source vocabulary,
        and `annotations` holding the boxes and each word's object (see the
        module docstring).

    Example:

    >>> task = shape_captions(100, 32)
    >>> task.x_train.shape, task.y_train.shape
    ((80, 32, 32, 3), (80, 13))
    >>> task.annotations["boxes_val"].shape
    (20, 2, 4)

    References:
        - Xu et al., "Show, Attend and Tell: Neural Image Caption Generation
          with Visual Attention", ICML 2015.
    """
    n = argument_checks.positive_int("n", n)
    size = argument_checks.int_in_range("size", size, MIN_CAPTION_SIZE, MAX_CAPTION_SIZE)
    check_size(n, size * size * 3, f"{size}×{size}×3 pixels")
    noise = argument_checks.rate("noise", noise)
    validation_split, num_train, _ = split_sizes(n, validation_split)
    seed = argument_checks.seed("seed", seed)

    rng = np.random.default_rng(seed)
    colour_names, size_names = list(COLOURS), list(SIZES)
    shape = rng.integers(0, len(SHAPE_NAMES), size=(n, 2))
    colour = rng.integers(0, len(colour_names), size=(n, 2))
    large = rng.integers(0, 2, size=(n, 2))
    relation = rng.integers(0, len(RELATIONS), size=n)  # 0 above, 1 to the left of
    low = np.array([SIZES[name][0] for name in size_names])[large]
    high = np.array([SIZES[name][1] for name in size_names])[large]
    radius = rng.uniform(low, high) * size  # (n, 2)

    # Along the separating axis the first object lies in [0, size/2), the second in
    # [size/2, size); along the other axis anywhere in the image.
    half = size / 2.0
    along_low = np.stack([radius[:, 0], half + radius[:, 1]], axis=1)
    along_high = np.stack([half - radius[:, 0], size - radius[:, 1]], axis=1)
    along = rng.uniform(along_low, along_high)
    across = rng.uniform(radius, size - radius)
    vertical = (relation == 0)[:, None]
    centre_y = np.where(vertical, along, across)
    centre_x = np.where(vertical, across, along)
    boxes = np.stack(
        [centre_y - radius, centre_x - radius, centre_y + radius, centre_x + radius], axis=-1
    ).astype(np.float32)  # (n, 2, 4)

    palette = np.array([COLOURS[name] for name in colour_names], dtype=np.float32)
    images = np.zeros((n, size, size, 3), dtype=np.float32)
    pixel = np.arange(size, dtype=np.float64) + 0.5  # pixel centres
    for start in range(0, n, _CHUNK):
        rows = slice(start, min(start + _CHUNK, n))
        chunk = images[rows]  # a view: changed in place
        for obj in (0, 1):
            r = radius[rows, obj, None, None]
            d_y = pixel[None, :, None] - centre_y[rows, obj, None, None]
            d_x = pixel[None, None, :] - centre_x[rows, obj, None, None]
            mask = _draw(shape[rows, obj, None, None], np.abs(d_y), np.abs(d_x), d_y, r)
            rgb = palette[colour[rows, obj]][:, None, None, :]  # (chunk, 1, 1, 3)
            np.maximum(chunk, mask[..., None] * rgb, out=chunk)
        if noise > 0.0:
            chunk += rng.normal(0.0, noise, size=chunk.shape).astype(np.float32)
            np.clip(chunk, 0.0, 1.0, out=chunk)

    vocabulary = caption_vocabulary()
    captions, word_objects = [], np.full((n, CAPTION_LENGTH), -1, dtype=np.int8)
    for i in range(n):
        words = []
        for obj in (0, 1):
            if obj:
                words += RELATIONS[relation[i]].split()
            words.append("a")
            first = len(words)
            words += [size_names[large[i, obj]], colour_names[colour[i, obj]]]
            words.append(SHAPE_NAMES[shape[i, obj]])
            word_objects[i, first : len(words)] = obj
        captions.append(" ".join(words))
    targets = vocabulary.encode_batch(captions, CAPTION_LENGTH, add_end=True)

    def split(array):
        return array[:num_train], array[num_train:]

    boxes_train, boxes_val = split(boxes)
    objects_train, objects_val = split(word_objects)
    return TaskData(
        x_train=images[:num_train],
        y_train=targets[:num_train],
        x_val=images[num_train:],
        y_val=targets[num_train:],
        name="shape_captions",
        params={
            "n": n,
            "size": size,
            "noise": noise,
            "validation_split": validation_split,
            "seed": seed,
        },
        inputs=ImageSpec(size, size, 3),
        targets=TargetSpec("sequence", vocab_size=len(vocabulary), length=CAPTION_LENGTH),
        description=(
            f"Caption {size}×{size} colour images of two shapes: name each object's size, "
            "colour and shape, the upper or left one first, and how they lie ('above' or 'to "
            "the left of'). Each word needs the right region; chance for a whole caption is "
            "1 in 2,048."
        ),
        target_vocabulary=vocabulary,
        annotations={
            "boxes_train": boxes_train,
            "boxes_val": boxes_val,
            "word_objects_train": objects_train,
            "word_objects_val": objects_val,
        },
    )
