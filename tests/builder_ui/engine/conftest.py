"""Fixtures of the engine's Ray tests: a Ray of the test run's own, never the machine's."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from builder_ui.engine import interrupts

RAY_START_TIMEOUT_S = 180  # a hang guard: a head node starts in seconds on a quiet machine


@pytest.fixture
def ray_tmpdir(ray_temp_root, monkeypatch):
    """A Ray temp directory of the test's own, so no test reads or writes the machine's /tmp/ray.

    Short (`/tmp/rayXXXXXXXX`, the `ray_temp_root` fixture): Ray's sockets live under it, and
    a Unix socket path may not exceed 107 bytes. Also no `RAY_ADDRESS` from the environment.

    Ray's token authentication is off (`RAY_AUTH_MODE=disabled`) in every Ray test, as for the
    two-node cluster of `test_ray_no_shared_disk.py`. Seen with Ray 2.60: after an instance
    with the default (token) mode in the same pytest worker, that cluster's driver could not
    start its queue actor (it died before it ran), so the test failed after the earlier Ray tests.
    """
    pytest.importorskip("ray")
    root = ray_temp_root
    monkeypatch.setenv("RAY_TMPDIR", str(root))
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return root / "ray"  # what Ray makes of RAY_TMPDIR


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray cluster of 2 CPUs shared by the test run's Ray tests: its `address`, `root`.

    A head node (`ray start --head --block`) in a process group of its own, started on first
    use and stopped when the session ends (under pytest-xdist each worker process is a
    session, so each has its own). Its directory (`RAY_TMPDIR`) is a fresh one under the
    system's temp directory, short for Ray's socket paths (see `ray_tmpdir`), never the
    machine's /tmp/ray. Token authentication is off (see `ray_tmpdir`). Each test joins it as
    a driver of its own (`local_ray`), so what one test leaves in the driver's process (an
    initialised Ray) never reaches the next: only the cluster's start is shared.
    """
    pytest.importorskip("ray")
    root = Path(tempfile.mkdtemp(prefix="ray", dir=tempfile.gettempdir()))
    port = _free_port()
    env = {
        **os.environ,
        "RAY_TMPDIR": str(root),
        "RAY_AUTH_MODE": "disabled",
        "RAY_USAGE_STATS_ENABLED": "0",
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    env.pop("RAY_ADDRESS", None)
    ray_command = str(Path(sys.executable).parent / "ray")
    with (root / "head.log").open("wb") as log:
        head = subprocess.Popen(
            [
                ray_command,
                "start",
                "--head",
                f"--port={port}",
                "--num-cpus=2",
                "--include-dashboard=false",
                "--node-ip-address=127.0.0.1",
                "--disable-usage-stats",
                "--block",
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + RAY_START_TIMEOUT_S
        while True:
            if head.poll() is not None:
                log = (root / "head.log").read_text(errors="replace")
                pytest.fail(f"the Ray head node exited with {head.returncode}:\n{log[-3000:]}")
            with socket.socket() as sock:
                sock.settimeout(1)
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"the Ray head node took no connection within {RAY_START_TIMEOUT_S} s")
            time.sleep(0.2)
        yield SimpleNamespace(address=f"127.0.0.1:{port}", root=root)
    finally:
        # No job is left to drain (a SIGTERM would wait 30 s for one): the node goes at once.
        # Its processes live in sessions of their own; they are ended by the directory they
        # were given, which is this fixture's alone.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(head.pid, signal.SIGKILL)
        head.wait(timeout=60)
        subprocess.run(["pkill", "-9", "-f", str(root)], check=False)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def local_ray(ray_cluster, monkeypatch):
    """Ray initialised in this process, joined to the run's `ray_cluster`; shut down after.

    Its jobs' workers load the test's Keras backend (as `ray.init(runtime_env=…)` of a
    caller would set it).
    """
    ray = pytest.importorskip("ray")
    monkeypatch.setenv("RAY_TMPDIR", str(ray_cluster.root))
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    backend = os.environ.get("KERAS_BACKEND", "tensorflow")
    with interrupts.handlers_kept():  # ray.init installs a SIGTERM handler
        ray.init(
            address=ray_cluster.address,
            log_to_driver=False,
            runtime_env={"env_vars": {"KERAS_BACKEND": backend, "TF_CPP_MIN_LOG_LEVEL": "2"}},
        )
        yield ray
        ray.shutdown()
