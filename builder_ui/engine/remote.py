"""Trials on machines that do not share the driver's disk: scratch directories, streamed epochs.

    driver (owns the store)                         Ray worker (any node)
    ───────────────────────                         ─────────────────────
    run queued; data file read ──── spec, bytes ──▶ scratch dir: the data file, a store
                                                    of its own, `engine.run` on the trial
    epoch N and its checkpoint ◀──── channel ────── after each epoch (checkpoint first)
    written into the store          (a Ray queue)
    artifacts, final record    ◀── task result ──── model.keras, vocabularies.json, ...;
    written, run finished                           the scratch dir removed

The driver's store is the only one that counts: a worker never opens the
driver's SQLite file or runs directory (SQLite over a network file system is
what SQLite's authors warn against, and most Ray clusters have no shared disk
at all). Each trial trains in a scratch directory of its worker
(`tempfile.mkdtemp`, removed when the trial ends, or by the node's next trial
when its process was killed before it could), in a
`RunStore` of its own holding just that run under the driver's run id, so that
the engine does there exactly what it does locally: checkpoints, per-epoch
records, final metrics, the saved model.

What crosses the network, through Ray only:

- to the worker: the trial's spec and, for a task that reads a file
  (`task.path`: `parallel_text`, `csv_sequences`), that file's bytes; the
  worker writes them into its scratch directory and points the spec there;
- to the driver, as each epoch ends: a `start` message (backend, device,
  precision, parameters), then per epoch its record and the checkpoint the
  engine wrote before it (`<run>/backup/`), through a `ray.util.queue.Queue`
  whose actor lives on the driver's node. The driver writes the checkpoint
  first and the epoch second, as the engine does, so that every recorded
  epoch can be resumed from; the app shows a remote trial's epochs as they
  end, like a local one's;
- back with the task's result: the final record and every file of the run's
  directory (the model, the vocabularies, TensorBoard logs, a traceback), by
  value, through Ray's object store.

With a storage URI (`storage_uri`, `keras-seq sweep --storage`) the files of
the checkpoints and of the result travel under that URI instead, and the
messages carry their names (`builder_ui.engine.transfer`); the driver reads
them into its store and deletes them there.

A worker that dies mid-trial (killed, out of memory, its node lost) leaves
the trial `interrupted` in the driver's store with the epochs and the
checkpoint it streamed, so `keras-seq resume SWEEP` continues it from its
last recorded epoch; a trial that had not started stays `queued`. An error
raised inside a trial (a bug, not a lost worker) makes it `failed`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from builder_ui import files
from builder_ui.engine import artifacts, transfer
from builder_ui.engine.store import RunStore
from builder_ui.specs import SpecError

SCRATCH_PREFIX = "keras-seq-trial-"
DATA_DIR = "data"
STORE_DIR = "store"
OWNER_FILE = ".owner"  # the pid of the process training in a scratch directory
# The record fields a trial's result carries back (`RunStore.finish` takes them).
RESULT_FIELDS = ("backend", "device", "precision", "params")
# A hang guard: how long a trial waits for its driver's verdict after an epoch (the driver
# answers as it drains its channel, every fraction of a second while it lives).
VERDICT_TIMEOUT_S = 600
# A data file is shipped by value; the tasks bound their own files far below this.
MAX_DATA_FILE_BYTES = 2**30


# --- driver side: what goes out ------------------------------------------------------------


def data_file(spec: Mapping[str, Any], cwd: str | os.PathLike) -> tuple[str, bytes] | None:
    """`(file name, bytes)` of the file a trial's task reads (`task.path`), or None.

    A relative path is the driver's: taken from `cwd`, as `keras-seq sweep`
    reads it. The trial was checked with its data before any run was created
    (`plan_sweep`), so the file exists and is within its task's limits.
    """
    path = spec.get("task", {}).get("path")
    if not isinstance(path, str):
        return None
    path = Path(path).expanduser()
    if not path.is_absolute():
        path = Path(cwd) / path
    size = path.stat().st_size
    if size > MAX_DATA_FILE_BYTES:
        raise ValueError(
            f"task.path: {str(path)!r} holds {size:,} bytes, more than the "
            f"{MAX_DATA_FILE_BYTES:,} a Ray trial ships to its worker"
        )
    return path.name, path.read_bytes()


# --- worker side -----------------------------------------------------------------------------


def run_trial(
    spec: Mapping[str, Any],
    run_id: str,
    data: tuple[str, bytes] | None,
    channel: Any,
    *,
    verdicts: Any = None,
    storage_uri: str | None = None,
) -> dict[str, Any]:
    """The body of one Ray task: train `spec` as run `run_id` in a scratch directory.

    Args:
        spec: The trial's spec (a dict), as the driver stored it.
        run_id: The driver's id of the run; the scratch store uses it too.
        data: `data_file(spec, ...)`: the task's file, or None.
        channel: Where the messages go (`put(message)`): a Ray queue.
        verdicts: A trial of a search with a scheduler: the Ray queue the driver answers
            its `prune` questions in (`ask_driver`); the driver's study says whether it
            stops after each recorded epoch. None: no scheduler.
        storage_uri: Where the checkpoints and the run's files go
            (`builder_ui.engine.transfer`); None: by value, in the messages.

    Returns:
        The result (`trial_result`): the final record's fields, the history
        and every file of the run's directory (or their names under
        `storage_uri`).
    """
    remove_abandoned_scratch()
    scratch = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
    try:
        (scratch / OWNER_FILE).write_text(str(os.getpid()), encoding="ascii")
        spec = dict(spec)
        if data is not None:
            name, content = data
            (scratch / DATA_DIR).mkdir()
            local_file = scratch / DATA_DIR / name
            local_file.write_bytes(content)
            spec["task"] = {**spec["task"], "path": str(local_file)}
        with RunStore(scratch / STORE_DIR) as store:
            store.create_run(spec, run_id=run_id)
            # Keras loads here, in the worker, on the backend its runtime environment set.
            from builder_ui.engine import callbacks, train

            start, epoch = _messages(store, run_id, channel, storage_uri)
            streamer = callbacks.TrialStreamer(store, run_id, start, epoch)
            prune = None if verdicts is None else ask_driver(run_id, channel, verdicts)

            try:
                record = train.run(
                    None, store=store, run_id=run_id, callbacks=[streamer], prune=prune
                )
            except SpecError:
                record = store.get(run_id)  # a data check failed on the worker: run `failed`
            return trial_result(store, record, storage_uri)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def ask_driver(run_id: str, channel: Any, verdicts: Any) -> Callable[[int, dict], bool]:
    """`prune(epoch, logs)` for `engine.run` in a remote trial: the question goes to the
    driver (a `prune` message), whose study answers in `verdicts` (`{"verdict": bool}`, or
    `{"error": message}`, raised here as the local search raises it)."""

    def prune(epoch: int, logs: dict[str, Any]) -> bool:
        channel.put({"run_id": run_id, "kind": "prune", "epoch": epoch, "logs": dict(logs)})
        answer = verdicts.get(timeout=VERDICT_TIMEOUT_S)
        if "error" in answer:
            raise ValueError(answer["error"])
        return bool(answer["verdict"])

    return prune


def remove_abandoned_scratch() -> list[Path]:
    """Remove the scratch directories of trials whose process died (killed: no cleanup ran).

    Each scratch directory names its process in `OWNER_FILE`; one whose process
    is gone from this machine is removed. Returns the directories removed.
    """
    removed = []
    for directory in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*"):
        try:
            owner = int((directory / OWNER_FILE).read_text(encoding="ascii"))
        except (OSError, ValueError):
            continue  # being made, or not ours
        if owner == os.getpid() or _alive(owner):
            continue
        shutil.rmtree(directory, ignore_errors=True)
        removed.append(directory)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def _messages(store: RunStore, run_id: str, channel: Any, storage_uri: str | None) -> tuple:
    """What a trial's `TrialStreamer` sends: `start()` (the run's device and backend), then
    `epoch(row)`, each recorded epoch with its checkpoint."""

    def start() -> None:
        record = store.get(run_id, history=False)
        info = {field: getattr(record, field) for field in RESULT_FIELDS}
        channel.put({"run_id": run_id, "kind": "start", "info": info})

    def epoch(row: Any) -> None:
        checkpoint = transfer.ship(
            _files(store.artifact_dir(run_id) / artifacts.BACKUP_DIR),
            storage_uri,
            run_id,
            f"epoch-{row.epoch}",
        )
        channel.put(
            {
                "run_id": run_id,
                "kind": "epoch",
                "epoch": row.epoch,
                "metrics": dict(row.metrics),
                "time": row.time,
                "seconds": row.seconds,
                "checkpoint": checkpoint,
            }
        )

    return start, epoch


def trial_result(store: RunStore, record: Any, storage_uri: str | None = None) -> dict[str, Any]:
    """What a finished trial sends back: its record, history and run directory's files
    (by value, or under `storage_uri`: `transfer.ship`)."""
    directory = store.artifact_dir(record.id)
    prefix = f"{record.id}/"
    return {
        "status": record.status,
        "error": record.error,
        "metrics": dict(record.metrics),
        "wall_time": record.wall_time,
        "examples_per_sec": record.examples_per_sec,
        **{field: getattr(record, field) for field in RESULT_FIELDS},
        "history": [
            {
                "epoch": row.epoch,
                "metrics": dict(row.metrics),
                "time": row.time,
                "seconds": row.seconds,
            }
            for row in store.history(record.id)
        ],
        # Artifact paths relative to the run's directory.
        "artifacts": {name: path.removeprefix(prefix) for name, path in record.artifacts.items()},
        # The run directory's files (`transfer.ship`: by value, or their names under the URI).
        "directory": transfer.ship(_files(directory), storage_uri, record.id, "result"),
    }


def _files(directory: Path) -> dict[str, bytes]:
    """Every file under `directory`, by relative POSIX path (temporaries left out)."""
    if not directory.is_dir():
        return {}
    files = {}
    for path in sorted(directory.rglob("*")):
        relative = path.relative_to(directory)
        if path.is_file() and not any(part.startswith(".") for part in relative.parts):
            files[relative.as_posix()] = path.read_bytes()
    return files


# --- driver side: what comes back ---------------------------------------------------------------


class Mirror:
    """Writes what remote trials send into the driver's store, in the order the engine would.

    Args:
        store: The driver's `RunStore`, where the runs were created `queued`.
        storage_uri: The trials' storage URI, where their files wait to be read
            (and are deleted once written here); None: files come by value.
    """

    def __init__(self, store: RunStore, storage_uri: str | None = None):
        self.store = store
        self.storage_uri = storage_uri
        self.finished: set[str] = set()

    def message(self, message: Mapping[str, Any]) -> None:
        """Apply one `start` or `epoch` message (late ones for a finished run are dropped)."""
        run_id = message["run_id"]
        if run_id in self.finished:
            if message["kind"] == "epoch":
                self._release(message["checkpoint"])  # sent after the trial's end was seen
            return
        if message["kind"] == "result":
            self.result(run_id, message["result"])
        elif message["kind"] == "start":
            self._running(run_id, message["info"])
        elif message["kind"] == "epoch":
            self._running(run_id, {})
            checkpoint = message["checkpoint"]
            try:
                received = transfer.receive(checkpoint, uri=self.storage_uri)
                self._write_directory(run_id, artifacts.BACKUP_DIR, received)
            except ValueError as error:  # what it left under the URI goes with the run
                self.failed(
                    run_id,
                    error,
                    what="An epoch its worker sent was refused, and nothing of it written",
                )
                return
            self.store.append_epoch(
                run_id,
                message["epoch"],
                message["metrics"],
                seconds=message["seconds"],
                time_=message["time"],
            )
            self._release(checkpoint)

    def _release(self, payload: Mapping[str, Any]) -> None:
        """Delete a payload's files under the sweep's storage URI (never under another)."""
        if "files" not in payload and payload.get("uri") == self.storage_uri:
            transfer.release(payload)

    def result(self, run_id: str, result: Mapping[str, Any]) -> None:
        """Write a trial's files and history, then give the run its final record.

        Every file name the worker sent is checked first (`_inside`): one that would land
        outside the run's folder fails the run, and nothing it sent is written.
        """
        self._running(run_id, {})
        try:
            received = transfer.receive(result["directory"], uri=self.storage_uri)
            targets = {
                relative: self._inside(run_id, relative, "a file named") for relative in received
            }
            recorded = {
                name: self._inside(run_id, relative, f"the artifact {name!r} as")
                for name, relative in result["artifacts"].items()
            }
        except ValueError as error:
            self.failed(
                run_id, error, what="Its worker's result was refused, and nothing of it written"
            )
            return
        for relative, content in received.items():
            files.write_bytes(targets[relative], content)
        for row in result["history"]:
            self.store.append_epoch(
                run_id, row["epoch"], row["metrics"], seconds=row["seconds"], time_=row["time"]
            )
        for name, target in recorded.items():
            self.store.set_artifact(run_id, name, target)
        if result["status"] != "interrupted" and artifacts.BACKUP_DIR not in {
            Path(relative).parts[0] for relative in received
        }:
            shutil.rmtree(
                self.store.artifact_dir(run_id) / artifacts.BACKUP_DIR, ignore_errors=True
            )
        fields = {field: result[field] for field in RESULT_FIELDS if result[field] is not None}
        self.store.finish(
            run_id,
            result["status"],
            metrics=result["metrics"],
            wall_time=result["wall_time"],
            examples_per_sec=result["examples_per_sec"],
            error=result["error"],
            **fields,
        )
        self._ended(run_id)

    def lost(self, run_id: str, error: BaseException, sweep_id: str | None) -> None:
        """A trial whose worker died: `interrupted` with what it streamed, or still `queued`."""
        self._ended(run_id)
        record = self.store.get(run_id, history=True)
        if record.status != "running":
            return  # never started: it stays queued, and resuming the sweep trains it
        lines = str(error).strip().splitlines()
        resume = f"keras-seq resume {sweep_id or run_id}"
        self.store.finish(
            run_id,
            "interrupted",
            error=(
                f"The Ray worker training it was lost ({type(error).__name__}: "
                f"{lines[-1] if lines else 'no message'}) after {len(record.history)} "
                f"epoch(s); `{resume}` continues it from there."
            ),
        )

    def failed(
        self, run_id: str, error: BaseException, *, what: str = "The Ray task failed"
    ) -> None:
        """A trial whose task raised: `failed` with the error, unless it already ended."""
        self._ended(run_id)
        record = self.store.get(run_id, history=False)
        if record.status not in ("queued", "running", "interrupted"):
            return
        if record.status != "running":
            self.store.set_status(run_id, "running")
        lines = str(error).strip().splitlines()
        self.store.finish(
            run_id,
            "failed",
            error=f"{what}: {type(error).__name__}: {lines[-1] if lines else 'no message'}",
        )

    def _ended(self, run_id: str) -> None:
        """No more messages of this trial count; what it left under the storage URI goes."""
        self.finished.add(run_id)
        transfer.release_run(self.storage_uri, run_id)

    def _running(self, run_id: str, info: Mapping[str, Any]) -> None:
        record = self.store.get(run_id, history=False)
        if record.status in ("queued", "interrupted"):
            self.store.set_status(run_id, "running", **{k: v for k, v in info.items() if v})
        elif info:
            self.store.update(run_id, **{k: v for k, v in info.items() if v})

    def _inside(self, run_id: str, relative: object, what: str) -> Path:
        """Where a name a worker sent lands in the run's folder; ValueError if outside it.

        A worker is another machine, and what it sends is data: a name that is not a plain
        relative path (absolute, with `..`, empty) or that a symbolic link in the run's
        folder leads out of (`RunStore.artifact_target`) is refused, naming it.
        """
        try:
            transfer.check_relative(relative)
        except ValueError:
            raise ValueError(
                f"the worker sent {what} {relative!r}, which is not a path inside "
                f"run {run_id!r}'s folder"
            ) from None
        try:
            return self.store.artifact_target(run_id, relative)
        except ValueError:
            raise ValueError(
                f"the worker sent {what} {relative!r}, which leads outside run {run_id!r}'s folder"
            ) from None

    def _write_directory(self, run_id: str, name: str, contents: Mapping[str, bytes]) -> None:
        """Replace `<run>/<name>/` with `contents`: written beside it, then renamed into place.

        The names are checked first (`_inside`); a ValueError leaves the folder as it was.
        """
        for relative in contents:
            self._inside(run_id, f"{name}/{relative}", "a checkpoint file named")
        with files.atomic_path(self.store.artifact_dir(run_id) / name) as temporary:
            temporary.mkdir()
            for relative, content in contents.items():
                target = temporary / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(content)


__all__ = ["Mirror", "data_file", "run_trial", "trial_result"]
