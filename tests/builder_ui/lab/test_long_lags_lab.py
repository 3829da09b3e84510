"""Lab experiment 2 at a small size, and the two pieces it counts with.

The sizes are shrunk (the experiment's `SETTINGS`) so that it runs in well under a
minute; what the experiment measures at the lab's sizes is in `docs/lab/`.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest

from builder_ui import lab
from builder_ui.engine import artifacts
from builder_ui.engine.store import RunStore
from builder_ui.lab import long_lags
from builder_ui.lab.common import VERDICTS


def test_growth_exponent_recovers_a_power_law():
    points = [(lag, 3.0 * lag**1.5) for lag in (10, 100, 1000)]
    assert long_lags.growth_exponent(points) == pytest.approx(1.5, abs=1e-9)
    # Sequences that do not grow with the lag: exponent 0.
    assert long_lags.growth_exponent([(50, 2000), (500, 2000)]) == pytest.approx(0.0, abs=1e-9)
    # One lag is not a fit.
    assert long_lags.growth_exponent([(100, 5000)]) is None
    assert long_lags.growth_exponent([]) is None


def test_ladder_stops_at_the_first_failure_and_skips_the_rest():
    tried = []

    def train_one(lag):
        tried.append(lag)
        return lag < 300, {"lag": lag}

    rows, reach, missed = long_lags._ladder(
        (100, 200, 300, 1000), train_one, lambda lag, at: {"lag": lag, "skipped": at}
    )
    assert tried == [100, 200, 300]
    assert rows == [{"lag": 100}, {"lag": 200}, {"lag": 300}, {"lag": 1000, "skipped": 300}]
    assert (reach, missed) == (200, 300)
    # Nothing solved: reach 0; everything solved: nothing missed.
    assert long_lags._ladder((5,), lambda v: (False, {}), None)[1:] == (0, 5)
    assert long_lags._ladder((5, 6), lambda v: (True, {}), None)[1:] == (6, None)


def _counting_model():
    inputs = keras.Input((3,))
    model = keras.Model(inputs, keras.layers.Dense(2, activation="softmax")(inputs))
    model.compile("sgd", "sparse_categorical_crossentropy")
    return model


class _CountBatches(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.batches = 0

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1


@pytest.mark.parametrize("target, batches, points", [(0.0, 2, [8]), (1.1, 10, [8, 16, 24, 32, 40])])
def test_probe_curve_scores_every_check_and_stops_at_the_target(target, batches, points):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(40, 3)).astype("float32"), rng.integers(0, 2, 40)
    probe_x, probe_y = rng.normal(size=(30, 3)).astype("float32"), rng.integers(0, 2, 30)
    probe = long_lags.ProbeCurve(probe_x, probe_y, batch_size=4, check_every=8, target=target)
    count = _CountBatches()
    model = _counting_model()
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[probe, count], shuffle=False)
    assert count.batches == batches
    assert [seen for seen, _ in probe.curve] == points
    # The accuracy recorded is the model's on the probe, recomputed here from its outputs.
    final = np.mean(np.argmax(model.predict(probe_x, verbose=0), axis=-1) == probe_y)
    assert probe.curve[-1][1] == pytest.approx(final, abs=1e-9)
    assert probe.solved_at == (8 if target == 0.0 else None)


def test_probe_curve_refuses_a_check_that_splits_a_batch():
    with pytest.raises(ValueError, match="check_every: expected a multiple of batch_size=16"):
        long_lags.ProbeCurve(np.zeros((2, 3)), [0, 1], batch_size=16, check_every=100, target=1)


@pytest.mark.large
@pytest.mark.timeout(300)
def test_experiment_two_counts_fresh_sequences_per_lag_and_reports_three_tables(
    tmp_path, monkeypatch
):
    monkeypatch.setitem(
        long_lags.SETTINGS,
        "quick",
        {
            "lags": (5, 10),
            "lag_cells": ("simple", "cec_lstm"),
            "budget": 320,
            "check_every": 160,
            "probe": 100,
            "alphabets": (3,),
            "adding_lengths": (5, 10),
            "n_adding": 200,
            "epochs_adding": 1,
        },
    )
    store = RunStore(tmp_path / "runs")
    result = lab.run_experiment(2, store, quick=True, out_dir=tmp_path / "report", log=print)
    assert result.verdict in VERDICTS
    lag_rows, alphabet_rows, adding_rows = (t["rows"] for t in result.tables)
    assert [(r["layer"], r["lag q"], r["distractors p"]) for r in lag_rows] == [
        ("SimpleRNN", 5, 5),
        ("SimpleRNN", 10, 10),
        ("CEC-LSTM 1997", 5, 5),
        ("CEC-LSTM 1997", 10, 10),
    ]
    records = {
        store.get(i, history=False).name: store.get(i, history=False) for i in result.run_ids
    }
    for row in lag_rows + alphabet_rows:
        if row["run"].startswith("not run"):
            continue
        record = records[row["run"]]
        assert record.status == "done"
        task = record.spec["task"]
        assert (task["lag"], task["num_distractors"], task["encoding"]) == (
            row["lag q"],
            row["distractors p"],
            "ids",
        )
        assert record.spec["train"]["epochs"] == 1
        # The probe curve is saved with the run: one line per check, the last one the row's.
        curve = (
            artifacts.artifact_path(store, record.id, "probe_curve.csv").read_text().splitlines()
        )
        assert curve[0] == "sequences,probe_accuracy"
        seen = [int(line.split(",")[0]) for line in curve[1:]]
        assert seen == list(range(160, 160 * len(seen) + 1, 160))
        assert seen[-1] == row["sequences read"]
        if row["solved"] == "yes":
            # Training stopped at the first check that reached the target.
            assert row["sequences to solve"] == seen[-1]
            assert float(curve[-1].split(",")[1]) >= long_lags.PROBE_TARGET
            assert record.metrics["sequences_to_solve"] == seen[-1]
        else:
            assert seen[-1] == 320 and row["sequences to solve"] is None
    assert [r["distractors p"] for r in alphabet_rows][-1] == 3
    # Every layer has a row per length, trained or skipped, in the table's own columns.
    assert [(r["layer"], r["length"]) for r in adding_rows] == [
        (label, length) for _, label in long_lags.CELLS for length in (5, 10)
    ]
    assert result.tables[2]["columns"] == [
        "layer",
        "length",
        "solved",
        "best val MSE",
        "epochs",
        "seconds",
        "run",
    ]
    assert (tmp_path / "report" / result.figures[0]).is_file()


@pytest.mark.parametrize("mode", ["quick", "full"])
def test_each_mode_checks_at_whole_batches_and_ends_its_budget_on_a_check(mode):
    settings = long_lags.SETTINGS[mode]
    assert settings["check_every"] % long_lags.BATCH == 0
    assert settings["budget"] % settings["check_every"] == 0
