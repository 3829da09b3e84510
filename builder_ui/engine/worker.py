"""A device slot's training process: the app's runs train here, away from the web server.

    app (JobQueue worker thread)                 python -m builder_ui.engine.worker STORE
      stdin  ── {"run": ID, "resume": …} ───────▶   train.run(run_id=ID, resume=…, cancel=…,
             ── {"cancel": ID} / {"interrupt": ID}        interrupt=…, prune=…)
             ── {"verdict": …} ─────────────────▶   (the answer to a "prune" message)
             ── {"stop": true} ─────────────────▶
      stdout ◀── progress messages, {"end": …} ──   (Keras and the backend loaded once)
             ◀── {"prune": {epoch, logs}} ───────   after each epoch of a searched trial

One JSON object per line each way. The child is a plain subprocess (not
`multiprocessing`), so it never imports the program that started the app,
and its environment (which GPU it sees) is set before anything loads. What
the child prints (TensorFlow's logs, warnings) goes to the app's stderr; its
stdout carries only the messages. If the app goes away (stopped, or killed
with SIGKILL), the child's stdin closes: it interrupts the run in progress
(which ends `interrupted`, its finished epochs and checkpoint kept, to be
resumed) and exits; the same on SIGTERM to the child. Messages it can no
longer send to a gone app are dropped, so they never fail the run.

A trial of a search (`{"run": ID, "prune": true}`, `builder_ui.engine.queued_search`)
asks the app after each recorded epoch whether to stop, and waits for the
verdict: the study that decides lives in the app, with every trial's epochs.
An error there (`sweep.metric` not among the run's metrics) comes back with the
verdict and fails the run, as it would in a local sweep.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from builder_ui.engine.native_logs import quiet_if_inherited
from builder_ui.engine.progress import MessageCallback, floats_only
from builder_ui.engine.store import RunStore

# How long the app waits for a message before looking at the process and the cancel button.
POLL_S = 0.1


class TrainingProcess:
    """The app's side of one slot's training process (started on first use, again if it dies).

    Args:
        store_dir: The run store's directory.
        env: Environment changes for the process (None: unset the variable).
        name: For logs.
    """

    def __init__(self, store_dir: str | os.PathLike, env: Mapping[str, str | None], name: str):
        self.store_dir = str(store_dir)
        self.env = dict(env)
        self.name = name
        self.run_env: dict[str, str] = {}  # what the current process has on top of `env`
        self.process: subprocess.Popen | None = None
        self._messages: queue.Queue = queue.Queue()
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, run_env: Mapping[str, str] | None = None) -> None:
        """Start the process now (it loads Keras), unless it is running.

        `run_env`: variables a run needs on top of the slot's (`KERAS_BACKEND`
        from its `train.backend`); a running process started without exactly
        these is stopped and a new one started (the backend is fixed once
        Keras is loaded). None: whatever the running process has.
        """
        if run_env is not None and dict(run_env) != self.run_env:
            self.stop()
            self.run_env = dict(run_env)
        with self._lock:
            if self.alive():
                return
            env = dict(os.environ)
            for key, value in {**self.env, **self.run_env}.items():
                if value is None:
                    env.pop(key, None)
                else:
                    env[key] = value
            self._messages = queue.Queue()
            self.process = subprocess.Popen(
                [sys.executable, "-m", "builder_ui.engine.worker", self.store_dir],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                text=True,
                encoding="utf-8",
                bufsize=1,
            )
            reader = threading.Thread(
                target=_read_lines,
                args=(self.process.stdout, self._messages),
                name=f"{self.name}-reader",
                daemon=True,
            )
            reader.start()

    def _send(self, message: Mapping[str, Any]) -> None:
        with contextlib.suppress(OSError, ValueError):  # a dead process is noticed by `train`
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()

    def train(
        self,
        run_id: str,
        cancel: threading.Event,
        on_message,
        *,
        resume: bool = False,
        interrupt: threading.Event | None = None,
        prune=None,
        run_env: Mapping[str, str] | None = None,
    ) -> tuple[str, str | None]:
        """Train run `run_id` (continue it, with `resume`); report via `on_message(kind, payload)`.

        `run_env`: see `start` (a process on another backend is replaced first).

        Setting `cancel` ends the run `cancelled`; setting `interrupt` ends it
        `interrupted` (resumable). `prune(epoch, logs) -> bool`, when given, is
        asked after each recorded epoch, here; true ends the run `pruned`.

        Returns:
            `(status, error)` from the engine, or `("lost", message)` if the
            process ended before the run did.
        """
        self.start({} if run_env is None else run_env)
        self._send({"run": run_id, "resume": resume, "prune": prune is not None})
        cancel_sent = interrupt_sent = False
        while True:
            if cancel.is_set() and not cancel_sent:
                self._send({"cancel": run_id})
                cancel_sent = True
            if interrupt is not None and interrupt.is_set() and not interrupt_sent:
                self._send({"interrupt": run_id})
                interrupt_sent = True
            try:
                message = self._messages.get(timeout=POLL_S)
            except queue.Empty:
                if self.alive():
                    continue
                code = self.process.returncode
                return "lost", f"The training process ended unexpectedly (exit code {code})."
            if message is None:  # end of its stdout; the exit code follows
                self.process.wait()
                code = self.process.returncode
                return "lost", f"The training process ended unexpectedly (exit code {code})."
            kind, payload = message["kind"], message["payload"]
            if kind == "end":
                return payload["status"], payload["error"]
            if kind == "prune":
                self._send(_verdict(prune, payload))
                continue
            on_message(kind, payload)

    def stop(self, timeout: float = 1.0) -> None:
        """Ask the process to exit; end it if it has not within `timeout` seconds."""
        with self._lock:
            if self.process is None:
                return
            if self.alive():
                self._send({"stop": True})
                with contextlib.suppress(OSError, ValueError):
                    self.process.stdin.close()
                try:
                    self.process.wait(timeout)
                except subprocess.TimeoutExpired:
                    self.process.terminate()
                    try:
                        self.process.wait(5)
                    except subprocess.TimeoutExpired:
                        self.process.kill()
                        self.process.wait()
            self.process = None


def _verdict(prune, payload: Mapping[str, Any]) -> dict[str, Any]:
    """The answer to a trial's `prune` message: stop or not, or the error that fails it."""
    if prune is None:
        return {"verdict": False}
    try:
        return {"verdict": bool(prune(int(payload["epoch"]), dict(payload["logs"])))}
    except Exception as error:  # the run fails with it, in its process
        return {"verdict": False, "error": f"{type(error).__name__}: {error}"}


