"""Keras's process-wide state that a run sets: the dtype policy and the random seeds.

- `dtype_policy(name)` sets the global policy (`float32`, `mixed_float16`, ...) for the
  length of a run and restores the previous one after (`devices.resolve_precision` says
  which: mixed float16 on a GPU, Micikevicius et al. 2018);
- `seed_everything(seed)` seeds Python, NumPy and the backend, so a CPU run with the same
  spec gives the same history.

Keras is imported at the top: the trainer (`engine.train`) and the Python export load it
once the process has chosen its Keras backend (`devices.select_backend`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import keras


@contextlib.contextmanager
def dtype_policy(name: str) -> Iterator[None]:
    """Set the global Keras dtype policy to `name`, and restore the previous one on exit."""
    previous = keras.mixed_precision.dtype_policy()
    keras.mixed_precision.set_dtype_policy(name)
    try:
        yield
    finally:
        keras.mixed_precision.set_dtype_policy(previous)


def seed_everything(seed: int) -> None:
    """Seed Python's `random`, NumPy and the backend (`keras.utils.set_random_seed`)."""
    keras.utils.set_random_seed(int(seed))
