"""End-to-end test: `keras-seq ui` starts a real Gradio server showing the layer catalogue."""

from __future__ import annotations

import http.cookiejar
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

STARTUP_TIMEOUT_S = 60


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
        with opener.open(url, data=body, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


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

    def __init__(self, tmp_path: Path, *extra_args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = tmp_path / "server.log"
        env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "PYTHONUNBUFFERED": "1"}
        argv = [sys.executable, "-m", "builder_ui.cli", "ui", "--port", str(self.port)]
        argv += ["--runs", str(tmp_path / "runs"), *extra_args]
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path
            )

    def log(self) -> str:
        """Return what the server printed so far."""
        return self.log_path.read_text(errors="replace")

    def wait_until_up(self) -> None:
        """Poll the root page until it answers; fail if the server dies or times out."""
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"server exited with {self.process.returncode}:\n{self.log()}")
            try:
                get(self.url + "/")
                return
            except OSError:
                time.sleep(0.5)
        pytest.fail(f"server did not answer within {STARTUP_TIMEOUT_S} s:\n{self.log()}")

    def stop(self) -> int:
        """Terminate the server (SIGTERM, then SIGKILL after 15 s) and return its exit code."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=15)
        return self.process.returncode


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """A running server without authentication."""
    running = Server(tmp_path)
    try:
        running.wait_until_up()
        yield running
    finally:
        running.stop()


@pytest.mark.timeout(180)
def test_ui_serves_page_with_layer_catalogue_on_loopback_only(server: Server):
    status, page = get(server.url + "/")
    assert status == 200
    assert "<html" in page.lower()

    status, body = get(server.url + "/config")
    assert status == 200
    config = json.loads(body)
    assert config["title"] == "keras_seq builder"
    text = json.dumps(config)
    assert "# keras_seq builder" in text
    assert "is coming" in text
    assert "CECLSTM" in text
    assert "CECLSTMCell" in text

    if os.path.exists("/proc/net/tcp"):
        assert listening_addresses(server.port) == {"0100007F"}  # 127.0.0.1 only

    assert server.stop() == 0, server.log()
    assert "running on http://127.0.0.1:" in server.log()


@pytest.mark.timeout(180)
def test_ui_with_auth_serves_the_catalogue_only_after_login(tmp_path: Path):
    running = Server(tmp_path, "--auth", "alice:s3cret")
    try:
        running.wait_until_up()
        status, body = get(running.url + "/config")
        assert status == 401
        assert "CECLSTM" not in body

        session = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar())
        )
        wrong = {"username": "alice", "password": "wrong"}
        assert get(running.url + "/login", wrong, session)[0] >= 400
        assert get(running.url + "/config", opener=session)[0] == 401

        right = {"username": "alice", "password": "s3cret"}
        assert get(running.url + "/login", right, session)[0] == 200
        status, body = get(running.url + "/config", opener=session)
        assert status == 200
        assert "CECLSTM" in body
    finally:
        running.stop()
