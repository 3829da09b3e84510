"""The experiment engine: train one spec with `model.fit` and record it in a run store.

    spec ─▶ prepare (every check; nothing written on a SpecError)
         ─▶ run record (running: pid, backend, device, precision)
         ─▶ build (seeded, dtype policy, distribution strategy scope)
         ─▶ model.fit (each epoch recorded as it ends) ─▶ final metrics ─▶ model.keras

The final metrics are the model builder's (`Prepared.evaluate`): the compiled
loss and metrics on the validation split are those `fit` computed after its
last epoch (not evaluated a second time), plus what the builder adds (BLEU and
exact match for seq2seq, pointer accuracy for pointer networks).

`model.fit` runs with these callbacks, in this order:

1. `keras.callbacks.BackupAndRestore` into `<run>/backup/`: the weights,
   optimiser state and epoch after every finished epoch, so that `run(...,
   run_id=ID, resume=True)` on an `interrupted` run (a killed or stopped
   process) continues from the last finished epoch and keeps the epochs
   already recorded. The checkpoint is kept until the final model and record
   are written (a kill while saving the model resumes without training
   again). On resume it is checked against the run's recorded epochs; one that
   does not fit (unreadable, or an epoch the store never recorded) is reported
   in `<run>/checkpoint.log` and in the log, the previous checkpoint is tried,
   and if none fits the backup is moved aside (`backup.bad-*`, never deleted)
   and training restarts at epoch 1;
2. a recorder that writes each finished epoch to the store (after its
   checkpoint, so that every recorded epoch can be resumed from); with a
   `train.schedule` other than `constant`, each epoch's row also holds
   `learning_rate`, the rate of the epoch's last update (the schedule at
   `optimizer.iterations − 1`), so that the charts draw the schedule;
3. `keras.callbacks.TerminateOnNaN` (a subclass that notes the batch): a
   non-finite loss stops training (after that batch; at the end of its epoch
   when Keras runs the check off the training thread, on JAX or PyTorch) and
   the run ends `diverged`, with no model saved;
4. `keras.callbacks.EarlyStopping` when `train.early_stopping` is set;
5. `keras.callbacks.TensorBoard` into `<run>/tensorboard/` when
   `train.tensorboard` is true;
6. the progress callbacks given (`builder_ui.engine.progress.ProgressCallback`), then
   any Keras callbacks given;
7. when `cancel` or `interrupt` is given, a check that stops training after
   the current batch once one is set (last, so that a callback of this batch
   can set it): `cancel` ends the run `cancelled`, `interrupt` (the app
   stopping) ends it `interrupted` with its checkpoint, resumable;
8. when `prune` is given (a sweep's scheduler, `builder_ui.engine.search`), a
   check after each recorded epoch: `prune(epoch, logs)` true stops training
   there and the run ends `pruned`, its epochs kept, no model saved.

The free space is checked before the run (room for two checkpoints and the
model), before each checkpoint and before the model is written, against what the
model's variables and optimiser state take: HDF5 crashed the process on a full
disk. Too little (`OutOfSpaceError`), or a write that finds the disk full, ends
the run `interrupted` with its epochs and checkpoint, to be resumed once there
is room.

Runs in one process take turns (a lock): the dtype policy and the random
seeds are global to the process. Run trials in parallel in separate processes
(e.g. the Ray executor).
"""

from __future__ import annotations

import errno
import importlib.util
import json
import logging
import shutil
import threading
import time
import traceback
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import keras

from builder_ui.builders import load_spec, memory
from builder_ui.builders.prepared import prepare
from builder_ui.engine import callbacks, devices, interrupts, keras_globals
from builder_ui.engine.artifacts import (
    BACKUP_DIR,
    CHECKPOINT_LOG,
    MODEL_FILE,
    TENSORBOARD_DIR,
    TRACEBACK_FILE,
    VOCABULARIES_FILE,
    ArtifactError,
    confine,
)
from builder_ui.engine.disk_space import (
    OutOfSpaceError,
    bytes_under,
    check_space,
    checkpoint_bytes,
)
from builder_ui.engine.progress import ProgressCallback
from builder_ui.engine.records import RunRecord
from builder_ui.engine.store import RunStore, StoreFullError
from builder_ui.extras import missing_extra
from builder_ui.specs import SpecError

