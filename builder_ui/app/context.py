"""What the app's actions share: the run store, the training queue, uploads, downloads, models.

State lives in an `AppContext`: the run store (`<runs>/runs.sqlite`), the
training queue (`builder_ui.engine.queue.JobQueue`), the lab runner, the uploads
kept for runs (`<runs>/_uploads/`), a scratch directory for downloads (in the
system's temp directory, so the web server may serve them), and a few loaded
models. No Gradio here.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from builder_ui.app.uploads import UPLOADS_DIR
from builder_ui.builders import (
    load_spec,
    load_task,
)
from builder_ui.engine.queue import JobQueue
from builder_ui.engine.store import RunNotFoundError, RunStore
from builder_ui.lab.runner import LabRunner
from builder_ui.results.export import ExportError, load_trained_model
from builder_ui.specs import SpecError

# Models kept loaded for the Inspect tab.
MODEL_CACHE_SIZE = 4


class AppError(ValueError):
    """A request the app refuses; the message is shown on the page as it is."""


class AppContext:
    """Everything the app's actions share: the store, the queue, uploads, downloads, models.

    Args:
        runs_dir: The run store's directory (made if missing).
        slots: Device slots of the training queue (default: detected).
    """

    def __init__(self, runs_dir: str | os.PathLike, *, slots: Sequence[str] | None = None):
        self.runs_dir = Path(runs_dir).resolve()
        self.store = RunStore(self.runs_dir)
        self.jobs = JobQueue(self.store, slots=slots)
        self.lab = LabRunner(self.runs_dir)
        self.uploads_root = self.runs_dir / UPLOADS_DIR
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
        """The run's task data, made again from its (seeded) spec."""

        with self._lock:
            if run_id in self._tasks:
                return self._tasks[run_id]
        record = self.record(run_id)
        try:
            task = load_task(load_spec(record.spec))
        except SpecError as error:
            raise AppError(f"The data of run {run_id} cannot be made again: {error}") from None
        with self._lock:
            self._tasks[run_id] = task
            while len(self._tasks) > MODEL_CACHE_SIZE:
                self._tasks.popitem(last=False)
        return task

    def download_path(self, name: str) -> Path:
        """A fresh path in the scratch directory for a file the page offers to download."""
        directory = Path(tempfile.mkdtemp(dir=self.scratch))
        return directory / name
