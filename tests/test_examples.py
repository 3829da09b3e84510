"""The scripts in examples/ run end to end (with tiny settings) and write what they promise."""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

pytestmark = pytest.mark.large  # each example runs in a fresh interpreter

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _run_example(name, *args, timeout=900):  # a hang guard, not a speed test
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def test_long_lag_example_quick(tmp_path):
    models = [
        "SimpleRNN",
        "GRU",
        "LSTM",
        "CECLSTM 1997",
        "CECLSTM forget gate",
        "CECLSTM peephole",
        "CECLSTM truncated",
    ]
    # One lag: the script's loop over lags is plain Python; each model trained once is the claim.
    result = _run_example(
        "long_lag.py", "--quick", "--lags", "3", "--n", "100", "--out", str(tmp_path)
    )
    assert result.returncode == 0, result.stderr[-3000:]
    for model in models:
        assert model in result.stdout

    table = pd.read_csv(tmp_path / "long_lag.csv")
    assert sorted(table.columns) == ["epochs", "lag", "model", "val_accuracy"]
    assert sorted(zip(table["model"], table["lag"], strict=True)) == sorted(
        (model, 3) for model in models
    )
    assert table["val_accuracy"].between(0.0, 1.0).all()
    assert (table["epochs"] == 1).all()

    assert (tmp_path / "long_lag.png").read_bytes().startswith(PNG_SIGNATURE)
    # Written atomically: no temporary file is left behind.
    assert sorted(path.name for path in tmp_path.iterdir()) == ["long_lag.csv", "long_lag.png"]