CHECKPOINT_LOG_BYTES = 64 * 1024  # what a new note keeps of the log before it

_logger = logging.getLogger(__name__)

# The dtype policy and the seeds are process-wide, so runs in one process take turns.
_RUN_LOCK = threading.Lock()


def artifact_dir(store: RunStore, run_id: str) -> Path:
    """The directory of a run's files: `<store directory>/<run_id>/`."""
    return store.artifact_dir(run_id)


def _num_examples(data: Any) -> int:
    """The number of examples in `fit`'s `x`: an array, or a dict/list of arrays."""
    if isinstance(data, dict):
        data = next(iter(data.values()))
    elif isinstance(data, (list, tuple)):
        data = data[0]
    return len(data)


def _out_of_space(error: BaseException) -> bool:
    """Whether `error` says a disk is full: ours, SQLite's, or an `ENOSPC` from a write."""
    return isinstance(error, StoreFullError) or (
        isinstance(error, OSError) and error.errno == errno.ENOSPC
    )


def _interrupt_out_of_space(store, run_id, error, wall_time) -> RunRecord:
    """End the run `interrupted` (its checkpoint kept), saying what needed space and where."""
    kept = _recorded_epochs(store, run_id)
    if isinstance(error, (OutOfSpaceError, StoreFullError)):  # they name the path
        problem = str(error)
        problem = problem[0].upper() + problem[1:]
    else:
        problem = f"No space left: {error}"
    if kept:
        problem += f"; its {kept} finished epochs and checkpoint are kept"
    return store.finish(
        run_id,
        "interrupted",
        error=f"{problem}: free some space, then resume it to continue from epoch {kept + 1}.",
        wall_time=wall_time,
    )


def _note(store: RunStore, run_id: str, message: str) -> None:
    """Tell a checkpoint problem: a warning in the log and a line in `<run>/checkpoint.log`.

    The lines already there are kept, the last `CHECKPOINT_LOG_BYTES` of them, when the log
    is a file inside the run's folder (`artifacts.confine`); one that leads out of it (a
    symbolic link a damaged or hostile store holds) is not read but replaced.
    """
    line = f"{time.strftime('%Y-%m-%d %H:%M:%S')} run {run_id}: checkpoint: {message}.\n"
    _logger.warning("Run %s: checkpoint: %s.", run_id, message)
    text = ""
    try:
        previous = confine(store, run_id, f"{run_id}/{CHECKPOINT_LOG}", field=CHECKPOINT_LOG)
        if previous.is_file():
            with previous.open("rb") as log:
                log.seek(max(0, previous.stat().st_size - CHECKPOINT_LOG_BYTES))
                text = log.read(CHECKPOINT_LOG_BYTES).decode("utf-8", errors="replace")
    except (ArtifactError, OSError) as error:
        _logger.warning("Run %s: %s; it is started anew.", run_id, error)
    with store.atomic_artifact(run_id, CHECKPOINT_LOG) as path:
        path.write_text(text + line, encoding="utf-8")


def save_vocabularies(store: RunStore, run_id: str, task: Any) -> None:
    """Write the task's vocabularies as the artifact `vocabularies.json`, if it has any.

    With them go what reading text needs besides (the input and target specs,
    the task's name, description and params, e.g. class names), so that the
    run is read the way it was trained even after its data file moved or
    changed. Written atomically (temporary name, then rename).
    """
    source = getattr(task, "source_vocabulary", None)
    target = getattr(task, "target_vocabulary", None)
    if source is None and target is None:
        return
    document = {
        "format": 1,
        "task": task.name,
        "description": task.description,
        "params": task.params,
        "inputs": task.inputs.to_dict(),
        "targets": task.targets.to_dict(),
        "source_vocabulary": None if source is None else source.get_config(),
        "target_vocabulary": None if target is None else target.get_config(),
    }
    text = json.dumps(document, ensure_ascii=False, default=str)  # default: params like paths
    with store.atomic_artifact(run_id, VOCABULARIES_FILE) as path:
        path.write_text(text, encoding="utf-8")


