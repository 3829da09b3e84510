"""Copy and reverse: the simplest sequence-to-sequence tasks, with variable lengths.

The answer to each task is a sequence of symbols whose length depends on the
input, so a model must read the whole source before it writes, then know when
to stop: it ends every answer with the END token. Copying tests whether the
source survives the trip through the encoder (through a single vector, it
degrades with length, Cho et al. 2014); reversing puts the first source symbol
last, the longest dependency a fixed vector must carry and the one attention
makes short (Sutskever, Vinyals & Le 2014 reversed the source for that
reason).

Each generator is seeded (`numpy.random.default_rng(seed)`): the same
arguments give the same arrays. Symbols are drawn independently and
uniformly, so the validation split may repeat a training sequence only by
chance (for `length=8` and 10 symbols, fewer than one in 10⁸ pairs).
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
from keras_seq.tasks.vocabulary import Vocabulary

# Most distinct symbols a task draws from.
MAX_SYMBOLS = 10_000

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def symbols(vocab_size):
    """The symbol tokens of a copy or reverse task with `vocab_size` symbols.

    Up to 26 symbols are the letters `"a"`, `"b"`, …; more are `"t0"`, `"t1"`, ….

    Args:
        vocab_size: Number of symbols, from 1 to `MAX_SYMBOLS`.

    Returns:
        A list of `vocab_size` distinct strings.
    """
    vocab_size = argument_checks.positive_int("vocab_size", vocab_size, MAX_SYMBOLS)
    if vocab_size <= len(_LETTERS):
        return list(_LETTERS[:vocab_size])
    return [f"t{i}" for i in range(vocab_size)]


def copy(length, n, *, vocab_size=10, min_length=1, validation_split=0.2, seed=0):
    """Copy a variable-length sequence of symbols, then stop.

    Each source `x = (x_1 … x_L)` has a length `L` drawn uniformly from
    `[min_length, length]` and symbols drawn uniformly from `vocab_size`
    symbols; the target is the same sequence followed by END:

        y = (x_1, …, x_L, <end>)

    Args:
        length: The longest source, from 1 to `MAX_LENGTH`: the width of the
            source array (the target array is one wider, for END).
        n: Number of sequences, train and validation together.
        vocab_size: Number of distinct symbols, from 1 to `MAX_SYMBOLS`
            (default 10): the letters `"a"`, `"b"`, … (see `symbols`). The
            vocabularies hold these and the 4 special tokens, so
            `inputs.vocab_size == vocab_size + 4`.
        min_length: The shortest source, from 1 to `length`. Default 1.
        validation_split: Fraction of the `n` sequences kept for validation,
            in (0, 1); both splits must hold at least one sequence.
        seed: Non-negative integer seed for `numpy.random.default_rng`.

    Returns:
        A `TaskData` with inputs `(n, length)` int32 symbol ids right-padded
        with PAD (0), targets `(n, length + 1)` int32 (`TargetSpec("sequence")`),
        and one `Vocabulary` of the symbols as both `source_vocabulary` and
        `target_vocabulary`.

    Example:

    >>> task = copy(6, 100, vocab_size=5, seed=1)
    >>> task.x_train.shape, task.y_train.shape
    ((80, 6), (80, 7))
    >>> source = task.source_vocabulary.decode(task.x_train[0])
    >>> task.target_vocabulary.decode(task.y_train[0]) == source
    True

    References:
        - Sutskever, Vinyals & Le, "Sequence to Sequence Learning with Neural
          Networks", NeurIPS 2014.
    """
    return _symbol_task("copy", length, n, vocab_size, min_length, validation_split, seed)


def reverse(length, n, *, vocab_size=10, min_length=1, validation_split=0.2, seed=0):
    """Write a variable-length sequence of symbols backwards, then stop.

    Each source `x = (x_1 … x_L)` has a length `L` drawn uniformly from
    `[min_length, length]` and symbols drawn uniformly from `vocab_size`
    symbols; the target is the sequence reversed within its true length
    (padding stays at the end), followed by END:

        y = (x_L, …, x_1, <end>)

    The first target symbol is the last one read and the last target symbol
    the first one read: the dependency spans the whole sequence, which is
    hard through one fixed vector and easy with attention.

    Args:
        length: The longest source, from 1 to `MAX_LENGTH`: the width of the
            source array (the target array is one wider, for END).
        n: Number of sequences, train and validation together.
        vocab_size: Number of distinct symbols, from 1 to `MAX_SYMBOLS`
            (default 10): the letters `"a"`, `"b"`, … (see `symbols`). The
            vocabularies hold these and the 4 special tokens, so
            `inputs.vocab_size == vocab_size + 4`.
        min_length: The shortest source, from 1 to `length`. Default 1.
        validation_split: Fraction of the `n` sequences kept for validation,
            in (0, 1); both splits must hold at least one sequence.
        seed: Non-negative integer seed for `numpy.random.default_rng`.

    Returns:
        A `TaskData` with inputs `(n, length)` int32 symbol ids right-padded
        with PAD (0), targets `(n, length + 1)` int32 (`TargetSpec("sequence")`),
        and one `Vocabulary` of the symbols as both `source_vocabulary` and
        `target_vocabulary`.

    Example:

    >>> task = reverse(6, 100, vocab_size=5, seed=1)
    >>> source = task.source_vocabulary.decode(task.x_train[0]).split()
    >>> task.target_vocabulary.decode(task.y_train[0]).split() == source[::-1]
    True

    References:
        - Sutskever, Vinyals & Le, "Sequence to Sequence Learning with Neural
          Networks", NeurIPS 2014 (reversing the source).
        - Bahdanau, Cho & Bengio, "Neural Machine Translation by Jointly
          Learning to Align and Translate", ICLR 2015.
    """
    return _symbol_task("reverse", length, n, vocab_size, min_length, validation_split, seed)


def _symbol_task(name, length, n, vocab_size, min_length, validation_split, seed):
    length = argument_checks.positive_int("length", length, MAX_LENGTH)
    n = argument_checks.positive_int("n", n)
    tokens = symbols(vocab_size)
    min_length = argument_checks.int_in_range("min_length", min_length, 1, length)
    check_size(n, 2 * length + 1, f"length {length}, source and target")
    validation_split, num_train, _ = split_sizes(n, validation_split)
    seed = argument_checks.seed("seed", seed)

    rng = np.random.default_rng(seed)
    lengths = rng.integers(min_length, length + 1, size=n)  # (n,), uniform in [min, max]
    first = len(Vocabulary.SPECIAL_TOKENS)  # symbol ids are 4 … 4 + vocab_size − 1
    ids = rng.integers(first, first + len(tokens), size=(n, length), dtype=np.int32)
    steps = np.arange(length)  # (length,)
    inside = steps[None, :] < lengths[:, None]  # (n, length): True within the true length
    x = np.where(inside, ids, Vocabulary.PAD).astype(np.int32)

    if name == "copy":
        answer = x
    else:
        # Position j of the answer reads source position L − 1 − j, within L.
        source_steps = np.where(inside, lengths[:, None] - 1 - steps[None, :], 0)
        answer = np.where(inside, np.take_along_axis(x, source_steps, axis=1), Vocabulary.PAD)
    y = np.full((n, length + 1), Vocabulary.PAD, dtype=np.int32)
    y[:, :length] = answer
    y[np.arange(n), lengths] = Vocabulary.END

    vocabulary = Vocabulary(tokens, lowercase=True)
    what = "the same symbols" if name == "copy" else "the symbols in reverse order"
    return TaskData(
        x_train=x[:num_train],
        y_train=y[:num_train],
        x_val=x[num_train:],
        y_val=y[num_train:],
        name=name,
        params={
            "length": length,
            "n": n,
            "vocab_size": len(tokens),
            "min_length": min_length,
            "validation_split": validation_split,
            "seed": seed,
        },
        inputs=SequenceSpec("tokens", length=length, vocab_size=len(vocabulary)),
        targets=TargetSpec("sequence", vocab_size=len(vocabulary), length=length + 1),
        description=(
            f"Read {min_length} to {length} symbols drawn uniformly from {len(tokens)} and "
            f"write {what}, then <end>. Chance is 1/{len(tokens)} per symbol."
        ),
        source_vocabulary=vocabulary,
        target_vocabulary=vocabulary,
    )
