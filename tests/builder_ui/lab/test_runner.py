"""The app's Lab runner: the command it starts and what it refuses.

A real child process running quick experiment 1 from the app, its runs, figure and report,
is tested once, through the app (tests/app/test_app_client.py).
"""

import pytest

from builder_ui.lab.runner import LabRunner


def test_command_runs_one_quick_experiment_into_the_apps_store(tmp_path):
    runner = LabRunner(tmp_path / "runs")
    command = runner.command(3)
    assert command[-8:] == [
        "lab", "--only", "3", "--quick", "--out", str(runner.out_dir), "--runs",
        str(runner.runs_dir),
    ]  # fmt: skip
    assert runner.status().state == "idle"
    with pytest.raises(ValueError, match=r"`number`.*got 9"):
        runner.start(9)
