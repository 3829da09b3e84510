"""`moving_shapes`, the next-frame task, and the `FramesSpec` / "frames" targets that describe it.

Expectations come from the frames themselves (pixel counts, bounding boxes, a
bouncing trajectory simulated here from the first frame's position), never
from the generator's own positions.
"""

import itertools

import numpy as np
import pytest

from keras_seq.tasks import FramesSpec, ImageSpec, TargetSpec, TaskData, moving_shapes


def _videos(task):
    """All frames of every video, inputs then targets: `(n, frames, size, size)`."""
    x = np.concatenate([task.x_train, task.x_val])
    y = np.concatenate([task.y_train, task.y_val])
    return np.concatenate([x, y], axis=1)[..., 0]


def _top_left(frame):
    rows, columns = np.flatnonzero(frame.any(axis=1)), np.flatnonzero(frame.any(axis=0))
    return np.array([rows[0], columns[0]]), np.array([rows[-1] - rows[0], columns[-1] - columns[0]])


def _bounce(first, velocity, highest, steps):
    """Positions of a point moving at `velocity` in [0, highest], reflected at both ends."""
    p, v, path = first.copy(), velocity.copy(), [first.copy()]
    for _ in range(steps - 1):
        p = p + v
        for axis in (0, 1):
            if p[axis] < 0:
                p[axis], v[axis] = -p[axis], -v[axis]
            elif p[axis] > highest[axis]:
                p[axis], v[axis] = 2 * highest[axis] - p[axis], -v[axis]
        path.append(p.copy())
    return np.array(path)


def test_inputs_are_the_first_frames_and_targets_the_next_as_the_specs_say():
    task = moving_shapes(50, size=12, frames=7, predict=3, validation_split=0.2, seed=1)
    assert task.x_train.shape == (40, 4, 12, 12, 1) and task.x_val.shape == (10, 4, 12, 12, 1)
    assert task.y_train.shape == (40, 3, 12, 12, 1) and task.y_val.shape == (10, 3, 12, 12, 1)
    assert task.inputs == FramesSpec(4, 12, 12, 1)
    assert task.targets == TargetSpec("frames", length=3, height=12, width=12, channels=1)
    for array in (task.x_train, task.y_train, task.x_val, task.y_val):
        assert array.dtype == np.float32
        assert set(np.unique(array)) <= {0.0, 1.0}  # no noise: binary frames
    assert task.to_dict()["inputs"] == {
        "kind": "frames",
        "length": 4,
        "height": 12,
        "width": 12,
        "channels": 1,
        "dtype": "float32",
    }
    assert task.to_dict()["targets"] == {
        "kind": "frames",
        "dtype": "float32",
        "length": 3,
        "height": 12,
        "width": 12,
        "channels": 1,
    }


def test_the_same_seed_gives_the_same_videos_and_another_seed_others():
    first, again = moving_shapes(30, num_shapes=2, seed=4), moving_shapes(30, num_shapes=2, seed=4)
    other = moving_shapes(30, num_shapes=2, seed=5)
    np.testing.assert_array_equal(_videos(first), _videos(again))
    assert not np.array_equal(_videos(first), _videos(other))
    assert first.params["seed"] == 4


def test_a_bouncing_shape_stays_whole_in_every_frame():
    # One shape, never cut by an edge: each frame lights as many pixels as the first.
    videos = _videos(moving_shapes(300, size=10, frames=20, predict=5, max_speed=4, seed=2))
    counts = videos.sum(axis=(2, 3))
    assert (counts > 0).all()
    np.testing.assert_array_equal(counts, np.repeat(counts[:, :1], counts.shape[1], axis=1))


