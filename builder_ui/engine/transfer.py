"""How a remote trial's files reach the driver: by value through Ray, or under a storage URI.

A Ray trial sends back its checkpoint after every epoch and its run directory
(the model, the vocabularies, TensorBoard logs) when it ends
(`builder_ui.engine.remote`). By default those files travel by value, inside
the messages and the task's result, through Ray's object store: nothing to
configure, but every byte passes through the driver's queue actor and the
object store's memory. With a storage URI (`keras-seq sweep --storage URI`,
`run_sweep(storage=...)`) the worker writes them under that URI instead and
the message carries only their names; the driver reads them from there into
its run store, then deletes them. Any `pyarrow.fs` URI works: `s3://bucket/prefix`,
`gs://…`, `hdfs://…`, `abfs://…`, or `file:///path` (a plain absolute path is
taken as one) for a directory every node mounts.

    worker                                  storage URI                 driver
    ──────                                  ───────────                 ──────
    ship(files, key)     ─── write ───▶  <URI>/<run id>/<key>/…   ── read ──▶  run store
                                         (deleted once read: release)

The driver checks the URI before any run is created (`check`): it must parse,
and the driver must be able to write, find and delete a probe file under it
within `PROBE_TIMEOUT_S` (an unreachable endpoint fails there, naming the
URI, rather than in every trial). The store stays the driver's: what lies
under the URI is a transfer area, emptied as it is read, never a second
store. Files written under the URI by a worker that died mid-upload are
deleted when the driver marks its trial ended (`release_run`).

pyarrow (a dependency of Ray's) does the I/O; it knows the URI schemes and the
credentials chains of the clouds (`AWS_*`, `GOOGLE_APPLICATION_CREDENTIALS`, …)
so keras_seq handles none of them itself.
"""

from __future__ import annotations

import concurrent.futures
import functools
import posixpath
import re
import uuid
from collections.abc import Mapping
from typing import Any

# A hang guard for the driver's probe: pyarrow's cloud clients retry for minutes by default.
PROBE_TIMEOUT_S = 60.0
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# A run id or a key becomes one path segment under the URI.
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class StorageError(ValueError):
    """A storage URI that cannot be used, with the URI and the reason."""


def _pyarrow_fs() -> Any:
    # pyarrow comes with Ray (the `ray` extra), which is what runs trials remotely.
    from pyarrow import fs

    return fs


@functools.lru_cache(maxsize=8)
def _filesystem(uri: str) -> tuple[Any, str]:
    """`(pyarrow FileSystem, base path)` of `uri`; a plain absolute path is a local directory.

    Made once per URI and process (a cloud client may ask the network for its region when
    made; every epoch's checkpoint goes through here twice on the driver, once on a worker).
    """
    fs = _pyarrow_fs()
    if not _SCHEME.match(uri) and not uri.startswith("/"):
        raise StorageError(
            f"Received an invalid value for `storage`: expected a pyarrow.fs URI "
            f"(s3://bucket/prefix, gs://…, file:///path) or an absolute path, got {uri!r}."
        )
    try:
        filesystem, path = fs.FileSystem.from_uri(uri)
    except Exception as error:  # pyarrow raises ArrowInvalid, ArrowNotImplementedError, OSError
        raise StorageError(
            f"Received an invalid value for `storage`: pyarrow cannot open {uri!r} "
            f"({type(error).__name__}: {error})."
        ) from None
    return filesystem, path.rstrip("/")


def check(uri: str | None) -> str | None:
    """Return `uri` once a probe file could be written, found and deleted under it.

    None (files by value) passes as it is. Raises `StorageError` naming the URI
    when it does not parse, cannot be written, or does not answer within
    `PROBE_TIMEOUT_S`; the probe leaves nothing behind.
    """
    if uri is None:
        return None
    if not isinstance(uri, str) or not uri.strip():
        raise StorageError(
            f"Received an invalid value for `storage`: expected a non-empty URI, got {uri!r}."
        )

    def attempt():
        # Inside the time limit: opening a cloud URI may already ask the network (a region).
        filesystem, base = _filesystem(uri)
        probe = posixpath.join(base, f".keras-seq-probe-{uuid.uuid4().hex}")
        filesystem.create_dir(base, recursive=True)
        with filesystem.open_output_stream(probe) as stream:
            stream.write(b"keras-seq")
        try:
            found = filesystem.get_file_info(probe)
            if found.type != _pyarrow_fs().FileType.File:
                raise OSError(f"the probe file {probe} was written but is not there")
        finally:
            filesystem.delete_file(probe)

    executor = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        executor.submit(attempt).result(timeout=PROBE_TIMEOUT_S)
    except StorageError:
        raise
    except concurrent.futures.TimeoutError:
        raise StorageError(
            f"Received an invalid value for `storage`: {uri!r} did not answer a probe write "
            f"within {PROBE_TIMEOUT_S:.0f} s."
        ) from None
    except Exception as error:
        raise StorageError(
            f"Received an invalid value for `storage`: cannot write under {uri!r} "
            f"({type(error).__name__}: {error})."
        ) from None
    finally:
        executor.shutdown(wait=False)
    return uri


