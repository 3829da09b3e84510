"""The Keras callbacks of a training run (`builder_ui.engine.train`), in the order `fit` gets them.

- `Backup`: `keras.callbacks.BackupAndRestore` that checks a checkpoint before resuming;
- `RunRecorder`: each finished epoch into the run store;
- `NaNStop`: `TerminateOnNaN` that notes where the loss diverged;
- `ProgressBridge`: Keras's events to the engine's `ProgressCallback`s;
- `PruneCheck`: a search's scheduler asked after each recorded epoch;
- `CancelCheck`: last, stops `fit` once a cancel or an interrupt is set;
- `TrialStreamer`: a remote trial's epochs to its driver (`engine.remote`).

This module imports Keras, as `train` does: both load once a process has chosen its Keras
backend (`devices.select_backend`).
"""

from __future__ import annotations

import errno
import json
import math
import os
import secrets
import shutil
import threading
import time
from pathlib import Path
from typing import Any

import keras

from builder_ui import files
from builder_ui.engine import interrupts
from builder_ui.engine.disk_space import bytes_under, check_space, checkpoint_bytes


def is_finite(value: Any) -> bool:
    return not isinstance(value, (int, float)) or math.isfinite(value)


class RunRecorder(keras.callbacks.Callback):
    """Writes each finished epoch to the store; remembers the last one's logs.

    Epoch-level only: a callback with batch hooks makes Keras call it after
    every step on the training thread (no asynchronous dispatch). Given the
    optimiser's `schedule` (a `LearningRateSchedule`), it records the rate
    of each epoch's last update as `learning_rate`.
    """

    def __init__(self, store, run_id, cancel, nan_stop, interrupt=None, schedule=None):
        super().__init__()
        self.store = store
        self.run_id = run_id
        self.cancel = cancel
        self.interrupt = interrupt
        self.nan_stop = nan_stop
        self.schedule = schedule
        self.cancelled = False
        self.interrupted = False
        self.epochs_trained = 0
        self.epoch = 0
        self.epoch_start = 0.0
        self.last_logs: dict | None = None

    @property
    def diverged_at(self) -> tuple[int, int] | None:
        return self.nan_stop.diverged_at

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch + 1
        self.epoch_start = time.perf_counter()

    @property
    def cut_short(self) -> bool:
        """Whether training was stopped mid-epoch (cancelled or interrupted)."""
        return self.cancelled or self.interrupted

    def on_epoch_end(self, epoch, logs=None):
        if self.cut_short:
            return  # a cut-short epoch is not a finished one
        logs = dict(logs or {})
        if self.nan_stop.diverged_at is None and not is_finite(logs.get("loss", 0.0)):
            self.nan_stop.diverged_at = (epoch + 1, 0)
        if self.schedule is not None:
            # `iterations` counts the updates applied; the last one used schedule(n − 1).
            last = int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)) - 1
            logs["learning_rate"] = float(keras.ops.convert_to_numpy(self.schedule(last)))
        seconds = time.perf_counter() - self.epoch_start
        self.store.append_epoch(self.run_id, epoch + 1, logs, seconds=seconds)
        self.epochs_trained += 1
        self.last_logs = logs


