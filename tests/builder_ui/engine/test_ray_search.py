"""`method: bayes` and `scheduler: asha` on the Ray executor: the sweep's Optuna study in the
driver (as a local search's), each trial a remote one (`builder_ui.engine.remote`) that
streams its epochs into the driver's store and asks the study whether to go on.

A local Ray instance of 2 CPUs, the test's own (`RAY_TMPDIR`); the tiny long-lag classifier of
the local search tests. `local_ray` is in this folder's conftest.
"""

from __future__ import annotations

import os
import signal

import keras
import pytest

from builder_ui.builders import load_spec, sweeps
from builder_ui.engine import artifacts, executors, interrupts, search
from builder_ui.engine.store import RunStore
from tests.builder_ui.engine.test_search import BASE  # the local search tests' tiny classifier

pytest.importorskip("optuna")
pytest.importorskip("ray")

pytestmark = pytest.mark.large


def test_a_bayes_sweep_on_ray_records_every_trial_chosen_within_its_ranges(local_ray, tmp_path):
    # The study asks the same distributions as a local search: a choice, a log range of
    # floats and a range of whole numbers, both ends included. One sweep proves both that
    # every trial it chose is recorded and that its draws keep to the ranges.
    store = RunStore(tmp_path / "runs")
    parameters = {
        "train.learning_rate": {"low": 1e-3, "high": 1e-1, "log": True},
        "model.encoder.units": {"low": 2, "high": 4},
        "model.encoder.cell": ["gru", "lstm"],
    }
    document = {
        **BASE,
        "sweep": {"method": "bayes", "num_trials": 3, "seed": 0, "parameters": parameters},
    }
    ended = []

    class Ended:
        def on_run_end(self, record):
            ended.append(record.id)

    result = executors.run_sweep(document, store=store, executor="ray", callbacks=[Ended()])
    records = store.list_runs(sweep_id=result.sweep_id, history=True)
    assert len(records) == 3 and sorted(result.run_ids) == sorted(r.id for r in records)
    assert sorted(ended) == sorted(result.run_ids)
    assert [record.status for record in records] == ["done"] * 3, [r.error for r in records]
    assert sorted(record.name for record in records) == [f"search-{i}" for i in range(3)]
    rates = [record.spec["train"]["learning_rate"] for record in records]
    units = [record.spec["model"]["encoder"]["units"] for record in records]
    cells = [record.spec["model"]["encoder"]["cell"] for record in records]
    assert all(1e-3 <= rate <= 1e-1 for rate in rates) and len(set(rates)) == 3
    assert all(type(unit) is int and 2 <= unit <= 4 for unit in units)
    assert set(cells) <= set(parameters["model.encoder.cell"])
    # The sweep's spec is kept, and each trial's values read back from its run against it: a
    # stopped search on Ray can go on with `keras-seq resume` (test_search_resume.py), which
    # replays them with the same distributions.
    spec = load_spec(store.sweep_spec(result.sweep_id))
    assert spec.sweep.method == "bayes" and spec.sweep.num_trials == 3
    values = search.trial_values(sweeps.trials(spec), records, spec.sweep)
    assert [
        (v["train.learning_rate"], v["model.encoder.units"], v["model.encoder.cell"])
        for v in values
    ] == list(zip(rates, units, cells, strict=True))
    for record in records:
        assert [row.epoch for row in record.history] == [1, 2]
        model = keras.saving.load_model(
            artifacts.artifact_path(store, record.id, "model.keras"), safe_mode=True
        )
        assert model.count_params() == record.params
        assert record.pid == os.getpid()  # the driver owns the run
    store.close()


def test_asha_on_ray_prunes_a_weak_trial_and_keeps_its_epochs(local_ray, tmp_path):
    # Grid order: a learning rate that learns, then two that barely move the weights. With 2
    # CPUs the first two train together; the third starts when one of them ends, after both
    # reported epoch 1, and its epoch-1 val_loss (about 0.69, as the other weak one's) is
    # outside the best third of that rung: the study's successive halving stops it there.
    # The learning one is the best at every rung and completes; the second weak one may go
    # on or stop, as it reached the rung before or after the learning one.
    store = RunStore(tmp_path / "runs")
    document = {
        **BASE,
        "task": {**BASE["task"], "n": 400},
        "train": {**BASE["train"], "epochs": 3, "batch_size": 16},
        "sweep": {
            "parameters": {"train.learning_rate": [0.03, 1e-6, 1e-7]},
            "metric": "val_loss",
            "scheduler": {"type": "asha", "grace_period": 1, "reduction_factor": 3},
        },
    }
    result = executors.run_sweep(document, store=store, executor="ray")
    records = {
        r.spec["train"]["learning_rate"]: r
        for r in store.list_runs(sweep_id=result.sweep_id, history=True)
    }
    good, weak, weakest = records[0.03], records[1e-6], records[1e-7]
    assert good.status == "done", good.error
    assert [row.epoch for row in good.history] == [1, 2, 3]
    assert weakest.status == "pruned", (weakest.status, weakest.error)
    assert [row.epoch for row in weakest.history] == [1]
    assert "Pruned by the sweep's scheduler" in weakest.error
    assert not (store.artifact_dir(weakest.id) / "model.keras").exists()
    assert weakest.metrics["loss"] == pytest.approx(weakest.history[0].metrics["val_loss"])
    assert weak.status in ("done", "pruned"), weak.error


def test_ctrl_c_raises_again_after_a_search_on_ray(local_ray, tmp_path):
    # A library that leaves its signal handlers behind (Ray Tune's `Tuner.fit`, which ran
    # these searches before, left SIGINT and SIGUSR1 handlers that raise nothing) loses the
    # next Ctrl-C in the process, and `interrupts.remembered()` stands aside: a pytest worker
    # that ran this file before test_stopping.py failed its Ctrl-C tests.
    before = {signum: signal.getsignal(signum) for signum in interrupts.KEPT_SIGNALS}
    document = {
        **BASE,
        "train": {**BASE["train"], "epochs": 1},
        "sweep": {
            "method": "bayes",
            "num_trials": 1,
            "seed": 0,
            "parameters": {"train.learning_rate": [0.003, 0.01]},
        },
    }
    store = RunStore(tmp_path / "runs")
    result = executors.run_sweep(document, store=store, executor="ray")
    assert [r.status for r in result.records] == ["done"], [r.error for r in result.records]
    assert {signum: signal.getsignal(signum) for signum in before} == before
    with interrupts.remembered():  # what `keras-seq` wraps each command in
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
            for _ in range(100):  # the handler runs at one of these bytecodes
                pass
        assert interrupts.pressed()  # noted, so that a lost one would still stop training
    store.close()
