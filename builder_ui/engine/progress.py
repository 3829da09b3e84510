"""How a run reports progress: a callback interface, a terminal bar, and a queue.

The engine calls these methods from the thread that trains (see
`builder_ui.engine.run`); epochs and steps count from 1::

    on_run_start(record, epochs, steps)     once, after the model is built
    on_epoch_begin(epoch, epochs)           each epoch (a resumed run starts past 1)
    on_batch_end(step, steps, logs)         each training batch
    on_epoch_end(epoch, logs)               each epoch, logs with the val_ metrics
    on_run_end(record)                      once, with the final record

`logs` maps metric names to floats, as Keras logs them. Subclass
`ProgressCallback` and override what you need: `TerminalProgress` draws a bar
for the command line; `QueueProgress` hands events to another thread (a Gradio
handler that yields updates while the run trains in a worker thread).

Across processes, a training process's `MessageCallback` turns the events into
`(kind, payload)` messages, and the app's `ProgressBoard` applies them to the
`Progress` of each run that its tables and curves show.
"""

from __future__ import annotations

import copy
import math
import queue
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

# Seconds between two redraws of the terminal bar.
REDRAW_INTERVAL_S = 0.1


class ProgressCallback:
    """Receives a run's progress; every method does nothing unless overridden."""

    def on_run_start(self, record: Any, epochs: int, steps: int) -> None:
        """The model is built and training starts.

        Args:
            record: The `RunRecord` (status `running`; `id`, `device`, `params` set).
            epochs: Total epochs of the run.
            steps: Training batches per epoch.
        """

    def on_epoch_begin(self, epoch: int, epochs: int) -> None:
        """Epoch `epoch` of `epochs` starts (1-based)."""

    def on_batch_end(self, step: int, steps: int, logs: Mapping[str, float]) -> None:
        """Training batch `step` of `steps` in this epoch ended (1-based)."""

    def on_epoch_end(self, epoch: int, logs: Mapping[str, float]) -> None:
        """Epoch `epoch` ended; `logs` holds its training and validation metrics."""

    def on_run_end(self, record: Any) -> None:
        """The run ended (any status); `record` is its final `RunRecord`."""


def _format_logs(logs: Mapping[str, float], limit: int = 4) -> str:
    parts = []
    for key, value in list(logs.items())[:limit]:
        if isinstance(value, float) and math.isfinite(value):
            parts.append(f"{key} {value:.4g}")
        else:
            parts.append(f"{key} {value}")
    return "  ".join(parts)


