"""Data files uploaded in the app: checked completely, previewed, then kept for the runs.

Three kinds of file, each read by the engine's own loader so that what the app
accepts is exactly what training reads:

- `parallel_text`: `source<TAB>target` lines (the Tatoeba/Anki format), read
  by `keras_seq.tasks.load_parallel_text` → task `parallel_text`;
- `labelled_sequences`: CSV/TSV rows `label, text` or `label, v_1, …, v_m`,
  read by `builder_ui.builders.data_files.load_csv_sequences` → task `csv_sequences`
  with `target: classification` (text or numbers detected from the first row);
- `numeric_series`: CSV/TSV rows `value, v_1, …, v_m` → task `csv_sequences`
  with numeric inputs and `target: regression`.

`check_upload` refuses, with a message naming the file and the line, a file
larger than `MAX_UPLOAD_BYTES` (or the app's `--max-upload-mb`) or than its
kind's loader reads (`reading_limit`: both by its size, before it is read), one
that is not UTF-8, a ragged or otherwise malformed row, a non-finite number; and
stores nothing then. A good file is
copied (through a temporary name) to `<runs>/_uploads/<sha256 prefix>/<name>`,
where it stays for the runs that use it (a run's spec names its data file,
and the Inspect tab reads it again). The same content uploaded twice is
stored once.
"""

from __future__ import annotations

import csv
import hashlib
import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builder_ui import builders, files
from builder_ui.builders import load_spec
from builder_ui.builders.tasks import CsvSequencesParams
from builder_ui.specs import SpecError
from keras_seq.tasks.parallel_text import MAX_FILE_BYTES

MAX_UPLOAD_BYTES = 10 * 1024 * 1024
PREVIEW_ROWS = 20
PREVIEW_CELL_CHARS = 60
UPLOADS_DIR = "_uploads"  # a run id cannot start with "_", so this never clashes with a run

KINDS = {
    "parallel_text": "Parallel text (source<TAB>target per line)",
    "labelled_sequences": "Labelled sequences (label, text or numbers per row)",
    "numeric_series": "Numeric series (target value, v1, v2, … per row)",
}
SUFFIXES = (".csv", ".tsv", ".tab", ".txt")


@dataclass
class Upload:
    """The outcome of checking an uploaded file.

    Attributes:
        ok: Whether the file can be used.
        message: What was found (the problem, with its line, when not ok).
        headers, rows: A preview of the first rows, cells shortened.
        task: The spec's `task:` section that uses the stored copy, when ok.
        path: Where the copy is stored, when ok.
    """

    ok: bool
    message: str
    headers: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    task: dict[str, Any] | None = None
    path: Path | None = None


def _refuse(message: str) -> Upload:
    return Upload(False, message)


def _safe_name(name: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name).name).strip("._") or "data"
    return stem[:100]


def _short(cell: str) -> str:
    cell = cell.strip()
    return cell if len(cell) <= PREVIEW_CELL_CHARS else cell[: PREVIEW_CELL_CHARS - 1] + "…"


def _delimiter(path: Path, kind: str) -> str:
    if kind == "parallel_text" or path.suffix.lower() in (".tsv", ".tab"):
        return "\t"
    return ","


def _preview(text: str, delimiter: str, kind: str) -> tuple[list[str], list[list[str]]]:
    rows: list[list[str]] = []
    if kind == "parallel_text":
        for line in text.splitlines():
            if line.strip():
                source, _, target = line.partition("\t")
                rows.append([_short(source), _short(target.split("\t")[0])])
            if len(rows) == PREVIEW_ROWS:
                break
        return ["source", "target"], rows
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    for cells in reader:
        if cells and any(c.strip() for c in cells):
            rows.append([_short(c) for c in cells])
        if len(rows) == PREVIEW_ROWS:
            break
    width = max((len(r) for r in rows), default=0)
    label = "value" if kind == "numeric_series" else "label"
    headers = [label] + [f"x{i}" for i in range(1, width)]
    shown = min(width, 12)  # a preview, not the whole row
    headers = headers[:shown] + (["…"] if width > shown else [])
    rows = [(r + [""] * (width - len(r)))[:shown] + (["…"] if width > shown else []) for r in rows]
    return headers, rows


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _task_for(path: Path, kind: str, text: str, delimiter: str) -> dict[str, Any]:
    if kind == "parallel_text":
        return {"type": "parallel_text", "path": str(path)}
    try:
        first = next(
            (
                cells
                for cells in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
                if cells and any(c.strip() for c in cells)
            ),
            [],
        )
    except csv.Error:  # the loader names the line and the reason (`_load`)
        first = []
    if kind == "numeric_series":
        inputs, target = "numeric", "regression"
    else:
        numbers = len(first) > 1 and all(_is_number(c) for c in first[1:])
        inputs, target = ("numeric" if numbers else "tokens"), "classification"
    task = {"type": "csv_sequences", "path": str(path), "inputs": inputs, "target": target}
    if delimiter == "\t":
        task["delimiter"] = "\t"
    return task


