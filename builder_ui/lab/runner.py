"""The app's side of the bottleneck lab: run one experiment in its own process, then show it.

Pure Python (no Gradio), so it is tested without a browser. An experiment
runs as `keras-seq lab --quick --only N` in a child process, like a training
slot: its runs land in the app's run store (and so in the Compare tab), and
its report, figures and tables in `<runs>/_lab/`, where `results()` reads
them back. One experiment runs at a time; a second click while one runs is
refused with a message rather than queued behind it twice.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from builder_ui.lab.suite import get_experiment, stored_results

LAB_DIR = "_lab"


@dataclass(frozen=True)
class LabStatus:
    """What the lab is doing: the experiment running (or last run), and how it ended."""

    number: int | None
    state: str  # "idle", "running", "done" or "failed"
    message: str


class LabRunner:
    """Starts lab experiments for the app, one at a time, each in a child process.

    Args:
        runs_dir: The app's run store directory; the report goes to
            `runs_dir/_lab`.
        quick: Run the experiments at their quick sizes (default), as the
            app is meant for minutes, not the full lab's quarter hour.
    """

    def __init__(self, runs_dir: str | Path, *, quick: bool = True):
        self.runs_dir = Path(runs_dir).resolve()
        self.out_dir = self.runs_dir / LAB_DIR
        self.quick = quick
        self._lock = threading.Lock()
        self._process: subprocess.Popen | None = None
        self._number: int | None = None
        self._log = self.out_dir / "app-lab.log"

    def command(self, number: int) -> list[str]:
        """The child process's command line for experiment `number`."""
        command = [sys.executable, "-m", "builder_ui.cli", "lab", "--only", str(number)]
        if self.quick:
            command.append("--quick")
        return [*command, "--out", str(self.out_dir), "--runs", str(self.runs_dir)]

    def start(self, number: int) -> LabStatus:
        """Start experiment `number`; refused (ValueError) while another one runs."""

        experiment = get_experiment(number)  # names the allowed numbers when wrong
        with self._lock:
            if self._process is not None and self._process.poll() is None:
                raise ValueError(
                    f"Experiment {self._number} is still running; start experiment "
                    f"{experiment.number} when it has finished."
                )
            self.out_dir.mkdir(parents=True, exist_ok=True)
            with open(self._log, "w", encoding="utf-8") as log:
                self._process = subprocess.Popen(
                    self.command(experiment.number),
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
            self._number = experiment.number
        return self.status()

    def status(self) -> LabStatus:
        """The running experiment, or how the last one ended."""
        with self._lock:
            process, number = self._process, self._number
        if process is None:
            return LabStatus(None, "idle", "No experiment started from the app yet.")
        code = process.poll()
        if code is None:
            return LabStatus(number, "running", f"Experiment {number} is running…")
        if code == 0:
            return LabStatus(number, "done", f"Experiment {number} finished.")
        tail = self._log_tail()
        return LabStatus(number, "failed", f"Experiment {number} failed (exit {code}). {tail}")

    def wait(self, timeout: float | None = None) -> LabStatus:
        """Block until the running experiment ends (for tests and scripts)."""
        with self._lock:
            process = self._process
        if process is not None:
            process.wait(timeout=timeout)
        return self.status()

    def results(self):
        """The results the app's lab report holds, newest run of each experiment."""

        return stored_results(self.out_dir)

    def figure(self, number: int, results=None) -> Path | None:
        """The main figure of experiment `number`'s last result, if there is one.

        `results` is what `results()` returned, when the caller has it already.
        """
        for result in self.results() if results is None else results:
            if result.number == number and result.figures:
                path = self.out_dir / result.figures[0]
                return path if path.is_file() else None
        return None

    def stop(self) -> None:
        """Stop a running experiment (when the app shuts down)."""
        with self._lock:
            process = self._process
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()

    def _log_tail(self, lines: int = 3) -> str:
        try:
            text = self._log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return " ".join(text.strip().splitlines()[-lines:])
