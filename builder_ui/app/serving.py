"""What the web server adds to every answer: a Host check and the usual security headers.

- Without `--auth` the app listens on loopback, where any page the user opens
  in a browser could reach it through DNS rebinding (a name of the attacker's
  that resolves to 127.0.0.1): so a request whose `Host` is not the address the
  app was bound to, `localhost` or a loopback address is refused with 400
  (Starlette's `TrustedHostMiddleware`). With `--auth` the login guards it.
- Every HTTP answer says `X-Frame-Options: DENY` and CSP `frame-ancestors
  'none'` (no other site may frame the app), `X-Content-Type-Options:
  nosniff` and `Referrer-Policy: no-referrer`.
- A request body is capped as a whole (`RequestSizeLimit`): Gradio's
  `max_file_size` caps each file of an upload, not the request, so three
  files just under the cap were all taken. A `Content-Length` over the cap is
  answered 413 before the body is read; a body without one (chunked) is
  counted as it streams and answered 413 when it passes the cap.
- A multipart request whose boundary is longer than RFC 2046's 70 characters
  (or empty) is answered 400 (`MultipartBoundaryCheck`): Gradio's upload route
  answered a 100 KB boundary with 500 and a traceback in the log.
- With `--auth`, failed logins are throttled per client address
  (`LoginThrottle`): after `FREE_LOGIN_FAILURES`, `POST /login` is answered
  429 with `Retry-After` for a delay that doubles with each failure, up to
  `MAX_LOGIN_DELAY_S`; a successful login forgets the address. No request
  waits: a refused one is answered at once, so the event loop never sleeps.
- The client address is the TCP peer's. uvicorn, which Gradio runs, replaces
  it by the last `X-Forwarded-For` entry when the peer is an address it
  trusts: by default 127.0.0.1 and ::1, so any client on this machine, or
  behind a local proxy, could send a new made-up address with each login
  guess and never meet the throttle. The app names the trusted peers itself
  (`trusted_proxies`): none, unless `keras-seq ui --trusted-proxy ADDR` names
  the reverse proxy in front of it.

Plain ASGI and Starlette; the page passes `middleware(host, auth, ...)` to
Gradio's FastAPI app (`app_kwargs`) and launches it inside `trusted_proxies(...)`.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import math
import os
import socket
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware

from builder_ui.app.uploads import MAX_UPLOAD_BYTES

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
SECURITY_HEADERS = (
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)
# The multipart framing of an upload around its file (boundaries, part headers, the
# file's name): a few hundred bytes; 64 KiB leaves room for long names and extra fields.
FORM_OVERHEAD_BYTES = 64 * 1024
# RFC 2046, section 5.1.1: a multipart boundary is 1 to 70 characters.
MAX_BOUNDARY_CHARS = 70
# Failed logins from one address before the throttle answers 429, and its delays.
FREE_LOGIN_FAILURES = 3
FIRST_LOGIN_DELAY_S = 1.0
MAX_LOGIN_DELAY_S = 60.0
# Addresses remembered at most, and how long one is kept after its last failure.
MAX_LOGIN_CLIENTS = 10_000
FORGET_LOGIN_AFTER_S = 15 * 60
LOGIN_PATHS = ("/login", "/login/")
# uvicorn's setting of the peers whose `X-Forwarded-For` it believes (read when Gradio makes
# its server; default "127.0.0.1,::1").
FORWARDED_ALLOW_IPS = "FORWARDED_ALLOW_IPS"


class SecurityHeaders:
    """ASGI middleware: add `SECURITY_HEADERS` to every HTTP response that lacks them."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(k, v) for k, v in SECURITY_HEADERS if k not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _answer(send: Any, status: int, text: str, headers: tuple = ()) -> None:
    """Send a whole plain-text answer (the request's body, if any, is left unread)."""
    body = text.encode("utf-8")
    start_headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(body)).encode()),
        *headers,
    ]
    await send({"type": "http.response.start", "status": status, "headers": start_headers})
    await send({"type": "http.response.body", "body": body})


def _multipart_boundary(scope: dict) -> str | None:
    """The `boundary` parameter of a `multipart/*` Content-Type; None for any other request."""
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-type":
            media_type, *parameters = value.decode("latin-1").split(";")
            if not media_type.strip().lower().startswith("multipart/"):
                return None
            for parameter in parameters:
                key, _, text = parameter.strip().partition("=")
                if key.strip().lower() == "boundary":
                    return text.strip().strip('"')
            return None
    return None


