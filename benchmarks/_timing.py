"""Shared helpers for the benchmark scripts: interleaved timing, summaries, the run record.

Imports no Keras, TensorFlow or JAX, so a script can set up its environment (log levels,
backend) before it imports them. Package versions are read from the installed metadata.
"""

from __future__ import annotations

import datetime
import gc
import importlib.metadata
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

# Environment variables that change how fast the numerical libraries run.
_RELEVANT_ENV = (
    "KERAS_BACKEND",
    "CUDA_VISIBLE_DEVICES",
    "OMP_NUM_THREADS",
    "TF_NUM_INTEROP_THREADS",
    "TF_NUM_INTRAOP_THREADS",
    "TF_ENABLE_ONEDNN_OPTS",
    "TF_XLA_FLAGS",
    "XLA_FLAGS",
    "JAX_PLATFORMS",
)
_PACKAGES = ("keras", "tensorflow", "tensorflow-cpu", "jax", "jaxlib", "torch", "numpy")


def interleaved(
    steps: Mapping[str, Callable[[], object]],
    rounds: int,
    steps_per_sample: int,
    seed: int = 0,
    on_round: Callable[[int, list[str]], None] | None = None,
) -> tuple[dict[str, list[float]], dict[str, list[float]], list[list[str]]]:
    """Time every case once per round, in a new random order each round.

    Slow drifts of the machine (another job starting, thermal throttling) then land on
    every case alike instead of on whichever ran last. Each sample records wall-clock time
    and the CPU time of this process (all its threads): on a machine shared with other jobs
    the wall time also counts the time spent waiting for a core, the CPU time mostly not.

    Args:
        steps: Case name -> a function that runs one step and returns once it is done.
        rounds: How many samples to take of each case.
        steps_per_sample: Steps timed back to back for one sample.
        seed: Seeds the order of the cases in each round.
        on_round: Called as `on_round(round_index, order)` before each round.

    Returns:
        `(wall, cpu, orders)`: case name -> wall-clock seconds per step, one value per round;
        the same in CPU seconds; and the order the cases ran in, one list per round.
    """
    order_rng = random.Random(seed)
    wall: dict[str, list[float]] = {name: [] for name in steps}
    cpu: dict[str, list[float]] = {name: [] for name in steps}
    orders = []
    for index in range(rounds):
        order = list(steps)
        order_rng.shuffle(order)
        orders.append(order)
        if on_round is not None:
            on_round(index, order)
        for name in order:
            step = steps[name]
            gc.collect()
            start, start_cpu = time.perf_counter(), time.process_time()
            for _ in range(steps_per_sample):
                step()
            wall[name].append((time.perf_counter() - start) / steps_per_sample)
            cpu[name].append((time.process_time() - start_cpu) / steps_per_sample)
    return wall, cpu, orders


def summarize(values: Sequence[float]) -> dict[str, float]:
    """Median, quartiles, min and max of a list of timings (at least one)."""
    if len(values) >= 2:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    else:
        q1 = q3 = values[0]
    return {
        "median": statistics.median(values),
        "q1": q1,
        "q3": q3,
        "min": min(values),
        "max": max(values),
    }


def environment() -> dict[str, object]:
    """What a reader needs to judge a timing: machine, load, versions, command line."""
    try:
        usable_cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        usable_cpus = os.cpu_count()
    versions = {}
    for package in _PACKAGES:
        try:
            versions[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            pass
    return {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join([os.path.basename(sys.executable), *sys.argv]),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "usable_cpus": usable_cpus,
        "load_average": load_average(),
        "packages": versions,
        "env": {name: os.environ[name] for name in _RELEVANT_ENV if name in os.environ},
    }


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages, or None where the system has none."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A GitHub-flavoured Markdown table; numbers right-aligned, text left-aligned."""
    rows = [[str(cell) for cell in row] for row in rows]
    numeric = [
        any(_looks_numeric(row[column]) for row in rows)
        and all(_looks_numeric(row[column]) or row[column] in _BLANKS for row in rows)
        for column in range(len(headers))
    ]
    lines = [
        "| " + " | ".join(headers) + " |",
        "|" + "|".join("---:" if right else ":---" for right in numeric) + "|",
    ]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


_BLANKS = ("", "-", "—", "n/a")


def _looks_numeric(text: str) -> bool:
    return text[:1].isdigit() or text[:1] in "-+."


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Write `text` to `path` so that readers see the old file or the new one, never half."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, temporary = tempfile.mkstemp(
        dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp"
    )
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, 0o644)  # mkstemp creates the file readable by its owner only
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise
