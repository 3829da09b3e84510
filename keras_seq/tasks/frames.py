"""Next-frame prediction, for the ConvLSTM: videos of shapes that move and bounce off the walls.

Shi et al. (2015) showed the ConvLSTM on Moving MNIST (Srivastava, Mansimov
& Salakhutdinov 2015): digits that glide across a frame at a constant
velocity and bounce off its edges, where the model reads the first frames
and predicts the next ones. `moving_shapes` makes the same kind of video
from the four shapes of `keras_seq.tasks.images.shapes` (nothing is
downloaded), small enough to train on a CPU in a minute.

It returns a `TaskData` whose inputs are described by a `FramesSpec` (the
first `frames − predict` frames) and whose targets are of kind `"frames"`
(the `predict` frames that follow). Seeded: the same arguments give the same
arrays.
"""

from __future__ import annotations

import numpy as np

from keras_seq import argument_checks
from keras_seq.tasks.base import FramesSpec, TargetSpec, TaskData, check_size, split_sizes
from keras_seq.tasks.images import SHAPE_NAMES, _draw

# Smallest frame in which a shape still has room to move, and a size past anything a
# ConvLSTM trains on here (Moving MNIST is 64×64).
MIN_FRAME_SIZE = 8
MAX_FRAME_SIZE = 256
MAX_FRAMES = 100
MAX_SHAPES = 4
# Velocities are whole pixels per frame, so that a frame is its predecessor shifted exactly.
MAX_SPEED = 4
# A shape's box side, as a fraction of the frame size (and at least MIN_SIDE pixels).
MIN_SIDE_FRACTION, MAX_SIDE_FRACTION = 0.25, 0.4
MIN_SIDE = 3
# Frame pixels drawn at once, to bound the memory of the intermediate masks.
_CHUNK_PIXELS = 2**21