def _remove_temporaries(directory: Path) -> None:
    """Remove the half-written artifacts (`.NAME.tmp-*`) a killed process left in a run's folder."""
    for leftover in directory.glob(".*.tmp-*"):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)


def _recorded_epochs(store: RunStore, run_id: str) -> int:
    """How many epochs the store holds for the run, counting 1, 2, … up to the first gap."""
    count = 0
    for row in store.history(run_id):
        if row.epoch != count + 1:
            break
        count += 1
    return count


def _split_callbacks(callbacks: Iterable[Any]) -> tuple[list[Any], list[Any]]:
    """Separate Keras callbacks from `ProgressCallback`-like objects."""
    keras_callbacks, progress = [], []
    for callback in callbacks:
        if isinstance(callback, keras.callbacks.Callback):
            keras_callbacks.append(callback)
        elif isinstance(callback, ProgressCallback) or hasattr(callback, "on_epoch_end"):
            progress.append(callback)
        else:
            raise ValueError(
                "Received an invalid value for argument `callbacks`, expected "
                "builder_ui.engine.progress.ProgressCallback or keras.callbacks.Callback objects, "
                f"got {callback!r}."
            )
    return keras_callbacks, progress


def _claim(store: RunStore, run_id: str, resume: bool) -> RunRecord:
    """The existing run `run_id`, checked to be startable (queued) or resumable (interrupted)."""
    record = store.get(run_id, history=False)
    if record.status == "running":
        store.recover_interrupted()
        record = store.get(run_id, history=False)
    wanted = "interrupted" if resume else "queued"
    if record.status != wanted:
        hint = (
            "; only an interrupted run can be resumed"
            if resume
            else ("; pass resume=True to continue it" if record.status == "interrupted" else "")
        )
        raise ValueError(f"Run {run_id!r} is {record.status!r}, expected {wanted!r}{hint}.")
    return record


def preflight(spec: Any) -> Any:
    """Everything `run` checks before it writes to the store; returns the `Prepared` spec.

    The spec's fields and the model against the task (`registry.prepare`,
    which makes the data), the distribution and precision against the backend and device, and
    the `tensorboard` package when TensorBoard logs are asked for, and the
    model's memory estimate against the budget (`memory.check_budget`:
    counted from the fields, before any weight exists; training, and for a
    translator the decoding that scores it). A sweep can check
    all its trials this way before it queues any.

    Raises:
        SpecError: naming the field at fault (for the memory, the field that
            drives the estimate).
    """
    spec = load_spec(spec)
    devices.check_setup(spec.train, keras.backend.backend())
    if spec.train.tensorboard and importlib.util.find_spec("tensorboard") is None:
        raise SpecError(
            missing_extra("true needs `tensorboard` (or set it to false)", "tensorboard"),
            path="train.tensorboard",
        )
    prepared = prepare(spec)
    memory.check_budget(prepared.spec, prepared.builder, prepared.task)
    return prepared