def _key_path(base: str, run_id: str, key: str | None = None) -> str:
    for segment in (run_id,) if key is None else (run_id, key):
        if not _SEGMENT.match(segment):
            raise ValueError(f"not a storage path segment: {segment!r}")
    return posixpath.join(base, run_id) if key is None else posixpath.join(base, run_id, key)


def ship(files: Mapping[str, bytes], uri: str | None, run_id: str, key: str) -> dict[str, Any]:
    """What a message carries for `files` (relative POSIX path → bytes).

    Without a URI, the files themselves. With one, they are written under
    `<uri>/<run_id>/<key>/` and the payload names them.
    """
    if uri is None:
        return {"files": dict(files)}
    filesystem, base = _filesystem(uri)
    directory = _key_path(base, run_id, key)
    filesystem.create_dir(directory, recursive=True)
    for relative, content in files.items():
        path = posixpath.join(directory, relative)
        filesystem.create_dir(posixpath.dirname(path), recursive=True)
        with filesystem.open_output_stream(path) as stream:
            stream.write(content)
    return {"uri": uri, "run_id": run_id, "key": key, "names": sorted(files)}


def check_relative(name: object) -> str:
    """`name` if it is a plain relative POSIX path (no `..`, not absolute, no empty or NUL
    part), as the files a worker sends must be named; ValueError naming it otherwise."""
    parts = name.split("/") if isinstance(name, str) else []
    if not parts or name.startswith("/") or "\0" in name or {"", ".", ".."} & set(parts):
        raise ValueError(f"a file named {name!r}: not a plain relative path")
    return name


def receive(payload: Mapping[str, Any], *, uri: str | None) -> dict[str, bytes]:
    """The files a payload from `ship` stands for (read from the URI where it has one).

    What a payload names is checked before anything is read: its files' names are plain
    relative paths (`check_relative`), and a payload read from storage names `uri`, the
    storage the driver itself chose (None: files by value only), not one a worker made up.

    Raises:
        ValueError: A name or the storage URI is not what the driver allows.
    """
    names = payload["files"] if "files" in payload else payload["names"]
    for name in names:
        check_relative(name)
    if "files" in payload:
        return dict(payload["files"])
    if payload["uri"] != uri:
        raise ValueError(f"the files are under {payload['uri']!r}, not the sweep's storage {uri!r}")
    filesystem, base = _filesystem(payload["uri"])
    directory = _key_path(base, payload["run_id"], payload["key"])
    files = {}
    for relative in payload["names"]:
        with filesystem.open_input_stream(posixpath.join(directory, relative)) as stream:
            files[relative] = stream.read()
    return files


def release(payload: Mapping[str, Any]) -> None:
    """Delete what `ship` wrote under the URI for this payload (nothing for files by value)."""
    if "files" in payload:
        return
    filesystem, base = _filesystem(payload["uri"])
    _delete_dir(filesystem, _key_path(base, payload["run_id"], payload["key"]))


def release_run(uri: str | None, run_id: str) -> None:
    """Delete everything under `<uri>/<run_id>/` (a trial that ended; nothing without a URI)."""
    if uri is None:
        return
    filesystem, base = _filesystem(uri)
    _delete_dir(filesystem, _key_path(base, run_id))


def _delete_dir(filesystem: Any, path: str) -> None:
    if filesystem.get_file_info(path).type == _pyarrow_fs().FileType.Directory:
        filesystem.delete_dir(path)


__all__ = ["StorageError", "check", "check_relative", "receive", "release", "release_run", "ship"]
