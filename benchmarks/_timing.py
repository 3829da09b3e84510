"""Shared helpers for the benchmark scripts: interleaved timing, summaries, the run record,
the peak resident memory of a stretch of work, the common command-line flags, and writing
and printing the results.

Imports no Keras, TensorFlow or JAX, so a script can set up its environment (log levels,
backend) before it imports them. Package versions are read from the installed metadata.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import importlib.metadata
import json
import logging
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

# Where the scripts write their results unless --output-dir says otherwise.
RESULTS_DIR = Path(__file__).resolve().parent / "results"

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


class Timing(NamedTuple):
    """What `time_rounds` measured."""

    wall: dict[str, list[float]]
    cpu: dict[str, list[float]]
    orders: list[list[str]]
    load_before: list[float] | None  # `load_average()` as the timing started
    seconds: float  # how long the timing took


def time_rounds(
    steps: Mapping[str, Callable[[], object]],
    settings: object,
    steps_per_sample: int | Mapping[str, int],
    log: Callable[[str], object],
) -> Timing:
    """`interleaved` over `settings.rounds` rounds seeded by `settings.seed`, logging each round,
    with the load average before it and the seconds it took."""
    load_before = load_average()
    start = time.perf_counter()
    wall, cpu, orders = interleaved(
        steps,
        rounds=settings.rounds,
        steps_per_sample=steps_per_sample,
        seed=settings.seed,
        on_round=lambda index, _: log(f"round {index + 1}/{settings.rounds}"),
    )
    return Timing(wall, cpu, orders, load_before, time.perf_counter() - start)


def record_outcome(
    environment: Mapping,
    timing: Timing,
    results: Sequence[Mapping],
    **extra: object,
) -> dict[str, object]:
    """The last entries of a run record: the environment, the timing's seconds, the results,
    `extra` (entries to place after the results), the orders and whether every target was met
    (no result with `passed` False)."""
    return {
        "environment": environment,
        "timing_s": round(timing.seconds, 1),
        "results": results,
        **extra,
        "orders": timing.orders,
        "all_targets_met": all(entry["passed"] is not False for entry in results),
    }


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


def samples_ms(values: Iterable[float]) -> list[float]:
    """Samples in seconds as milliseconds, rounded to microseconds."""
    return [round(1e3 * value, 3) for value in values]


def warm_up(step: Callable[[], object], steps: int) -> float:
    """Run `step` once, timed (it traces and compiles), then `steps` more times untimed.

    Returns the seconds the first run took.
    """
    start = time.perf_counter()
    step()
    first = time.perf_counter() - start
    for _ in range(steps):
        step()
    return first


def against_reference(
    wall: Sequence[float],
    cpu: Sequence[float],
    reference_wall: Sequence[float],
    reference_cpu: Sequence[float],
) -> tuple[dict[str, object], dict[str, object]]:
    """A case's samples against its reference's from the same rounds, for the run record.

    Returns `(wall_figures, cpu_figures)`: the wall-clock summary in milliseconds, the samples,
    the ratio of medians and the summary of the per-round ratios; then the same summary,
    samples and ratio of medians in CPU time.
    """
    summary, cpu_summary = summarize(wall), summarize(cpu)
    per_round = [mine / theirs for mine, theirs in zip(wall, reference_wall, strict=True)]
    wall_figures = {
        "ms_per_step": milliseconds(summary),
        "samples_ms": samples_ms(wall),
        "ratio": summary["median"] / statistics.median(reference_wall),
        "ratio_per_round": summarize(per_round),
    }
    cpu_figures = {
        "cpu_ms_per_step": milliseconds(cpu_summary),
        "cpu_samples_ms": samples_ms(cpu),
        "cpu_ratio": cpu_summary["median"] / statistics.median(reference_cpu),
    }
    return wall_figures, cpu_figures


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
        "cpu_model": cpu_model(),
        "cpu_vector_extensions": cpu_vector_extensions(),
        "cpu_count": os.cpu_count(),
        "usable_cpus": usable_cpus,
        "load_average": load_average(),
        "packages": versions,
        "env": {name: os.environ[name] for name in _RELEVANT_ENV if name in os.environ},
    }


def cpu_model() -> str | None:
    """The CPU's marketing name (Linux `/proc/cpuinfo`), or None where it cannot be read.

    Ratios between libraries move with the CPU (their kernels are tuned for different
    vendors' instruction sets), so a result names the chip it was measured on.
    """
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as file:
            for line in file:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    return value.strip() or None
    except OSError:
        pass
    return None


# The instruction-set extensions that decide which kernels a library runs on an x86 CPU.
_VECTOR_EXTENSIONS = ("avx", "avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16")


def cpu_vector_extensions() -> list[str] | None:
    """Which of `_VECTOR_EXTENSIONS` the CPU has (Linux `/proc/cpuinfo` flags), or None.

    Two chips sold under one name (a cloud "AMD EPYC") can differ here, and with them the
    ratios between libraries: the flags tell such machines apart in the results.
    """
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as file:
            for line in file:
                key, _, value = line.partition(":")
                if key.strip() == "flags":
                    flags = set(value.split())
                    return [name for name in _VECTOR_EXTENSIONS if name in flags]
    except OSError:
        pass
    return None


def timing_environment(
    keras_backend: str,
    load_before: list[float] | None,
    version: Callable[[str], str | None] | None = None,
) -> dict[str, object]:
    """`environment()` with the load average before and after the timing and the backend.

    Call it once the timing is done; `version` gives the backend's version (default
    `backend_version`).
    """
    record = environment()
    record["load_average_timing"] = {"start": load_before, "end": load_average()}
    record["keras_backend"] = keras_backend
    record["backend_version"] = (version or backend_version)(keras_backend)
    return record


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages, or None where the system has none."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def format_load(load: Sequence[float] | None) -> str:
    """The 1-minute load average of `load_average()` for a report, or "n/a"."""
    return "n/a" if load is None else f"{load[0]:.2f}"


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


def plural(number: int, noun: str) -> str:
    """`plural(1, "round")` is "1 round", `plural(2, "round")` "2 rounds"."""
    return f"{number} {noun}" + ("" if number == 1 else "s")


def markdown_preamble(title: str, record: Mapping) -> list[str]:
    """The first lines of a results file: title, smoke-run warning, who wrote it and when."""
    environment = record["environment"]
    lines = [f"# {title}", ""]
    if record["settings"]["quick"]:
        lines += [
            "> **Smoke run (`--quick`)**: too few steps to mean anything. "
            "Rerun without `--quick` for a measurement.",
            "",
        ]
    lines += [
        f"Written by `{environment['command']}` on {environment['date_utc']}; "
        "rerun the script rather than editing this file.",
        "",
    ]
    return lines


def markdown_document(
    lines: Iterable[str], paragraphs: Iterable[str], verdict_lines: Iterable[str]
) -> str:
    """A results file's text: `lines`, each paragraph after a blank line, then after another
    the verdicts as a list, and a final newline."""
    lines = list(lines)
    for paragraph in paragraphs:
        lines += ["", paragraph]
    lines += ["", *(f"- {line}" for line in verdict_lines), ""]
    return "\n".join(lines)


def keras_on_backend(environment: Mapping) -> str:
    """ "Keras <version> on <backend> <version>", from a `timing_environment()` record."""
    return (
        f"Keras {environment['packages'].get('keras')} on {environment['keras_backend']} "
        f"{environment['backend_version']}"
    )


def spread(summary: Mapping[str, float], digits: int = 2) -> str:
    """A summary's median and range, e.g. "1.02 (0.98–1.10)"."""
    return (
        f"{summary['median']:.{digits}f} ({summary['min']:.{digits}f}–{summary['max']:.{digits}f})"
    )


