"""Free space before a checkpoint or a model is written: measured first, refused with a message.

A full disk while HDF5 writes a checkpoint crashed the process (h5py, exit 139), so the
engine checks the space a write needs before making it (`check_space`), from the model's
variables (`checkpoint_bytes`); a run then ends `interrupted`, resumable.
"""

from __future__ import annotations

import errno
import math
import shutil
from pathlib import Path
from typing import Any

import numpy as np

from builder_ui.builders import memory

# What the free space must hold besides a checkpoint or a model: the run store's own writes
# (SQLite's write-ahead log grows by a few 4 kB pages a commit) and the small files.
STORE_MARGIN_BYTES = 256 * 1024
# An HDF5 file stores each variable with its headers (about 1.2 kB measured), a `.keras`
# file adds its config and zip directory: both are counted above the variables' bytes.
BYTES_PER_VARIABLE = 2048
FILE_OVERHEAD_BYTES = 64 * 1024


class OutOfSpaceError(OSError):
    """Too little free space for a checkpoint or the model: checked before either is written.

    A full disk while HDF5 writes a checkpoint crashed the process (h5py, exit 139), so the
    space is checked first; the run then ends `interrupted`, resumable.
    """

    def __init__(self, message: str):
        super().__init__(errno.ENOSPC, message)

    def __str__(self) -> str:
        return self.strerror


def checkpoint_bytes(model: Any) -> int:
    """About the size of one checkpoint of `model`, or of its `.keras` file.

    Both hold the variables and the optimiser's state. Before the first training step
    the optimiser has no state yet: two slots per trainable variable are counted (Adam's).
    """

    def size(variables) -> int:
        return sum(
            math.prod(variable.shape) * np.dtype(variable.dtype).itemsize + BYTES_PER_VARIABLE
            for variable in variables
        )

    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None and optimizer.built:
        state = size(optimizer.variables)
    else:
        state = 2 * size(model.trainable_variables)
    return size(model.variables) + state + FILE_OVERHEAD_BYTES


def bytes_under(path: Path) -> int:
    """The bytes of the files under `path` (0 when it does not exist)."""
    return sum(item.stat().st_size for item in path.rglob("*") if item.is_file())


def check_space(path: Path, needed: int, what: str) -> None:
    """Raise `OutOfSpaceError` unless the disk of `path` has `needed` bytes free, and a margin."""
    needed = max(needed, 0) + STORE_MARGIN_BYTES
    existing = next(parent for parent in (path, *path.parents) if parent.exists())
    free = shutil.disk_usage(existing).free
    if free < needed:
        raise OutOfSpaceError(
            f"No space left for {what} in {path}: it needs about {memory.format_bytes(needed)}, "
            f"{memory.format_bytes(free)} is free"
        )
