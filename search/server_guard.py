"""The HTTP face's outer wall: the ASGI middleware that checks the Host header and bounds the body.

:class:`_Guard` wraps the app before any route runs; :func:`_bearer` reads the token a
write carries. Imported by :mod:`search.server`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from .server_errors import _error

# The guard's notes keep the name they always had, so a log filter on it still works.
log = logging.getLogger("search.server")

#: Largest request body accepted, checked on Content-Length and on the bytes streamed.
MAX_BODY_BYTES = 1_000_000

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _host_name(host: str) -> str:
    """The name part of a Host header: 'localhost:8000' → 'localhost', '[::1]:80' → '::1'."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    name, sep, port = host.rpartition(":")
    return name if sep and port.isdigit() and ":" not in name else host


class _Guard:
    """Outermost ASGI layer: checks the Host header, caps request bodies, answers HEAD as GET
    without the body (a load balancer's probe of ``/health``), and turns any crash into a
    generic 500.

    Only the ``allowed_hosts`` names are answered (``*``: any), so a page whose name was
    rebound to 127.0.0.1 cannot read the index through the user's browser.

    The cap is checked on Content-Length first, then on the bytes actually received, so a
    chunked body cannot slip past it; the body is buffered (at most the cap) and replayed.
    A crash is logged with its traceback here and answered with a JSON body that holds no
    detail; Starlette's own handler would also re-raise it into uvicorn's log.
    """

    def __init__(
        self, app: ASGIApp, max_body: int = MAX_BODY_BYTES, allowed_hosts: tuple[str, ...] = ("*",)
    ) -> None:
        self.app = app
        self.max_body = max_body
        self.allowed_hosts = {h.lower().strip("[]") for h in allowed_hosts}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def send_tracking(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        async def reply(status: int, code: str, message: str) -> None:
            resp = _error(status, code, message)
            await resp(scope, receive, send_tracking)

        too_big = f"the request body is larger than {self.max_body:,} bytes: send one article per request"
        headers = dict(scope.get("headers") or [])
        if "*" not in self.allowed_hosts:
            host = _host_name(headers.get(b"host", b"").decode("latin-1"))
            if host not in self.allowed_hosts:
                await reply(
                    400,
                    "bad_host",
                    "the Host header names a host this server does not answer to: "
                    "start it with --allowed-host NAME (or SEARCH_ALLOWED_HOSTS) to allow it",
                )
                return
        length = headers.get(b"content-length")
        if length is not None:
            try:
                declared = int(length)
            except ValueError:
                await reply(400, "bad_request", "Content-Length is not a number")
                return
            if declared > self.max_body:
                await reply(413, "payload_too_large", too_big)
                return
        if scope.get("method") in ("POST", "PUT", "PATCH", "DELETE"):
            chunks: list[bytes] = []
            size = 0
            more = True
            while more:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.max_body:
                    await reply(413, "payload_too_large", too_big)
                    return
                chunks.append(chunk)
                more = message.get("more_body", False)
            body = b"".join(chunks)
            replayed = False

            async def replay() -> Message:
                nonlocal replayed
                if not replayed:
                    replayed = True
                    return {"type": "http.request", "body": body, "more_body": False}
                return await receive()

            inner_receive: Receive = replay
        else:
            inner_receive = receive
        inner_send: Send = send_tracking
        if scope.get("method") == "HEAD":  # answered as GET without the body (HTTP's HEAD)
            scope = {**scope, "method": "GET"}

            async def inner_send(message: Message) -> None:
                if message["type"] == "http.response.body":
                    message = {**message, "body": b""}
                await send_tracking(message)

        try:
            await self.app(scope, inner_receive, inner_send)
        except Exception:
            log.exception("unhandled error in %s %s", scope.get("method"), scope.get("path"))
            if not started:
                await reply(500, "internal", "internal server error: the server log has the details")


# -- the app --------------------------------------------------------------------------
def _bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()
