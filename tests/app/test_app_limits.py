"""The server's limits end to end: a real `keras-seq ui` process, real HTTP.

- One upload request is capped as a whole: three files of 9 MiB, each under
  the 10 MiB file cap, are answered 413 together (a chunked body too).
- A multipart boundary longer than RFC 2046's 70 characters is answered 400.
- A spec naming a server file is refused through the API at `task.path`,
  and nothing is queued.
- With `--auth`, failed logins from one address are answered 429 for a
  while (`Retry-After`), and a successful login starts afresh. The address is
  the TCP peer's; an `X-Forwarded-For` counts only from a `--trusted-proxy`.

The default limits are those of the app of the test process (`server` in
`tests/app/conftest.py`); the others' servers never train, so they start with
`--no-warm-up`.
"""

from __future__ import annotations

import http.client
import json
import secrets
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable

import pytest
import yaml

from builder_ui.engine.store import RunStore
from tests.app.app_server import Server, get

pytestmark = pytest.mark.large

MIB = 2**20
SOCKET_TIMEOUT_S = 60  # a hang guard for one request on a loaded machine


def raw_post(
    server: Server, path: str, headers: dict[str, str], body: Iterable[bytes]
) -> tuple[int, str]:
    """POST over a plain socket; return (status, text) even when the server stops reading.

    A server that refuses a large body answers and closes without reading the
    rest, so sending may fail (broken pipe, reset) after the answer has come:
    the answer is read all the same.
    """
    lines = [f"POST {path} HTTP/1.1", f"Host: 127.0.0.1:{server.port}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    with socket.create_connection(("127.0.0.1", server.port), timeout=SOCKET_TIMEOUT_S) as sock:
        try:
            sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
            for chunk in body:
                sock.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = b""
        try:
            while chunk := sock.recv(65536):
                answer += chunk
        except ConnectionResetError:
            pass
    head, _, text = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 "), answer[:200]
    return int(head.split()[1]), text.decode(errors="replace")


def multipart(files: list[tuple[str, bytes]]) -> tuple[dict[str, str], list[bytes]]:
    """The headers and body of a form upload of `files`, as a browser sends it."""
    boundary = secrets.token_hex(16)
    parts = []
    for name, content in files:
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n'
            "Content-Type: text/csv\r\n\r\n".encode()
        )
        parts += [content, b"\r\n"]
    parts.append(f"--{boundary}--\r\n".encode())
    headers = {
        "Content-Type": f"multipart/form-data; boundary={boundary}",
        "Content-Length": str(sum(len(p) for p in parts)),
    }
    return headers, parts


