"""What every lab experiment shares: its context, its result, training through the engine.

An experiment is a function `run(context) -> ExperimentResult`. The context
holds the run store, the report directory, the size (`quick` or full) and a
log; `LabContext.train` trains one spec through `builder_ui.engine.run`, so
that every model the lab trains is a run in the store (named
`lab-<number>-<key>`, in one sweep per experiment and invocation), and
`LabContext.save_figure` writes a matplotlib figure into the report's
`figures/` directory (to a temporary name, then renamed).
"""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import keras
import pandas as pd

from builder_ui import engine, files
from builder_ui.builders import load_spec, prepare
from builder_ui.engine import devices
from builder_ui.specs import SPEC_VERSION

FIGURES_DIR = "figures"

# Verdicts, as the report prints them.
AGREES = "agrees"
PARTLY = "partly agrees"
DISAGREES = "does not agree"
NOT_JUDGED = "not judged (runs did not finish)"
VERDICTS = (AGREES, PARTLY, DISAGREES, NOT_JUDGED)


def verdict_of(checks: Sequence[bool]) -> str:
    """`agrees` when every check holds, `partly agrees` when some do, else `does not agree`.

    No checks at all (the runs they need did not finish) is `NOT_JUDGED`.
    """
    if not checks:
        return NOT_JUDGED
    if all(checks):
        return AGREES
    return PARTLY if any(checks) else DISAGREES


@dataclass
class ExperimentResult:
    """The outcome of one lab experiment, as the report shows it.

    Attributes:
        number: The experiment's number (1-7).
        title: Its title.
        claim: The papers' claim, with their numbers.
        rule: How the measurement is judged against the claim.
        verdict: `agrees`, `partly agrees` or `does not agree`.
        finding: One or two sentences: what was measured, with the numbers.
        tables: The measured numbers: a list of tables, each a dict with
            `title`, `columns` (in order) and `rows` (one dict per row, JSON
            values). The first is the main one.
        figures: Figure paths relative to the report directory; the first
            is the experiment's main figure.
        run_ids: The runs it trained, in the store.
        sweep_id: The sweep id those runs share, or None.
        mode: `quick` or `full`.
        settings: The sizes it ran at.
        seconds: Wall time of the experiment.
        finished: Unix time it ended.
        device: Where it ran (e.g. `CPU`).
        notes: Further lines for the report (caveats, what was left out).
        out_dir: The report directory (not saved; set when run).
    """

    number: int
    title: str
    claim: str
    rule: str
    verdict: str
    finding: str
    tables: list[dict[str, Any]]
    figures: list[str] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    sweep_id: str | None = None
    mode: str = "quick"
    settings: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    finished: float = 0.0
    device: str = ""
    notes: list[str] = field(default_factory=list)
    out_dir: Path | None = None

    @property
    def figure_path(self) -> Path | None:
        """The absolute path of the main figure (None when there is none)."""
        if not self.figures:
            return None
        base = self.out_dir if self.out_dir is not None else Path(".")
        return base / self.figures[0]

    @property
    def figure_paths(self) -> list[Path]:
        base = self.out_dir if self.out_dir is not None else Path(".")
        return [base / name for name in self.figures]

    def frame(self, index: int = 0):
        """Table `index` (default: the main one) as a pandas DataFrame, columns in order."""
        table = self.tables[index]
        return pd.DataFrame.from_records(table["rows"], columns=table["columns"])

    def frames(self) -> list[tuple[str, object]]:
        """Every table as `(title, DataFrame)`."""
        return [(table["title"], self.frame(i)) for i, table in enumerate(self.tables)]

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("out_dir")
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], out_dir: Path | None = None) -> ExperimentResult:
        known = {name for name in cls.__dataclass_fields__ if name != "out_dir"}
        return cls(**{k: v for k, v in data.items() if k in known}, out_dir=out_dir)


def new_sweep_id(number: int) -> str:
    """`lab-<n>-<UTC time>-<random>`: one per experiment and invocation."""
    stamp = time.strftime("%y%m%d-%H%M%S", time.gmtime())
    return f"lab-{number}-{stamp}-{secrets.token_hex(2)}"


class StopWhenReached(keras.callbacks.Callback):
    """A Keras callback that ends training once a metric reaches a target.

    `mode="max"` stops when `logs[monitor] >= target`, `"min"` when `<= target`
    (`reached_at`: the epoch, counted from 1). Long-lag runs use it so that a
    solved task does not train on for nothing.
    """

    def __init__(self, monitor: str, target: float, mode: str = "max"):
        super().__init__()
        self.monitor, self.target, self.mode = monitor, target, mode
        self.reached_at: int | None = None

    def on_epoch_end(self, epoch, logs=None):
        value = (logs or {}).get(self.monitor)
        if value is None or not math.isfinite(value):
            return
        if (value >= self.target) if self.mode == "max" else (value <= self.target):
            self.reached_at = epoch + 1
            self.model.stop_training = True