def run(
    spec: Any = None,
    *,
    store: RunStore,
    callbacks: Sequence[Any] = (),
    run_id: str | None = None,
    resume: bool = False,
    cancel: Any = None,
    interrupt: Any = None,
    prune: Any = None,
) -> RunRecord:
    """Train `spec`, record the run in `store`, and return its final record.

    Args:
        spec: An `ExperimentSpec`, or what `builder_ui.builders.load_spec` reads
            (a path, YAML/JSON text, a dict). May be None when `run_id` is
            given: the run's stored spec is used.
        store: The `RunStore` to record the run in.
        callbacks: `builder_ui.engine.progress.ProgressCallback`s (progress reports)
            and/or `keras.callbacks.Callback`s (passed to `fit`).
        run_id: Start this `queued` run (created by a sweep) instead of a new
            one; with `resume=True`, continue this `interrupted` run.
        resume: Continue an interrupted run from its last finished epoch.
        cancel: A `threading.Event` (anything with `is_set()`): when set,
            training stops after the current batch and the run ends `cancelled`.
        interrupt: Like `cancel`, but the run ends `interrupted`, keeping its
            finished epochs and checkpoint, to be resumed (the app sets it
            when it stops).
        prune: `prune(epoch, logs) -> bool`, called after each recorded epoch
            (1-based, the epoch's logs): true stops training there and the
            run ends `pruned` (a sweep's scheduler).

    Returns:
        The final `RunRecord`, whose `status` is `done`, `diverged`,
        `cancelled`, `interrupted` (when `interrupt` was set), `pruned` (when
        `prune` said so) or `failed`
        (with `error` set, and the traceback in the artifact `traceback.txt`).

    Raises:
        SpecError: The spec is invalid or does not fit the task; for a new
            run nothing is written to the store (a queued run is marked
            `failed`).
        ValueError: `run_id` names a run that cannot be started or resumed.
        KeyboardInterrupt: Re-raised after marking the run `interrupted`
            (resumable).
    """
    if resume and run_id is None:
        raise ValueError(
            "Received an invalid value for argument `run_id`, expected the id of an interrupted "
            "run to resume, got None."
        )
    existing = _claim(store, run_id, resume) if run_id is not None else None
    spec_given = spec is not None
    if spec is None:
        if existing is None:
            raise ValueError(
                "Received an invalid value for argument `spec`, expected an experiment spec "
                "(or a `run_id` whose stored spec to use), got None."
            )
        spec = existing.spec
    keras_callbacks, progress = _split_callbacks(callbacks)

    with _RUN_LOCK, interrupts.remembered():
        backend = keras.backend.backend()
        try:
            spec = load_spec(spec)
            devices.check_backend(spec.train, backend)
            # The stored spec read again, so fields added since it was stored (with their
            # defaults) do not count as a difference.
            if (
                existing is not None
                and spec_given
                and spec.to_dict() != load_spec(existing.spec).to_dict()
            ):
                raise SpecError(
                    f"the spec given differs from the one stored with run {run_id!r}; "
                    "pass spec=None to use the stored one"
                )
            prepared = preflight(spec)
        except SpecError as error:
            if existing is not None and not resume:
                store.finish(existing.id, "failed", error=f"SpecError: {error}")
            raise

        device = devices.detect(backend)
        precision = devices.resolve_precision(spec.train.mixed_precision, device)
        strategy = devices.distribution_strategy(spec.train.distribution, backend)
        info = {
            "backend": backend,
            "device": devices.describe(device, strategy),
            "precision": precision,
        }
        if existing is None:
            run_id = store.create_run(spec)
        store.set_status(run_id, "running", **info)
        if resume:
            _remove_temporaries(store.artifact_dir(run_id))
        return _train(
            store,
            run_id,
            prepared,
            strategy,
            precision,
            keras_callbacks,
            progress,
            (cancel, interrupt),
            prune,
        )


