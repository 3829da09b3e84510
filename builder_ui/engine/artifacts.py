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
app's BLEU table. The check is made when the path is read, not when it was recorded, so
a store written by an older or another program is checked too.
"""

from __future__ import annotations

import os
from pathlib import Path

from builder_ui.engine.store import RunStore


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


__all__ = ["ArtifactError", "artifact_path", "confine"]
