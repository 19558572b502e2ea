"""Request bodies over the limit are refused while they arrive, on every path.

Two layers, one limit per path (``/hooks/``: ``STREAMDESK_WEBHOOK_MAX_BYTES``; anything else:
``STREAMDESK_MAX_REQUEST_BYTES``):

- under daphne, :mod:`console.edge.daphne_limit` refuses in the HTTP parser, before daphne
  gathers a whole body and hands it to the application at once;
- :class:`LimitRequestBodies`, an ASGI middleware, does the same for any server that
  streams bodies (and behind daphne's layer, for anything it let through): it reads the body
  into memory up to the limit, answers 413 as soon as it passes it (with or without a
  truthful Content-Length), and otherwise hands Django the body it read. Django's own
  handler would read any length (spooling to disk) before a view could object.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
# Django's handler and channels' routers type their arguments differently: any ASGI app.
App = Any

HOOKS_PREFIX = "/hooks/"


@dataclass(frozen=True, slots=True)
class BodyLimits:
    webhook_bytes: int
    default_bytes: int

    def for_path(self, path: str) -> int:
        return self.webhook_bytes if path.startswith(HOOKS_PREFIX) else self.default_bytes


def refusal_body(max_bytes: int) -> bytes:
    return json.dumps({"error": f"the body is over {max_bytes} bytes"}).encode()


def declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def too_large(send: Send, max_bytes: int) -> None:
    body = refusal_body(max_bytes)
    headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class LimitRequestBodies:
    def __init__(self, app: App, limits: BodyLimits) -> None:
        self.app = app
        self.limits = limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        max_bytes = self.limits.for_path(scope["path"])
        length = declared_length(scope)
        body = (
            None
            if length is not None and length > max_bytes
            else await read_body(receive, max_bytes)
        )
        if body is None:
            await too_large(send, max_bytes)
            return
        await self.app(scope, replay(body, receive), send)


async def read_body(receive: Receive, max_bytes: int) -> bytes | None:
    """The body, or None once it passes the limit (or the client went away)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > max_bytes:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def replay(body: bytes, receive: Receive) -> Receive:
    """A receive that gives the body read once, then the client's own messages."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again
