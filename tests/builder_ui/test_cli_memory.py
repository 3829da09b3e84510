"""`keras-seq train` and `sweep` refuse a model over the memory budget before any weight exists.

The issue's cases (a 26000-unit GRU, 64 layers of 8000 units) would allocate tens of
gigabytes: each must end with exit 2, one message naming the field, no run store, and
a process that did not grow (`allocates_little`, measured in bytes).
"""

from __future__ import annotations

import pytest
import yaml

from builder_ui import cli
from builder_ui.builders.memory import BUDGET_ENV
from builder_ui.engine.store import DB_NAME
from tests.allocation import allocates_little

TINY = {
    "version": 2,
    "name": "tiny",
    "task": {"type": "long_lag", "lag": 5, "n": 80, "num_distractors": 4},
    "model": {"type": "sequence_classifier", "encoder": {"type": "rnn", "cell": "gru", "units": 4}},
    "train": {"epochs": 1, "batch_size": 32, "learning_rate": 0.01, "seed": 2},
}


def _spec(tmp_path, name: str = "spec.yaml", **encoder) -> str:
    document = {**TINY, "model": {**TINY["model"], "encoder": {**TINY["model"]["encoder"]}}}
    document["model"]["encoder"].update(encoder)
    path = tmp_path / name
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return str(path)


@pytest.fixture(autouse=True)
def _default_budget(monkeypatch):
    """The default budget; whatever `--memory-budget` sets in os.environ is undone after."""
    monkeypatch.setenv(BUDGET_ENV, "")


@pytest.fixture(scope="module", autouse=True)
def _backend_loaded():
    import keras  # loaded before the allocation checks, as a long-running process has it

    return keras


@pytest.mark.parametrize(
    ("encoder", "value"),
    [
        ({"units": 26000, "bidirectional": True}, "26000"),
        # Large: the check traces a training step through the 64 layers, symbolically.
        pytest.param({"units": 8000, "num_layers": 64}, "8000", marks=pytest.mark.large),
    ],
    ids=["gru_26000_units", "64_layers_of_8000"],
)
def test_train_refuses_a_model_over_the_budget_before_allocating_it(
    tmp_path, capsys, encoder, value
):
    runs = tmp_path / "runs"
    with allocates_little():
        code = cli.main(["train", _spec(tmp_path, **encoder), "--runs", str(runs)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"model.encoder.units: {value} makes this model need about " in err
    assert "over the memory budget of " in err
    assert not runs.exists()  # no store, no run, no directory


def test_the_flag_refuses_a_model_the_default_budget_lets_train(tmp_path, capsys, monkeypatch):
    spec = _spec(tmp_path)
    refused = tmp_path / "refused"
    code = cli.main(["train", spec, "--runs", str(refused), "--memory-budget", "1kB"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "over the memory budget of 1.0 kB (1kB, set by KERAS_SEQ_MEMORY_BUDGET" in err
    assert not refused.exists()
    monkeypatch.setenv(BUDGET_ENV, "")  # the flag set it for this process, as a command does
    assert cli.main(["train", spec, "--runs", str(tmp_path / "trained")]) == 0
    assert (tmp_path / "trained" / DB_NAME).is_file()


def test_the_environment_variable_sets_the_budget(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(BUDGET_ENV, "2kB")
    runs = tmp_path / "runs"
    assert cli.main(["train", _spec(tmp_path), "--runs", str(runs)]) == 2
    assert "over the memory budget of 2.0 kB" in capsys.readouterr().err
    assert not runs.exists()


def test_an_unreadable_budget_flag_is_refused_naming_the_flag(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:
        cli.main(["train", _spec(tmp_path), "--memory-budget", "lots"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "argument --memory-budget: expected a size such as 4GB" in err
    assert "got 'lots'" in err


def test_sweep_with_one_trial_over_the_budget_is_refused_whole(tmp_path, capsys):
    # 300 units is about 4.6 MB with Adam, over a 1 MB budget; 4 units is far under it.
    # (Small on purpose: without the check the sweep trains both trials, quickly.)
    document = {**TINY, "sweep": {"parameters": {"model.encoder.units": [4, 300]}}}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    runs = tmp_path / "runs"
    code = cli.main(["sweep", str(path), "--runs", str(runs), "--memory-budget", "1MB"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "model.encoder.units: 300 makes this model need about " in err
    assert "(trial 1: model.encoder.units=300)" in err
    assert not runs.exists()
