"""The app's Lab list: one click runs an experiment in its own process and shows its figure.

A real child process runs the quick lab's smallest experiment into a real
run store; the runs it trained are then in the store (and so in the Compare
tab) and its figure is found for the page.
"""

import pytest

from builder_ui.engine.store import RunStore
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


@pytest.mark.large
def test_an_experiment_started_from_the_app_trains_runs_and_shows_its_figure(tmp_path):
    runner = LabRunner(tmp_path / "runs")
    assert runner.start(1).state == "running"
    with pytest.raises(ValueError, match="still running"):
        runner.start(2)  # one experiment at a time
    status = runner.wait(timeout=300)
    assert status.state == "done", status.message
    figure = runner.figure(1)
    assert figure is not None and figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (result,) = runner.results()
    assert result.number == 1 and result.mode == "quick" and result.run_ids
    store = RunStore(runner.runs_dir)
    names = {store.get(run_id).name for run_id in result.run_ids}
    assert all(name.startswith("lab-1-") for name in names), names
    assert {record.status for record in store.list_runs(ids=result.run_ids)} == {"done"}
