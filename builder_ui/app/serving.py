"""What the web server adds to every answer: a Host check and the usual security headers.

- Without `--auth` the app listens on loopback, where any page the user opens
  in a browser could reach it through DNS rebinding (a name of the attacker's
  that resolves to 127.0.0.1): so a request whose `Host` is not the address the
  app was bound to, `localhost` or a loopback address is refused with 400
  (Starlette's `TrustedHostMiddleware`). With `--auth` the login guards it.
- Every HTTP answer says `X-Frame-Options: DENY` and CSP `frame-ancestors
  'none'` (no other site may frame the app), `X-Content-Type-Options:
  nosniff` and `Referrer-Policy: no-referrer`.

Plain ASGI and Starlette; the page passes `middleware(host, auth)` to Gradio's
FastAPI app (`app_kwargs`).
"""

from __future__ import annotations

from typing import Any

from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware

LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
SECURITY_HEADERS = (
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
)


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


def allowed_hosts(host: str) -> list[str]:
    """The `Host` names an unauthenticated app answers: its bound address and loopback."""
    hosts = [*LOOPBACK_HOSTS]
    if host not in hosts and host not in ("0.0.0.0", "::"):
        hosts.append(host)
    return hosts


def middleware(host: str, auth: tuple[str, str] | None) -> list[Middleware]:
    """The middleware of the app's server: security headers, and the Host check without auth."""
    stack = [Middleware(SecurityHeaders)]
    if auth is None:
        stack.append(Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts(host)))
    return stack
