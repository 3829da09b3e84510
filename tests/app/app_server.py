"""A `keras-seq ui` server in a subprocess, for the app's end-to-end tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

STARTUP_TIMEOUT_S = 240  # a hang guard: a loaded 2-core machine takes far longer than a quiet one


def free_port() -> int:
    """Return a TCP port that is free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(url: str, data: dict[str, str] | None = None, opener=None) -> tuple[int, str]:
    """GET `url` (POST the form `data` if given); return (status, body) for any HTTP answer."""
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    opener = opener or urllib.request.build_opener()
    try:
        with opener.open(url, data=body, timeout=10) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode(errors="replace")


def listening_addresses(port: int) -> set[str]:
    """Return the local IPv4/IPv6 addresses (hex, as in /proc/net) listening on `port`."""
    addresses = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        if not os.path.exists(table):
            continue
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].rsplit(":", 1)
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                addresses.add(address)
    return addresses


class Server:
    """A `keras-seq ui` subprocess on a free loopback port, with its output in a log file."""

    def __init__(
        self,
        directory: Path,
        *extra_args: str,
        program: Sequence[str] = (sys.executable, "-m", "builder_ui.cli"),
        env: Mapping[str, str] | None = None,
    ) -> None:
        """Start `program ui` (default: this interpreter's `keras-seq`) over `directory`.

        `program` and `env` (default: this process's environment) let a test start the
        `keras-seq` of another environment, such as a virtualenv the wheel was installed in.
        """
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.runs = directory / "runs"
        self.log_path = directory / "server.log"
        base = os.environ if env is None else env
        environment = {
            **base,
            "GRADIO_ANALYTICS_ENABLED": "False",
            "PYTHONUNBUFFERED": "1",
            "KERAS_BACKEND": base.get("KERAS_BACKEND", "tensorflow"),
        }
        argv = [*program, "ui", "--port", str(self.port)]
        argv += ["--runs", str(self.runs), *extra_args]
        self.started = time.monotonic()
        self.up_after: float | None = None
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env=environment, cwd=directory
            )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def children(self) -> list[str]:
        """The command lines of the processes the server has started and not yet reaped."""
        found = []
        for task in Path(f"/proc/{self.process.pid}/task").iterdir():
            for pid in (task / "children").read_text().split():
                try:
                    found.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" "))
                except FileNotFoundError:  # it ended meanwhile
                    continue
        return [command.decode(errors="replace").strip() for command in found]

    def wait_until_up(self) -> None:
        """Poll the root page until it answers; fail if the server dies or times out."""
        deadline = self.started + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"server exited with {self.process.returncode}:\n{self.log()}")
            try:
                get(self.url + "/")
            except OSError:
                time.sleep(0.2)
                continue
            self.up_after = time.monotonic() - self.started
            return
        pytest.fail(f"server did not answer within {STARTUP_TIMEOUT_S} s:\n{self.log()}")

    def stop(self) -> int:
        """Terminate the server (SIGTERM, then SIGKILL after 90 s) and return its exit code.

        90 s is a hang guard: a clean stop takes a second or two on a quiet machine, and
        much longer on a loaded one (it stops the training process it warmed up).
        """
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=90)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)
        return self.process.returncode


@contextmanager
def serving(directory: Path, *extra_args: str, **options) -> Iterator[Server]:
    """A `Server` over `directory` (`options`: its `program` and `env`), up on entry and
    stopped on exit."""
    running = Server(directory, *extra_args, **options)
    try:
        running.wait_until_up()
        yield running
    finally:
        running.stop()