def _load(task: dict[str, Any]) -> Any:
    """Read the file as training will (the task builder of the spec), raising on a problem."""

    spec = load_spec(
        {
            "version": 1,
            "name": "upload-check",
            "task": task,
            "model": {"type": "sequence_classifier"},
        }
    )
    return builders.load_task(spec)


def reading_limit(kind: str) -> int:
    """The largest file of `kind` that its task's loader reads, in bytes."""
    if kind == "parallel_text":
        return MAX_FILE_BYTES
    return CsvSequencesParams.model_fields["max_bytes"].default


def check_upload(
    source: str | os.PathLike,
    kind: str,
    uploads_root: str | os.PathLike,
    max_bytes: int = MAX_UPLOAD_BYTES,
) -> Upload:
    """Check an uploaded file completely; keep a copy under `uploads_root` if it is good.

    Args:
        source: The uploaded file (where the web server put it).
        kind: One of `KINDS`.
        uploads_root: Where good files are kept (`<runs>/_uploads`).
        max_bytes: The largest file accepted (`keras-seq ui --max-upload-mb`).

    Returns:
        An `Upload`; when not ok, nothing was written.
    """

    if kind not in KINDS:
        return _refuse(
            f"Unknown kind of file {kind!r}; choose one of: {', '.join(KINDS.values())}."
        )
    if source is None or not str(source):
        return _refuse("No file was uploaded.")
    source = Path(source)
    name = source.name
    if not source.is_file():
        return _refuse(f"{name}: the upload did not arrive; try again.")
    if source.suffix.lower() not in SUFFIXES:
        return _refuse(
            f"{name}: expected a file ending in {', '.join(SUFFIXES)}, got {source.suffix!r}."
        )
    size = source.stat().st_size
    if size > max_bytes:
        return _refuse(
            f"{name}: {size:,} bytes is more than an upload may have ({max_bytes:,} bytes)."
        )
    limit = reading_limit(kind)
    if size > limit:  # the loader would refuse it after the whole file was read twice
        return _refuse(
            f"{name}: {size:,} bytes is more than a file of this kind may have ({limit:,} "
            "bytes); split it or keep the rows you need."
        )
    if size == 0:
        return _refuse(f"{name}: the file is empty.")
    raw = source.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        return _refuse(
            f"{name}, line {line}: not UTF-8 text (byte 0x{raw[error.start]:02x}: {error.reason}). "
            "Save the file as UTF-8 and upload it again."
        )
    delimiter = _delimiter(source, kind)
    task = _task_for(source, kind, text, delimiter)
    try:
        data = _load(task)
    except SpecError as error:
        message = "; ".join(m for _, m in error.problems) or str(error)
        return _refuse(message.replace(str(source), name))
    except (ValueError, OSError) as error:
        return _refuse(str(error).replace(str(source), name))
    headers, rows = _preview(text, delimiter, kind)

    digest = hashlib.sha256(raw).hexdigest()[:16]
    directory = Path(uploads_root) / digest
    target = directory / _safe_name(name if Path(name).suffix else name + ".csv")
    if not target.exists():
        files.copy(source, target)
    task["path"] = str(target.resolve())
    summary = (
        f"{name}: {data.num_train + data.num_val:,} examples ({data.num_train:,} for training, "
        f"{data.num_val:,} for validation), {data.inputs.kind} inputs of length "
        f"{data.inputs.length}, {data.targets.kind} targets."
    )
    return Upload(True, summary, headers, rows, task, target)
