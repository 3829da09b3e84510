"""The long-memory task generators: what they put in the arrays and how they describe them.

Every expectation is recomputed here from the task's definition (the marked
values, the first symbol), never read back from the generator.
"""

import dataclasses
import json
import re

import numpy as np
import pytest

from keras_seq.tasks import SequenceSpec, TargetSpec, TaskData, adding_problem, long_lag
from tests.allocation import allocates_little


def _all_arrays(task):
    return task.x_train, task.y_train, task.x_val, task.y_val


def _joined(task):
    """Train and validation stacked back together, in generation order."""
    return (
        np.concatenate([task.x_train, task.x_val]),
        np.concatenate([task.y_train, task.y_val]),
    )


# ----------------------------------------------------------------------------- adding_problem


def test_adding_problem_shapes_and_dtypes():
    task = adding_problem(30, 500, validation_split=0.2)
    assert task.x_train.shape == (400, 30, 2) and task.x_train.dtype == np.float32
    assert task.y_train.shape == (400, 1) and task.y_train.dtype == np.float32
    assert task.x_val.shape == (100, 30, 2) and task.x_val.dtype == np.float32
    assert task.y_val.shape == (100, 1) and task.y_val.dtype == np.float32


def test_adding_problem_marks_exactly_two_steps_one_in_each_half():
    length = 11  # odd: the first half is steps 0-4, the second 5-10
    x, _ = _joined(adding_problem(length, 3000, seed=3))
    markers = x[..., 1]
    assert set(np.unique(markers)) == {0.0, 1.0}
    assert np.all(markers.sum(axis=1) == 2)
    first = markers[:, : length // 2].sum(axis=1)
    second = markers[:, length // 2 :].sum(axis=1)
    assert np.all(first == 1) and np.all(second == 1)
    # Every position of each half gets marked in some sequence.
    positions = [np.flatnonzero(row) for row in markers]
    assert {p[0] for p in positions} == set(range(0, 5))
    assert {p[1] for p in positions} == set(range(5, 11))


def test_adding_problem_target_is_the_sum_of_the_two_marked_values():
    x, y = _joined(adding_problem(40, 300, seed=5))
    for sequence, target in zip(x, y, strict=True):
        marked = [value for value, marker in sequence if marker == 1.0]
        assert len(marked) == 2
        np.testing.assert_allclose(target[0], marked[0] + marked[1], rtol=1e-6)


def test_adding_problem_values_are_uniform_and_target_variance_is_one_sixth():
    x, y = _joined(adding_problem(20, 20000, seed=1))
    values = x[..., 0]
    assert values.min() >= 0.0 and values.max() < 1.0
    assert abs(values.mean() - 0.5) < 0.01
    # The sum of two independent U(0, 1) values: mean 1, variance 2/12.
    assert abs(y.mean() - 1.0) < 0.01
    assert abs(y.var() - 1 / 6) < 0.01


def test_adding_problem_minimum_length_marks_both_steps():
    x, y = _joined(adding_problem(2, 10))
    np.testing.assert_array_equal(x[..., 1], np.ones((10, 2), dtype=np.float32))
    np.testing.assert_allclose(y[:, 0], x[:, 0, 0] + x[:, 1, 0], rtol=1e-6)


# ----------------------------------------------------------------------------------- long_lag


def test_long_lag_one_hot_shapes_and_dtypes():
    task = long_lag(50, 1000, num_distractors=3)
    assert task.x_train.shape == (800, 50, 5) and task.x_train.dtype == np.float32
    assert task.y_train.shape == (800,) and task.y_train.dtype == np.int32
    assert task.x_val.shape == (200, 50, 5) and task.x_val.dtype == np.float32
    assert task.y_val.shape == (200,) and task.y_val.dtype == np.int32


def test_long_lag_ids_shapes_and_dtypes():
    task = long_lag(50, 1000, num_distractors=3, encoding="ids")
    assert task.x_train.shape == (800, 50) and task.x_train.dtype == np.int32
    assert task.x_val.shape == (200, 50) and task.x_val.dtype == np.int32
    assert task.y_val.shape == (200,) and task.y_val.dtype == np.int32


def test_long_lag_one_hot_is_a_local_code_of_the_ids():
    one_hot, _ = _joined(long_lag(30, 200, num_distractors=5, encoding="one_hot", seed=4))
    ids, _ = _joined(long_lag(30, 200, num_distractors=5, encoding="ids", seed=4))
    assert set(np.unique(one_hot)) == {0.0, 1.0}
    assert np.all(one_hot.sum(axis=-1) == 1.0)
    np.testing.assert_array_equal(np.argmax(one_hot, axis=-1), ids)


def test_long_lag_class_is_the_first_symbol_x_or_y():
    ids, labels = _joined(long_lag(25, 500, encoding="ids", seed=2))
    # x = id 0 -> class 0, y = id 1 -> class 1: the last symbol repeats the first.
    assert set(np.unique(ids[:, 0])) == {0, 1}
    np.testing.assert_array_equal(labels, ids[:, 0])


def test_long_lag_distractors_come_from_their_own_alphabet():
    num_distractors = 6
    ids, _ = _joined(long_lag(40, 500, num_distractors=num_distractors, encoding="ids"))
    distractors = ids[:, 1:]
    # Never x or y after the first step, and every distractor symbol is used.
    assert set(np.unique(distractors)) == set(range(2, 2 + num_distractors))


def test_long_lag_distractors_carry_no_information_about_the_class():
    ids, labels = _joined(long_lag(60, 4000, num_distractors=4, encoding="ids", seed=7))
    distractors = ids[:, 1:]
    # Random, not the fixed a_1 ... a_{p-1} of experiment 2a.
    assert len({row.tobytes() for row in distractors}) == len(distractors)
    for symbol in range(2, 6):
        frequency_x = np.mean(distractors[labels == 0] == symbol)
        frequency_y = np.mean(distractors[labels == 1] == symbol)
        assert abs(frequency_x - 0.25) < 0.01 and abs(frequency_y - 0.25) < 0.01


@pytest.mark.parametrize("n", [1000, 1001])
def test_long_lag_classes_are_balanced(n):
    task = long_lag(10, n, seed=11)
    _, labels = _joined(task)
    counts = np.bincount(labels, minlength=2)
    assert abs(counts[0] - counts[1]) <= 1
    # Shuffled, so both splits hold both classes in about equal numbers.
    assert 0.4 < task.y_val.mean() < 0.6 and 0.4 < task.y_train.mean() < 0.6


def test_long_lag_of_one_step_is_only_the_class_symbol():
    ids, labels = _joined(long_lag(1, 20, encoding="ids"))
    assert ids.shape == (20, 1)
    np.testing.assert_array_equal(ids[:, 0], labels)


# ------------------------------------------------------------------------- seeds and splits


@pytest.mark.parametrize(
    "make",
    [
        lambda seed: adding_problem(20, 100, seed=seed),
        lambda seed: long_lag(20, 100, seed=seed),
        lambda seed: long_lag(20, 100, encoding="ids", seed=seed),
    ],
    ids=["adding_problem", "long_lag_one_hot", "long_lag_ids"],
)
def test_same_seed_same_data_other_seed_other_data(make):
    first, again, other = make(0), make(0), make(1)
    for a, b in zip(_all_arrays(first), _all_arrays(again), strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first.x_train, other.x_train)


@pytest.mark.parametrize(
    ("validation_split", "num_train", "num_val"), [(0.2, 80, 20), (0.25, 75, 25), (0.5, 50, 50)]
)
def test_validation_split_sets_the_split_sizes(validation_split, num_train, num_val):
    for task in (
        adding_problem(10, 100, validation_split=validation_split),
        long_lag(10, 100, validation_split=validation_split),
    ):
        assert (task.num_train, task.num_val) == (num_train, num_val)
        assert len(task.y_train) == num_train and len(task.y_val) == num_val


# ----------------------------------------------------------------------------- bad arguments


@pytest.mark.parametrize(
    ("make", "argument", "value"),
    [
        (lambda: adding_problem(0, 10), "length", "0"),
        (lambda: adding_problem(1, 10), "length", "1"),
        (lambda: adding_problem(2.5, 10), "length", "2.5"),
        (lambda: adding_problem(100_001, 10), "length", "100001"),
        (lambda: adding_problem(10, -4), "n", "-4"),
        (lambda: adding_problem(10, True), "n", "True"),
        (lambda: adding_problem(10, 100, validation_split=1.0), "validation_split", "1.0"),
        (lambda: adding_problem(10, 100, validation_split=0.0), "validation_split", "0.0"),
        (lambda: adding_problem(10, 100, validation_split=0.001), "validation_split", "0.001"),
        (lambda: adding_problem(10, 100, seed=-1), "seed", "-1"),
        (lambda: adding_problem(10, 100, seed="0"), "seed", "'0'"),
        (lambda: long_lag(0, 10), "lag", "0"),
        (lambda: long_lag(100_001, 10), "lag", "100001"),
        (lambda: long_lag("200", 10), "lag", "'200'"),
        (lambda: long_lag(10, 0), "n", "0"),
        (lambda: long_lag(10, 1), "validation_split", "0.2"),
        (lambda: long_lag(10, 10, num_distractors=0), "num_distractors", "0"),
        (lambda: long_lag(10, 10, num_distractors=1001), "num_distractors", "1001"),
        (lambda: long_lag(10, 10, encoding="onehot"), "encoding", "'onehot'"),
        (lambda: long_lag(10, 10, encoding=None), "encoding", "None"),
        (lambda: long_lag(10, 10, validation_split=-0.1), "validation_split", "-0.1"),
        (lambda: long_lag(10, 10, seed=1.5), "seed", "1.5"),
    ],
)
def test_bad_arguments_raise_naming_the_argument_and_value(make, argument, value):
    with pytest.raises(ValueError, match=f"`{argument}`.*got {re.escape(value)}"):
        make()


@pytest.mark.parametrize(
    "make",
    [
        lambda: adding_problem(100_000, 10**9),
        lambda: long_lag(100_000, 10**6),
        lambda: long_lag(1000, 10**6, num_distractors=1000, encoding="one_hot"),
        lambda: long_lag(100_000, 10**5, encoding="ids"),
    ],
)
def test_absurd_sizes_are_refused_before_allocating(make):
    # Allocating any of these would take gigabytes to terabytes; a check
    # before allocating answers at once with a ValueError (not MemoryError).
    with allocates_little(), pytest.raises(ValueError, match="`n`"):
        make()


def test_largest_one_hot_within_the_limit_is_accepted_as_ids():
    # The one-hot limit scales with the alphabet; the same sizes as ids are fine.
    task = long_lag(1000, 2000, num_distractors=1000, encoding="ids")
    assert task.x_train.shape == (1600, 1000)


# ------------------------------------------------------------------------------ description


def test_adding_problem_describes_its_inputs_and_targets():
    task = adding_problem(30, 100, validation_split=0.3, seed=9)
    assert task.name == "adding_problem"
    assert task.params == {"length": 30, "n": 100, "validation_split": 0.3, "seed": 9}
    assert task.inputs == SequenceSpec("numeric", length=30, features=2)
    assert task.targets == TargetSpec("regression", output_dim=1)
    assert "30" in task.description and "marked" in task.description


def test_long_lag_describes_its_inputs_and_targets():
    one_hot = long_lag(200, 100, num_distractors=8, seed=2)
    assert one_hot.name == "long_lag"
    assert one_hot.params == {
        "lag": 200,
        "n": 100,
        "num_distractors": 8,
        "encoding": "one_hot",
        "validation_split": 0.2,
        "seed": 2,
    }
    assert one_hot.inputs == SequenceSpec("numeric", length=200, features=10)
    assert one_hot.targets == TargetSpec("classification", num_classes=2)
    assert "200" in one_hot.description

    ids = long_lag(200, 100, num_distractors=8, encoding="ids")
    assert ids.inputs == SequenceSpec("tokens", length=200, vocab_size=10)


def test_to_dict_is_json_and_holds_no_arrays():
    task = long_lag(20, 50, encoding="ids", seed=1)
    record = json.loads(json.dumps(task.to_dict()))
    assert record == {
        "name": "long_lag",
        "params": {
            "lag": 20,
            "n": 50,
            "num_distractors": 8,
            "encoding": "ids",
            "validation_split": 0.2,
            "seed": 1,
        },
        "description": task.description,
        "inputs": {"kind": "tokens", "length": 20, "dtype": "int32", "vocab_size": 10},
        "targets": {"kind": "classification", "dtype": "int32", "num_classes": 2},
        "num_train": 40,
        "num_val": 10,
    }


def test_params_are_plain_python_values_even_from_numpy_arguments():
    task = long_lag(
        np.int64(20),
        np.int32(50),
        num_distractors=np.int16(3),
        validation_split=np.float32(0.5),
        seed=np.uint8(7),
    )
    assert task.params == {
        "lag": 20,
        "n": 50,
        "num_distractors": 3,
        "encoding": "one_hot",
        "validation_split": 0.5,
        "seed": 7,
    }
    assert all(type(value) in (int, float, str) for value in task.params.values())
    json.dumps(task.to_dict())


def test_summary_and_repr_name_the_task_without_printing_arrays():
    task = adding_problem(1000, 100)
    for text in (task.summary(), repr(task)):
        assert "adding_problem" in text and "length=1000" in text
        assert len(text) < 1000


def test_spec_shapes_and_dtypes():
    assert SequenceSpec("numeric", length=7, features=3).shape == (7, 3)
    assert SequenceSpec("numeric", length=7, features=3).dtype == "float32"
    assert SequenceSpec("tokens", length=7, vocab_size=9).shape == (7,)
    assert SequenceSpec("tokens", length=7, vocab_size=9).dtype == "int32"
    assert TargetSpec("classification", num_classes=4).shape == ()
    assert TargetSpec("classification", num_classes=4).dtype == "int32"
    assert TargetSpec("regression", output_dim=3).shape == (3,)
    assert TargetSpec("regression", output_dim=3).dtype == "float32"


@pytest.mark.parametrize(
    ("make", "argument"),
    [
        (lambda: SequenceSpec("text", length=5, features=1), "kind"),
        (lambda: SequenceSpec("numeric", length=0, features=1), "length"),
        (lambda: SequenceSpec("numeric", length=5), "features"),
        (lambda: SequenceSpec("numeric", length=5, features=2, vocab_size=3), "vocab_size"),
        (lambda: SequenceSpec("tokens", length=5, features=2, vocab_size=3), "features"),
        (lambda: TargetSpec("ranking"), "kind"),
        (lambda: TargetSpec("classification", num_classes=1), "num_classes"),
        (lambda: TargetSpec("classification", num_classes=2, output_dim=1), "output_dim"),
        (lambda: TargetSpec("regression"), "output_dim"),
    ],
)
def test_inconsistent_specs_are_refused(make, argument):
    with pytest.raises(ValueError, match=f"`{argument}`"):
        make()


def test_task_data_refuses_arrays_that_do_not_match_its_specs():
    inputs = SequenceSpec("numeric", length=4, features=2)
    targets = TargetSpec("regression", output_dim=1)
    good = {
        "x_train": np.zeros((3, 4, 2), np.float32),
        "y_train": np.zeros((3, 1), np.float32),
        "x_val": np.zeros((2, 4, 2), np.float32),
        "y_val": np.zeros((2, 1), np.float32),
    }
    common = {"name": "toy", "inputs": inputs, "targets": targets, "description": "toy"}
    TaskData(**good, **common)
    for name, bad in [
        ("x_train", np.zeros((3, 4, 2), np.float64)),
        ("x_val", np.zeros((2, 5, 2), np.float32)),
        ("y_train", np.zeros((3,), np.float32)),
        ("y_val", [[0.0], [0.0]]),
        ("y_train", np.zeros((4, 1), np.float32)),
    ]:
        with pytest.raises(ValueError, match=f"`{name}`"):
            TaskData(**{**good, name: bad}, **common)


def test_task_data_is_frozen():
    task = long_lag(5, 10)
    with pytest.raises(dataclasses.FrozenInstanceError):
        task.x_train = task.x_val


def test_docstring_examples_run():
    import doctest

    from keras_seq.tasks import long_memory

    result = doctest.testmod(long_memory, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
