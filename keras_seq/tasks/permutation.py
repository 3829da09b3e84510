"""Tasks whose answer is a permutation of the input: what a pointer network is for.

A pointer network (Vinyals, Fortunato & Jaitly 2015) answers with positions of
its input instead of symbols from a fixed vocabulary, so its output
"vocabulary" grows with the input. Sorting is the simplest such task: the
answer to a sequence of `n` numbers is the permutation of its `n` positions
that puts them in order, and a model with a fixed softmax over classes cannot
even express it for a length it was not built for.

Each generator is seeded (`numpy.random.default_rng(seed)`): the same
arguments give the same arrays.
"""

from __future__ import annotations

import numpy as np

from keras_seq import argument_checks
from keras_seq.tasks.base import (
    MAX_LENGTH,
    SequenceSpec,
    TargetSpec,
    TaskData,
    check_size,
    split_sizes,
)


def sort_numbers(length, n, *, validation_split=0.2, seed=0):
    """Sort numbers by pointing at them: the output is the sorting permutation.

    Each sequence holds `length` numbers `x_0 … x_{length−1}` drawn
    independently from U(0, 1). The target is the permutation `π` that sorts
    them, the positions of the smallest, second smallest, … largest number:

        x_{π_0} ≤ x_{π_1} ≤ … ≤ x_{π_{length−1}}

    that is, `π = argsort(x)`, with ties (rare: float32 draws) broken by
    position, so `π` is always a permutation. A pointer network reads the
    sequence and, at output step `k`, points at position `π_k`: the output
    dictionary is the input itself. Vinyals, Bengio & Kudlur (2016) use this
    task, with pointer networks, to study how input and output order matter;
    here each number is a one-feature vector.

    Args:
        length: Numbers per sequence, from 2 to `MAX_LENGTH`.
        n: Number of sequences, train and validation together.
        validation_split: Fraction of the `n` sequences kept for validation,
            in (0, 1); both splits must hold at least one sequence.
        seed: Non-negative integer seed for `numpy.random.default_rng`.

    Returns:
        A `TaskData` with inputs `(n, length, 1)` float32, the numbers, and
        targets `(n, length)` int32, the sorting permutation (a
        `TargetSpec("pointer", num_positions=length, length=length)`).

    Example:

    >>> task = sort_numbers(5, 1000)
    >>> task.x_train.shape, task.y_train.shape
    ((800, 5, 1), (800, 5))
    >>> x, perm = task.x_train[0, :, 0], task.y_train[0]
    >>> bool(np.all(np.diff(x[perm]) >= 0))
    True

    References:
        - Vinyals, Fortunato & Jaitly, "Pointer Networks", NeurIPS 2015.
        - Vinyals, Bengio & Kudlur, "Order Matters: Sequence to Sequence for
          Sets", ICLR 2016.
    """
    length = argument_checks.int_in_range("length", length, 2, MAX_LENGTH)
    n = argument_checks.positive_int("n", n)
    # The int32 targets hold as many values as the float32 inputs.
    check_size(n, length, f"length {length}")
    validation_split, num_train, _ = split_sizes(n, validation_split)
    seed = argument_checks.seed("seed", seed)

    rng = np.random.default_rng(seed)
    numbers = rng.random((n, length), dtype=np.float32)  # U(0, 1)
    permutations = np.argsort(numbers, axis=1, kind="stable").astype(np.int32)  # (n, length)
    x = numbers[..., None]  # (n, length, 1)

    return TaskData(
        x_train=x[:num_train],
        y_train=permutations[:num_train],
        x_val=x[num_train:],
        y_val=permutations[num_train:],
        name="sort_numbers",
        params={"length": length, "n": n, "validation_split": validation_split, "seed": seed},
        inputs=SequenceSpec("numeric", length=length, features=1),
        targets=TargetSpec("pointer", num_positions=length, length=length),
        description=(
            f"Point at {length} numbers drawn from U(0, 1) in increasing order: the target is "
            f"the permutation of the {length} input positions that sorts them (argsort). "
            f"Chance is 1/{length} per step and 1/{length}! for a whole permutation."
        ),
    )