class NaNStop(keras.callbacks.TerminateOnNaN):
    """`TerminateOnNaN` that notes where the loss first became NaN or infinite.

    Keras may dispatch it off the training thread (`async_safe`: on JAX
    and PyTorch, when no other callback has batch hooks), so that reading
    each batch's loss does not stop the backend from running ahead. It
    then only notes the batch, and stops training when the epoch ends: on
    JAX (Keras 3.15) a callback that stops training mid-epoch from another
    thread makes `fit` read metric arrays that the next step had already
    donated ("Array has been deleted"). Called on the training thread (as
    on TensorFlow, always), it stops after the very batch, as
    `TerminateOnNaN` does.
    """

    async_safe = True

    def __init__(self):
        super().__init__()
        self.epoch = 0
        self.diverged_at: tuple[int, int] | None = None
        self._training_thread = None

    def on_train_begin(self, logs=None):
        self._training_thread = threading.current_thread()

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch + 1

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if self.diverged_at is None and loss is not None and not is_finite(loss):
            self.diverged_at = (self.epoch, batch + 1)
        if threading.current_thread() is self._training_thread:
            super().on_batch_end(batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        # Keras has waited for every batch callback of this epoch by now.
        if self.diverged_at is not None:
            self.model.stop_training = True


class ProgressBridge(keras.callbacks.Callback):
    """Hands Keras' events to `ProgressCallback`s, with 1-based epochs and steps."""

    def __init__(self, progress, epochs, steps):
        super().__init__()
        self.progress = list(progress)
        self.epochs = epochs
        self.steps = steps

    def on_epoch_begin(self, epoch, logs=None):
        for callback in self.progress:
            callback.on_epoch_begin(epoch + 1, self.epochs)

    def on_train_batch_end(self, batch, logs=None):
        logs = dict(logs or {})
        for callback in self.progress:
            callback.on_batch_end(batch + 1, self.steps, logs)

    def on_epoch_end(self, epoch, logs=None):
        logs = dict(logs or {})
        for callback in self.progress:
            callback.on_epoch_end(epoch + 1, logs)


class CancelCheck(keras.callbacks.Callback):
    """Last in the list: stops `fit` after this batch once a cancel or interrupt is set.

    It also raises `KeyboardInterrupt` once Ctrl-C was pressed under
    `interrupts.remembered()`, in case the first one was lost.
    """

    def __init__(self, recorder):
        super().__init__()
        self.recorder = recorder

    def on_train_batch_end(self, batch, logs=None):
        recorder = self.recorder
        interrupts.raise_if_pressed()  # a Ctrl-C whose KeyboardInterrupt was lost
        if recorder.cancel is not None and recorder.cancel.is_set():
            recorder.cancelled = True
        elif recorder.interrupt is not None and recorder.interrupt.is_set():
            recorder.interrupted = True
        if recorder.cut_short:
            self.model.stop_training = True


class Backup(keras.callbacks.BackupAndRestore):
    """`BackupAndRestore` that checks a checkpoint before resuming from it.

    Keras trusts whatever `backup/` holds: garbage weights restart training
    silently, a metadata `epoch` past the end skips training (the run would
    be `done` unfinished), garbage metadata fails the run. Here each
    checkpoint (the latest, then the previous, `.bkp`) is used only if its
    metadata is an epoch from 1 to the epochs the store recorded (the
    checkpoint of epoch N is written before the store records N) and its
    weights load; the model's state is put back after a failed load. When
    neither fits, the backup is moved aside (`backup.bad-*`) and training
    restarts at epoch 1. Each problem is told through `note`.

    The checkpoint is kept when `fit` ends (`delete_checkpoint=False`): the
    engine removes it once the final model and record are written. The
    checkpoint of an epoch cut short (cancel, interrupt) is not written.

    Args:
        backup_dir: `<run>/backup/`.
        recorded: The epochs the store holds for the run (1 to N, in order).
        epochs: The spec's `train.epochs`.
        cut_short: Returns True once training was stopped mid-epoch.
        note: Called with a sentence for each problem found.
    """

    def __init__(self, backup_dir, *, recorded, epochs, cut_short, note):
        super().__init__(backup_dir=backup_dir, double_checkpoint=True, delete_checkpoint=False)
        self.recorded = recorded
        self.epochs = epochs
        self.cut_short = cut_short
        self.note = note

    @property
    def async_safe(self):
        # Saving every epoch, its batch hook does nothing; Keras need not wait for it.
        return self.save_freq == "epoch"

    def on_train_begin(self, logs=None):
        backup = Path(self.backup_dir)
        if not backup.exists():
            if self.recorded:
                self.note(
                    f"no checkpoint in {backup} for the {self.recorded} recorded epochs; "
                    "training restarts at epoch 1"
                )
            return
        model = self.model
        if model.optimizer is not None and not model.optimizer.built:
            model.optimizer.build(model.trainable_variables)  # its state loads with the weights
        state = [*model.variables, *(model.optimizer.variables if model.optimizer else ())]
        initial = [variable.numpy() for variable in state]
        problems = []
        for label, weights, metadata in (
            ("latest", self._weights_path, self._training_metadata_path),
            ("previous", self._prev_weights_path, self._prev_training_metadata_path),
        ):
            try:
                epoch = self._load(Path(weights), Path(metadata))
            except _BadCheckpoint as problem:
                problems.append(f"the {label} checkpoint {problem}")
                for variable, value in zip(state, initial, strict=True):
                    variable.assign(value)
                continue
            model._initial_epoch = epoch
            if problems:
                aside = self._promote_previous(backup)
                self.note(
                    f"{'; '.join(problems)}; training resumes from the {label} checkpoint "
                    f"at epoch {epoch + 1} (the bad one is kept aside in {aside})"
                )
            return
        aside = backup.with_name(f"{backup.name}.bad-{secrets.token_hex(4)}")
        os.replace(backup, aside)
        model._initial_epoch = 0
        self.note(
            f"{'; '.join(problems)}; the backup is kept aside in {aside} and training "
            "restarts at epoch 1"
        )

    def _promote_previous(self, backup: Path) -> Path:
        """Copy the bad latest checkpoint aside, then make the previous one the latest.

        Otherwise the next epoch's save would copy the bad latest over the
        previous, the one good copy.
        """
        aside = backup.with_name(f"{backup.name}.bad-{secrets.token_hex(4)}")
        aside.mkdir()
        for latest, previous in (
            (self._weights_path, self._prev_weights_path),
            (self._training_metadata_path, self._prev_training_metadata_path),
        ):
            if os.path.exists(latest):
                shutil.copy2(latest, aside / Path(latest).name)
            with files.atomic_path(latest) as temporary:
                shutil.copy2(previous, temporary)
        return aside

    def _load(self, weights: Path, metadata: Path) -> int:
        """Load one checkpoint; returns its epoch, or raises `_BadCheckpoint` saying why."""
        if not metadata.exists():
            raise _BadCheckpoint(f"has no metadata ({metadata.name})")
        try:
            data = json.loads(metadata.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as error:
            raise _BadCheckpoint(f"has unreadable metadata ({metadata.name}: {error})") from None
        epoch = data.get("epoch") if isinstance(data, dict) else None
        last = min(self.recorded, self.epochs)
        if isinstance(epoch, bool) or not isinstance(epoch, int) or not 1 <= epoch <= last:
            raise _BadCheckpoint(
                f"says epoch {epoch!r} ({metadata.name}), but the run records {self.recorded} "
                f"finished epochs of {self.epochs}"
            )
        if not weights.exists():
            raise _BadCheckpoint(f"has no weights ({weights.name})")
        # Keras loads only files named `*.weights.h5`; the previous one is `*.h5.bkp`.
        readable = weights.with_name(f".restoring-{secrets.token_hex(4)}.weights.h5")
        try:
            shutil.copyfile(weights, readable)
            self.model.load_weights(str(readable))
        except Exception as error:  # h5py and Keras raise many kinds for a damaged file
            if isinstance(error, OSError) and error.errno == errno.ENOSPC:
                raise  # the disk is full, the checkpoint may be good: the run is interrupted
            raise _BadCheckpoint(
                f"has unreadable weights ({weights.name}: {type(error).__name__}: {error})"
            ) from None
        finally:
            readable.unlink(missing_ok=True)
        return epoch

    def on_epoch_end(self, epoch, logs=None):
        if not self.cut_short():  # an epoch cut short is not a checkpoint to resume from
            backup = Path(self.backup_dir)
            # The latest is copied to the previous, then written again: two at most.
            needed = 2 * checkpoint_bytes(self.model) - bytes_under(backup)
            check_space(backup, needed, f"the checkpoint of epoch {epoch + 1}")
            super().on_epoch_end(epoch, logs)


class PruneCheck(keras.callbacks.Callback):
    """Asks `prune(epoch, logs)` after each epoch the recorder recorded.

    After the recorder in the list: an epoch is recorded before it can end the
    run. When `prune` says yes, the epoch goes into `pruned_at` and `fit` stops.
    """

    def __init__(self, recorder, prune, pruned_at):
        super().__init__()
        self.recorder = recorder
        self.prune = prune
        self.pruned_at = pruned_at

    def on_epoch_end(self, epoch, logs=None):
        recorder = self.recorder
        if recorder.cut_short or recorder.diverged_at is not None:
            return
        if self.prune(epoch + 1, dict(recorder.last_logs or {})):
            self.pruned_at.append(epoch + 1)
            self.model.stop_training = True


class _BadCheckpoint(Exception):
    """A checkpoint in `<run>/backup/` that cannot be resumed from; the message says why."""


class TrialStreamer(keras.callbacks.Callback):
    """A remote trial's messages to its driver (`engine.remote`): `start()` as training begins,
    then `epoch(row)` for each epoch the run store has recorded (`RunRecorder` runs first, so
    the row and its checkpoint are written), once each."""

    def __init__(self, store: Any, run_id: str, start: Any, epoch: Any):
        super().__init__()
        self.store, self.run_id = store, run_id
        self.start, self.epoch = start, epoch
        self.sent = 0

    def on_train_begin(self, logs=None):
        self.start()

    def on_epoch_end(self, epoch, logs=None):
        history = self.store.history(self.run_id)
        if not history or history[-1].epoch <= self.sent:  # the epoch was cut short
            return
        row = history[-1]
        self.sent = row.epoch
        self.epoch(row)