def _train(store, run_id, prepared, strategy, precision, keras_callbacks, progress, stops, prune):
    """Build, fit, evaluate and save; every outcome ends in a final (or interrupted) status.

    `stops` is `(cancel, interrupt)`, either None or an event (see `run`).
    """
    spec = prepared.spec
    train = spec.train
    directory = store.artifact_dir(run_id)
    directory.mkdir(parents=True, exist_ok=True)
    backup_dir = directory / BACKUP_DIR
    started = time.perf_counter()

    nan_stop = callbacks.NaNStop()
    cancel, interrupt = stops
    recorder = callbacks.RunRecorder(store, run_id, cancel, nan_stop, interrupt)
    record = None
    caller_policy = keras.mixed_precision.dtype_policy()
    try:
        # Drop what earlier runs left in Keras' global state (this resets the dtype policy,
        # so the caller's is put back at the end).
        keras.backend.clear_session(free_memory=False)
        keras_globals.seed_everything(train.seed)
        learning_rate = prepared.learning_rate()  # the optimiser's: a number or a schedule
        if isinstance(learning_rate, keras.optimizers.schedules.LearningRateSchedule):
            recorder.schedule = learning_rate
        with keras_globals.dtype_policy(precision):
            with devices.strategy_scope(strategy):
                model = prepared.build()
                if not model.built:  # BackupAndRestore needs the weights to exist
                    model(keras.tree.map_structure(lambda array: array[:1], prepared.x_train))
            store.update(run_id, params=int(model.count_params()))

            num_train = _num_examples(prepared.x_train)
            steps = prepared.steps_per_epoch
            record = store.get(run_id)
            for callback in progress:
                callback.on_run_start(record, train.epochs, steps)
            # Room for the whole run before its first epoch: two checkpoints, then the model.
            check_space(
                directory,
                3 * checkpoint_bytes(model) - bytes_under(backup_dir),
                "its checkpoints and model",
            )

            # The checkpoint of epoch N is written before the store records epoch N,
            # so a run killed in between resumes from a checkpoint of every recorded epoch.
            backup = callbacks.Backup(
                str(backup_dir),
                recorded=_recorded_epochs(store, run_id),
                epochs=train.epochs,
                cut_short=lambda: recorder.cut_short,
                note=lambda message: _note(store, run_id, message),
            )
            fit_callbacks = [
                backup,
                recorder,
                nan_stop,
            ]
            if train.early_stopping is not None:
                stopping = train.early_stopping
                fit_callbacks.append(
                    keras.callbacks.EarlyStopping(
                        monitor=stopping.monitor or prepared.monitor_metric,
                        patience=stopping.patience,
                        min_delta=stopping.min_delta,
                    )
                )
            if train.tensorboard:
                fit_callbacks.append(
                    keras.callbacks.TensorBoard(log_dir=str(directory / TENSORBOARD_DIR))
                )
                store.set_artifact(run_id, TENSORBOARD_DIR, directory / TENSORBOARD_DIR)
            if progress:
                fit_callbacks.append(callbacks.ProgressBridge(progress, train.epochs, steps))
            fit_callbacks += keras_callbacks
            if cancel is not None or interrupt is not None or interrupts.watching():
                fit_callbacks.append(callbacks.CancelCheck(recorder))
            pruned_at = []
            if prune is not None:
                fit_callbacks.append(callbacks.PruneCheck(recorder, prune, pruned_at))

            fit_seconds = 0.0
            if cancel is not None and cancel.is_set():
                recorder.cancelled = True
            elif interrupt is not None and interrupt.is_set():
                recorder.interrupted = True
            else:
                fit_start = time.perf_counter()
                model.fit(
                    prepared.x_train,
                    prepared.y_train,
                    validation_data=(prepared.x_val, prepared.y_val),
                    epochs=train.epochs,
                    batch_size=train.batch_size,
                    callbacks=fit_callbacks,
                    shuffle=True,
                    verbose=0,
                )
                fit_seconds = time.perf_counter() - fit_start
                interrupts.raise_if_pressed()  # pressed during the last batch, and lost

            examples_per_sec = (
                num_train * recorder.epochs_trained / fit_seconds
                if fit_seconds > 0 and recorder.epochs_trained
                else None
            )
            timing = {"examples_per_sec": examples_per_sec}
            if recorder.diverged_at is not None:
                epoch, batch = recorder.diverged_at
                where = f"epoch {epoch}" + (f", batch {batch}" if batch else "")
                record = store.finish(
                    run_id,
                    "diverged",
                    error=f"The loss became NaN or infinite at {where}; no model was saved.",
                    wall_time=time.perf_counter() - started,
                    **timing,
                )
            elif recorder.cancelled:
                record = store.finish(
                    run_id,
                    "cancelled",
                    error="Cancelled; no model was saved.",
                    wall_time=time.perf_counter() - started,
                    **timing,
                )
            elif pruned_at:
                # Its metrics are where it stood when stopped: the last epoch's validation logs,
                # named as a finished run's (`val_loss` is `loss`: they are validation metrics).
                last = recorder.last_logs or {}
                record = store.finish(
                    run_id,
                    "pruned",
                    metrics={
                        key.removeprefix("val_"): value
                        for key, value in last.items()
                        if key.startswith("val_")
                    },
                    error=f"Pruned by the sweep's scheduler after epoch {pruned_at[0]} (a weak "
                    "trial); its epochs are kept, no model was saved.",
                    wall_time=time.perf_counter() - started,
                    **timing,
                )
            elif recorder.interrupted:
                kept = _recorded_epochs(store, run_id)
                record = store.finish(
                    run_id,
                    "interrupted",
                    error=f"Stopped during epoch {recorder.epoch or 1} (the app stopped); its "
                    f"{kept} finished epochs and checkpoint are kept: resume it to continue "
                    f"from epoch {kept + 1}.",
                    wall_time=time.perf_counter() - started,
                    **timing,
                )
            else:
                # After `fit` ran to its end, the model holds the last recorded epoch's
                # weights, and that epoch's validation logs are the final metrics.
                # (A caller's Keras callback may change the weights when training ends.)
                reuse = fit_seconds > 0 and not keras_callbacks
                metrics = prepared.evaluate(
                    model, validation_logs=recorder.last_logs if reuse else None
                )
                save_vocabularies(store, run_id, prepared.task)
                check_space(directory, checkpoint_bytes(model), f"the model ({MODEL_FILE})")
                with store.atomic_artifact(run_id, MODEL_FILE) as path:
                    model.save(path)
                record = store.finish(
                    run_id,
                    "done",
                    metrics=metrics,
                    wall_time=time.perf_counter() - started,
                    **timing,
                )
        if record.status != "interrupted":  # the model and record are written: no resume needed
            shutil.rmtree(backup_dir, ignore_errors=True)
    except (KeyboardInterrupt, SystemExit) as error:
        # The backup stays: the run can be resumed.
        record = store.finish(
            run_id,
            "interrupted",
            error=f"{type(error).__name__}: interrupted at epoch {recorder.epoch or 1}.",
            wall_time=time.perf_counter() - started,
        )
        raise
    except Exception as error:
        if interrupts.pressed():  # Ctrl-C, turned into another error by the code it hit
            record = store.finish(
                run_id,
                "interrupted",
                error=f"KeyboardInterrupt: interrupted at epoch {recorder.epoch or 1}.",
                wall_time=time.perf_counter() - started,
            )
            raise KeyboardInterrupt from error
        if _out_of_space(error):  # the checkpoint stays: free some space, then resume
            record = _interrupt_out_of_space(store, run_id, error, time.perf_counter() - started)
            return record
        shutil.rmtree(backup_dir, ignore_errors=True)
        with store.atomic_artifact(run_id, TRACEBACK_FILE) as path:
            path.write_text(traceback.format_exc(), encoding="utf-8")
        _logger.warning(
            "Run %s failed: %s: %s (traceback in %s)",
            run_id,
            type(error).__name__,
            error,
            directory / TRACEBACK_FILE,
        )
        record = store.finish(
            run_id,
            "failed",
            error=f"{type(error).__name__}: {error}",
            wall_time=time.perf_counter() - started,
        )
    finally:
        keras.mixed_precision.set_dtype_policy(caller_policy)
        if record is not None and record.status != "running":
            for callback in progress:
                try:
                    callback.on_run_end(record)
                except Exception:  # a broken progress display must not hide the result
                    _logger.exception("Progress callback %r failed in on_run_end", callback)
    return record


__all__ = [
    "BACKUP_DIR",
    "CHECKPOINT_LOG",
    "MODEL_FILE",
    "TENSORBOARD_DIR",
    "TRACEBACK_FILE",
    "VOCABULARIES_FILE",
    "artifact_dir",
    "preflight",
    "run",
    "save_vocabularies",
]