def machine_line(environment: Mapping) -> str:
    """The Markdown list item on the machine and its load around the timing."""
    load = environment["load_average_timing"]
    found = environment.get("cpu_vector_extensions")
    extensions = f" ({', '.join(found) or 'no AVX'})" if found is not None else ""
    return (
        f"- Machine: {environment['platform']}, {environment.get('cpu_model') or 'CPU unknown'}"
        f"{extensions}, {environment['usable_cpus']} usable CPUs; "
        f"load average {format_load(load['start'])} before timing, "
        f"{format_load(load['end'])} after."
    )


def verdict(passed: bool | None) -> str:
    """A table's result cell: PASS, FAIL, or a dash where nothing is judged."""
    return {None: "—", True: "PASS", False: "FAIL"}[passed]


def target_verdicts(entries: Iterable[Mapping], reference: str) -> list[str]:
    """One PASS/FAIL line per entry with a target on its ratio to `reference` (named so)."""
    return [
        f"{'PASS' if entry['passed'] else 'FAIL'}: {entry['label']} at {entry['ratio']:.2f}× "
        f"{reference} (target ≤ {entry['target']:.2f}×)"
        for entry in entries
        if entry["target"] is not None
    ]


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


def write_results(
    stem: str, record: Mapping, markdown_text: str, output_dir: str | os.PathLike
) -> tuple[Path, Path]:
    """Write `<stem>.json` (the record) and `<stem>.md` into `output_dir`, each atomically."""
    output_dir = Path(output_dir)
    json_path, md_path = output_dir / f"{stem}.json", output_dir / f"{stem}.md"
    write_atomic(json_path, json.dumps(record, indent=2) + "\n")
    write_atomic(md_path, markdown_text)
    return json_path, md_path


# --- The command line shared by the scripts ---------------------------------------------------

MIN_ROUNDS = 5  # fewer rounds are a smoke run, not a measurement
JIT_COMPILE_HELP = 'passed to model.compile (default "auto": no XLA for TensorFlow on CPU)'
QUICK_HELP = "smoke run: 2 rounds of 1 step, no warm-up"


