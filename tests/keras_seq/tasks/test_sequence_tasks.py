"""copy and reverse, and the TaskData checks for sequence-to-sequence targets.

Each expected target is rebuilt here in plain Python from the source row (its
symbols up to the first PAD), never read back from the generator.
"""

import json

import numpy as np
import pytest

from keras_seq.tasks import SequenceSpec, TargetSpec, TaskData, Vocabulary, copy, reverse
from keras_seq.tasks.sequences import symbols


def _rows(task):
    return (
        np.concatenate([task.x_train, task.x_val]),
        np.concatenate([task.y_train, task.y_val]),
    )


def _true_length(row):
    """Number of symbols before the first PAD (and PAD only after it)."""
    pads = np.flatnonzero(row == Vocabulary.PAD)
    length = int(pads[0]) if len(pads) else len(row)
    assert np.all(row[length:] == Vocabulary.PAD)
    return length


@pytest.mark.parametrize(
    ("generator", "answer"),
    [(copy, lambda s: s), (reverse, lambda s: s[::-1])],
    ids=["copy", "reverse"],
)
def test_target_is_the_answer_followed_by_end_then_padding(generator, answer):
    task = generator(9, 600, vocab_size=7, min_length=2, seed=4)
    x, y = _rows(task)
    assert x.shape == (600, 9) and y.shape == (600, 10)
    assert x.dtype == np.int32 and y.dtype == np.int32
    for source, target in zip(x, y, strict=True):
        length = _true_length(source)
        symbols_read = source[:length].tolist()
        expected = [*answer(symbols_read), Vocabulary.END]
        expected += [Vocabulary.PAD] * (10 - len(expected))
        assert target.tolist() == expected


def test_lengths_are_uniform_between_min_length_and_length():
    x, _ = _rows(copy(8, 8000, min_length=3, seed=0))
    lengths = np.array([_true_length(row) for row in x])
    assert lengths.min() == 3 and lengths.max() == 8
    counts = np.bincount(lengths, minlength=9)[3:]
    # 6 equally likely lengths: 1,333 expected each; 5 standard deviations is ±170.
    assert np.all(np.abs(counts - 8000 / 6) < 170), counts


def test_symbols_are_drawn_from_the_vocabulary_and_never_special():
    task = reverse(6, 3000, vocab_size=5, seed=2)
    x, _ = _rows(task)
    symbols_used = x[x != Vocabulary.PAD]
    assert set(np.unique(symbols_used)) == {4, 5, 6, 7, 8}
    assert task.source_vocabulary.tokens == ["<pad>", "<start>", "<end>", "<unk>", *"abcde"]
    assert task.inputs == SequenceSpec("tokens", length=6, vocab_size=9)
    assert task.targets == TargetSpec("sequence", vocab_size=9, length=7)


def test_decoded_reverse_reads_backwards():
    task = reverse(7, 50, vocab_size=26, seed=3)
    for source, target in zip(task.x_train, task.y_train, strict=True):
        words = task.source_vocabulary.decode(source).split()
        assert task.target_vocabulary.decode(target).split() == words[::-1]
        assert 1 <= len(words) <= 7


def test_more_than_26_symbols_are_numbered():
    assert symbols(3) == ["a", "b", "c"]
    assert symbols(30)[:2] == ["t0", "t1"] and symbols(30)[-1] == "t29"
    task = copy(4, 20, vocab_size=30)
    assert len(task.source_vocabulary) == 34


def test_same_seed_same_arrays_other_seed_other_arrays():
    a, b, c = reverse(10, 300, seed=5), reverse(10, 300, seed=5), reverse(10, 300, seed=6)
    np.testing.assert_array_equal(a.x_train, b.x_train)
    np.testing.assert_array_equal(a.y_val, b.y_val)
    assert not np.array_equal(a.x_train, c.x_train)


def test_split_sizes_and_params():
    task = copy(5, 100, validation_split=0.25, seed=1)
    assert (task.num_train, task.num_val) == (75, 25)
    assert task.params == {
        "length": 5,
        "n": 100,
        "vocab_size": 10,
        "min_length": 1,
        "validation_split": 0.25,
        "seed": 1,
    }


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"length": 0}, "`length`, expected a positive integer"),
        ({"min_length": 6}, "`min_length`, expected an integer from 1 to 5, got 6"),
        ({"vocab_size": 0}, "`vocab_size`, expected a positive integer"),
        ({"vocab_size": 10**6}, "no larger than 10000"),
        ({"validation_split": 1.0}, "`validation_split`"),
        ({"seed": -1}, "`seed`, expected a non-negative integer"),
        ({"n": 1}, "at least one sequence in each split"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, match):
    arguments = {"length": 5, "n": 20, **kwargs}
    with pytest.raises(ValueError, match=match):
        reverse(arguments.pop("length"), arguments.pop("n"), **arguments)


