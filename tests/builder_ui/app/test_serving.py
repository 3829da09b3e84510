"""The server's request cap and login throttle, in process, through the real middleware stack.

`serving.middleware(...)` wraps a small Starlette app whose `/upload` reads its
whole body and whose `POST /login` answers as Gradio's does (200 for the right
password, 400 otherwise), so each test drives the exact stack the app serves
with. The throttle's clock is the test's own: delays are checked without
waiting for them.
"""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from builder_ui.app import serving

CAP = 1000


async def upload(request: Request) -> PlainTextResponse:
    body = await request.body()
    return PlainTextResponse(f"got {len(body)}")


async def login(request: Request):
    form = await request.form()
    if form.get("password") == "right":
        return JSONResponse({"success": True})
    return JSONResponse({"detail": "Incorrect credentials."}, status_code=400)


def served(auth=None, **kwargs) -> Starlette:
    routes = [Route("/upload", upload, methods=["POST"]), Route("/login", login, methods=["POST"])]
    stack = serving.middleware("127.0.0.1", auth, **kwargs)
    return Starlette(routes=routes, middleware=stack)


def connect(app: Starlette, **kwargs) -> TestClient:
    """A client that names the loopback host (the Host check refuses `testserver`)."""
    return TestClient(app, base_url="http://127.0.0.1", **kwargs)


