"""sort_numbers: its targets are the sorting permutations of its inputs, and the pointer spec.

Every expectation is recomputed here from the definition (a permutation that
puts the numbers in non-decreasing order, ties by position), with Python's own
`sorted`, never read back from the generator.
"""

import json
import re

import numpy as np
import pytest

from keras_seq.tasks import SequenceSpec, TargetSpec, TaskData, sort_numbers
from tests.allocation import allocates_little


def _joined(task):
    """Train and validation stacked back together, in generation order."""
    return (
        np.concatenate([task.x_train, task.x_val]),
        np.concatenate([task.y_train, task.y_val]),
    )


def test_shapes_and_dtypes():
    task = sort_numbers(7, 500, validation_split=0.2)
    assert task.x_train.shape == (400, 7, 1) and task.x_train.dtype == np.float32
    assert task.y_train.shape == (400, 7) and task.y_train.dtype == np.int32
    assert task.x_val.shape == (100, 7, 1) and task.x_val.dtype == np.float32
    assert task.y_val.shape == (100, 7) and task.y_val.dtype == np.int32


def test_every_target_is_a_permutation_of_the_positions():
    _, y = _joined(sort_numbers(9, 1000, seed=3))
    np.testing.assert_array_equal(np.sort(y, axis=1), np.broadcast_to(np.arange(9), y.shape))


def test_pointing_at_the_targets_in_order_reads_the_numbers_sorted():
    x, y = _joined(sort_numbers(6, 1000, seed=4))
    numbers = x[..., 0]
    pointed = np.take_along_axis(numbers, y, axis=1)  # x[π_0], x[π_1], …
    assert np.all(np.diff(pointed, axis=1) >= 0)
    np.testing.assert_array_equal(pointed, np.sort(numbers, axis=1))


def test_targets_match_pythons_sorted_positions():
    x, y = _joined(sort_numbers(5, 200, seed=5))
    for numbers, target in zip(x[..., 0], y, strict=True):
        expected = sorted(range(len(numbers)), key=lambda j, numbers=numbers: numbers[j])
        assert target.tolist() == expected


def test_ties_are_broken_by_position():
    # float32 draws tie now and then: ~30 times among 1,000 sequences of 1,000.
    x, y = _joined(sort_numbers(1000, 1000, seed=0))
    ties = 0
    for numbers, target in zip(x[..., 0], y, strict=True):
        pointed = numbers[target]
        tied = np.flatnonzero(pointed[1:] == pointed[:-1])
        ties += len(tied)
        # Among equal numbers, the earlier position comes first.
        assert np.all(target[tied] < target[tied + 1])
    assert ties > 0, "no ties drawn: the test did not exercise tie-breaking"


def test_numbers_are_uniform_and_every_position_is_equally_likely_to_come_first():
    x, y = _joined(sort_numbers(5, 20000, seed=1))
    numbers = x[..., 0]
    assert numbers.min() >= 0.0 and numbers.max() < 1.0
    assert abs(numbers.mean() - 0.5) < 0.01
    assert abs(numbers.var() - 1 / 12) < 0.002
    # Exchangeable positions: the smallest number is at each of the 5 positions 1/5 of the time.
    first = np.bincount(y[:, 0], minlength=5) / len(y)
    np.testing.assert_allclose(first, 0.2, atol=0.01)


def test_same_seed_same_data_other_seed_other_data():
    first, again, other = (
        sort_numbers(5, 100, seed=0),
        sort_numbers(5, 100, seed=0),
        sort_numbers(5, 100, seed=1),
    )
    for name in ("x_train", "y_train", "x_val", "y_val"):
        np.testing.assert_array_equal(getattr(first, name), getattr(again, name))
    assert not np.array_equal(first.x_train, other.x_train)
    assert not np.array_equal(first.y_train, other.y_train)


@pytest.mark.parametrize(
    ("validation_split", "num_train", "num_val"), [(0.2, 80, 20), (0.25, 75, 25), (0.5, 50, 50)]
)
def test_validation_split_sets_the_split_sizes(validation_split, num_train, num_val):
    task = sort_numbers(4, 100, validation_split=validation_split)
    assert (task.num_train, task.num_val) == (num_train, num_val)
    assert len(task.y_train) == num_train and len(task.y_val) == num_val


def test_shortest_sequence_is_two_numbers():
    x, y = _joined(sort_numbers(2, 50))
    np.testing.assert_array_equal(y[:, 0], np.where(x[:, 0, 0] <= x[:, 1, 0], 0, 1))


# ----------------------------------------------------------------------------- bad arguments


