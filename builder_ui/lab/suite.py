"""The lab suite: the table of experiments, running one or several, and what a report holds.

See `builder_ui.lab` for what the seven experiments measure.
"""

from __future__ import annotations

import importlib
import logging
import os
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from builder_ui.engine.store import RunStore
from builder_ui.lab import report
from builder_ui.lab.catalog import DEFAULT_OUT_DIR, DESCRIPTIONS
from builder_ui.lab.common import ExperimentResult, LabContext, device_name, new_sweep_id

DEFAULT_RUNS_DIR = "runs"
FAILED = "not measured (the experiment failed)"

_logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Experiment:
    """One experiment of the lab.

    Attributes:
        number: 1 to 7.
        key: Short name (`gradients`, `long_lags`, ...), also its module's name.
        title: Its title.
        claim: The papers' claim it tests, with their numbers.
        quick_minutes, full_minutes: About how long it takes on two busy CPU cores.
    """

    number: int
    key: str
    title: str
    claim: str
    quick_minutes: float
    full_minutes: float

    @property
    def module(self) -> str:
        return f"builder_ui.lab.{self.key}"

    def run(
        self,
        store: Any,
        *,
        quick: bool = True,
        out_dir: str | os.PathLike = DEFAULT_OUT_DIR,
        log: Callable[[str], None] | None = None,
        write_report: bool = True,
    ) -> ExperimentResult:
        """Run this experiment; see `run_experiment`."""
        return run_experiment(
            self.number, store, quick=quick, out_dir=out_dir, log=log, write_report=write_report
        )


def _experiment(number: int, key: str, quick_minutes: float, full_minutes: float) -> Experiment:
    about = DESCRIPTIONS[key]  # the module itself loads when the experiment runs
    return Experiment(number, key, about.title, about.claim, quick_minutes, full_minutes)


EXPERIMENTS: tuple[Experiment, ...] = (
    _experiment(1, "gradients", 0.5, 1),
    _experiment(2, "long_lags", 1.5, 10),
    _experiment(3, "bottleneck", 3, 11),
    _experiment(4, "sequential", 0.5, 2.5),
    _experiment(5, "transformer_choices", 2.5, 8),
    _experiment(6, "visual_attention", 2, 4),
    _experiment(7, "conv_lstm", 1, 4),
)
NUMBERS = tuple(e.number for e in EXPERIMENTS)


def experiments() -> list[Experiment]:
    """The lab's experiments, in order (for the app's Lab list and the CLI)."""
    return list(EXPERIMENTS)


def get_experiment(number: Any) -> Experiment:
    """The experiment numbered `number`; a clear `ValueError` for anything else."""
    if isinstance(number, str) and number.strip().isdigit():
        number = int(number)
    for experiment in EXPERIMENTS:
        if isinstance(number, int) and not isinstance(number, bool) and number == experiment.number:
            return experiment
    raise ValueError(
        f"Received an invalid value for argument `number`, expected one of "
        f"{', '.join(map(str, NUMBERS))}, got {number!r}."
    )


def parse_numbers(values: Iterable[Any] | None) -> list[int]:
    """Experiment numbers from `[3, "1,2", " 5 "]`: sorted, unique; all when None or empty.

    Raises:
        ValueError: naming the value that is not an experiment number.
    """
    if not values:
        return list(NUMBERS)
    numbers = set()
    for value in values:
        parts = value.split(",") if isinstance(value, str) else [value]
        for part in parts:
            if isinstance(part, str) and not part.strip():
                raise ValueError(
                    f"Received an invalid value for argument `only`, expected experiment "
                    f"numbers ({', '.join(map(str, NUMBERS))}), got {value!r}."
                )
            try:
                numbers.add(get_experiment(part.strip() if isinstance(part, str) else part).number)
            except ValueError:
                raise ValueError(
                    f"Received an invalid value for argument `only`, expected experiment "
                    f"numbers ({', '.join(map(str, NUMBERS))}), got {part!r}."
                ) from None
    return sorted(numbers)


def _open_store(store: Any):
    if isinstance(store, RunStore):
        return store, False
    if isinstance(store, (str, os.PathLike)):
        return RunStore(store), True
    raise ValueError(
        "Received an invalid value for argument `store`, expected a builder_ui.engine.RunStore "
        f"or a directory, got {store!r}."
    )