class PruneError(Exception):
    """The app's study could not judge the epoch (the message says why)."""


def _read_lines(stream, messages: queue.Queue) -> None:
    for line in stream:
        line = line.strip()
        if not line:
            continue
        try:
            messages.put(json.loads(line))
        except json.JSONDecodeError:
            continue  # not a message (stray output)
    messages.put(None)


# ---------------------------------------------------------------------------
# The child


def main(argv: list[str] | None = None) -> int:
    """Run as `python -m builder_ui.engine.worker STORE_DIR`: train what stdin asks for."""

    argv = sys.argv[1:] if argv is None else argv
    store_dir = argv[0]
    # Messages go to the original stdout; anything else printed goes to stderr.
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w", encoding="utf-8", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    # Ctrl+C in a terminal reaches the whole process group; the app decides what stops.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    quiet_if_inherited()  # before Keras loads below
    write_lock = threading.Lock()

    def send(kind: str, payload: Mapping[str, Any]) -> None:
        with write_lock, contextlib.suppress(OSError, ValueError):  # the app is gone
            out.write(json.dumps({"kind": kind, "payload": payload}) + "\n")

    runs: queue.Queue = queue.Queue()
    verdicts: queue.Queue = queue.Queue()
    cancel = threading.Event()
    interrupt = threading.Event()
    # SIGTERM (a service manager stopping the app's process group): stop as the app would.
    signal.signal(signal.SIGTERM, lambda signum, frame: (interrupt.set(), runs.put(None)))
    state_lock = threading.Lock()
    current: dict[str, Any] = {"run": None, "cancelled": set()}

    def listen() -> None:
        for line in sys.stdin:
            try:
                request = json.loads(line)
            except json.JSONDecodeError:
                continue
            if "run" in request:
                runs.put((request["run"], bool(request.get("resume")), bool(request.get("prune"))))
            elif "verdict" in request:
                verdicts.put(request)
            elif "cancel" in request:
                with state_lock:
                    current["cancelled"].add(request["cancel"])
                    if request["cancel"] == current["run"]:
                        cancel.set()
            elif "interrupt" in request:
                with state_lock:
                    if request["interrupt"] == current["run"]:
                        interrupt.set()
            elif "stop" in request:
                break
        # The app has gone (or asked to stop): the run in progress stops, resumable.
        interrupt.set()
        verdicts.put(None)
        runs.put(None)

    threading.Thread(target=listen, name="requests", daemon=True).start()

    def ask_app(epoch: int, logs: dict[str, Any]) -> bool:
        """Whether the app's study stops the trial after `epoch` (no when the app has gone)."""
        send("prune", {"epoch": epoch, "logs": floats_only(logs)})
        verdict = verdicts.get()
        if verdict is None:
            verdicts.put(None)  # gone for good: every later question gets the same answer
            return False
        if verdict.get("error"):
            raise PruneError(verdict["error"])
        return bool(verdict["verdict"])

    # Keras, the backend and the layers load now, once: after the output is quieted (above)
    # and in the child only (the app's side of this module, `TrainingProcess`, needs none).
    from builder_ui.engine import train

    store = RunStore(Path(store_dir), recover=False)
    while True:
        request = runs.get()
        if request is None:
            return 0
        run_id, resume, searched = request
        with state_lock:
            current["run"] = run_id
            if run_id in current["cancelled"]:
                cancel.set()  # cancelled before it started: the engine records it so
            else:
                cancel.clear()
        try:
            record = train.run(
                None,
                store=store,
                run_id=run_id,
                resume=resume,
                callbacks=[MessageCallback(send)],
                cancel=cancel,
                interrupt=interrupt,
                prune=ask_app if searched else None,
            )
            status, error = record.status, record.error
        except Exception as failure:  # engine.run records what it can
            status, error = "failed", f"{type(failure).__name__}: {failure}"
        with state_lock:
            current["run"] = None
        send("end", {"status": status, "error": error})


if __name__ == "__main__":
    sys.exit(main())