def test_three_files_of_9_mib_in_one_upload_request_are_answered_413(server):
    nine = b"1,2,3\n" * (9 * MIB // 6)
    headers, body = multipart([(f"part{i}.csv", nine) for i in range(3)])
    status, text = raw_post(server, "/gradio_api/upload", headers, body)
    assert status == 413, text
    assert "Request too large" in text and "--max-upload-mb" in text
    # One such file is taken.
    headers, body = multipart([("one.csv", nine)])
    status, text = raw_post(server, "/gradio_api/upload", headers, body)
    assert status == 200, text
    assert len(json.loads(text)) == 1


def test_a_chunked_upload_over_the_cap_is_answered_413(server):
    nine = b"1,2,3\n" * (9 * MIB // 6)
    headers, parts = multipart([(f"part{i}.csv", nine) for i in range(3)])
    del headers["Content-Length"]
    headers["Transfer-Encoding"] = "chunked"
    framed = [b"%x\r\n%s\r\n" % (len(part), part) for part in parts] + [b"0\r\n\r\n"]
    status, text = raw_post(server, "/gradio_api/upload", headers, framed)
    assert status == 413, text
    assert "Request too large" in text


def multipart_with_boundary(boundary: str) -> tuple[dict[str, str], list[bytes]]:
    """One small file, framed by `boundary` (RFC 2046 allows 1 to 70 characters)."""
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="a.csv"\r\n'
        f"Content-Type: text/csv\r\n\r\n1,2\r\n--{boundary}--\r\n"
    ).encode()
    headers = {
        "Content-Type": f"multipart/form-data; boundary={boundary}",
        "Content-Length": str(len(body)),
    }
    return headers, [body]


def test_an_upload_with_a_100_kb_boundary_is_answered_400_without_a_traceback(server):
    before = server.log()
    headers, body = multipart_with_boundary("b" * 100_000)
    status, text = raw_post(server, "/gradio_api/upload", headers, body)
    assert status == 400, text
    assert "boundary" in text and "100,000 characters" in text and "at most 70" in text
    # A boundary of the longest length RFC 2046 allows is taken.
    headers, body = multipart_with_boundary("b" * 70)
    assert raw_post(server, "/gradio_api/upload", headers, body)[0] == 200
    assert "Traceback" not in server.log()[len(before) :]


def test_a_spec_naming_a_server_file_is_refused_through_the_api_and_nothing_queued(server):
    from gradio_client import Client

    client = Client(server.url, verbose=False, download_files=str(server.runs.parent / "dl"))
    spec = {
        "version": 2,
        "name": "server-file",
        "task": {"type": "csv_sequences", "path": "/etc/passwd", "inputs": "tokens"},
        "model": {"type": "sequence_classifier", "encoder": {"type": "rnn", "units": 4}},
        "train": {"epochs": 1},
    }
    with RunStore(server.runs) as store:
        before = store.list_runs()
    message, *_ = client.predict(yaml.safe_dump(spec), api_name="/queue")
    assert message.startswith("**Nothing was queued.**"), message
    assert "`task.path`" in message and "'/etc/passwd'" in message and "--data-dir" in message
    assert "root:" not in message  # nothing of the file
    with RunStore(server.runs) as store:
        assert store.list_runs() == before


def login(url: str, password: str) -> tuple[int, str | None]:
    """POST the login form; return the status and the `Retry-After` header."""
    data = urllib.parse.urlencode({"username": "alice", "password": password}).encode()
    try:
        with urllib.request.urlopen(url + "/login", data=data, timeout=SOCKET_TIMEOUT_S) as answer:
            return answer.status, answer.headers.get("Retry-After")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Retry-After")


def test_failed_logins_are_answered_429_for_a_while_and_a_good_login_starts_afresh(tmp_path):
    running = Server(tmp_path, "--auth", "alice:s3cret", "--no-warm-up")
    try:
        running.wait_until_up()
        assert [login(running.url, "guess")[0] for _ in range(3)] == [400, 400, 400]
        status, retry_after = login(running.url, "guess")
        assert status == 429 and retry_after == "1"
        assert login(running.url, "s3cret")[0] == 429  # even the right password waits
        # The server still answers everything else at once while it refuses logins.
        assert get(running.url + "/config")[0] == 401
        time.sleep(int(retry_after) + 0.5)  # wait out the delay; later is only safer
        assert login(running.url, "s3cret")[0] == 200
        assert [login(running.url, "guess")[0] for _ in range(3)] == [400, 400, 400]
    finally:
        code = running.stop()
    assert code == 0, running.log()


def login_from(port: int, password: str, source: str, forwarded: str | None = None) -> int:
    """POST the login form from the local address `source`, with an `X-Forwarded-For`."""
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if forwarded is not None:
        headers["X-Forwarded-For"] = forwarded
    connection = http.client.HTTPConnection(
        "127.0.0.1", port, timeout=SOCKET_TIMEOUT_S, source_address=(source, 0)
    )
    try:
        body = urllib.parse.urlencode({"username": "alice", "password": password})
        connection.request("POST", "/login", body=body, headers=headers)
        return connection.getresponse().status
    finally:
        connection.close()


def test_the_login_throttle_counts_the_peer_and_believes_forwarded_for_only_from_its_proxy(
    tmp_path,
):
    # The whole of 127.0.0.0/8 is this machine: 127.0.0.2 stands for a reverse proxy.
    running = Server(
        tmp_path, "--auth", "alice:s3cret", "--trusted-proxy", "127.0.0.2", "--no-warm-up"
    )
    try:
        running.wait_until_up()
        # A client (loopback, not the named proxy) making up a new address for each guess.
        guesses = [
            login_from(running.port, "guess", "127.0.0.1", f"198.51.100.{i}") for i in range(5)
        ]
        assert guesses == [400, 400, 400, 429, 429]
        # Through the proxy: each forwarded client is counted on its own.
        proxied = [login_from(running.port, "guess", "127.0.0.2", "203.0.113.7") for _ in range(4)]
        assert proxied == [400, 400, 400, 429]
        assert login_from(running.port, "guess", "127.0.0.2", "203.0.113.8") == 400
        # The client's own entries before the proxy's are not believed.
        assert login_from(running.port, "guess", "127.0.0.2", "192.0.2.1, 203.0.113.7") == 429
    finally:
        code = running.stop()
    assert code == 0, running.log()


def test_the_upload_cap_the_data_dirs_and_no_warm_up_are_the_command_lines(server, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    running = Server(tmp_path, "--max-upload-mb", "1", "--data-dir", str(data), "--no-warm-up")
    try:
        running.wait_until_up()
        # Just over 1 MiB: refused by the per-file cap, which --max-upload-mb sets.
        headers, body = multipart([("big.csv", b"1,2\n" * (MIB // 4 + 1))])
        status, text = raw_post(running, "/gradio_api/upload", headers, body)
        assert status == 413, text
        headers, body = multipart([("small.csv", b"1,2\n" * (MIB // 8))])
        assert raw_post(running, "/gradio_api/upload", headers, body)[0] == 200

        from gradio_client import Client

        client = Client(running.url, verbose=False, download_files=str(tmp_path / "dl"))
        spec = {
            "version": 2,
            "name": "elsewhere",
            "task": {"type": "csv_sequences", "path": str(tmp_path / "x.csv"), "inputs": "tokens"},
            "model": {"type": "sequence_classifier", "encoder": {"type": "rnn", "units": 4}},
            "train": {"epochs": 1},
        }
        message, *_ = client.predict(yaml.safe_dump(spec), api_name="/queue")
        assert "**Nothing was queued.**" in message and f"({data.resolve()})" in message, message
        # `--no-warm-up`: no training process was started, and none for a spec refused; the
        # app of the test process, started without it, has its training process waiting.
        assert running.children() == []
        assert any("builder_ui.engine.worker" in command for command in server.children())
    finally:
        code = running.stop()
    assert code == 0, running.log()


def test_a_page_parameter_in_a_link_gets_the_page_not_a_server_error(server):
    # Gradio reads `?page=` as a page of a multipage app and answered 500 (a KeyError) for
    # any other name; the app has one page, so a link with one opens it, its other
    # parameters kept. The server is the session's: only what it logged meanwhile is this
    # request's (an earlier test's page reload may have logged a KeyError of its own).
    before = server.log()
    status, body = get(f"{server.url}/?page=oops&open=compare&q=lstm")
    assert status == 200 and "keras_seq builder" in body
    assert "Internal Server Error" not in body
    assert "KeyError" not in server.log()[len(before) :]
