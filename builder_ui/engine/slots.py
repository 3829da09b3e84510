"""Device slots of the training queue: one per GPU training may use, else the CPU.

A slot is `"CPU"`, or `"GPU:0"`, `"GPU:1"`, …; each slot's training process
sees only its GPU (`CUDA_VISIBLE_DEVICES`). The web server can hide the GPUs
from itself (`keep_gpus_for_training`) so that what it builds never takes GPU
memory from a run. Nothing here imports a framework.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import Any

# The GPUs this process may use, before `keep_gpus_for_training` hid them (unset: all).
_UNSET = object()
_visible_devices: Any = _UNSET


def keep_gpus_for_training() -> None:
    """Hide the GPUs from this process (the web server); the training processes get them.

    Call before TensorFlow, JAX or PyTorch is imported (later it does
    nothing): model summaries and inspections built in this process then run
    on the CPU and never take GPU memory from a run.
    """
    global _visible_devices
    if _visible_devices is not _UNSET:
        return
    if any(name in sys.modules for name in ("tensorflow", "jax", "torch")):
        return
    _visible_devices = os.environ.get("CUDA_VISIBLE_DEVICES")
    os.environ["CUDA_VISIBLE_DEVICES"] = "-1"


def _visible_gpu_ids() -> list[str] | None:
    """The GPUs training may use: ids from `CUDA_VISIBLE_DEVICES`, or None for "all"."""
    visible = (
        os.environ.get("CUDA_VISIBLE_DEVICES") if _visible_devices is _UNSET else _visible_devices
    )
    if visible is None:
        return None
    return [part.strip() for part in visible.split(",") if part.strip() not in ("", "-1")]


def _count_gpus() -> int:
    """NVIDIA GPUs on this machine, from `nvidia-smi -L` (0 without it); no framework import."""
    executable = shutil.which("nvidia-smi")
    if executable is None:
        return 0
    try:
        listing = subprocess.run(
            [executable, "-L"], capture_output=True, text=True, timeout=10, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in listing.splitlines() if line.startswith("GPU "))


def detect_slots() -> list[str]:
    """One slot per GPU training may use (`"GPU:0"`, …), else `["CPU"]`.

    Reads `CUDA_VISIBLE_DEVICES` and `nvidia-smi`, without importing a
    framework; the device each run really used is recorded with the run.
    """
    ids = _visible_gpu_ids()
    count = len(ids) if ids is not None else _count_gpus()
    return [f"GPU:{index}" for index in range(count)] or ["CPU"]


def slot_environment(slot: str, num_slots: int) -> dict[str, str | None]:
    """Environment changes for a slot's training process (None: unset the variable)."""
    env: dict[str, str | None] = {
        "CUDA_VISIBLE_DEVICES": None if _visible_devices is _UNSET else _visible_devices
    }
    if _visible_devices is _UNSET and "CUDA_VISIBLE_DEVICES" in os.environ:
        env["CUDA_VISIBLE_DEVICES"] = os.environ["CUDA_VISIBLE_DEVICES"]
    if num_slots > 1 and slot.startswith("GPU:"):
        index = int(slot.split(":", 1)[1])
        ids = _visible_gpu_ids()
        env["CUDA_VISIBLE_DEVICES"] = ids[index] if ids else str(index)
    return env
