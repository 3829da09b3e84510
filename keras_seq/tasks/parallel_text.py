"""Parallel text: sentence pairs from a user's file, split and encoded for a translator.

The file format is the one Tatoeba and the Anki sentence decks (manythings.org)
use: one pair per line, the source sentence, a TAB, the target sentence, e.g.

    Go.<TAB>Va !
    I'm cold.<TAB>J'ai froid.

Those files carry more TAB-separated columns after the two sentences (an
attribution: licence, sentence ids, authors); every column after the second
is ignored. The file must be UTF-8 (a byte-order mark is allowed), with `\\n`
or `\\r\\n` line ends; blank lines are skipped.

`load_parallel_text` reads the file, keeps the pairs within the length
limits, splits them so that no source sentence is in both splits (see
`split_pairs`), builds each side's `Vocabulary` from the training split only
and returns a `TaskData`. `task_from_pairs` does the last two steps for pairs
already in memory.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from keras_seq import argument_checks
from keras_seq.tasks import subword
from keras_seq.tasks.base import MAX_LENGTH, SequenceSpec, TargetSpec, TaskData, check_size
from keras_seq.tasks.vocabulary import MAX_VOCAB_SIZE, Vocabulary, _tokenize

# `tokenizer`: whole words (`Vocabulary`), or subword pieces (`SubwordVocabulary`).
TOKENIZERS = ("word", "bpe", "unigram")

# The largest file `load_parallel_text` reads (50 MB: the Anki English-French
# deck, about 230,000 pairs, is 37 MB with its attribution columns).
MAX_FILE_BYTES = 50_000_000

# The most lines it reads (blank ones included).
MAX_LINES = 1_000_000

# How many malformed lines an error or warning names.
_LINES_SHOWN = 5


def read_parallel_text(path, *, malformed="raise"):
    """Reads `source<TAB>target` lines from a UTF-8 file into a list of pairs.

    Args:
        path: A `str` or `os.PathLike` naming the file.
        malformed: What to do with a line that has no TAB or an empty source
            or target (after stripping spaces): `"raise"` (default) raises a
            `ValueError` naming the first few such lines by number (1-based)
            and the reason; `"skip"` leaves them out with a `UserWarning`
            that names them the same way.

    Returns:
        A list of `(source, target)` string pairs, stripped of surrounding
        whitespace, in file order.

    Raises:
        ValueError: If the file does not exist, is larger than
            `MAX_FILE_BYTES` or has more than `MAX_LINES` lines, is not UTF-8
            (naming the byte offset and line of the first bad byte), holds no
            pair, or has malformed lines and `malformed="raise"`.
    """
    path = _check_path(path)
    malformed = argument_checks.one_of("malformed", malformed, ("raise", "skip"))
    too_large = (
        f"more than the {MAX_FILE_BYTES:,} bytes (MAX_FILE_BYTES) a parallel text file may "
        "hold. Split it or keep the sentences you need."
    )
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise ValueError(
                f"Received an invalid value for argument `path`: {str(path)!r} holds {size:,} "
                f"bytes, {too_large}"
            )
        # Read one byte past the bound: a file may say it holds 0 bytes (`/proc` files).
        with path.open("rb") as file:
            data = file.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise ValueError(
            f"Received an invalid value for argument `path`: {str(path)!r} cannot be read: "
            f"{error.strerror or error}."
        ) from None
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(
            f"Received an invalid value for argument `path`: {str(path)!r} holds {too_large}"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ValueError(
            f"Received an invalid value for argument `path`: {str(path)!r} is not UTF-8 text: "
            f"byte {error.start} (line {line}) is {data[error.start : error.start + 1]!r} "
            f"({error.reason}). Save the file as UTF-8."
        ) from None
    if not text.strip():
        raise ValueError(
            f"Received an invalid value for argument `path`: {str(path)!r} is empty; expected "
            "lines of `source<TAB>target`."
        )
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    if len(lines) > MAX_LINES:
        raise ValueError(
            f"Received an invalid value for argument `path`: {str(path)!r} has {len(lines):,} "
            f"lines, more than the {MAX_LINES:,} (MAX_LINES) a parallel text file may hold."
        )

    pairs, bad = [], []
    for number, line in enumerate(lines, start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        columns = line.split("\t")
        if len(columns) < 2:
            bad.append((number, "no TAB between source and target"))
            continue
        source, target = columns[0].strip(), columns[1].strip()
        if not source or not target:
            bad.append((number, "empty source" if not source else "empty target"))
            continue
        pairs.append((source, target))

    if bad:
        shown = "; ".join(f"line {number}: {reason}" for number, reason in bad[:_LINES_SHOWN])
        more = f" (and {len(bad) - _LINES_SHOWN} more)" if len(bad) > _LINES_SHOWN else ""
        message = (
            f"{str(path)!r} has {len(bad)} malformed line(s), expected `source<TAB>target`: "
            f"{shown}{more}."
        )
        if malformed == "raise":
            raise ValueError(message + ' Fix them, or pass malformed="skip" to leave them out.')
        warnings.warn(message + " They were skipped.", UserWarning, stacklevel=2)
    if not pairs:
        raise ValueError(
            f"Received an invalid value for argument `path`: {str(path)!r} holds no "
            "`source<TAB>target` pair."
        )
    return pairs


def split_pairs(pairs, validation_split=0.1, seed=0, *, lowercase=True):
    """Splits sentence pairs so that no source sentence is in both splits.

    Pairs are grouped by their source sentence, compared as tokens (see
    `keras_seq.tasks.vocabulary.tokenize`, lowercased if `lowercase`), since
    parallel corpora repeat a source with several translations ("Go." → "Va !",
    "Marche."). The groups are shuffled with `numpy.random.default_rng(seed)`
    and taken into the validation split until it holds at least
    `round(len(pairs) * validation_split)` pairs; a validation score then
    measures translation of sentences never seen in training.

    Args:
        pairs: A sequence of `(source, target)` string pairs.
        validation_split: Fraction of the pairs for validation, in (0, 1).
        seed: Non-negative integer seed of the shuffle.
        lowercase: Whether sources differing only in case count as one.

    Returns:
        `(train_pairs, val_pairs)`, two lists, each in the order of `pairs`.
    """
    pairs = _check_pairs(pairs)
    validation_split = argument_checks.rate("validation_split", validation_split)
    seed = argument_checks.seed("seed", seed)
    lowercase = argument_checks.boolean("lowercase", lowercase)
    groups: dict[tuple[str, ...], list[int]] = {}
    for i, (source, _) in enumerate(pairs):
        groups.setdefault(tuple(_tokenize(source, lowercase)), []).append(i)
    wanted = round(len(pairs) * validation_split)
    if wanted < 1 or len(groups) < 2:
        raise ValueError(
            f"Received an invalid value for argument `validation_split`, expected a fraction "
            f"that leaves at least one pair in each split, got {validation_split!r} with "
            f"{len(pairs)} pairs ({len(groups)} distinct source sentences)."
        )
    order = np.random.default_rng(seed).permutation(len(groups))
    members = list(groups.values())
    in_val = np.zeros(len(pairs), dtype=bool)
    taken = 0
    for g in order:
        if taken >= wanted:
            break
        in_val[members[g]] = True
        taken += len(members[g])
    if in_val.all():
        # One group too many: give the last one back to training.
        in_val[members[g]] = False
    train = [pair for pair, v in zip(pairs, in_val, strict=True) if not v]
    val = [pair for pair, v in zip(pairs, in_val, strict=True) if v]
    return train, val


def task_from_pairs(
    train_pairs,
    val_pairs,
    *,
    lowercase=False,
    max_vocab_size=None,
    min_count=1,
    tokenizer="word",
    vocab_size=None,
    name="parallel_text",
    params=None,
    description=None,
):
    """Encodes train and validation sentence pairs into a sequence-to-sequence `TaskData`.

    Each side gets a `Vocabulary` built from `train_pairs` only; validation
    words it lacks become UNK. With `tokenizer="bpe"` or `"unigram"` each
    side's vocabulary is a `SubwordVocabulary` of `vocab_size` ids, trained on
    the training sentences only, so a rare validation word is spelt from
    pieces (only characters training never saw become UNK). Sources are
    encoded without START or END and right-padded with PAD to the longest
    source of either split; targets get one END and are padded to the
    longest target plus one.

    Args:
        train_pairs: A sequence of `(source, target)` string pairs.
        val_pairs: The validation pairs, likewise.
        lowercase: Whether the vocabularies lowercase. Default False: the
            translations keep the case a reader expects.
        max_vocab_size: Most ids per vocabulary, its 4 special tokens
            included (see `Vocabulary.build`); None keeps every token.
        min_count: Tokens seen fewer times in training become UNK. Default 1.
        tokenizer: `"word"` (default: whole words and punctuation marks),
            `"bpe"` or `"unigram"` (subword pieces, see
            `keras_seq.tasks.subword`).
        vocab_size: Ids per subword vocabulary, its 4 special ids included,
            8 to 65,536; needed for `"bpe"` and `"unigram"`, refused for
            `"word"` (which has `max_vocab_size`).
        name: The task name. Default `"parallel_text"`.
        params: The arguments that made the pairs, kept in the `TaskData`.
        description: What the task is; default: a line with the pair counts.

    Returns:
        A `TaskData` with `x` int32 `(n, S)`, `y` int32 `(n, T)`,
        `TargetSpec("sequence")`, and both vocabularies.
    """
    train_pairs = _check_pairs(train_pairs, "train_pairs")
    val_pairs = _check_pairs(val_pairs, "val_pairs")
    if max_vocab_size is not None:
        max_vocab_size = argument_checks.int_in_range(
            "max_vocab_size", max_vocab_size, len(Vocabulary.SPECIAL_TOKENS) + 1, MAX_VOCAB_SIZE
        )
    build = _vocabulary_builder(tokenizer, vocab_size, max_vocab_size, min_count, lowercase)
    source_vocabulary = build([s for s, _ in train_pairs])
    target_vocabulary = build([t for _, t in train_pairs])

    sources = [s for s, _ in train_pairs + val_pairs]
    targets = [t for _, t in train_pairs + val_pairs]
    source_length = max(len(source_vocabulary.tokenize(s)) for s in sources)
    target_length = max(len(target_vocabulary.tokenize(t)) for t in targets) + 1
    for argument, length in (("source", source_length), ("target", target_length)):
        if length < 1 or length > MAX_LENGTH:
            raise ValueError(
                f"Every {argument} sentence is empty once tokenised, or one is longer than "
                f"{MAX_LENGTH:,} tokens (got a longest of {length})."
            )
    check_size(len(sources), source_length + target_length, "source and target tokens")
    x = source_vocabulary.encode_batch(sources, source_length)
    y = target_vocabulary.encode_batch(targets, target_length, add_end=True)
    num_train = len(train_pairs)
    if description is None:
        description = (
            f"Translate {len(sources)} sentence pairs ({num_train} for training): sources of up "
            f"to {source_length} tokens, targets of up to {target_length - 1} tokens and <end>."
        )
    return TaskData(
        x_train=x[:num_train],
        y_train=y[:num_train],
        x_val=x[num_train:],
        y_val=y[num_train:],
        name=name,
        params=dict(params or {}),
        inputs=SequenceSpec("tokens", length=source_length, vocab_size=len(source_vocabulary)),
        targets=TargetSpec("sequence", vocab_size=len(target_vocabulary), length=target_length),
        description=description,
        source_vocabulary=source_vocabulary,
        target_vocabulary=target_vocabulary,
    )


def load_parallel_text(
    path,
    *,
    validation_split=0.1,
    seed=0,
    max_source_length=None,
    max_target_length=None,
    lowercase=False,
    max_vocab_size=None,
    malformed="raise",
    tokenizer="word",
    vocab_size=None,
):
    """A translation task from a user's file of `source<TAB>target` lines.

    Reads the file (`read_parallel_text`: UTF-8, extra columns ignored, blank
    lines skipped, malformed lines reported by number), drops the pairs
    longer than the length limits, splits the rest with `split_pairs` (no
    source sentence in both splits) and encodes them with `task_from_pairs`
    (vocabularies from the training split only). Save the vocabularies with
    the model (a `Translator` does) to translate new text the same way.

    Args:
        path: A `str` or `os.PathLike` naming a UTF-8 file of at most
            `MAX_FILE_BYTES` bytes and `MAX_LINES` lines.
        validation_split: Fraction of the pairs for validation, in (0, 1).
            Default 0.1.
        seed: Non-negative integer seed of the split. Default 0.
        max_source_length: Pairs whose source has more tokens are dropped;
            None (default) keeps every length.
        max_target_length: Pairs whose target has more tokens (END not
            counted) are dropped; None keeps every length.
        lowercase: Whether to lowercase both sides. Default False: the
            translations keep their case. The split compares sources without
            case either way ("Go." and "go." are one source sentence).
        max_vocab_size: Most ids per vocabulary, special tokens included;
            rarer words become UNK. None (default) keeps every word.
        malformed: `"raise"` (default) or `"skip"`: see `read_parallel_text`.
        tokenizer: `"word"` (default), `"bpe"` or `"unigram"`: see
            `task_from_pairs`. The length limits count words either way.
        vocab_size: Ids per subword vocabulary (`"bpe"`, `"unigram"`).

    Returns:
        A `TaskData` named `"parallel_text"`: `x` int32 `(n, S)` source ids,
        `y` int32 `(n, T)` target ids and END, both right-padded with PAD, the
        two vocabularies, and `params` holding the arguments plus the counts
        of pairs read and dropped for length.

    Example:

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "fra.txt"
    >>> _ = path.write_text(
    ...     "Go.\\tVa !\\tCC-BY 2.0 (France) Attribution: tatoeba.org\\n"
    ...     "Hi.\\tSalut !\\n"
    ...     "Run!\\tCours !\\n", encoding="utf-8")
    >>> task = load_parallel_text(path, validation_split=0.3)
    >>> task.num_train, task.num_val
    (2, 1)
    >>> task.source_vocabulary.tokenize("Go.")
    ['Go', '.']
    """
    argument_checks.rate("validation_split", validation_split)
    argument_checks.seed("seed", seed)
    argument_checks.boolean("lowercase", lowercase)
    _vocabulary_builder(tokenizer, vocab_size, max_vocab_size, 1, lowercase)  # before reading
    limits = {}
    for name, value in (
        ("max_source_length", max_source_length),
        ("max_target_length", max_target_length),
    ):
        limits[name] = (
            None if value is None else argument_checks.positive_int(name, value, MAX_LENGTH)
        )
    pairs = read_parallel_text(path, malformed=malformed)
    kept = [
        (source, target)
        for source, target in pairs
        if _fits(source, limits["max_source_length"], lowercase)
        and _fits(target, limits["max_target_length"], lowercase)
    ]
    if len(kept) < 2:
        raise ValueError(
            f"Only {len(kept)} of the {len(pairs)} pairs in {str(path)!r} fit "
            f"max_source_length={max_source_length!r} and "
            f"max_target_length={max_target_length!r}; a task needs at least 2."
        )
    train, val = split_pairs(kept, validation_split, seed)  # sources compared without case
    params = {
        "path": os.fspath(path),
        "validation_split": validation_split,
        "seed": seed,
        "max_source_length": max_source_length,
        "max_target_length": max_target_length,
        "lowercase": lowercase,
        "max_vocab_size": max_vocab_size,
        "tokenizer": tokenizer,
        "vocab_size": vocab_size,
        "pairs_read": len(pairs),
        "pairs_too_long": len(pairs) - len(kept),
    }
    return task_from_pairs(
        train,
        val,
        lowercase=lowercase,
        max_vocab_size=max_vocab_size,
        tokenizer=tokenizer,
        vocab_size=vocab_size,
        name="parallel_text",
        params=params,
        description=(
            f"Translate the sentence pairs of {Path(path).name} ({len(kept)} pairs, "
            f"{len(train)} for training, {len(val)} for validation; no source sentence in "
            f"both). Vocabularies from the training split."
        ),
    )


def _vocabulary_builder(tokenizer, vocab_size, max_vocab_size, min_count, lowercase):
    """`texts -> vocabulary` for `tokenizer`, its arguments checked now."""
    tokenizer = argument_checks.one_of("tokenizer", tokenizer, TOKENIZERS)
    lowercase = argument_checks.boolean("lowercase", lowercase)
    if tokenizer == "word":
        if vocab_size is not None:
            raise ValueError(
                f"Received an invalid value for argument `vocab_size`: {vocab_size!r} is for "
                'tokenizer="bpe" or "unigram"; a word vocabulary takes `max_vocab_size`.'
            )
        min_count = argument_checks.positive_int("min_count", min_count)
        return lambda texts: Vocabulary.build(
            texts, max_size=max_vocab_size, min_count=min_count, lowercase=lowercase
        )

    if vocab_size is None:
        raise ValueError(
            f"Received an invalid value for argument `vocab_size`: tokenizer={tokenizer!r} "
            f"needs one, from {subword.MIN_VOCAB_SIZE} to {subword.MAX_VOCAB_SIZE:,}."
        )
    if max_vocab_size is not None:
        raise ValueError(
            f"Received an invalid value for argument `max_vocab_size`: {max_vocab_size!r} is "
            f"for tokenizer='word'; tokenizer={tokenizer!r} takes `vocab_size`."
        )
    vocab_size = argument_checks.int_in_range(
        "vocab_size", vocab_size, subword.MIN_VOCAB_SIZE, subword.MAX_VOCAB_SIZE
    )
    return lambda texts: subword.SubwordVocabulary.train(
        texts, vocab_size, tokenizer, lowercase=lowercase
    )


def _fits(text, limit, lowercase):
    return limit is None or len(_tokenize(text, lowercase)) <= limit


def _check_path(path):
    if not isinstance(path, (str, os.PathLike)):
        raise argument_checks.invalid("path", "a file path (str or os.PathLike)", path)
    path = Path(path)
    if not path.is_file():
        raise ValueError(
            f"Received an invalid value for argument `path`, expected an existing file, got "
            f"{str(path)!r}."
        )
    return path


def _check_pairs(pairs, name="pairs") -> list[tuple[str, str]]:
    if isinstance(pairs, str) or not isinstance(pairs, (Sequence, Iterable)):
        raise argument_checks.invalid(name, "a list of (source, target) string pairs", pairs)
    checked = []
    for i, pair in enumerate(pairs):
        if (
            not isinstance(pair, (tuple, list))
            or len(pair) != 2
            or not all(isinstance(side, str) for side in pair)
        ):
            raise ValueError(
                f"Received an invalid value for argument `{name}`, expected (source, target) "
                f"string pairs, got {pair!r} at position {i}."
            )
        checked.append((pair[0], pair[1]))
    if not checked:
        raise argument_checks.invalid(name, "at least one (source, target) pair", pairs)
    return checked
