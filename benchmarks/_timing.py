"""Shared helpers for the benchmark scripts: interleaved timing, summaries, the run record,
the peak resident memory of a stretch of work.

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
    steps_per_sample: int | Mapping[str, int],
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
        steps_per_sample: Steps timed back to back for one sample: one number for every
            case, or case name -> number (cases of very different cost can then give samples
            of similar duration).
        seed: Seeds the order of the cases in each round.
        on_round: Called as `on_round(round_index, order)` before each round.

    Returns:
        `(wall, cpu, orders)`: case name -> wall-clock seconds per step, one value per round;
        the same in CPU seconds; and the order the cases ran in, one list per round.
    """
    if isinstance(steps_per_sample, int):
        steps_per_sample = dict.fromkeys(steps, steps_per_sample)
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
            step, count = steps[name], steps_per_sample[name]
            gc.collect()
            start, start_cpu = time.perf_counter(), time.process_time()
            for _ in range(count):
                step()
            wall[name].append((time.perf_counter() - start) / count)
            cpu[name].append((time.process_time() - start_cpu) / count)
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


def milliseconds(summary: Mapping[str, float]) -> dict[str, float]:
    """A summary of seconds (see `summarize`) in milliseconds, rounded to microseconds."""
    return {name: round(1e3 * value, 3) for name, value in summary.items()}


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


def backend_version(backend: str) -> str | None:
    """The installed version of the package behind a Keras backend name, if known."""
    package = {"tensorflow": "tensorflow", "jax": "jax", "torch": "torch"}.get(backend)
    if package is None:
        return None
    for distribution in (package, f"{package}-cpu"):
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            pass
    return None


# Peak memory of this process, from Linux's /proc. The kernel keeps the high-water mark of the
# resident set (VmHWM) and resets it to the current size when "5" is written to clear_refs
# (Linux 4.0 and later), so a script can measure the peak of one stretch of work, leaving out
# what came before it (imports, tracing, compilation).
_STATUS = "/proc/self/status"
_CLEAR_REFS = "/proc/self/clear_refs"


def resident_bytes() -> int | None:
    """The current resident set size of this process, or None where /proc has none."""
    return _status_bytes("VmRSS")


def peak_resident_bytes() -> int | None:
    """The most this process has had resident since it started or since `reset_peak_resident`."""
    return _status_bytes("VmHWM")


def reset_peak_resident() -> bool:
    """Start a new high-water mark at the current resident size; False where not possible."""
    try:
        with open(_CLEAR_REFS, "w") as file:
            file.write("5")
    except OSError:
        return False
    return True


def _status_bytes(field: str) -> int | None:
    try:
        with open(_STATUS, encoding="ascii") as file:
            for line in file:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024  # reported in kB
    except OSError:
        pass
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