class Clock:
    """Monotonic seconds that move only when the test says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def with_auth(clock: Clock) -> Starlette:
    """The app with auth, its login throttle reading `clock`."""
    app = served(auth=("alice", "right"))
    app.middleware_stack = app.build_middleware_stack()  # the stack its requests go through
    layer = app.middleware_stack
    while not isinstance(layer, serving.LoginThrottle):
        layer = layer.app
    layer.clock = clock
    return app


def test_the_request_cap_is_one_file_and_64_kib_of_form_by_default():
    assert serving.request_cap() == serving.MAX_UPLOAD_BYTES + 64 * 1024
    assert serving.request_cap(2**20) == 2**20 + 64 * 1024


def test_a_declared_length_over_the_cap_is_answered_413_before_the_app_runs():
    client = connect(served(max_request_bytes=CAP))
    answer = client.post("/upload", content=b"x" * (CAP + 1))
    assert answer.status_code == 413
    assert f"{CAP + 1:,} bytes" in answer.text and f"{CAP:,} bytes" in answer.text
    assert answer.headers["x-frame-options"] == "DENY"  # the refusal carries the headers too
    assert client.post("/upload", content=b"x" * CAP).text == f"got {CAP}"


def test_a_streamed_body_over_the_cap_is_answered_413_and_the_apps_answer_dropped():
    client = connect(served(max_request_bytes=CAP))

    def chunks(total: int):  # no Content-Length: sent chunked
        for _ in range(total // 100):
            yield b"y" * 100

    answer = client.post("/upload", content=chunks(CAP + 100))
    assert answer.status_code == 413 and "Request too large" in answer.text
    assert "got" not in answer.text
    assert client.post("/upload", content=chunks(CAP)).text == f"got {CAP}"


def test_several_files_in_one_request_are_capped_together():
    # Three files, each under the per-file cap, in one multipart request (the 3 x 9 MB).
    client = connect(served(max_request_bytes=CAP + 200))
    files = [("files", (f"f{i}.csv", b"1,2\n" * 100, "text/csv")) for i in range(3)]
    assert client.post("/upload", files=files).status_code == 413
    assert client.post("/upload", files=files[:1]).status_code == 200


def wrong(client: TestClient) -> int:
    return client.post("/login", data={"username": "alice", "password": "guess"}).status_code


def test_failed_logins_get_429_for_a_delay_that_doubles_up_to_a_minute():
    clock = Clock()
    client = connect(with_auth(clock))

    assert [wrong(client) for _ in range(serving.FREE_LOGIN_FAILURES)] == [400, 400, 400]
    delays = []
    for _ in range(9):
        answer = client.post("/login", data={"username": "alice", "password": "right"})
        assert answer.status_code == 429, "blocked: even the right password waits"
        delays.append(int(answer.headers["retry-after"]))
        clock.now += delays[-1]
        assert wrong(client) == 400  # let through once the delay is over
    assert delays == [1, 2, 4, 8, 16, 32, 60, 60, 60]


@pytest.mark.parametrize("attempts", [1, 3])
def test_a_successful_login_forgets_the_failures(attempts):
    clock = Clock()
    client = connect(with_auth(clock))
    for _ in range(attempts):
        wrong(client)
    clock.now += 1
    assert client.post("/login", data={"username": "alice", "password": "right"}).status_code == 200
    assert [wrong(client) for _ in range(serving.FREE_LOGIN_FAILURES)] == [400, 400, 400]


def test_the_throttle_counts_each_client_address_apart():
    clock = Clock()
    app = with_auth(clock)
    attacker, other = (
        connect(app, client=("10.0.0.1", 1)),
        connect(app, client=("10.0.0.2", 1)),
    )
    for _ in range(serving.FREE_LOGIN_FAILURES):
        wrong(attacker)
    assert wrong(attacker) == 429
    assert other.post("/login", data={"username": "alice", "password": "right"}).status_code == 200


def behind_uvicorn(app: Starlette, proxies: list[str]):
    """`app` as uvicorn serves it: wrapped as in the server Gradio makes in `launch`."""
    import uvicorn

    with serving.trusted_proxies(proxies):
        config = uvicorn.Config(app=app, log_level="warning")
    config.load()
    return config.loaded_app


def guess(client: TestClient, forwarded: str) -> int:
    data = {"username": "alice", "password": "guess"}
    return client.post("/login", data=data, headers={"X-Forwarded-For": forwarded}).status_code


def test_a_made_up_forwarded_for_per_guess_does_not_escape_the_throttle():
    # uvicorn alone believes X-Forwarded-For from 127.0.0.1: each guess was a new client.
    app = behind_uvicorn(with_auth(Clock()), [])
    client = connect(app, client=("127.0.0.1", 1))
    assert [guess(client, f"198.51.100.{i}") for i in range(5)] == [400, 400, 400, 429, 429]


def test_a_named_proxys_forwarded_for_is_believed_as_its_last_entry():
    app = behind_uvicorn(with_auth(Clock()), ["10.0.0.0/8"])
    proxy = connect(app, client=("10.1.2.3", 1))
    assert [guess(proxy, "203.0.113.7") for _ in range(4)] == [400, 400, 400, 429]
    assert guess(proxy, "203.0.113.8") == 400  # another client behind the same proxy
    assert guess(proxy, "192.0.2.1, 203.0.113.7") == 429  # entries before the proxy's: ignored


@pytest.mark.parametrize("value", ["proxy.example", "*", "", "10.0.0.300"])
def test_a_trusted_proxy_must_be_an_address_or_network(value):
    with pytest.raises(ValueError, match=rf"expected the IP address or network .*got {value!r}"):
        serving.check_proxy_address(value)
    assert serving.check_proxy_address("[::1]") == "::1"
    assert serving.check_proxy_address("10.0.0.1/8") == "10.0.0.0/8"


def form_with_boundary(boundary: str) -> tuple[dict[str, str], bytes]:
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="files"; filename="a.csv"\r\n'
        f"\r\n1,2\r\n--{boundary}--\r\n"
    ).encode()
    return {"Content-Type": f"multipart/form-data; boundary={boundary}"}, body


@pytest.mark.parametrize(("length", "status"), [(100_000, 400), (71, 400), (70, 200), (1, 200)])
def test_a_multipart_boundary_longer_than_rfc_2046_allows_is_answered_400(length, status):
    headers, body = form_with_boundary("b" * length)
    answer = connect(served()).post("/upload", headers=headers, content=body)
    assert answer.status_code == status, answer.text
    if status == 400:
        assert answer.text == (
            f"Bad request: the multipart boundary has {length:,} characters; RFC 2046 allows "
            "at most 70 (and at least 1)."
        )
    empty = {"Content-Type": 'multipart/form-data; boundary=""'}
    assert connect(served()).post("/upload", headers=empty, content=b"x").status_code == 400