@pytest.mark.parametrize(
    ("kwargs", "argument", "value"),
    [
        ({"length": 1}, "length", "1"),
        ({"length": 0}, "length", "0"),
        ({"length": 4.0}, "length", "4.0"),
        ({"length": True}, "length", "True"),
        ({"length": "5"}, "length", "'5'"),
        ({"length": 100_001}, "length", "100001"),
        ({"n": 0}, "n", "0"),
        ({"n": -3}, "n", "-3"),
        ({"n": 1}, "validation_split", "0.2"),
        ({"validation_split": 1.0}, "validation_split", "1.0"),
        ({"validation_split": 0.0}, "validation_split", "0.0"),
        ({"validation_split": "0.2"}, "validation_split", "'0.2'"),
        ({"seed": -1}, "seed", "-1"),
        ({"seed": 1.5}, "seed", "1.5"),
        ({"seed": None}, "seed", "None"),
    ],
)
def test_bad_arguments_raise_naming_the_argument_and_value(kwargs, argument, value):
    arguments = {"length": 5, "n": 100, **kwargs}
    length, n = arguments.pop("length"), arguments.pop("n")
    with pytest.raises(ValueError, match=f"`{argument}`.*got {re.escape(value)}"):
        sort_numbers(length, n, **arguments)


def test_absurd_sizes_are_refused_before_allocating():
    with allocates_little(), pytest.raises(ValueError, match="`n`"):
        sort_numbers(100_000, 10**6)


# ------------------------------------------------------------------------------ description


def test_describes_its_inputs_and_pointer_targets():
    task = sort_numbers(8, 100, validation_split=0.3, seed=9)
    assert task.name == "sort_numbers"
    assert task.params == {"length": 8, "n": 100, "validation_split": 0.3, "seed": 9}
    assert task.inputs == SequenceSpec("numeric", length=8, features=1)
    assert task.targets == TargetSpec("pointer", num_positions=8, length=8)
    assert "8" in task.description and "permutation" in task.description


def test_to_dict_is_json_and_describes_the_pointers():
    task = sort_numbers(5, 50, seed=1)
    record = json.loads(json.dumps(task.to_dict()))
    assert record["targets"] == {
        "kind": "pointer",
        "dtype": "int32",
        "num_positions": 5,
        "length": 5,
    }
    assert record["inputs"] == {"kind": "numeric", "length": 5, "dtype": "float32", "features": 1}
    assert (record["num_train"], record["num_val"]) == (40, 10)


def test_params_are_plain_python_values_even_from_numpy_arguments():
    task = sort_numbers(
        np.int64(5), np.int32(50), validation_split=np.float32(0.5), seed=np.uint8(7)
    )
    assert task.params == {"length": 5, "n": 50, "validation_split": 0.5, "seed": 7}
    assert all(type(value) in (int, float) for value in task.params.values())


# ------------------------------------------------------------------------ the pointer spec


def test_pointer_spec_shape_and_dtype():
    spec = TargetSpec("pointer", num_positions=10, length=3)
    assert spec.shape == (3,)
    assert spec.dtype == "int32"
    assert spec.to_dict() == {"kind": "pointer", "dtype": "int32", "num_positions": 10, "length": 3}


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"kind": "pointer", "length": 3}, "num_positions"),
        ({"kind": "pointer", "num_positions": 3}, "length"),
        ({"kind": "pointer", "num_positions": 0, "length": 3}, "num_positions"),
        ({"kind": "pointer", "num_positions": 3, "length": -1}, "length"),
        ({"kind": "pointer", "num_positions": 3, "length": 3, "num_classes": 3}, "num_classes"),
        ({"kind": "pointer", "num_positions": 3, "length": 3, "output_dim": 3}, "output_dim"),
        ({"kind": "classification", "num_classes": 3, "num_positions": 3}, "num_positions"),
        ({"kind": "regression", "output_dim": 1, "length": 3}, "length"),
    ],
)
def test_inconsistent_pointer_specs_are_refused(kwargs, argument):
    with pytest.raises(ValueError, match=f"`{argument}`"):
        TargetSpec(**kwargs)


def _pointer_task(y_train, *, num_positions=4, length=4):
    return TaskData(
        x_train=np.zeros((len(y_train), 4, 1), np.float32),
        y_train=np.asarray(y_train, np.int32),
        x_val=np.zeros((1, 4, 1), np.float32),
        y_val=np.array([[0, 1, 2, 3][:length]], np.int32),
        name="toy",
        inputs=SequenceSpec("numeric", length=4, features=1),
        targets=TargetSpec("pointer", num_positions=num_positions, length=length),
        description="toy",
    )


def test_task_data_accepts_pointers_into_the_input_and_refuses_others():
    _pointer_task([[3, 2, 1, 0], [0, 0, 0, 0]])
    with pytest.raises(ValueError, match=r"`y_train`.*\[0, 4\).*4"):
        _pointer_task([[3, 2, 1, 4]])
    with pytest.raises(ValueError, match=r"`y_train`.*-1"):
        _pointer_task([[-1, 2, 1, 0]])


def test_task_data_refuses_pointer_targets_for_another_input_length():
    with pytest.raises(ValueError, match=r"num_positions=4.*got num_positions=5"):
        _pointer_task([[0, 1, 2, 3]], num_positions=5)


def test_docstring_examples_run():
    import doctest

    from keras_seq.tasks import permutation

    result = doctest.testmod(permutation, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
