"""A run's files read back from the store: only from the run's own folder.

A run store is a folder a user may copy in, receive from someone else or find damaged,
and each run record names its files (`artifacts`: name -> path relative to the store,
`RunRecord.artifacts`). A record is not trusted: `artifact_path` resolves the recorded
path, `..` and symbolic links included, and refuses it unless it lies inside the run's
own folder, `<store>/<run id>/`, with a message naming the run and the field:

    artifacts['model.keras'] = '/etc/shadow'                 refused
    artifacts['model.keras'] = '../../../../../etc/passwd'   refused
    <run>/model.keras -> /etc/shadow (a symbolic link)       refused
    <run> -> /elsewhere (the run's folder itself a link)     refused
    <run>/export/../model.keras                              read: it stays inside

Every reader of a recorded path goes through `artifact_path`: export (the library,
`keras-seq export` and the app's Export tab, which serves the file as a download), the
trained model and vocabularies the app's Inspect tab loads (`results.export`), and the
app's BLEU table; `keras-seq resume` reads a run's `checkpoint.log` through `confine`.
The check is made when the path is read, not when it was recorded, so
a store written by an older or another program is checked too.

A model file is a zip (`.keras`), which Keras unpacks as it loads: `config.json` and
`metadata.json` read whole into memory and parsed, the weights read whole when memory
allows. `check_model_archive` bounds what it would unpack before Keras opens it (the
number of entries, each JSON entry, the whole), and checks that each compressed entry
inflates to no more than the size the zip declares for it (Python's `zipfile` trusts
that size, and inflates up to 2 GiB at once to reach it): a 3 MB file whose config.json
inflated to 3 GiB took export and the app to 7 GB; it is now refused in one line.
"""

from __future__ import annotations

import copy
import os
import zipfile
import zlib
from pathlib import Path

from builder_ui.builders.memory import format_bytes
from builder_ui.engine.store import RunStore

# The files a run writes in its folder (`engine.train`).
MODEL_FILE = "model.keras"
BACKUP_DIR = "backup"  # the epoch checkpoint an interrupted run resumes from
TENSORBOARD_DIR = "tensorboard"
TRACEBACK_FILE = "traceback.txt"
CHECKPOINT_LOG = "checkpoint.log"
# The task's vocabularies and input/target specs (`train.save_vocabularies`), so that a finished
# run can read and write text without its data file (Inspect, the translator's SavedModel).
VOCABULARIES_FILE = "vocabularies.json"

# What a model file of this project holds: `config.json` and `metadata.json` (a few KB; a
# translator's vocabularies make config.json a few MB at most), `model.weights.h5` (the
# weights and the optimiser's state: 12 bytes a parameter with Adam) and an `assets/`
# file or two per layer that keeps any. The presets' largest model has 128,063
# parameters: a file of about 1.5 MB with 3 entries. The bounds leave a thousandfold room.
# Entries: a thousand layers with assets.
MAX_MODEL_ENTRIES = 4096
# The JSON Keras reads whole and parses (a string of N bytes takes several times N).
MAX_MODEL_JSON_BYTES = 64 * 2**20
# Everything unpacked: a model of some 350 million parameters with Adam's state.
MAX_MODEL_BYTES = 4 * 2**30
# How much of an entry is inflated at once while its size is checked.
_CHUNK_BYTES = 2**20


class ArtifactError(ValueError):
    """A recorded file that is not read: missing from the record, or outside the run's folder."""


def artifact_path(store: RunStore, run_id: str, name: str) -> Path:
    """The path of the run's artifact `name`, refused unless it is inside the run's folder.

    Args:
        store: The run store.
        run_id: The run.
        name: The artifact's name (`"model.keras"`, `"vocabularies.json"`, ...).

    Returns:
        `<store>/<recorded path>`, which resolves inside `<store>/<run id>/`.

    Raises:
        RunNotFoundError: No such run.
        ArtifactError: The run records no such artifact, or its path leads out of the
            run's folder (named: the run, `artifacts['<name>']` and the recorded value).
    """
    recorded = store.get(run_id, history=False).artifacts
    if name not in recorded:
        raise ArtifactError(f"Run {run_id!r} has no artifact {name!r}; it has {sorted(recorded)}.")
    return confine(store, run_id, recorded[name], field=f"artifacts[{name!r}]")


