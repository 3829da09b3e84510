"""The experiment engine's overhead: `builder_ui.engine.run` against a bare `model.fit`.

Both cases train the same spec, with the same seed, data and epochs:

- `bare` (the reference): `prepared = registry.prepare(spec)`, `model = prepared.build()`,
  `model.fit(x, y, validation_data=..., epochs, batch_size, shuffle=True, verbose=0)`: what
  you would write by hand;
- `engine`: `engine.run(spec, store=store)`, which does the same and also records every
  epoch in SQLite, keeps a `BackupAndRestore` checkpoint after every epoch, watches for NaN,
  records the final validation metrics and saves the model as a `.keras` file.

One sample is one whole training of each case (its first training, which starts the
backend and traces the model, is not timed); the cases alternate in a new random order each
round, and the table gives the median seconds per training and the ratio of the engine's
median to the bare one (target: at most 1.05). It also gives the same ratio for `fit` alone
(the engine's epochs as it recorded them), which shows whether the overhead is in the epochs
or around them.

Run from the repository root (the backend is Keras's, chosen by KERAS_BACKEND):

    python benchmarks/engine.py              # 21 rounds of 2 trainings, about 5 minutes on 2 CPUs
    python benchmarks/engine.py --quick      # smoke run; not a measurement
    python benchmarks/engine.py --check      # exit 1 if the target is missed

Writes benchmarks/results/engine.json (every sample and the environment) and
benchmarks/results/engine.md (the table).
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import sys
import tempfile
import time

import _timing

TARGET = 1.05
REFERENCE = "bare"
CASES = ("bare", "engine")
LABELS = {"bare": "bare model.fit", "engine": "engine.run"}


@dataclasses.dataclass(frozen=True)
class Settings:
    lag: int = 50
    n: int = 4000
    units: int = 64
    epochs: int = 5
    batch: int = 32
    rounds: int = 21
    seed: int = 0
    quick: bool = False

    def spec(self):
        """The experiment spec both cases train."""
        return {
            "version": 1,
            "name": "engine-benchmark",
            "task": {"type": "long_lag", "lag": self.lag, "n": self.n, "seed": self.seed},
            "model": {
                "type": "sequence_classifier",
                "encoder": {"type": "rnn", "cell": "lstm", "units": self.units},
            },
            "train": {
                "epochs": self.epochs,
                "batch_size": self.batch,
                "learning_rate": 0.01,
                "clipnorm": 1.0,
                "seed": self.seed,
                "mixed_precision": "float32",
            },
        }


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        description="Time engine.run against a bare model.fit of the same spec.",
    )
    parser.add_argument("--rounds", type=int, default=21, help="trainings per case (default 21)")
    parser.add_argument("--epochs", type=int, default=5, help="epochs per training (default 5)")
    parser.add_argument("--n", type=int, default=4000, help="sequences, both splits (default 4000)")
    parser.add_argument("--lag", type=int, default=50, help="sequence length (default 50)")
    parser.add_argument("--units", type=int, default=64, help="LSTM units (default 64)")
    _timing.add_seed_argument(parser)
    _timing.add_output_arguments(
        parser, "engine", quick_help="smoke run: 2 rounds of a 1-epoch, 200-sequence training"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.epochs, args.n = 2, 1, 200
    else:
        _timing.require_rounds(parser, args.rounds)
    for option in ("epochs", "n", "lag", "units"):
        if getattr(args, option) < 1:
            parser.error(f"--{option} must be at least 1, got {getattr(args, option)}")
    args.settings = Settings(
        lag=args.lag,
        n=args.n,
        units=args.units,
        epochs=args.epochs,
        rounds=args.rounds,
        seed=args.seed,
        quick=args.quick,
    )
    return args


def measure(settings, log=print):
    """Warm up and time both cases; return the run record (a JSON-able dict)."""
    import keras

    from builder_ui import engine
    from builder_ui.builders import prepare
    from builder_ui.engine.store import RunStore

    spec = settings.spec()
    directory = tempfile.mkdtemp(prefix="engine-benchmark-")
    store = RunStore(directory)
    fit_seconds = {case: [] for case in CASES}
    params = {}

    def bare():
        keras.backend.clear_session(free_memory=False)  # as the engine does before each run
        prepared = prepare(spec)
        model = prepared.build()
        start = time.perf_counter()
        model.fit(
            prepared.x_train,
            prepared.y_train,
            validation_data=(prepared.x_val, prepared.y_val),
            epochs=settings.epochs,
            batch_size=settings.batch,
            shuffle=True,
            verbose=0,
        )
        fit_seconds["bare"].append(time.perf_counter() - start)
        params["bare"] = model.count_params()

    def engine_run():
        record = engine.run(spec, store=store)
        if record.status != "done":
            raise RuntimeError(f"The engine's run ended {record.status}: {record.error}")
        fit_seconds["engine"].append(sum(row.seconds for row in record.history))
        params["engine"] = record.params
        shutil.rmtree(store.artifact_dir(record.id), ignore_errors=True)

    steps = {"bare": bare, "engine": engine_run}
    first = {}
    try:
        for case, step in steps.items():
            first[case] = _timing.warm_up(step, 0)
            fit_seconds[case].clear()
            log(f"warmed up {LABELS[case]:<16} first training {first[case]:6.2f} s")
        if params["bare"] != params["engine"]:
            raise RuntimeError(f"The cases built different models: {params}")

        timing = _timing.time_rounds(steps, settings, 1, log)
        wall, cpu = timing.wall, timing.cpu
    finally:
        store.close()
        shutil.rmtree(directory, ignore_errors=True)

    results = []
    for case in CASES:
        wall_figures, cpu_figures = _timing.against_reference(
            wall[case], cpu[case], wall[REFERENCE], cpu[REFERENCE]
        )
        fit = _timing.summarize(fit_seconds[case])
        is_target = case != REFERENCE
        results.append(
            {
                "key": case,
                "label": LABELS[case],
                "parameters": params[case],
                "first_training_s": round(first[case], 3),
                "s_per_training": {
                    k: round(v, 4) for k, v in _timing.summarize(wall[case]).items()
                },
                **wall_figures,
                "fit_s": {k: round(v, 4) for k, v in fit.items()},
                "fit_samples_s": [round(v, 4) for v in fit_seconds[case]],
                "fit_ratio": fit["median"] / statistics.median(fit_seconds[REFERENCE]),
                "target": TARGET if is_target else None,
                "passed": wall_figures["ratio"] <= TARGET if is_target else None,
                **cpu_figures,
            }
        )
    overhead = [e - b for e, b in zip(wall["engine"], wall["bare"], strict=True)]
    environment = _timing.timing_environment(keras.backend.backend(), timing.load_before)
    return {
        "benchmark": "engine",
        "description": (
            "Seconds per whole training of one spec: engine.run (records epochs, checkpoints, "
            "records metrics, saves) against prepare + build + model.fit; interleaved rounds; the "
            "ratio is engine over bare."
        ),
        "reference": REFERENCE,
        "settings": {**dataclasses.asdict(settings), "spec": spec},
        **_timing.record_outcome(
            environment,
            timing,
            results,
            overhead_s={k: round(v, 4) for k, v in _timing.summarize(overhead).items()},
        ),
    }


def table(record):
    headers = (
        "case",
        "s/training (median)",
        "IQR (s)",
        "min (s)",
        "× bare",
        "per round",
        "fit s (median)",
        "fit × bare",
        "CPU ×",
        "target",
        "result",
    )
    rows = []
    for entry in record["results"]:
        seconds, per_round = entry["s_per_training"], entry["ratio_per_round"]
        target = "reference" if entry["target"] is None else f"≤ {entry['target']:.2f}×"
        rows.append(
            (
                f"`{entry['label']}`",
                f"{seconds['median']:.2f}",
                f"{seconds['q1']:.2f}–{seconds['q3']:.2f}",
                f"{seconds['min']:.2f}",
                f"{entry['ratio']:.3f}×",
                _timing.spread(per_round, 3),
                f"{entry['fit_s']['median']:.2f}",
                f"{entry['fit_ratio']:.3f}×",
                f"{entry['cpu_ratio']:.3f}×",
                target,
                _timing.verdict(entry["passed"]),
            )
        )
    return _timing.markdown_table(headers, rows)


def verdicts(record):
    return _timing.target_verdicts(record["results"], LABELS[REFERENCE])


def markdown(record):
    settings, environment = record["settings"], record["environment"]
    overhead = record["overhead_s"]
    lines = _timing.markdown_preamble(
        "Experiment engine: overhead against a bare model.fit", record
    )
    lines += [
        f"- Spec: `long_lag` (lag {settings['lag']}, {settings['n']} sequences, one-hot), "
        f"`LSTM({settings['units']})` classifier, {settings['epochs']} epochs of batch "
        f"{settings['batch']}, Adam, float32, seed {settings['seed']}.",
        "- bare: `prepare(spec)`, `prepared.build()`, `model.fit(..., validation_data)`; "
        "engine: `engine.run(spec, store=RunStore(tmp))` (per-epoch SQLite records, "
        "`BackupAndRestore` and `TerminateOnNaN`, final metrics, `model.keras`).",
        f"- Timing: {_timing.plural(settings['rounds'], 'round')} of one training per case, in "
        "a new random order each round, after one untimed training per case.",
        f"- {_timing.keras_on_backend(environment)}.",
        _timing.machine_line(environment),
    ]
    median = overhead["median"]
    more_or_less = "more" if median >= 0 else "less"
    note = (
        f"The engine took {abs(median):.2f} s {more_or_less} per training than the bare fit "
        f"(median of the per-round differences; {overhead['min']:+.2f} to "
        f"{overhead['max']:+.2f} s); a spread wider than the difference means the machine's "
        "noise, not the engine, decides single rounds. "
        "`fit × bare` compares the time inside `fit` alone (the engine's epochs as it recorded "
        "them). CPU × is the ratio in CPU time of the process, which waiting for a core on a "
        "busy machine inflates less than wall time."
    )
    return _timing.markdown_document(lines, [table(record), note], verdicts(record))


def main(argv=None):
    args = parse_args(argv)
    return _timing.measure_and_report(
        args, measure, stem="engine", markdown=markdown, tables=(table,), verdicts=verdicts
    )


if __name__ == "__main__":
    sys.exit(main())
