"""A runner for the training queue that does not train: real runs in the real store, at once.

`QuickRunner` is called as the queue calls `engine.run` (`JobQueue(runner=…)`,
`AppContext(runner=…)`) and does to the store and the progress callbacks what the engine
does, without Keras: it claims the run (`queued`, or `interrupted` with `resume`), marks it
running on the CPU, reports every batch and epoch, records each epoch in the store, stops
after a batch once `cancel` or `interrupt` is set, asks `prune` after each recorded epoch,
and ends the run with the engine's statuses and messages (`done` with final metrics,
`cancelled`, `interrupted` resumable from its recorded epochs, `pruned`, `failed` naming the
error). For the tests of the queue, the app and searches, whose subject is what happens
around the training step; what the engine itself does is tested on real training
(tests/builder_ui/engine/test_train*.py, test_stopping.py).

Each epoch's metrics are a function of the spec, so searches have something to choose and
prune by: a run learns best at a learning rate of 0.03 and with more units, and better each
epoch (`val_accuracy` up, `val_loss` down), as the tiny classifiers of these tests do. A
classifier's logs are named as the engine names them (`loss`, `accuracy`, their `val_`).
"""

from __future__ import annotations

import math
import os
import time
from typing import Any

from builder_ui.builders import load_spec
from builder_ui.engine.store import RunStore

HOLD_S = 120  # a hang guard for a held run


def quality(spec: Any, epoch: int) -> float:
    """How well a run of `spec` has learned after `epoch` epochs, in (0, 1)."""
    rate = 1 / (1 + abs(math.log10(spec.train.learning_rate / 0.03)))
    encoder = getattr(spec.model, "encoder", None)
    units = getattr(encoder, "units", None) or getattr(spec.model, "units", None) or 8
    return rate * units / (units + 2) * (1 - 0.5**epoch)


def epoch_logs(spec: Any, epoch: int) -> dict[str, float]:
    """The logs of epoch `epoch` (1-based) of a run of `spec`, named as Keras names them."""
    q = quality(spec, epoch)
    return {
        "accuracy": 0.5 + 0.48 * q,
        "loss": 0.7 - 0.6 * q,
        "val_accuracy": 0.5 + 0.45 * q,
        "val_loss": 0.72 - 0.6 * q,
    }


class QuickRunner:
    """`engine.run` for the queue, without training (see the module docstring).

    Args:
        pace_s: Seconds each batch takes (so that a run is seen running).
        hold_after: After recording this many epochs of a run, wait until it is cancelled
            or interrupted (the queue closing) before going on; None: never wait. A test
            that stops a run mid-way holds it there rather than racing its end.
    """

    def __init__(self, *, pace_s: float = 0.002, hold_after: int | None = None) -> None:
        self.pace_s = pace_s
        self.hold_after = hold_after

    def __call__(
        self,
        spec: Any = None,
        *,
        store: RunStore,
        run_id: str,
        callbacks=(),
        cancel: Any = None,
        interrupt: Any = None,
        resume: bool = False,
        prune: Any = None,
    ):
        record = store.get(run_id, history=False)
        wanted = "interrupted" if resume else "queued"
        if record.status != wanted:
            raise ValueError(f"Run {run_id!r} is {record.status!r}, expected {wanted!r}.")
        spec = load_spec(record.spec if spec is None else spec)
        backend = spec.train.backend
        if backend == "auto":
            backend = os.environ.get("KERAS_BACKEND", "tensorflow")
        store.set_status(run_id, "running", backend=backend, device="CPU", precision="float32")
        store.update(run_id, params=100)
        started = time.perf_counter()

        def stopped() -> bool:
            return any(event is not None and event.is_set() for event in (cancel, interrupt))

        task = spec.task
        steps = max(1, math.ceil(0.8 * getattr(task, "n", 120) / spec.train.batch_size))
        epochs = spec.train.epochs
        first = len(store.history(run_id)) + 1
        record = store.get(run_id)
        for callback in callbacks:
            callback.on_run_start(record, epochs, steps)
        status, error, metrics = "done", None, None
        epoch = first
        try:
            for epoch in range(first, epochs + 1):
                for callback in callbacks:
                    callback.on_epoch_begin(epoch, epochs)
                logs = epoch_logs(spec, epoch)
                for step in range(1, steps + 1):
                    time.sleep(self.pace_s)
                    train_logs = {"accuracy": logs["accuracy"], "loss": logs["loss"]}
                    for callback in callbacks:
                        callback.on_batch_end(step, steps, train_logs)
                    if stopped():
                        break
                if stopped():
                    break
                store.append_epoch(run_id, epoch, logs, seconds=self.pace_s * steps)
                for callback in callbacks:
                    callback.on_epoch_end(epoch, logs)
                if prune is not None and prune(epoch, dict(logs)):
                    status = "pruned"
                    metrics = {k.removeprefix("val_"): v for k, v in logs.items() if "val_" in k}
                    error = (
                        f"Pruned by the sweep's scheduler after epoch {epoch} (a weak trial); "
                        "its epochs are kept, no model was saved."
                    )
                    break
                if self.hold_after is not None and epoch == self.hold_after and epoch < epochs:
                    deadline = time.monotonic() + HOLD_S
                    while not stopped() and time.monotonic() < deadline:
                        time.sleep(0.01)
            if status == "done" and cancel is not None and cancel.is_set():
                status, error = "cancelled", "Cancelled; no model was saved."
            elif status == "done" and interrupt is not None and interrupt.is_set():
                kept = len(store.history(run_id))
                status = "interrupted"
                error = (
                    f"Stopped during epoch {epoch} (the app stopped); its {kept} finished "
                    f"epochs and checkpoint are kept: resume it to continue from epoch "
                    f"{kept + 1}."
                )
            elif status == "done":
                last = epoch_logs(spec, epochs)
                metrics = {"loss": last["val_loss"], "accuracy": last["val_accuracy"]}
        except Exception as failure:  # as the engine records a failed run
            status, error, metrics = "failed", f"{type(failure).__name__}: {failure}", None
        seconds = time.perf_counter() - started
        record = store.finish(run_id, status, metrics=metrics, error=error, wall_time=seconds)
        for callback in callbacks:
            callback.on_run_end(record)
        return record