def confine(store: RunStore, run_id: str, recorded: object, *, field: str) -> Path:
    """`<store>/<recorded>`, checked to resolve inside the run's folder; see the module."""
    folder = store.artifact_dir(run_id)  # `<store>/<run id>`, the id checked
    if not isinstance(recorded, str) or not recorded or "\0" in recorded:
        raise ArtifactError(
            f"Run {run_id!r}: {field} is {recorded!r}, which is not a path inside the run's "
            f"folder {str(folder)!r}; it is not read."
        )
    root = store.directory.resolve() / folder.name
    resolved = (store.directory / recorded).resolve()
    if root not in resolved.parents:
        # Inside by its name but not once resolved: a symbolic link (the file or a folder).
        named = Path(os.path.normpath(root.parent / recorded))
        how = " through a symbolic link" if root in named.parents else ""
        raise ArtifactError(
            f"Run {run_id!r}: {field} is {recorded!r}, which leads outside the run's folder "
            f"{str(folder)!r}{how} (to {str(resolved)!r}); it is not read."
        )
    return store.directory / recorded


def check_model_archive(path: str | os.PathLike, *, what: str = "The model file") -> None:
    """Refuse a model file (`.keras`) that is no zip, or that would unpack past the bounds.

    Reads the zip's directory, then inflates each compressed entry a megabyte at a time
    (nothing is kept) to check it gives no more than the size its directory declares;
    stored entries (as Keras writes them) cannot give more. Nothing is extracted.

    Args:
        path: The file.
        what: How the message starts, before the path ("Run 'x': its model file").

    Raises:
        ArtifactError: One line naming the file and what is wrong: not a zip, more than
            `MAX_MODEL_ENTRIES` entries, a JSON entry over `MAX_MODEL_JSON_BYTES`, more
            than `MAX_MODEL_BYTES` in all, an entry larger than it declares, or an
            unexpected compression method.
    """
    where = f"{what} {str(path)!r}"
    try:
        with zipfile.ZipFile(path) as archive:
            entries = archive.infolist()
            problem = _bounds_problem(entries)
            for entry in entries if problem is None else ():
                problem = _entry_problem(archive, entry)
                if problem is not None:
                    break
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, zlib.error) as error:
        problem = f"is not a Keras model file (a zip archive): {error}"
    except OSError as error:
        problem = f"cannot be read: {error.strerror or error}"
    if problem is not None:
        raise ArtifactError(f"{where} {problem}.")


def _bounds_problem(entries: list[zipfile.ZipInfo]) -> str | None:
    if len(entries) > MAX_MODEL_ENTRIES:
        return (
            f"holds {len(entries):,} entries, more than the {MAX_MODEL_ENTRIES:,} a model "
            "file may have"
        )
    for entry in entries:
        if entry.filename.endswith(".json") and entry.file_size > MAX_MODEL_JSON_BYTES:
            return (
                f"is refused: {entry.filename!r} unpacks to {format_bytes(entry.file_size)}, "
                f"more than the {format_bytes(MAX_MODEL_JSON_BYTES)} a model's JSON may have"
            )
    total = sum(entry.file_size for entry in entries)
    if total > MAX_MODEL_BYTES:
        return (
            f"is refused: it unpacks to {format_bytes(total)} in all, more than the "
            f"{format_bytes(MAX_MODEL_BYTES)} a model file may have"
        )
    return None


def _entry_problem(archive: zipfile.ZipFile, entry: zipfile.ZipInfo) -> str | None:
    """Whether a compressed entry inflates to more than its declared size (read, not kept)."""
    if entry.compress_type == zipfile.ZIP_STORED:
        return None  # read as stored: never more bytes than the file holds
    if entry.compress_type != zipfile.ZIP_DEFLATED:
        return (
            f"is refused: {entry.filename!r} is compressed with method {entry.compress_type} "
            "(a model file's entries are stored or deflated)"
        )
    # One byte more than declared is asked for: getting it means the entry holds more. (Its
    # checksum is left to Keras's read: over the extra byte it could not match.)
    probe = copy.copy(entry)
    probe.file_size = entry.file_size + 1
    del probe.CRC
    unpacked = 0
    with archive.open(probe) as member:
        while unpacked <= entry.file_size and (chunk := member.read(_CHUNK_BYTES)):
            unpacked += len(chunk)
    if unpacked > entry.file_size:
        return (
            f"is refused: {entry.filename!r} unpacks to more than the {entry.file_size:,} "
            "bytes its zip entry declares"
        )
    return None


__all__ = ["ArtifactError", "artifact_path", "check_model_archive", "confine"]