def test_the_target_frames_continue_the_input_frames_constant_velocity_with_bounces():
    task = moving_shapes(200, size=16, frames=12, predict=6, max_speed=2, seed=3)
    videos = _videos(task)
    speeds = range(-2, 3)
    bounced_in_targets = 0
    for video in videos:
        first, extent = _top_left(video[0])
        highest = 16 - 1 - extent
        measured = np.array([_top_left(frame)[0] for frame in video])
        # A whole-pixel velocity whose bouncing path from the first frame's position is every
        # frame's, targets included (two fit when the first step bounces off a wall at once).
        fits = [
            v
            for v in itertools.product(speeds, speeds)
            if v != (0, 0)
            and np.array_equal(_bounce(first, np.array(v), highest, len(video)), measured)
        ]
        assert fits, measured.tolist()
        path = np.diff(measured, axis=0)
        # Frames 6 to 11 are the targets: count the videos whose motion turns there.
        bounced_in_targets += bool((np.sign(path[5:]) != np.sign(path[4])).any())
        # Each frame is the one before shifted, the shape unchanged.
        for t in range(len(video) - 1):
            shifted = np.roll(video[t], tuple(path[t]), axis=(0, 1))
            np.testing.assert_array_equal(shifted, video[t + 1])
    assert bounced_in_targets > 20  # the targets hold bounces to predict, not just glides


def test_two_shapes_are_drawn_and_noise_only_touches_the_inputs():
    clean = moving_shapes(40, num_shapes=2, seed=7)
    noisy = moving_shapes(40, num_shapes=2, noise=0.2, seed=7)
    np.testing.assert_array_equal(noisy.y_train, clean.y_train)
    assert not np.array_equal(noisy.x_train, clean.x_train)
    assert noisy.x_train.min() >= 0.0 and noisy.x_train.max() <= 1.0
    assert np.abs(noisy.x_train - clean.x_train).std() > 0.1
    one = moving_shapes(40, num_shapes=1, seed=7)
    assert _videos(clean).sum() > _videos(one).sum()  # more lit pixels with two shapes


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ({"n": 0}, "n"),
        ({"n": 10, "size": 7}, "size"),
        ({"n": 10, "size": 257}, "size"),
        ({"n": 10, "frames": 1}, "frames"),
        ({"n": 10, "frames": 101}, "frames"),
        ({"n": 10, "frames": 6, "predict": 6}, "predict"),
        ({"n": 10, "predict": 0}, "predict"),
        ({"n": 10, "num_shapes": 0}, "num_shapes"),
        ({"n": 10, "num_shapes": 5}, "num_shapes"),
        ({"n": 10, "max_speed": 0}, "max_speed"),
        ({"n": 10, "max_speed": 5}, "max_speed"),
        ({"n": 10, "noise": 1.0}, "noise"),
        ({"n": 10, "validation_split": 0.0}, "validation_split"),
        ({"n": 10, "seed": -1}, "seed"),
        ({"n": 10**7, "size": 256, "frames": 100}, "n"),
    ],
)
def test_bad_arguments_are_refused_naming_the_argument(arguments, name):
    n = arguments.pop("n")
    with pytest.raises(ValueError, match=f"argument `{name}`"):
        moving_shapes(n, **arguments)


def test_frames_specs_check_their_fields_and_frame_targets_need_matching_frames():
    with pytest.raises(ValueError, match="argument `length`"):
        FramesSpec(0, 8, 8)
    with pytest.raises(ValueError, match="argument `width`"):
        TargetSpec("frames", length=2, height=8, width=None, channels=1)
    with pytest.raises(ValueError, match="argument `height`"):
        TargetSpec("regression", output_dim=3, height=8)
    x = np.zeros((2, 3, 8, 8, 1), np.float32)
    y = np.zeros((2, 2, 8, 8, 1), np.float32)
    common = {"name": "t", "description": "", "x_train": x, "x_val": x}
    targets = TargetSpec("frames", length=2, height=8, width=8, channels=1)
    TaskData(inputs=FramesSpec(3, 8, 8), targets=targets, y_train=y, y_val=y, **common)
    with pytest.raises(ValueError, match="argument `inputs`"):
        TaskData(inputs=FramesSpec(3, 8, 8, 2), targets=targets, y_train=y, y_val=y, **common)
    image = np.zeros((2, 8, 8, 1), np.float32)
    with pytest.raises(ValueError, match="argument `inputs`"):
        TaskData(
            inputs=ImageSpec(8, 8),
            targets=targets,
            name="t",
            description="",
            x_train=image,
            x_val=image,
            y_train=y,
            y_val=y,
        )
    pointers = np.zeros((2, 3), np.int32)
    with pytest.raises(ValueError, match="argument `targets`"):
        TaskData(
            inputs=FramesSpec(3, 8, 8),
            targets=TargetSpec("pointer", num_positions=3, length=3),
            y_train=pointers,
            y_val=pointers,
            **common,
        )