class TerminalProgress(ProgressCallback):
    """A text progress bar for the command line, with no dependency.

    On a terminal the current epoch's bar is redrawn in place (at most every
    `REDRAW_INTERVAL_S` seconds); elsewhere (a log file, CI) only one line per
    epoch is written.

    Args:
        stream: Where to write; default `sys.stderr`.
        width: Characters of the bar.
    """

    def __init__(self, stream: IO[str] | None = None, width: int = 30):
        self.stream = stream
        self.width = width
        self._epochs = 0
        self._epoch = 0
        self._epoch_start = 0.0
        self._last_draw = 0.0

    @property
    def _out(self) -> IO[str]:
        return self.stream if self.stream is not None else sys.stderr

    def _interactive(self) -> bool:
        isatty = getattr(self._out, "isatty", None)
        return bool(isatty and isatty())

    def _write(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()

    def on_run_start(self, record: Any, epochs: int, steps: int) -> None:
        self._epochs = epochs
        params = f"{record.params:,} parameters" if record.params is not None else ""
        details = ", ".join(x for x in (record.device, record.precision, params) if x)
        self._write(f"Run {record.id} ({record.name}) on {details}\n")

    def on_epoch_begin(self, epoch: int, epochs: int) -> None:
        self._epoch = epoch
        self._epoch_start = time.monotonic()
        self._last_draw = 0.0

    def on_batch_end(self, step: int, steps: int, logs: Mapping[str, float]) -> None:
        if not self._interactive():
            return
        now = time.monotonic()
        if step < steps and now - self._last_draw < REDRAW_INTERVAL_S:
            return
        self._last_draw = now
        filled = int(self.width * step / max(steps, 1))
        bar = "#" * filled + "." * (self.width - filled)
        self._write(
            f"\rEpoch {self._epoch}/{self._epochs} [{bar}] {step}/{steps}  {_format_logs(logs)}"
        )

    def on_epoch_end(self, epoch: int, logs: Mapping[str, float]) -> None:
        seconds = time.monotonic() - self._epoch_start
        prefix = "\r" if self._interactive() else ""
        line = f"Epoch {epoch}/{self._epochs} {seconds:.1f}s  {_format_logs(logs, limit=8)}"
        pad = " " * max(0, self.width + 40 - len(line)) if prefix else ""
        self._write(f"{prefix}{line}{pad}\n")

    def on_run_end(self, record: Any) -> None:
        line = f"Run {record.id}: {record.status}"
        if record.metrics:
            line += "  " + _format_logs(record.metrics, limit=8)
        if record.wall_time is not None:
            line += f"  ({record.wall_time:.1f}s"
            if record.examples_per_sec:
                line += f", {record.examples_per_sec:,.0f} examples/s"
            line += ")"
        if record.error:
            line += f"\n  {record.error}"
        self._write(line + "\n")


class QueueProgress(ProgressCallback):
    """Puts each event on a `queue.Queue` as `(event, payload)`, for another thread to read.

    Events: `("run_start", {"record", "epochs", "steps"})`,
    `("epoch_begin", {"epoch", "epochs"})`, `("batch_end", {"step", "steps",
    "logs"})` (only every `batch_every`-th batch and the last of an epoch),
    `("epoch_end", {"epoch", "logs"})` and `("run_end", {"record"})`.

    Args:
        events: The queue; a new unbounded one if None.
        batch_every: Report one batch in this many.
    """

    def __init__(self, events: queue.Queue | None = None, batch_every: int = 1):
        self.events = events if events is not None else queue.Queue()
        self.batch_every = max(1, int(batch_every))

    def on_run_start(self, record: Any, epochs: int, steps: int) -> None:
        self.events.put(("run_start", {"record": record, "epochs": epochs, "steps": steps}))

    def on_epoch_begin(self, epoch: int, epochs: int) -> None:
        self.events.put(("epoch_begin", {"epoch": epoch, "epochs": epochs}))

    def on_batch_end(self, step: int, steps: int, logs: Mapping[str, float]) -> None:
        if step % self.batch_every == 0 or step == steps:
            self.events.put(("batch_end", {"step": step, "steps": steps, "logs": dict(logs)}))

    def on_epoch_end(self, epoch: int, logs: Mapping[str, float]) -> None:
        self.events.put(("epoch_end", {"epoch": epoch, "logs": dict(logs)}))

    def on_run_end(self, record: Any) -> None:
        self.events.put(("run_end", {"record": record}))


# ---------------------------------------------------------------------------
# Across processes: messages and the board

# A run's state as the queue and the board see it; the store holds the final status.
WAITING, TRAINING = "queued", "running"
# How often a training process reports a batch (the last batch of an epoch always).
BATCH_REPORT_S = 0.2


@dataclass
class Progress:
    """What a run reported last (see `ProgressCallback`); epochs and steps from 1.

    Attributes:
        run_id: The run.
        epochs, steps: Total epochs, training batches per epoch.
        epoch, step: The current epoch and the last finished batch in it.
        logs: The last batch's logs (training loss and metrics so far).
        history: One dict of logs per finished epoch (with the val_ metrics).
        device, precision, params: From the run record once the model is built.
        status: `queued`, `running`, then the run's final status.
        updated: `time.time()` of the last report.
        rate: Training batches per second, measured by the board from the batches
            reported since the first one it saw (so the first batch's compile time is
            not counted); None until two reports are apart.
    """

    run_id: str
    epochs: int = 0
    steps: int = 0
    epoch: int = 0
    step: int = 0
    logs: dict[str, float] = field(default_factory=dict)
    history: list[dict[str, float]] = field(default_factory=list)
    device: str | None = None
    precision: str | None = None
    params: int | None = None
    status: str = WAITING
    updated: float = 0.0
    rate: float | None = None
    # Where the rate is measured from: `time.time()` and `batches_done` of the first report.
    _since: float | None = field(default=None, repr=False)
    _since_batches: int = field(default=0, repr=False)

    @property
    def batches_done(self) -> int:
        """Training batches done in all epochs so far (a resumed run counts its kept epochs)."""
        return (max(self.epoch, 1) - 1) * self.steps + min(self.step, self.steps)

    @property
    def fraction(self) -> float:
        """The share of all training batches done, in [0, 1].

        1 only for a run that is `done`: a cancelled, failed or interrupted run shows
        the share it trained, so that "2/4 epochs" never reads as 100%.
        """
        if self.status == "done":
            return 1.0
        if not self.epochs or not self.steps:
            return 0.0
        return max(0.0, min(1.0, self.batches_done / (self.epochs * self.steps)))

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the measured rate (validation included, as it was measured)."""
        if self.status != TRAINING or not self.rate or not self.epochs or not self.steps:
            return None
        return max(0, self.epochs * self.steps - self.batches_done) / self.rate

    def measure(self, now: float) -> None:
        """Update `rate` from the batches done since the first report (called per report)."""
        if self._since is None:
            self._since, self._since_batches = now, self.batches_done
        elif now > self._since and self.batches_done > self._since_batches:
            self.rate = (self.batches_done - self._since_batches) / (now - self._since)


def floats_only(logs: Mapping[str, Any]) -> dict[str, float]:
    """The logs that are numbers, as Python floats (JSON-ready); the others are left out."""
    values = {}
    for key, value in logs.items():
        try:
            values[str(key)] = float(value)
        except (TypeError, ValueError):
            continue
    return values


class ProgressBoard:
    """The latest `Progress` of every run, fed by progress messages, read by the app.

    A message is `(kind, payload)`, the `ProgressCallback` events as plain
    data (so that they cross from a training process): `run_start` {epochs,
    steps, device, precision, params, history}, `epoch_begin` {epoch,
    epochs}, `batch_end` {step, steps, logs}, `epoch_end` {epoch, logs} and
    `run_end` {status}.

    `version` counts the messages recorded: a view that remembers it knows,
    without reading anything else, whether any run moved since it last looked.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: dict[str, Progress] = {}
        self._version = 0

    @property
    def version(self) -> int:
        """How many messages the board has recorded (it only grows)."""
        return self._version

    def callback(self, run_id: str) -> ProgressCallback:
        """A `ProgressCallback` (for a run trained in this process) that reports here."""
        self.apply(run_id, "queued", {})
        return MessageCallback(lambda kind, payload: self.apply(run_id, kind, payload))

    def apply(self, run_id: str, kind: str, payload: Mapping[str, Any]) -> None:
        """Record one progress message of run `run_id`."""
        with self._lock:
            progress = self._runs.setdefault(run_id, Progress(run_id))
            if kind == "run_start":
                progress.epochs, progress.steps = payload["epochs"], payload["steps"]
                progress.device, progress.precision = payload["device"], payload["precision"]
                progress.params = payload["params"]
                progress.history = [dict(logs) for logs in payload["history"]]
                progress.status = TRAINING
                progress.rate, progress._since = None, None  # measured afresh (a resume)
            elif kind == "epoch_begin":
                progress.epoch, progress.epochs, progress.step = (
                    payload["epoch"],
                    payload["epochs"],
                    0,
                )
            elif kind == "batch_end":
                progress.step, progress.steps = payload["step"], payload["steps"]
                progress.logs = dict(payload["logs"])
                progress.measure(time.time())
            elif kind == "epoch_end":
                progress.epoch, progress.step = payload["epoch"], progress.steps
                progress.history.append(dict(payload["logs"]))
            elif kind in ("run_end", "status"):
                progress.status = payload["status"]
            progress.updated = time.time()
            self._version += 1

    def get(self, run_id: str) -> Progress | None:
        """A copy of the run's progress, or None if it never reported."""
        with self._lock:
            progress = self._runs.get(run_id)
            return copy.deepcopy(progress) if progress is not None else None


class MessageCallback(ProgressCallback):
    """Turns `ProgressCallback` events into `(kind, payload)` messages for `send`.

    Batches are reported at most every `BATCH_REPORT_S` seconds (and always the
    last of an epoch), so that a fast model does not flood the app.
    """

    def __init__(self, send: Callable[[str, dict[str, Any]], None]) -> None:
        self.send = send
        self._last_batch = 0.0

    def on_run_start(self, record: Any, epochs: int, steps: int) -> None:
        self.send(
            "run_start",
            {
                "epochs": epochs,
                "steps": steps,
                "device": record.device,
                "precision": record.precision,
                "params": record.params,
                "history": [floats_only(row.metrics) for row in record.history],
            },
        )

    def on_epoch_begin(self, epoch: int, epochs: int) -> None:
        self.send("epoch_begin", {"epoch": epoch, "epochs": epochs})

    def on_batch_end(self, step: int, steps: int, logs: Mapping[str, float]) -> None:
        now = time.monotonic()
        if step < steps and now - self._last_batch < BATCH_REPORT_S:
            return
        self._last_batch = now
        self.send("batch_end", {"step": step, "steps": steps, "logs": floats_only(logs)})

    def on_epoch_end(self, epoch: int, logs: Mapping[str, float]) -> None:
        self.send("epoch_end", {"epoch": epoch, "logs": floats_only(logs)})

    def on_run_end(self, record: Any) -> None:
        self.send("run_end", {"status": record.status})
