"""Tasks that need long memory: the 1997 long-lag task and the adding problem.

Both hide the information the target depends on far back in the sequence,
behind steps that do not matter, so a network has to store it for many steps
and carry error back as far. That is what the constant error carousel of the
1997 LSTM was made for, and what a plain recurrent net (`SimpleRNN`) cannot
do: its error signal shrinks (or blows up) geometrically with the lag.

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

ENCODINGS = ("one_hot", "ids")

# long_lag token ids: the two classes, then the distractors.
X_ID, Y_ID = 0, 1
FIRST_DISTRACTOR_ID = 2


def adding_problem(length, n, *, validation_split=0.2, seed=0):
    """The adding problem: add the two marked numbers of a long sequence.

    Each step carries two features, a value drawn from U(0, 1) and a marker.
    Exactly two steps are marked (marker 1.0, all others 0.0): one drawn
    uniformly from the first half, `[0, length // 2)`, and one from the second
    half, `[length // 2, length)`. The target is the sum of the two marked
    values, a float in [0, 2] with variance 1/6 ≈ 0.167: the mean squared
    error of a model that always predicts 1.0, about the best it can do
    without memory.

    This is the common modern form (e.g. Le, Jaitly & Hinton 2015; Arjovsky,
    Shah & Bengio 2016) of experiment 4 of Hochreiter & Schmidhuber (1997),
    whose values lay in [−1, 1], whose first marker lay among the first ten
    steps and whose target was scaled into [0, 1]. It tests that a network can
    store two real values across up to `length` steps of irrelevant input and
    then combine them; a plain RNN stays at the variance of the target.

    Args:
        length: Steps per sequence, from 2 to `MAX_LENGTH`.
        n: Number of sequences, train and validation together.
        validation_split: Fraction of the `n` sequences kept for validation,
            in (0, 1); both splits must hold at least one sequence.
        seed: Non-negative integer seed for `numpy.random.default_rng`.

    Returns:
        A `TaskData` with inputs `(n, length, 2)` float32 (value, marker) and
        targets `(n, 1)` float32, the sum.

    Example:

    >>> task = adding_problem(50, 1000)
    >>> task.x_train.shape, task.y_train.shape
    ((800, 50, 2), (800, 1))

    References:
        - Hochreiter & Schmidhuber, "Long Short-Term Memory", Neural
          Computation 9(8), 1997, experiment 4.
        - Le, Jaitly & Hinton, "A Simple Way to Initialize Recurrent Networks
          of Rectified Linear Units", arXiv:1504.00941, 2015.
        - Arjovsky, Shah & Bengio, "Unitary Evolution Recurrent Neural
          Networks", ICML 2016.
    """
    length = argument_checks.int_in_range("length", length, 2, MAX_LENGTH)
    n = argument_checks.positive_int("n", n)
    check_size(n, length * 2, f"length {length} x 2 features")
    validation_split, num_train, _ = split_sizes(n, validation_split)
    seed = argument_checks.seed("seed", seed)

    rng = np.random.default_rng(seed)
    values = rng.random((n, length), dtype=np.float32)  # U(0, 1)
    half = length // 2
    first = rng.integers(0, half, size=n)
    second = rng.integers(half, length, size=n)
    rows = np.arange(n)
    markers = np.zeros((n, length), dtype=np.float32)
    markers[rows, first] = 1.0
    markers[rows, second] = 1.0
    x = np.stack([values, markers], axis=-1)  # (n, length, 2)
    y = (values[rows, first] + values[rows, second])[:, None]  # (n, 1), float32

    return TaskData(
        x_train=x[:num_train],
        y_train=y[:num_train],
        x_val=x[num_train:],
        y_val=y[num_train:],
        name="adding_problem",
        params={"length": length, "n": n, "validation_split": validation_split, "seed": seed},
        inputs=SequenceSpec("numeric", length=length, features=2),
        targets=TargetSpec("regression", output_dim=1),
        description=(
            f"Sum the two marked values among {length} values drawn from U(0, 1), one marked "
            "in each half of the sequence. Regression; predicting the mean (1.0) gives an "
            "MSE of 1/6 ≈ 0.167, so a model without memory stays there."
        ),
    )


def long_lag(lag, n, *, num_distractors=8, encoding="one_hot", validation_split=0.2, seed=0):
    """The long-time-lag task of Hochreiter & Schmidhuber (1997), experiment 2.

    There are two classes of sequences, `(x, a_1, …, a_{p-1}, x)` and
    `(y, a_1, …, a_{p-1}, y)`. The network reads the first `p` symbols, the
    class symbol followed by `p − 1` distractors, and must predict the last
    one: `x` (class 0) or `y` (class 1). Only the first step tells them apart,
    so the network has to keep one bit for `p = lag` steps while ignoring the
    distractors, and error has to flow back across all of them.

    As in the paper's experiments 2b and 2c, and unlike 2a, the distractors are
    random, not a fixed sequence, so there is no local regularity to exploit:
    each `a_i` is drawn uniformly from a small alphabet of `num_distractors`
    symbols. The two classes are balanced (they differ by at most one
    sequence over all `n`) and shuffled.

    Symbols are numbered `x` = 0, `y` = 1 and the distractors 2 to
    `num_distractors + 1`. With `encoding="one_hot"` (the paper's local
    representation) each step is a one-hot float32 vector of that size; with
    `encoding="ids"` it is the int32 id, for an `Embedding` layer.

    Args:
        lag: `p`, the input length and the number of steps between the class
            symbol and the prediction, from 1 to `MAX_LENGTH`. The paper went
            up to 1,000.
        n: Number of sequences, train and validation together.
        num_distractors: Size of the distractor alphabet, from 1 to 1,000.
            Default 8.
        encoding: `"one_hot"` (default) or `"ids"`.
        validation_split: Fraction of the `n` sequences kept for validation,
            in (0, 1); both splits must hold at least one sequence.
        seed: Non-negative integer seed for `numpy.random.default_rng`.

    Returns:
        A `TaskData` with inputs `(n, lag, num_distractors + 2)` float32
        (one-hot) or `(n, lag)` int32 (ids), and int32 class labels `(n,)`.

    Example:

    >>> task = long_lag(100, 1000)
    >>> task.x_train.shape, task.y_train.shape
    ((800, 100, 10), (800,))

    References:
        - Hochreiter & Schmidhuber, "Long Short-Term Memory", Neural
          Computation 9(8), 1997, experiment 2.
    """
    lag = argument_checks.positive_int("lag", lag, MAX_LENGTH)
    n = argument_checks.positive_int("n", n)
    num_distractors = argument_checks.positive_int("num_distractors", num_distractors, 1000)
    encoding = argument_checks.one_of("encoding", encoding, ENCODINGS)
    vocab_size = num_distractors + 2
    one_hot = encoding == "one_hot"
    if one_hot:
        check_size(n, lag * vocab_size, f"lag {lag} x {vocab_size} one-hot features")
    else:
        check_size(n, lag, f"lag {lag}")
    validation_split, num_train, _ = split_sizes(n, validation_split)
    seed = argument_checks.seed("seed", seed)

    rng = np.random.default_rng(seed)
    labels = rng.permutation(np.arange(n) % 2).astype(np.int32)  # 0 = x, 1 = y
    ids = np.empty((n, lag), dtype=np.int32)
    ids[:, 0] = np.where(labels == 0, X_ID, Y_ID)
    ids[:, 1:] = rng.integers(
        FIRST_DISTRACTOR_ID,
        FIRST_DISTRACTOR_ID + num_distractors,
        size=(n, lag - 1),
        dtype=np.int32,
    )
    if one_hot:
        x = np.zeros((n, lag, vocab_size), dtype=np.float32)
        np.put_along_axis(x, ids[..., None], 1.0, axis=-1)
        inputs = SequenceSpec("numeric", length=lag, features=vocab_size)
    else:
        x = ids
        inputs = SequenceSpec("tokens", length=lag, vocab_size=vocab_size)

    return TaskData(
        x_train=x[:num_train],
        y_train=labels[:num_train],
        x_val=x[num_train:],
        y_val=labels[num_train:],
        name="long_lag",
        params={
            "lag": lag,
            "n": n,
            "num_distractors": num_distractors,
            "encoding": encoding,
            "validation_split": validation_split,
            "seed": seed,
        },
        inputs=inputs,
        targets=TargetSpec("classification", num_classes=2),
        description=(
            f"Remember the first of {lag} symbols (x or y) across {lag - 1} random "
            f"distractors from an alphabet of {num_distractors}, and predict it at the end "
            "(Hochreiter & Schmidhuber 1997, experiment 2). Two balanced classes; chance "
            "is 50% accuracy."
        ),
    )