class MultipartBoundaryCheck:
    """ASGI middleware: answer 400 to a multipart request whose boundary RFC 2046 refuses.

    Checked from the headers, before the body is read; other requests pass untouched.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            boundary = _multipart_boundary(scope)
            if boundary is not None and not 1 <= len(boundary) <= MAX_BOUNDARY_CHARS:
                text = (
                    f"Bad request: the multipart boundary has {len(boundary):,} characters; "
                    f"RFC 2046 allows at most {MAX_BOUNDARY_CHARS} (and at least 1)."
                )
                await _answer(send, 400, text, ((b"connection", b"close"),))
                return
        await self.app(scope, receive, send)


class OnePage:
    """ASGI middleware: drop a `page` query parameter from requests for the page itself.

    Gradio's page route reads `?page=NAME` as one of a multipage app's pages and answers any
    other name with a server error (a KeyError and its traceback in the log). This app has
    one page, so `/?page=x` gets it, as `/` does; the rest of the query stays.
    """

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope.get("path") in ("", "/"):
            query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), True)
            if any(key == "page" for key, _ in query):
                kept = urlencode([(key, value) for key, value in query if key != "page"])
                scope = {**scope, "query_string": kept.encode("latin-1")}
        await self.app(scope, receive, send)


def _content_length(scope: dict) -> int | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the HTTP server refuses a malformed length itself
    return None


class RequestTooLarge(Exception):
    """Raised from `receive` when a streamed body passes the cap; `RequestSizeLimit` answers."""


class RequestSizeLimit:
    """ASGI middleware: answer 413 to a request whose body is larger than `max_bytes`.

    Checked twice: the declared `Content-Length` before the app runs (nothing is
    read), and the bytes actually received, as the app reads them (a chunked
    body declares no length). Past the cap, the app's `receive` raises
    `RequestTooLarge`, whatever the app answers then is dropped, and the client
    gets the 413.
    """

    def __init__(self, app: Any, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    def refusal(self, size: int | None) -> str:
        """The 413's text: how large the request was, and the cap."""
        got = f"{size:,} bytes" if size is not None else "more"
        return (
            f"Request too large: {got}; the app takes at most {self.max_bytes:,} bytes in one "
            "request (one data file at a time; the cap is set by `keras-seq ui --max-upload-mb`)."
        )

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = _content_length(scope)
        if length is not None and length > self.max_bytes:
            await _answer(send, 413, self.refusal(length), ((b"connection", b"close"),))
            return
        received, exceeded, started = 0, False, False

        async def counting_receive() -> dict:
            nonlocal received, exceeded
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    exceeded = True
                    raise RequestTooLarge(received)
            return message

        async def guarded_send(message: dict) -> None:
            nonlocal started
            if exceeded and not started:
                return  # the app's answer to the refusal; the 413 goes instead
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, guarded_send)
        except RequestTooLarge:
            pass
        if exceeded and not started:
            await _answer(send, 413, self.refusal(None), ((b"connection", b"close"),))


def login_delay(failures: int) -> float:
    """Seconds a client waits after `failures` failed logins in a row: 0, then 1, 2, 4 … 60."""
    if failures < FREE_LOGIN_FAILURES:
        return 0.0
    return min(FIRST_LOGIN_DELAY_S * 2.0 ** (failures - FREE_LOGIN_FAILURES), MAX_LOGIN_DELAY_S)


@dataclass
class _Failures:
    count: int = 0
    blocked_until: float = 0.0
    last: float = 0.0


class LoginThrottle:
    """ASGI middleware: answer 429 to `POST /login` from an address that keeps failing.

    An attempt counts as failed from the moment it arrives until Gradio answers
    it 200 (logged in), which forgets the address; so parallel guesses count
    too. After `FREE_LOGIN_FAILURES` failures, the next attempt within
    `login_delay(failures)` seconds is answered 429 with `Retry-After` at once,
    without reaching Gradio. The address is `scope["client"]`: the TCP peer's,
    or the client's that a `--trusted-proxy` forwards (`trusted_proxies`), never
    a header another client may set. At most `MAX_LOGIN_CLIENTS` addresses are
    remembered, each for `FORGET_LOGIN_AFTER_S` after its last attempt.

    Args:
        app: The ASGI app.
        clock: Seconds, monotonic (tests pass their own).
    """

    def __init__(self, app: Any, clock: Callable[[], float] = time.monotonic) -> None:
        self.app = app
        self.clock = clock
        self._clients: OrderedDict[str, _Failures] = OrderedDict()

    def _forget_old(self, now: float) -> None:
        while self._clients:
            oldest = next(iter(self._clients.values()))
            if len(self._clients) <= MAX_LOGIN_CLIENTS and now - oldest.last < FORGET_LOGIN_AFTER_S:
                break
            self._clients.popitem(last=False)

    def _attempt(self, address: str, now: float) -> float:
        """Count an attempt; return the seconds left to wait (0: let it through)."""
        self._forget_old(now)
        failures = self._clients.get(address) or _Failures()
        if now < failures.blocked_until:
            return failures.blocked_until - now
        failures.count += 1
        failures.last = now
        failures.blocked_until = now + login_delay(failures.count)
        self._clients[address] = failures
        self._clients.move_to_end(address)
        return 0.0

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if not (
            scope["type"] == "http"
            and scope.get("method") == "POST"
            and scope.get("path") in LOGIN_PATHS
        ):
            await self.app(scope, receive, send)
            return
        address = (scope.get("client") or ("unknown",))[0]
        wait = self._attempt(address, self.clock())
        if wait > 0:
            seconds = math.ceil(wait)
            text = f"Too many failed logins from this address; try again in {seconds} s."
            await _answer(send, 429, text, ((b"retry-after", str(seconds).encode()),))
            return

        async def watching_send(message: dict) -> None:
            if message["type"] == "http.response.start" and message["status"] == 200:
                self._clients.pop(address, None)  # logged in: start afresh
            await send(message)

        await self.app(scope, receive, watching_send)