def run_experiment(
    number: int,
    store: Any,
    *,
    quick: bool = True,
    out_dir: str | os.PathLike = DEFAULT_OUT_DIR,
    log: Callable[[str], None] | None = None,
    write_report: bool = True,
) -> ExperimentResult:
    """Run one experiment: train its runs into `store`, draw its figure, judge its claim.

    Args:
        number: The experiment, 1 to 7 (see `experiments()`).
        store: A `RunStore`, or the directory of one.
        quick: Small sizes (default) or the full ones.
        out_dir: The report directory; the figures go to `<out_dir>/figures/`.
        log: Called with a line per step of progress; default: the module logger.
        write_report: Also merge the result into `<out_dir>/results.json` and
            rewrite the report there.

    Returns:
        The `ExperimentResult`: `figure_path`, `frame()` (the main table),
        `verdict`, `run_ids`, ...

    Raises:
        ValueError: for an unknown `number` or a bad `store`.
    """
    experiment = get_experiment(number)
    store, opened = _open_store(store)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = log or _logger.info
    try:
        module = importlib.import_module(experiment.module)
        context = LabContext(
            store=store,
            out_dir=out_dir,
            quick=bool(quick),
            log=log,
            number=experiment.number,
            sweep_id=new_sweep_id(experiment.number),
        )
        started = time.perf_counter()
        log(f"[lab {experiment.number}] {experiment.title} ({context.mode})")
        result = module.run(context)
        result.seconds = time.perf_counter() - started
        result.finished = time.time()
        result.mode = context.mode
        result.sweep_id = context.sweep_id if context.run_ids else None
        result.run_ids = list(context.run_ids)
        result.device = device_name()
        result.out_dir = out_dir
        log(f"[lab {experiment.number}] {result.verdict} ({result.seconds:.0f} s)")
        if write_report:
            report.write_report(out_dir, [result])
        return result
    finally:
        if opened:
            store.close()


def stored_results(out_dir: str | os.PathLike = DEFAULT_OUT_DIR) -> list[ExperimentResult]:
    """The results a report directory holds (from its `results.json`), by experiment number.

    For the app: show the last figures and tables without running anything.
    An empty list when the directory holds no report.
    """

    return report.load_experiment_results(out_dir)


@dataclass
class LabRun:
    """What `run_lab` did: the results, where the report is, how long it took."""

    results: list[ExperimentResult]
    report_path: Path
    seconds: float
    failed: dict[int, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed


def run_lab(
    numbers: Iterable[Any] | None = None,
    *,
    quick: bool = False,
    out_dir: str | os.PathLike = DEFAULT_OUT_DIR,
    store: Any = None,
    runs_dir: str | os.PathLike = DEFAULT_RUNS_DIR,
    log: Callable[[str], None] | None = print,
) -> LabRun:
    """Run experiments (default: all of them) and write the report into `out_dir`.

    An experiment that raises is reported as not measured (with the error)
    and the others still run. Results of experiments not run this time that
    an earlier invocation left in `out_dir/results.json` stay in the report,
    each with its own date and mode.

    Args:
        numbers: Experiment numbers (ints, or strings like `"1,3"`); None for all.
        quick: Small sizes.
        out_dir: The report directory.
        store: A `RunStore`; default: one in `runs_dir`.
        runs_dir: The run store's directory when `store` is not given.
        log: Progress lines; None for silence.

    Returns:
        A `LabRun`.
    """

    chosen = parse_numbers(numbers)
    log = log or (lambda line: None)
    store, opened = _open_store(store if store is not None else runs_dir)
    out_dir = Path(out_dir)
    started = time.perf_counter()
    results, failed = [], {}
    try:
        for number in chosen:
            try:
                result = run_experiment(
                    number, store, quick=quick, out_dir=out_dir, log=log, write_report=False
                )
            except KeyboardInterrupt:
                raise
            except Exception as error:  # one broken experiment must not lose the others
                message = f"{type(error).__name__}: {error}"
                log(f"[lab {number}] failed: {message}")
                _logger.debug("lab experiment %s failed", number, exc_info=True)
                failed[number] = message + "\n" + traceback.format_exc(limit=8)
                experiment = get_experiment(number)
                result = ExperimentResult(
                    number=number,
                    title=experiment.title,
                    claim=experiment.claim,
                    rule="",
                    verdict=FAILED,
                    finding=f"The experiment stopped with {message}",
                    tables=[],
                    mode="quick" if quick else "full",
                    finished=time.time(),
                    out_dir=out_dir,
                )
            results.append(result)
    finally:
        seconds = time.perf_counter() - started
        if results:
            report.write_report(out_dir, results, lab_seconds=seconds, lab_numbers=chosen)
        if opened:
            store.close()
    return LabRun(
        results=results,
        report_path=out_dir / report.REPORT_FILE,
        seconds=seconds,
        failed=failed,
    )


__all__ = [
    "DEFAULT_OUT_DIR",
    "EXPERIMENTS",
    "Experiment",
    "ExperimentResult",
    "LabRun",
    "experiments",
    "get_experiment",
    "parse_numbers",
    "run_experiment",
    "run_lab",
    "stored_results",
]