# ------------------------------------------------------------------- TaskData, kind "sequence"


def _sequence_task(**overrides):
    vocab = Vocabulary(["a", "b"])
    x = np.array([[4, 5, 0], [5, 0, 0]], dtype=np.int32)
    y = np.array([[4, 5, 2, 0], [5, 2, 0, 0]], dtype=np.int32)
    fields = {
        "x_train": x,
        "y_train": y,
        "x_val": x[:1],
        "y_val": y[:1],
        "name": "toy",
        "inputs": SequenceSpec("tokens", length=3, vocab_size=6),
        "targets": TargetSpec("sequence", vocab_size=6, length=4),
        "description": "two pairs",
        "source_vocabulary": vocab,
        "target_vocabulary": vocab,
    }
    fields.update(overrides)
    return TaskData(**fields)


def test_target_spec_sequence_describes_ids_of_a_vocabulary():
    spec = TargetSpec("sequence", vocab_size=12, length=7)
    assert spec.shape == (7,) and spec.dtype == "int32"
    assert spec.to_dict() == {"kind": "sequence", "dtype": "int32", "vocab_size": 12, "length": 7}
    with pytest.raises(ValueError, match="`vocab_size`, expected a positive integer, got None"):
        TargetSpec("sequence", length=7)
    with pytest.raises(ValueError, match="`num_classes`, expected None for kind='sequence'"):
        TargetSpec("sequence", vocab_size=12, length=7, num_classes=3)
    with pytest.raises(ValueError, match="`vocab_size`, expected None for kind='pointer'"):
        TargetSpec("pointer", num_positions=3, length=3, vocab_size=5)


def test_task_data_with_vocabularies_describes_their_sizes():
    task = _sequence_task()
    description = task.to_dict()
    assert description["source_vocab_size"] == 6 and description["target_vocab_size"] == 6
    json.dumps(description)
    assert "vocabularies: source_vocab_size=6, target_vocab_size=6" in task.summary()


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"target_vocabulary": None}, "`target_vocabulary`, expected a Vocabulary for a task"),
        ({"source_vocabulary": None}, "`source_vocabulary`, expected a Vocabulary for a task"),
        ({"source_vocabulary": ["a", "b"]}, "`source_vocabulary`, expected a Vocabulary or None"),
        (
            {"target_vocabulary": Vocabulary(["a"])},
            "`target_vocabulary` holds 5 tokens but `targets` has vocab_size=6",
        ),
        (
            {"x_val": np.array([[6, 0, 0]], dtype=np.int32)},
            r"`x_val` must hold token ids in \[0, 6\), got values from 0 to 6",
        ),
        (
            {"y_val": np.array([[4, 5, 0, 0]], dtype=np.int32)},
            "`y_val` must end each target with the END id \\(2\\), but row 0 holds none",
        ),
        (
            {"y_val": np.array([[4, 5, 2]], dtype=np.int32)},
            r"`y_val` must be a int32 NumPy array of shape \(n, 4\)",
        ),
    ],
)
def test_task_data_checks_sequence_targets_against_the_vocabularies(overrides, match):
    with pytest.raises(ValueError, match=match):
        _sequence_task(**overrides)


def test_target_vocabulary_is_refused_for_other_target_kinds():
    x = np.zeros((2, 3), dtype=np.int32)
    with pytest.raises(ValueError, match="`target_vocabulary`, expected None for targets of kind"):
        TaskData(
            x_train=x,
            y_train=np.array([0, 1], dtype=np.int32),
            x_val=x,
            y_val=np.array([0, 1], dtype=np.int32),
            name="classify",
            inputs=SequenceSpec("tokens", length=3, vocab_size=5),
            targets=TargetSpec("classification", num_classes=2),
            description="",
            source_vocabulary=Vocabulary(["a"]),
            target_vocabulary=Vocabulary(["a"]),
        )
