"""Labelled sequences from a CSV or TSV file, checked line by line before anything trains.

The `csv_sequences` task reads one sequence per row, the label first:

- numeric inputs (`inputs: numeric`): `label, v_1, v_2, …, v_m`, where
  `m = length × features` numbers, step after step (with `features: 2`,
  `v_1, v_2` are step 1). Every row must have the same number of columns.
- token inputs (`inputs: tokens`): `label, text`, exactly two columns; the
  text is cut into tokens by `keras_seq.tasks.Vocabulary`, whose vocabulary
  is built from the training split (unseen words become `<unk>`); sequences
  are right-padded with id 0, so use `mask_zero: true` in the model.

The label is a class name (`target: classification`; classes are numbered
in sorted order and kept in the task's `params["classes"]`) or a real number
(`target: regression`). Blank lines are skipped; `header: true` skips the
first line. The rows are shuffled with `seed` before the split.

Every problem is reported with the file and the line number of the first
row that shows it: a file too large, text that is not UTF-8, too many rows or
columns, a row of another width (ragged), a value that is not a number, or
a number that is not finite (`nan`, `inf`).
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

import numpy as np

from keras_seq.tasks import SequenceSpec, SubwordVocabulary, TargetSpec, TaskData, Vocabulary
from keras_seq.tasks.base import split_sizes
from keras_seq.tasks.vocabulary import tokenize


class DataFileError(ValueError):
    """A data file that cannot be used; the message names the file and the line."""


def _fail(path: Path, line: int | None, message: str) -> DataFileError:
    where = f"{path}, line {line}" if line is not None else str(path)
    return DataFileError(f"{where}: {message}")


def read_text(path: str | Path, *, max_bytes: int) -> str:
    """Read a UTF-8 text file of at most `max_bytes` (a BOM is allowed and dropped).

    The size is checked before reading, and the read stops one byte past `max_bytes`
    too, for files whose size says nothing (`/proc` files say 0). A file that cannot be
    read (`/proc/self/pagemap`: "Invalid argument") is named with the reason.
    """
    path = Path(path)
    if not path.is_file():
        raise _fail(path, None, "no such file")
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise _fail(path, None, f"{size:,} bytes, more than max_bytes={max_bytes:,}")
        with path.open("rb") as file:
            raw = file.read(max_bytes + 1)
    except OSError as error:
        raise _fail(path, None, f"cannot be read: {error.strerror or error}") from None
    if len(raw) > max_bytes:
        raise _fail(path, None, f"more than max_bytes={max_bytes:,} bytes")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise _fail(
            path, line, f"not UTF-8 text (byte 0x{raw[error.start]:02x}: {error.reason})"
        ) from None


def read_rows(
    path: str | Path,
    *,
    delimiter: str,
    header: bool,
    max_bytes: int,
    max_rows: int,
    max_columns: int,
) -> list[tuple[int, list[str]]]:
    """Read the non-blank rows of a delimited file as `(line number, cells)`, within limits."""
    path = Path(path)
    text = read_text(path, max_bytes=max_bytes)
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise _fail(path, line, "holds a NUL character; is it a binary file?")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows = []
    try:
        for cells in reader:
            line = reader.line_num
            if header and line == 1:
                continue
            if not cells or all(not cell.strip() for cell in cells):
                continue
            if len(cells) > max_columns:
                raise _fail(
                    path, line, f"{len(cells):,} columns, more than max_columns={max_columns:,}"
                )
            if len(rows) == max_rows:
                raise _fail(path, line, f"more than max_rows={max_rows:,} rows")
            rows.append((line, cells))
    except csv.Error as error:
        raise _fail(path, reader.line_num, f"unreadable CSV: {error}") from None
    if not rows:
        raise _fail(path, None, "no rows")
    return rows


def _number(path: Path, line: int, column: int, cell: str) -> float:
    try:
        value = float(cell)
    except ValueError:
        raise _fail(path, line, f"column {column}: expected a number, got {cell!r}") from None
    if not math.isfinite(value):
        raise _fail(path, line, f"column {column}: expected a finite number, got {cell!r}")
    return value


def load_csv_sequences(
    path: str | Path,
    *,
    inputs: str,
    target: str,
    features: int = 1,
    delimiter: str = "auto",
    header: bool = False,
    max_length: int = 1000,
    validation_split: float = 0.2,
    seed: int = 0,
    max_bytes: int = 100_000_000,
    max_rows: int = 1_000_000,
    max_columns: int = 100_000,
    tokenizer: str = "word",
    vocab_size: int | None = None,
) -> Any:
    """Read labelled sequences from a CSV/TSV file into a keras_seq `TaskData`.

    See the module docstring for the format.

    Args:
        path: The file.
        inputs: `"numeric"` (numbers per step) or `"tokens"` (a text per row).
        target: `"classification"` (class names) or `"regression"` (numbers).
        features: Numbers per step (numeric inputs).
        delimiter: `","`, `"\\t"`, `";"`, or `"auto"`: tab for `.tsv` and
            `.tab` files, comma otherwise.
        header: Skip the first line.
        max_length: Most tokens per text (token inputs).
        validation_split: Fraction of the rows kept for validation.
        seed: Seed of the shuffle before the split.
        max_bytes, max_rows, max_columns: Limits checked while reading.
        tokenizer: `"word"` (default), or `"bpe"` / `"unigram"`: a
            `keras_seq.tasks.SubwordVocabulary` learnt from the training rows
            (token inputs); `max_length` still counts words.
        vocab_size: Ids of the subword vocabulary (`"bpe"`, `"unigram"`).

    Returns:
        A `TaskData` named `"csv_sequences"`.

    Raises:
        DataFileError: naming the file and the line of the first problem.
    """
    path = Path(path)
    if delimiter == "auto":
        delimiter = "\t" if path.suffix.lower() in (".tsv", ".tab") else ","
    rows = read_rows(
        path,
        delimiter=delimiter,
        header=header,
        max_bytes=max_bytes,
        max_rows=max_rows,
        max_columns=max_columns,
    )
    if len(rows) < 2:
        raise _fail(path, None, f"{len(rows)} row; need at least 2 (one per split)")
    first_line, first = rows[0]
    if inputs == "tokens":
        width = 2
    else:
        width = len(first)
        if width < 2:
            raise _fail(path, first_line, "expected a label and at least one value")
        if (width - 1) % features:
            raise _fail(
                path,
                first_line,
                f"{width - 1} values is not a multiple of features={features}",
            )
    for line, cells in rows:
        if len(cells) != width:
            expected = (
                "2 columns (label, text)"
                if inputs == "tokens"
                else f"{width} columns like line {first_line}"
            )
            raise _fail(path, line, f"ragged row: {len(cells)} columns, expected {expected}")

    # Every line is checked, in file order, before the rows are shuffled and split.
    labels = [cells[0].strip() for _, cells in rows]
    params: dict[str, Any] = {"path": str(path), "inputs": inputs, "target": target}
    if target == "classification":
        classes = sorted(set(labels))
        if len(classes) < 2:
            raise _fail(path, None, f"one class only ({classes[0]!r}); need at least 2")
        index = {name: i for i, name in enumerate(classes)}
        y = np.array([index[label] for label in labels], dtype=np.int32)
        targets = TargetSpec("classification", num_classes=len(classes))
        params["classes"] = classes
    else:
        y = np.array([[_number(path, line, 1, cells[0])] for line, cells in rows], dtype=np.float32)
        targets = TargetSpec("regression", output_dim=1)
    if inputs == "numeric":
        length = (width - 1) // features
        x = np.empty((len(rows), length * features), dtype=np.float32)
        for r, (line, cells) in enumerate(rows):
            x[r] = [_number(path, line, c + 2, cell) for c, cell in enumerate(cells[1:])]
        x = x.reshape(len(rows), length, features)
    else:
        texts = [cells[1] for _, cells in rows]
        for (line, _), text in zip(rows, texts, strict=True):
            count = len(tokenize(text))
            if not count:
                raise _fail(path, line, "column 2: empty text")
            if count > max_length:
                raise _fail(
                    path, line, f"column 2: {count} tokens, more than max_length={max_length}"
                )

    order = np.random.default_rng(seed).permutation(len(rows))
    validation_split, num_train, _ = split_sizes(len(rows), validation_split)
    y = y[order]
    vocabulary = None
    if inputs == "numeric":
        x = x[order]
        spec = SequenceSpec("numeric", length=length, features=features)
    else:
        texts = [texts[i] for i in order]
        if tokenizer == "word":
            vocabulary = Vocabulary.build(texts[:num_train])
        else:  # subword pieces learnt from the training rows only
            vocabulary = SubwordVocabulary.train(texts[:num_train], vocab_size, tokenizer)
        encoded = [vocabulary.encode(text) for text in texts]
        length = max(len(ids) for ids in encoded)
        x = np.zeros((len(rows), length), dtype=np.int32)  # right-padded with PAD = 0
        for r, ids in enumerate(encoded):
            x[r, : len(ids)] = ids
        spec = SequenceSpec("tokens", length=length, vocab_size=len(vocabulary))

    params.update(validation_split=validation_split, seed=seed)
    if tokenizer != "word":
        params.update(tokenizer=tokenizer, vocab_size=vocab_size)
    return TaskData(
        x_train=x[:num_train],
        y_train=y[:num_train],
        x_val=x[num_train:],
        y_val=y[num_train:],
        name="csv_sequences",
        params=params,
        inputs=spec,
        targets=targets,
        description=(
            f"{len(rows)} labelled sequences read from {path.name} ({inputs} inputs, {target})."
        ),
        source_vocabulary=vocabulary,
    )