def check_proxy_address(value: str) -> str:
    """An address or network of a trusted proxy (`10.0.0.5`, `10.0.0.0/8`, `::1`), normalised.

    Raises:
        ValueError: Anything else (a host name, `*`), naming the value.
    """
    text = value.strip().removeprefix("[").removesuffix("]") if isinstance(value, str) else ""
    try:
        if "/" in text:
            return str(ipaddress.ip_network(text, strict=False))
        return str(ipaddress.ip_address(text))
    except ValueError:
        raise ValueError(
            f"expected the IP address or network of a reverse proxy (10.0.0.5, 10.0.0.0/8, ::1), "
            f"got {value!r}"
        ) from None


@contextlib.contextmanager
def trusted_proxies(addresses: Sequence[str] = ()) -> Iterator[None]:
    """While the server is made, uvicorn believes `X-Forwarded-For` only from `addresses`.

    uvicorn reads `FORWARDED_ALLOW_IPS` when Gradio makes its `uvicorn.Config`
    (in `launch`); an empty value trusts no peer, so `scope["client"]` stays the
    TCP peer's address. With a proxy named, a request from it gets the last
    forwarded address that is not itself a trusted proxy, so a client cannot
    choose its own by putting entries before the proxy's.
    """
    addresses = [check_proxy_address(address) for address in addresses]
    previous = os.environ.get(FORWARDED_ALLOW_IPS)
    os.environ[FORWARDED_ALLOW_IPS] = ",".join(addresses)
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(FORWARDED_ALLOW_IPS, None)
        else:
            os.environ[FORWARDED_ALLOW_IPS] = previous


class ListenError(Exception):
    """The server cannot listen where it was asked to; the message names the host and port."""


def check_listen(host: str, port: int) -> None:
    """Refuse at once a host and port the server could not listen on, a port in use above all.

    Binds a socket as uvicorn does (`SO_REUSEADDR`, so a port another server just
    left is free) and closes it: Gradio found a port in use only after the app was
    built and its training processes started, and said so in a traceback.

    Raises:
        ListenError: Naming the port in use, or the host that cannot be listened on.
    """
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(
            host.strip("[]"), port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except (socket.gaierror, UnicodeError) as error:
        raise ListenError(f"cannot listen on host {host!r}: {error}") from None
    with socket.socket(family, kind, protocol) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                raise ListenError(
                    f"port {port} on {host} is in use by another program; choose another "
                    "with --port"
                ) from None
            raise ListenError(
                f"cannot listen on {host} port {port}: {error.strerror or error}"
            ) from None


def allowed_hosts(host: str) -> list[str]:
    """The `Host` names an unauthenticated app answers: its bound address and loopback."""
    hosts = [*LOOPBACK_HOSTS]
    if host not in hosts and host not in ("0.0.0.0", "::"):
        hosts.append(host)
    return hosts


def request_cap(max_file_bytes: int = MAX_UPLOAD_BYTES) -> int:
    """The largest request body: one file of `max_file_bytes` and its form's framing."""
    return max_file_bytes + FORM_OVERHEAD_BYTES


def middleware(
    host: str, auth: tuple[str, str] | None, *, max_request_bytes: int | None = None
) -> list[Middleware]:
    """The middleware of the app's server, outermost first.

    Security headers (on every answer, refusals included); the Host check without
    auth; the multipart boundary check; `?page=` dropped (`OnePage`); the request size
    cap (`max_request_bytes`, default `request_cap()`); the login throttle with auth.
    """
    stack = [Middleware(SecurityHeaders)]
    if auth is None:
        stack.append(Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(host)))
    stack.append(Middleware(MultipartBoundaryCheck))
    stack.append(Middleware(OnePage))
    cap = request_cap() if max_request_bytes is None else max_request_bytes
    stack.append(Middleware(RequestSizeLimit, max_bytes=cap))
    if auth is not None:
        stack.append(Middleware(LoginThrottle))
    return stack