def add_timing_arguments(
    parser: argparse.ArgumentParser, *, per: str, steps: int, steps_help: str, warmup: int
) -> None:
    """Add --rounds (default 7), --steps and --warmup; `per` names what a round samples."""
    parser.add_argument("--rounds", type=int, default=7, help=f"samples per {per} (default 7)")
    parser.add_argument("--steps", type=int, default=steps, help=steps_help)
    parser.add_argument(
        "--warmup",
        type=int,
        default=warmup,
        help=f"untimed steps after the first one (default {warmup})",
    )


def add_seed_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=0, help="seeds data, weights, order")


def add_jit_compile_argument(
    parser: argparse.ArgumentParser, help_text: str = JIT_COMPILE_HELP
) -> None:
    """Add --jit-compile {auto,true,false}; `jit_compile(args.jit_compile)` reads it."""
    parser.add_argument(
        "--jit-compile", choices=("auto", "true", "false"), default="auto", help=help_text
    )


def add_output_arguments(
    parser: argparse.ArgumentParser, stem: str, quick_help: str = QUICK_HELP
) -> None:
    """Add --quick, --check and --output-dir (where `<stem>.json` and `<stem>.md` go)."""
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--check", action="store_true", help="exit 1 if a target is missed")
    parser.add_argument(
        "--output-dir",
        type=Path,
        default=RESULTS_DIR,
        help=f"where {stem}.json and {stem}.md go (default benchmarks/results)",
    )


def apply_quick(
    parser: argparse.ArgumentParser, args: argparse.Namespace, measurement: bool = True
) -> None:
    """--quick: 2 rounds of 1 step, no warm-up; otherwise, for a measurement, enough rounds."""
    if args.quick:
        args.rounds, args.steps, args.warmup = 2, 1, 0
    elif measurement:
        require_rounds(parser, args.rounds)


def require_rounds(parser: argparse.ArgumentParser, rounds: int) -> None:
    """An argparse error unless --rounds is enough for a measurement (`MIN_ROUNDS`)."""
    if rounds < MIN_ROUNDS:
        parser.error(f"--rounds must be at least {MIN_ROUNDS} for a measurement, got {rounds}")


def jit_compile(choice: str) -> str | bool:
    """The `jit_compile` argument of model.compile for a --jit-compile choice."""
    return {"auto": "auto", "true": True, "false": False}[choice]


def parse_integers(parser: argparse.ArgumentParser, option: str, text: str) -> tuple[int, ...]:
    """The integers of a comma-separated option, or an argparse error."""
    try:
        return tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        parser.error(f"{option} must be comma-separated integers, got {text!r}")


def parse_choices(
    parser: argparse.ArgumentParser, option: str, text: str, choices: Sequence[str]
) -> set[str]:
    """The names in a comma-separated option, or an argparse error for an unknown one."""
    chosen = {name.strip() for name in text.split(",") if name.strip()}
    unknown = sorted(chosen - set(choices))
    if unknown:
        parser.error(f"unknown {option} {unknown}; choose from {list(choices)}")
    return chosen


# --- main() ----------------------------------------------------------------------------------


def quiet_tensorflow() -> None:
    """Keep TensorFlow's C++ start-up chatter and its Python warnings (retracing: one function
    per model is expected here) out of the output; errors still show.

    Call it before TensorFlow is imported: the C++ log level is read then.
    """
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    logging.getLogger("tensorflow").setLevel(logging.ERROR)


def report(
    record: Mapping,
    *,
    tables: Sequence[Callable[[Mapping], str]],
    verdicts: Callable[[Mapping], Iterable[str]],
    write: Callable[[Mapping, str | os.PathLike], Iterable[str | os.PathLike]],
    output_dir: str | os.PathLike,
    check: bool,
) -> int:
    """Print the tables and the verdicts of a run, write its files and name them.

    Returns the exit status: 1 if `check` and a target was missed, else 0.
    """
    for table in tables:
        print()
        print(table(record))
    print()
    for line in verdicts(record):
        print(line)
    for path in write(record, output_dir):
        print(f"wrote {path}")
    if check and not record["all_targets_met"]:
        return 1
    return 0


def measure_and_report(
    args: argparse.Namespace,
    measure: Callable[[object], Mapping],
    *,
    stem: str,
    markdown: Callable[[Mapping], str],
    tables: Sequence[Callable[[Mapping], str]],
    verdicts: Callable[[Mapping], Iterable[str]],
) -> int:
    """A script's main() once its arguments are parsed: quiet TensorFlow, `measure` the
    settings in `args.settings`, then `report` the record and write `<stem>.json` and
    `<stem>.md` (the text of `markdown(record)`) into `args.output_dir`, failing on a missed
    target if `args.check`. Returns the exit status."""
    quiet_tensorflow()
    record = measure(args.settings)
    return report(
        record,
        tables=tables,
        verdicts=verdicts,
        write=lambda record, output_dir: write_results(stem, record, markdown(record), output_dir),
        output_dir=args.output_dir,
        check=args.check,
    )