class _Capture(keras.callbacks.Callback):
    """Keeps a reference to the trained model (`trained`), for evaluation."""

    def __init__(self):
        super().__init__()
        self.trained = None

    def on_train_end(self, logs=None):
        self.trained = self.model


@dataclass
class Trained:
    """A finished lab run: its record and, when it ended `done`, the trained model."""

    record: Any
    model: Any = None
    prepared: Any = None


@dataclass
class LabContext:
    """What an experiment needs: the store, where to write, how big, how to report progress.

    Attributes:
        store: The `builder_ui.engine.store.RunStore` the runs go to.
        out_dir: The report directory.
        quick: Small sizes (the whole lab in minutes) instead of the full ones.
        log: Called with one line per step of progress.
        number: The experiment running (set by `run_experiment`).
        sweep_id: The sweep id its runs share.
        run_ids: The runs trained so far, in order.
    """

    store: Any
    out_dir: Path
    quick: bool = True
    log: Callable[[str], None] = print
    number: int = 0
    sweep_id: str | None = None
    run_ids: list[str] = field(default_factory=list)

    @property
    def mode(self) -> str:
        return "quick" if self.quick else "full"

    def size(self, quick: Any, full: Any) -> Any:
        """`quick` or `full`, by the lab's mode."""
        return quick if self.quick else full

    def run_name(self, key: str) -> str:
        return f"lab-{self.number}-{key}"

    def train(
        self,
        key: str,
        spec: Mapping[str, Any],
        *,
        callbacks: Sequence[Any] = (),
        keep_model: bool = False,
    ) -> Trained:
        """Train one spec through the engine, as run `lab-<number>-<key>` of this sweep.

        Args:
            key: Short name of the run within the experiment (`luong`, `simple-lag100`).
            spec: The spec without `version` and `name` (both are set here).
            callbacks: Extra Keras callbacks for `fit`.
            keep_model: Also return the trained model (and the `Prepared`
                spec, whose task has the data and vocabularies).

        Returns:
            A `Trained`; its record's status may be other than `done`
            (diverged, failed): experiments report that rather than stop.
        """

        name = self.run_name(key)
        document = {"version": SPEC_VERSION, "name": name, **dict(spec)}
        checked = load_spec(document)
        run_id = self.store.create_run(checked, name=name, sweep_id=self.sweep_id)
        self.run_ids.append(run_id)
        capture = _Capture() if keep_model else None
        extra = [*callbacks, capture] if capture is not None else list(callbacks)
        started = time.perf_counter()
        self.log(f"  training {name} ...")
        record = engine.run(store=self.store, run_id=run_id, callbacks=extra)
        seconds = time.perf_counter() - started
        summary = ", ".join(
            f"{k} {v:.4g}"
            for k, v in record.metrics.items()
            if isinstance(v, (int, float)) and k != "loss"
        )
        self.log(f"  {name}: {record.status} in {seconds:.0f} s ({summary})")
        trained = Trained(record=record)
        if keep_model and record.status == "done":
            trained.model = capture.trained
            trained.prepared = prepare(checked)
        return trained

    def add_metrics(self, run_id: str, metrics: Mapping[str, float]) -> None:
        """Merge measured numbers into a run's final metrics (they show in Compare)."""
        record = self.store.get(run_id, history=False)
        self.store.update(run_id, metrics={**record.metrics, **dict(metrics)})

    def save_artifact_text(self, run_id: str, name: str, text: str) -> None:
        """Write a text artifact (e.g. a CSV table) into a run's directory."""
        with self.store.atomic_artifact(run_id, name) as path:
            path.write_text(text, encoding="utf-8")

    def save_figure(self, figure: Any, name: str) -> str:
        """Save a figure as `figures/<name>.png`; return that path, relative to `out_dir`."""
        with files.atomic_path(self.out_dir / FIGURES_DIR / f"{name}.png") as temp:
            figure.savefig(temp, dpi=110)
        return f"{FIGURES_DIR}/{name}.png"


def translation_task(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The `toy_translation` task section of a spec: `pairs` sentence pairs of
    `min_len`–`max_len` source tokens, the same data (seed 0) for every run."""
    return {
        "type": "toy_translation",
        "n": settings["pairs"],
        "min_len": settings["min_len"],
        "max_len": settings["max_len"],
        "seed": 0,
    }


def table(title: str, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A report table from rows (dicts): the columns are the keys, in order of appearance."""
    columns: list[str] = []
    for row in rows:
        for key in row:
            if key not in columns:
                columns.append(key)
    return {"title": title, "columns": columns, "rows": [dict(row) for row in rows]}


def device_name() -> str:
    """The device the engine would train on, as the run store records it."""

    return devices.describe(devices.detect())


def fmt(value: Any, digits: int = 3) -> Any:
    """A table value rounded for the report; None and non-finite floats stay None."""
    if value is None:
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return round(value, digits)
    return value


def spread(values: Sequence[float]) -> float:
    """max − min of the finite values (NaN when there are none)."""
    finite = [v for v in values if v is not None and math.isfinite(v)]
    return max(finite) - min(finite) if finite else math.nan
