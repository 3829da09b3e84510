"""What the app's actions share: the run store, the training queue, uploads, downloads, models.

State lives in an `AppContext`: the run store (`<runs>/runs.sqlite`), the
training queue (`builder_ui.engine.queue.JobQueue`), the lab runner, the uploads
kept for runs (`<runs>/_uploads/`), the folders specs may read data from
(`data_paths`: the uploads and `--data-dir`), a scratch directory for downloads (in the
system's temp directory, so the web server may serve them), and a few loaded
models. No Gradio here.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from builder_ui.app.data_paths import DataPaths
from builder_ui.app.uploads import MAX_UPLOAD_BYTES, UPLOADS_DIR
from builder_ui.builders import (
    load_spec,
    load_task,
)
from builder_ui.engine.memo import StoreMemo
from builder_ui.engine.queue import JobQueue
from builder_ui.engine.store import RunNotFoundError, RunStore, StoreError
from builder_ui.lab.runner import LabRunner
from builder_ui.results.export import ExportError, load_trained_model, stored_task
from builder_ui.specs import SpecError

# Models kept loaded for the Inspect tab.
MODEL_CACHE_SIZE = 4


class AppError(ValueError):
    """A request the app refuses; the message is shown on the page as it is."""


# What a tab shows as one line ("✗ …") instead of raising: the app's refusals, and the run
# store's (locked by another writer, read-only, full, damaged), each of which says what to do.
REFUSED = (AppError, StoreError)


class AppContext:
    """Everything the app's actions share: the store, the queue, uploads, downloads, models.

    Args:
        runs_dir: The run store's directory (made if missing).
        slots: Device slots of the training queue (default: detected).
        data_dirs: Folders whose files a spec may name, besides the uploads
            (`keras-seq ui --data-dir`; default: none; see `builder_ui.app.data_paths`).
        max_upload_bytes: The largest data file an upload may be.
        runner: Train in the app's process with this function instead of in the slots'
            training processes (`JobQueue`'s `runner`: for tests, and for embedding the app
            where child processes cannot be started).
    """

    def __init__(
        self,
        runs_dir: str | os.PathLike,
        *,
        slots: Sequence[str] | None = None,
        data_dirs: Sequence[str | os.PathLike] = (),
        max_upload_bytes: int = MAX_UPLOAD_BYTES,
        runner: Callable[..., Any] | None = None,
    ):
        self.runs_dir = Path(runs_dir).resolve()
        self.store = RunStore(self.runs_dir)
        # The Compare tab's tables and run menus, kept while the store is unchanged.
        self.memo = StoreMemo(self.store)
        self.jobs = JobQueue(self.store, slots=slots, runner=runner)
        self.lab = LabRunner(self.runs_dir)
        self.uploads_root = self.runs_dir / UPLOADS_DIR
        self.data_paths = DataPaths.of(self.uploads_root, data_dirs)
        self.max_upload_bytes = max_upload_bytes
        # Private to this app (mode 0700) and removed by `close`: downloads, and Gradio's cache
        # of uploads and served files (`gradio_cache`), which would otherwise go to a
        # /tmp/gradio shared with every Gradio app on the machine and outlive this one.
        self.scratch = Path(tempfile.mkdtemp(prefix="keras-seq-app-"))
        self.gradio_cache = self.scratch / "gradio"
        self.gradio_cache.mkdir(mode=0o700)
        self._lock = threading.Lock()
        self._models: OrderedDict[str, Any] = OrderedDict()
        self._tasks: OrderedDict[str, Any] = OrderedDict()

    def close(self) -> None:
        """Stop the queue (cancelling what waits), forget models, remove the downloads."""
        self.jobs.close()
        self.lab.stop()
        with self._lock:
            self._models.clear()
            self._tasks.clear()
        self.memo.clear()
        shutil.rmtree(self.scratch, ignore_errors=True)
        self.store.close()

    # -- loaded runs --------------------------------------------------------

    def record(self, run_id: str):
        if not run_id:
            raise AppError("Choose a run first.")
        try:
            return self.store.get(run_id)
        except RunNotFoundError as error:
            raise AppError(str(error)) from None

    def model(self, run_id: str) -> Any:
        """The trained model of a `done` run (loaded once, `safe_mode=True`)."""

        with self._lock:
            if run_id in self._models:
                self._models.move_to_end(run_id)
                return self._models[run_id]
        try:
            model = load_trained_model(self.store, run_id)
        except ExportError as error:
            raise AppError(str(error)) from None
        with self._lock:
            self._models[run_id] = model
            while len(self._models) > MODEL_CACHE_SIZE:
                self._models.popitem(last=False)
        return model

    def task(self, run_id: str) -> Any:
        """The run's task data, made again from its (seeded) spec, read as the run recorded it.

        A run with a `vocabularies.json` artifact (`results.export.stored_task`)
        keeps its vocabularies whatever became of its data file: if the file
        is gone, unreadable or gives other vocabularies, the task is the
        recorded one, which reads typed input but has no validation examples
        (its description says why). An older run without the artifact is
        made again from its spec only.
        """

        with self._lock:
            if run_id in self._tasks:
                return self._tasks[run_id]
        record = self.record(run_id)
        try:
            stored = stored_task(self.store, run_id)
        except ExportError as error:
            raise AppError(str(error)) from None
        try:
            spec = load_spec(record.spec)
            self.data_paths.check(spec)  # a run of `keras-seq train` may name any file
            task = load_task(spec)
        except SpecError as error:
            if stored is None:
                raise AppError(f"The data of run {run_id} cannot be made again: {error}") from None
            task = _without_examples(stored, f"its data cannot be made again: {error}")
        else:
            if stored is not None and not _reads_as_recorded(task, stored):
                task = _without_examples(stored, "its data file changed since it trained")
        with self._lock:
            self._tasks[run_id] = task
            while len(self._tasks) > MODEL_CACHE_SIZE:
                self._tasks.popitem(last=False)
        return task

    def download_path(self, name: str) -> Path:
        """A fresh path in the scratch directory for a file the page offers to download."""
        directory = Path(tempfile.mkdtemp(dir=self.scratch))
        return directory / name


def _reads_as_recorded(task: Any, stored: Any) -> bool:
    """Whether the task made again has the recorded vocabularies and input and target specs."""
    fields = ("source_vocabulary", "target_vocabulary", "inputs", "targets")
    return all(getattr(task, name) == getattr(stored, name) for name in fields)


def _without_examples(stored: Any, why: str) -> Any:
    """The recorded task, its description saying why it has no validation examples."""
    return dataclasses.replace(
        stored,
        description=f"{stored.description} (Run data: {why}; the vocabularies are the run's "
        "own, but there are no validation examples to show.)",
    )
