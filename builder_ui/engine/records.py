"""What a run is: its statuses and the moves between them, its record and its epochs, its id,
and the rules for what a person writes about it (name, tags, note).

Plain values and checks, no SQLite: `builder_ui.engine.store` keeps them; the app, the CLI and
the engine read them.
"""

from __future__ import annotations

import math
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

STATUSES = (
    "queued",
    "running",
    "done",
    "failed",
    "diverged",
    "cancelled",
    "interrupted",
    "pruned",
)
FINAL_STATUSES = frozenset({"done", "failed", "diverged", "cancelled", "pruned"})

# Which status may follow which. A final status is never left; `interrupted`
# goes back to `running` when the run is resumed.
TRANSITIONS: dict[str, frozenset[str]] = {
    "queued": frozenset({"running", "failed", "cancelled"}),
    "running": frozenset({"done", "failed", "diverged", "cancelled", "interrupted", "pruned"}),
    "interrupted": frozenset({"running", "failed", "cancelled"}),
    "done": frozenset(),
    "failed": frozenset(),
    "diverged": frozenset(),
    "cancelled": frozenset(),
    "pruned": frozenset(),
}

# Run ids are made by `new_run_id`; anything used as a directory name must
# match this, so an id can never name a path outside the store.
RUN_ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")

# Bounds on what a person types about a run (`RunStore.rename`, `add_tags`, `set_note`).
MAX_NAME_LENGTH = 200
MAX_TAG_LENGTH = 40
MAX_TAGS_PER_RUN = 50
MAX_NOTE_LENGTH = 10_000
# A tag is one word: it is typed on a command line and filtered by exact match.
TAG_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:+/-]*$")


@dataclass(frozen=True)
class EpochRecord:
    """One finished epoch: its number (1 is the first), the logs Keras gave, when it ended.

    Non-finite values (a diverged loss) are stored as `None`.
    """

    epoch: int
    metrics: dict[str, float | None]
    time: float
    seconds: float | None = None


@dataclass(frozen=True)
class RunRecord:
    """Everything the store knows about one run.

    Attributes:
        id: The run id (sortable by creation time).
        name: The run's name (the spec's name unless given another).
        sweep_id: The sweep this run belongs to, or None.
        spec: The experiment spec, as a JSON-compatible dict.
        status: One of `STATUSES`.
        created, started, finished: Unix timestamps (`started` is the last
            start, so a resumed run shows when it was resumed).
        backend: Keras backend that trained it ("tensorflow", "jax", "torch").
        device: Device name, e.g. "NVIDIA H200" or "CPU".
        precision: Dtype policy name, e.g. "float32" or "mixed_float16".
        params: Number of model parameters.
        history: The finished epochs in order (empty unless loaded).
        metrics: Final metrics on the validation split.
        wall_time: Seconds from the last start to the end of the run.
        examples_per_sec: Training examples per second of `fit` time.
        artifacts: Artifact name -> path relative to the store directory.
        error: The error message of a failed or interrupted run.
        pid, host: The process that runs (or ran) it.
        tags: The run's tags, sorted (`RunStore.add_tags`).
        note: Free text a person wrote about the run (`RunStore.set_note`).
        starred, archived: Marks a person set; archived runs are hidden from the
            app's table unless asked for (`RunStore.set_starred`, `set_archived`).
    """

    id: str
    name: str
    sweep_id: str | None
    spec: dict[str, Any]
    status: str
    created: float
    started: float | None = None
    finished: float | None = None
    backend: str | None = None
    device: str | None = None
    precision: str | None = None
    params: int | None = None
    history: tuple[EpochRecord, ...] = ()
    metrics: dict[str, float | None] = field(default_factory=dict)
    wall_time: float | None = None
    examples_per_sec: float | None = None
    artifacts: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    pid: int | None = None
    host: str | None = None
    tags: tuple[str, ...] = ()
    note: str = ""
    starred: bool = False
    archived: bool = False

    @property
    def finished_ok(self) -> bool:
        return self.status == "done"

    @property
    def epochs_done(self) -> int:
        """Number of epochs recorded."""
        return len(self.history)

    def curve(self, metric: str) -> tuple[list[int], list[float]]:
        """`(epochs, values)` of one logged metric, e.g. `curve("val_loss")`.

        Epochs where the metric is missing are left out; a non-finite value
        (stored as None) comes back as NaN.
        """
        epochs, values = [], []
        for row in self.history:
            if metric in row.metrics:
                value = row.metrics[metric]
                epochs.append(row.epoch)
                values.append(math.nan if value is None else float(value))
        return epochs, values


def new_run_id() -> str:
    """A short id that sorts by creation time: `YYMMDD-HHMMSS-xxxx` (UTC, random suffix)."""
    stamp = time.strftime("%y%m%d-%H%M%S", time.gmtime())
    return f"{stamp}-{secrets.token_hex(2)}"


def check_run_id(run_id: object) -> str:
    """Returns `run_id` if it is a well-formed id (letters, digits, `-`, `_`), else raises."""
    if not isinstance(run_id, str) or not RUN_ID_PATTERN.match(run_id):
        raise ValueError(
            "Received an invalid value for argument `run_id`, expected 1 to 64 letters, "
            f"digits, '-' or '_' (starting with a letter or digit), got {run_id!r}."
        )
    return run_id


def check_name(name: object) -> str:
    """Returns `name` stripped if it is a run name: 1 to `MAX_NAME_LENGTH` characters, one line."""
    text = name.strip() if isinstance(name, str) else ""
    if not text or len(text) > MAX_NAME_LENGTH or any(c in text for c in "\r\n\0"):
        raise ValueError(
            f"Received an invalid value for argument `name`, expected 1 to {MAX_NAME_LENGTH} "
            f"characters on one line, got {_shown(name)}."
        )
    return text


def check_tag(tag: object) -> str:
    """Returns `tag` if it is a tag: 1 to `MAX_TAG_LENGTH` letters, digits or `_ . : + / -`."""
    if not isinstance(tag, str) or len(tag) > MAX_TAG_LENGTH or not TAG_PATTERN.match(tag):
        raise ValueError(
            f"Received an invalid value for argument `tag`, expected 1 to {MAX_TAG_LENGTH} "
            f"letters, digits, '_', '.', ':', '+', '/' or '-' (starting with a letter or "
            f"digit), got {_shown(tag)}."
        )
    return tag


def check_note(note: object) -> str:
    """Returns `note` if it is a note: text of at most `MAX_NOTE_LENGTH` characters, no NUL."""
    if not isinstance(note, str) or len(note) > MAX_NOTE_LENGTH or "\0" in note:
        length = f" of {len(note):,} characters" if isinstance(note, str) else ""
        raise ValueError(
            f"Received an invalid value for argument `note`, expected text of at most "
            f"{MAX_NOTE_LENGTH:,} characters with no NUL character, got {_shown(note)}{length}."
        )
    return note


def _shown(value: object, limit: int = 60) -> str:
    """`repr(value)`, cut to `limit` characters so a long refused value stays one short line."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 4]}...{text[-1]}"


def check_status(status: object) -> str:
    if status not in STATUSES:
        raise ValueError(
            f"Received an invalid value for argument `status`, expected one of {list(STATUSES)}, "
            f"got {status!r}."
        )
    return status
