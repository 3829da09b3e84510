"""Which device a run trains on, in which precision, with which distribution.

- `detect()` asks the current Keras backend for GPUs (TensorFlow:
  `tf.config.list_physical_devices`, JAX: `jax.devices()`, PyTorch:
  `torch.cuda`) and names the first, or reports the CPU.
- `resolve_precision("auto", device)` is `"mixed_float16"` on a GPU (float16
  compute, float32 variables, loss scaling; Micikevicius et al. 2018) and
  `"float32"` on the CPU, where float16 is slow (`keras_globals.dtype_policy()` sets
  it for the length of a run).
- `distribution_strategy("mirrored")` is a `tf.distribute.MirroredStrategy`
  over every local GPU, or over every logical CPU when there is no GPU: each
  replica takes a slice of the batch and the gradients are summed across
  replicas before each update (synchronous data parallelism). TensorFlow
  backend only.
- `select_backend(spec)` makes a spec's `train.backend` the Keras backend of
  this process, before Keras is imported (Keras fixes its backend at its
  first import, from `KERAS_BACKEND`); `backend_environment` is the same for
  a child process (the app's training processes, Ray workers), and
  `check_backend` refuses a run whose process runs another backend.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from dataclasses import dataclass
from typing import Any

from builder_ui.extras import missing_extra
from builder_ui.specs import SpecError

PRECISIONS = ("auto", "float32", "mixed_float16", "mixed_bfloat16")
DISTRIBUTIONS = (None, "mirrored")
BACKENDS = ("tensorflow", "jax", "torch")


class DeviceError(SpecError):
    """A device setting the current backend or machine cannot honour: a `SpecError` whose
    one problem is at `field`, so every caller reports it as it reports any bad field.

    Attributes:
        field: The spec field at fault, e.g. `"train.distribution"`.
        message: What is wrong with it.
    """

    def __init__(self, field: str, message: str):
        self.field = field
        self.message = message
        super().__init__(message, path=field)


@dataclass(frozen=True)
class DeviceInfo:
    """The accelerator a run uses.

    Attributes:
        backend: The Keras backend ("tensorflow", "jax", "torch").
        kind: "GPU" or "CPU".
        name: The GPU's name (e.g. "NVIDIA H200"), or "CPU".
        count: Number of GPUs the backend sees (0 on the CPU).
    """

    backend: str
    kind: str
    name: str
    count: int = 0

    @property
    def is_gpu(self) -> bool:
        return self.kind == "GPU"


def current_backend() -> str:
    # Keras loads on first use, not on import (specs and the app start without it).
    import keras

    return keras.backend.backend()


def detect(backend: str | None = None) -> DeviceInfo:
    """The device the current backend trains on: its first GPU, or the CPU."""
    backend = backend or current_backend()
    if backend == "tensorflow":
        # Only the backend in use is imported.
        import tensorflow as tf

        gpus = tf.config.list_physical_devices("GPU")
        if gpus:
            details = tf.config.experimental.get_device_details(gpus[0])
            return DeviceInfo(backend, "GPU", details.get("device_name") or "GPU", len(gpus))
    elif backend == "jax":
        # Only the backend in use is imported.
        import jax

        gpus = [d for d in jax.devices() if d.platform in ("gpu", "cuda", "rocm")]
        if gpus:
            return DeviceInfo(backend, "GPU", gpus[0].device_kind or "GPU", len(gpus))
    elif backend == "torch":
        # Only the backend in use is imported.
        import torch

        if torch.cuda.is_available():
            return DeviceInfo(
                backend, "GPU", torch.cuda.get_device_name(0), torch.cuda.device_count()
            )
    return DeviceInfo(backend, "CPU", "CPU", 0)


def resolve_precision(mode: str | None, device: DeviceInfo) -> str:
    """The Keras dtype policy name for `mode`: "auto" is mixed_float16 on GPU, float32 on CPU."""
    mode = mode or "auto"
    if mode not in PRECISIONS:
        raise DeviceError(
            "train.mixed_precision", f"expected one of {list(PRECISIONS)}, got {mode!r}"
        )
    if mode == "auto":
        return "mixed_float16" if device.is_gpu else "float32"
    return mode


def check_distribution(distribution: str | None, backend: str | None = None) -> None:
    """Raise a `DeviceError` naming `train.distribution` if it cannot run on this backend."""
    if distribution not in DISTRIBUTIONS:
        raise DeviceError(
            "train.distribution", f"expected one of {list(DISTRIBUTIONS)}, got {distribution!r}"
        )
    backend = backend or current_backend()
    if distribution == "mirrored" and backend != "tensorflow":
        raise DeviceError(
            "train.distribution",
            "'mirrored' uses tf.distribute.MirroredStrategy and needs the TensorFlow backend, "
            f"but the Keras backend is {backend!r}; set KERAS_BACKEND=tensorflow or remove "
            "`distribution`",
        )


def check_precision(mode: str | None, device: DeviceInfo) -> None:
    """Raise a `DeviceError` naming `train.mixed_precision` if `device` cannot run it.

    `mixed_float16` on JAX without a GPU: XLA's CPU `dot_general` has no
    float16 × float16 → float32 form (`The precision 'F16_F16_F32' is not
    supported by dot_general on CPU`), which the attention einsums of
    `keras.layers.MultiHeadAttention` and keras_seq's Transformer blocks ask
    for, so the run would fail after its first compiled step. Refused for
    every model on that pairing (float16 brings no speed on a CPU anyway).
    """
    mode = resolve_precision(mode, device)
    if mode == "mixed_float16" and device.backend == "jax" and not device.is_gpu:
        raise DeviceError(
            "train.mixed_precision",
            "'mixed_float16' needs a GPU on the JAX backend (XLA's CPU dot_general has no "
            "float16 form, so attention fails); use 'mixed_bfloat16', 'float32' or 'auto'",
        )


def wanted_backend(train: Any) -> str | None:
    """The backend a spec's `train` section asks for, or None (`auto`: this process's)."""
    backend = getattr(train, "backend", "auto")
    return None if backend == "auto" else backend


def loaded_backend() -> str | None:
    """The Keras backend of this process if Keras is imported, else None (not chosen yet)."""
    keras = sys.modules.get("keras")
    return None if keras is None else keras.backend.backend()


def select_backend(train: Any) -> None:
    """Make `train.backend` this process's Keras backend, before Keras is imported.

    `auto` leaves `KERAS_BACKEND` as it is. Raises a `DeviceError` naming
    `train.backend` when Keras is already loaded on another backend.
    """
    wanted = wanted_backend(train)
    if wanted is None:
        return
    loaded = loaded_backend()
    if loaded is None:
        os.environ["KERAS_BACKEND"] = wanted
    else:
        check_backend(train, loaded)


def backend_environment(train: Any) -> dict[str, str]:
    """Environment variables that give a child process `train.backend` (empty for `auto`)."""
    wanted = wanted_backend(train)
    return {} if wanted is None else {"KERAS_BACKEND": wanted}


def check_backend(train: Any, backend: str | None = None) -> None:
    """Raise a `DeviceError` naming `train.backend` if this process runs another backend."""
    wanted = wanted_backend(train)
    backend = backend or current_backend()
    if wanted is not None and wanted != backend:
        raise DeviceError(
            "train.backend",
            f"{wanted!r} asked, but this process already runs Keras on {backend!r} (Keras "
            "fixes its backend when it is first imported); run it from `keras-seq train`, "
            f"the app or a sweep, which start it on {wanted!r}, or set KERAS_BACKEND={wanted} "
            "before importing Keras",
        )


def check_setup(train: Any, backend: str | None = None) -> None:
    """Check a spec's `train` section against this machine: distribution and precision on
    the backend it asks for (`train.backend`, installed here), else on `backend`.

    Whether this process runs that backend is `check_backend`'s question, asked when the
    run starts: a sweep's driver checks trials that its workers train on their backend.
    """
    wanted = wanted_backend(train)
    if wanted is not None and importlib.util.find_spec(wanted) is None:
        installed = [name for name in BACKENDS if importlib.util.find_spec(name) is not None]
        problem = f"{wanted!r} is not installed here (use 'auto' or one of {installed})"
        # JAX and PyTorch are the extras of the same names; TensorFlow is a base dependency.
        if wanted in ("jax", "torch"):
            raise DeviceError("train.backend", missing_extra(problem, wanted))
        raise DeviceError("train.backend", f"{problem}: pip install {wanted}")
    backend = wanted or backend or current_backend()
    check_distribution(train.distribution, backend)
    check_precision(train.mixed_precision, detect(backend))


def mirrored_devices() -> list[str]:
    """Every local GPU, or every logical CPU when there is none (TensorFlow names)."""
    # Only the backend in use is imported.
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    devices = gpus or tf.config.list_logical_devices("CPU")
    return [device.name for device in devices]


def distribution_strategy(distribution: str | None, backend: str | None = None) -> Any:
    """The `tf.distribute.Strategy` for `distribution`, or None to train on one device."""
    check_distribution(distribution, backend)
    if distribution is None:
        return None
    # Only the backend in use is imported.
    import tensorflow as tf

    return tf.distribute.MirroredStrategy(devices=mirrored_devices())


def strategy_scope(strategy: Any) -> contextlib.AbstractContextManager:
    """`strategy.scope()`, or a scope that does nothing when `strategy` is None."""
    return strategy.scope() if strategy is not None else contextlib.nullcontext()


def describe(device: DeviceInfo, strategy: Any = None) -> str:
    """The device as recorded on a run: "NVIDIA H200", "CPU", or "CPU x2 (mirrored)"."""
    if strategy is None:
        return device.name
    return f"{device.name} x{strategy.num_replicas_in_sync} (mirrored)"