def moving_shapes(
    n,
    *,
    size=16,
    frames=10,
    predict=5,
    num_shapes=1,
    max_speed=2,
    noise=0.0,
    validation_split=0.2,
    seed=0,
):
    """Videos of shapes gliding at constant velocity and bouncing off the walls.

    Each video is `frames` grey frames of `size × size` pixels showing
    `num_shapes` filled shapes, white (1.0) on black (0.0), drawn as in
    `keras_seq.tasks.images.shapes` (a circle, square, triangle or cross,
    chosen at random) in a square box of side `s`, a whole number of pixels
    drawn uniformly from `[0.25, 0.4] · size` (at least 3). Where shapes
    overlap, a pixel takes the largest value (as Moving MNIST does).

    A shape's position `p_t` (row and column, whole pixels) starts uniformly
    among the positions that show it whole and moves by a velocity `v` whose
    two components are whole numbers drawn uniformly from
    `[−max_speed, max_speed]`, not both zero:

        p_{t+1} = p_t + v_t,   v_{t+1} = v_t

    except where that would take the shape's visible pixels past an edge:
    there it is reflected, `p_{t+1} = 2·wall − (p_t + v_t)` and that
    component of `v` changes sign (Srivastava et al. 2015). So every frame
    shows every shape whole, and a frame is the one before shifted by `v`
    wherever no bounce happens.

    The model reads the first `frames − predict` frames and must predict the
    `predict` frames that follow: to do it, it must find each shape's
    velocity from how it moved, and where it will bounce. Gaussian noise of
    standard deviation `noise` is added to the input frames (clipped to
    [0, 1]); the target frames are clean.

    Args:
        n: Number of videos, train and validation together.
        size: Height and width of a frame in pixels, from 8 to 256. Default 16.
        frames: Frames per video, inputs and targets together, from 2 to 100.
            Default 10.
        predict: Frames to predict (`T_out`), from 1 to `frames − 1`; the
            inputs are the `T_in = frames − predict` before them. Default 5.
        num_shapes: Shapes per video, from 1 to 4. Default 1.
        max_speed: The largest velocity component, in pixels per frame, from
            1 to 4. Default 2.
        noise: Standard deviation of the input pixel noise, in [0, 1).
            Default 0 (binary frames).
        validation_split: Fraction of the `n` videos kept for validation, in
            (0, 1); both splits must hold at least one video.
        seed: Non-negative integer seed for `numpy.random.default_rng`.

    Returns:
        A `TaskData` with inputs `(n, T_in, size, size, 1)` float32 in [0, 1]
        (a `FramesSpec(T_in, size, size, 1)`) and targets
        `(n, T_out, size, size, 1)` float32 in [0, 1] (a `TargetSpec` of kind
        `"frames"`).

    Example:

    >>> task = moving_shapes(100, size=16, frames=10, predict=5)
    >>> task.x_train.shape, task.y_train.shape
    ((80, 5, 16, 16, 1), (80, 5, 16, 16, 1))

    References:
        - Shi et al., "Convolutional LSTM Network: A Machine Learning Approach
          for Precipitation Nowcasting", NeurIPS 2015 (arXiv:1506.04214).
        - Srivastava, Mansimov & Salakhutdinov, "Unsupervised Learning of
          Video Representations using LSTMs", ICML 2015 (arXiv:1502.04681).
    """
    n = argument_checks.positive_int("n", n)
    size = argument_checks.int_in_range("size", size, MIN_FRAME_SIZE, MAX_FRAME_SIZE)
    frames = argument_checks.int_in_range("frames", frames, 2, MAX_FRAMES)
    predict = argument_checks.int_in_range("predict", predict, 1, frames - 1)
    num_shapes = argument_checks.int_in_range("num_shapes", num_shapes, 1, MAX_SHAPES)
    max_speed = argument_checks.int_in_range("max_speed", max_speed, 1, MAX_SPEED)
    check_size(n, frames * size * size, f"{frames} frames of {size}×{size} pixels")
    noise = argument_checks.rate("noise", noise)
    validation_split, num_train, _ = split_sizes(n, validation_split)
    seed = argument_checks.seed("seed", seed)

    rng = np.random.default_rng(seed)
    shape = (n, num_shapes)
    labels = rng.integers(0, len(SHAPE_NAMES), size=shape)
    low = max(MIN_SIDE, round(MIN_SIDE_FRACTION * size))
    high = max(low, round(MAX_SIDE_FRACTION * size))
    side = rng.integers(low, high + 1, size=shape)
    start = rng.random(size=(*shape, 2))  # where in its range each shape starts, row and column
    velocity = _velocities(rng, shape, max_speed)  # (n, shapes, 2)

    videos = np.zeros((n, frames, size, size, 1), dtype=np.float32)
    chunk = max(1, _CHUNK_PIXELS // (frames * size * size))
    for begin in range(0, n, chunk):
        rows = slice(begin, min(begin + chunk, n))
        lowest, highest = _position_range(labels[rows], side[rows], size)
        first = lowest + np.floor(start[rows] * (highest - lowest + 1)).astype(np.int64)
        positions = _trajectories(first, velocity[rows], lowest, highest, frames)
        videos[rows, ..., 0] = _render(labels[rows], side[rows], positions, size)
    inputs, targets = videos[:, : frames - predict], videos[:, frames - predict :]
    if noise > 0.0:
        inputs += rng.normal(0.0, noise, size=inputs.shape).astype(np.float32)
        np.clip(inputs, 0.0, 1.0, out=inputs)
    inputs, targets = np.ascontiguousarray(inputs), np.ascontiguousarray(targets)

    seen = frames - predict
    return TaskData(
        x_train=inputs[:num_train],
        y_train=targets[:num_train],
        x_val=inputs[num_train:],
        y_val=targets[num_train:],
        name="moving_shapes",
        params={
            "n": n,
            "size": size,
            "frames": frames,
            "predict": predict,
            "num_shapes": num_shapes,
            "max_speed": max_speed,
            "noise": noise,
            "validation_split": validation_split,
            "seed": seed,
        },
        inputs=FramesSpec(seen, size, size, 1),
        targets=TargetSpec("frames", length=predict, height=size, width=size, channels=1),
        description=(
            f"Watch {num_shapes} shape{'s' if num_shapes > 1 else ''} glide across "
            f"{size}×{size} frames for {seen} frames (whole pixels per frame, up to "
            f"{max_speed}, bouncing off the walls) and predict the next {predict} frames. "
            + (f"Input pixel noise of standard deviation {noise:g}. " if noise else "")
            + "Baselines to beat: the last input frame repeated, or the mean target frame."
        ),
    )


def _velocities(rng, shape, max_speed):
    """Whole-pixel velocities, each component in [−max_speed, max_speed], never (0, 0)."""
    # Draw among the (2m + 1)² − 1 non-zero pairs: skip the index of (0, 0).
    side = 2 * max_speed + 1
    index = rng.integers(0, side * side - 1, size=shape)
    index = index + (index >= (side * side) // 2)
    return np.stack([index // side, index % side], axis=-1) - max_speed


def _render(labels, side, positions, size):
    """Frames `(chunk, frames, size, size)`: each shape drawn at its box's top-left positions."""
    pixel = np.arange(size, dtype=np.float64) + 0.5  # pixel centres
    frames = np.zeros((len(labels), positions.shape[2], size, size), dtype=np.float32)
    for index in range(labels.shape[1]):
        r = side[:, index, None, None, None] / 2.0  # (chunk, 1, 1, 1)
        top_left = positions[:, index, :, None, None, :]  # (chunk, frames, 1, 1, 2)
        d_y = pixel[None, None, :, None] - (top_left[..., 0] + r)  # (chunk, frames, size, 1)
        d_x = pixel[None, None, None, :] - (top_left[..., 1] + r)  # (chunk, frames, 1, size)
        label = labels[:, index, None, None, None]
        mask = _draw(label, np.abs(d_y), np.abs(d_x), d_y, r)  # (chunk, frames, size, size)
        np.maximum(frames, mask, out=frames)
    return frames


def _position_range(labels, side, size):
    """The top-left box positions `(chunk, shapes, 2)` that keep each shape's pixels in frame.

    A shape need not fill its box (a triangle's apex row may be empty), so the
    range is read from the shape drawn once: its first and last rows and
    columns that hold a pixel.
    """
    largest = int(side.max())
    lowest = np.empty((*labels.shape, 2), dtype=np.int64)
    highest = np.empty_like(lowest)
    for index in range(labels.shape[1]):  # one at a time: a video's shapes would overlap
        alone = _render(
            labels[:, index : index + 1],
            side[:, index : index + 1],
            np.zeros((len(labels), 1, 1, 2), dtype=np.int64),
            largest,
        )[:, 0]  # (chunk, largest, largest)
        for axis in (0, 1):
            filled = alone.any(axis=2 - axis)  # rows (axis 0) or columns (axis 1) with a pixel
            first = filled.argmax(axis=1)
            last = largest - 1 - filled[:, ::-1].argmax(axis=1)
            lowest[:, index, axis] = -first
            highest[:, index, axis] = size - 1 - last
    return lowest, highest


def _trajectories(first, velocity, lowest, highest, frames):
    """Top-left positions `(chunk, shapes, frames, 2)`: constant velocity, reflected at walls."""
    positions = np.empty((*first.shape[:2], frames, 2), dtype=np.int64)
    p, v = first.copy(), velocity.copy()
    for t in range(frames):
        positions[:, :, t] = p
        p = p + v
        below, above = p < lowest, p > highest
        p = np.where(below, 2 * lowest - p, np.where(above, 2 * highest - p, p))
        v = np.where(below | above, -v, v)
    return positions
