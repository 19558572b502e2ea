"""An ASGI guard that refuses an over-large webhook body while it arrives.

Django's ASGI handler reads a whole body (spooling to disk) before any view runs, so the
view alone cannot stop a sender streaming gigabytes. In front of Django, this reads a
``/hooks/`` body into memory up to the limit, answers 413 as soon as it passes it (with or
without a truthful Content-Length), and otherwise hands Django the body it read.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
# Django's handler and channels' routers type their arguments differently: any ASGI app.
App = Any

HOOKS_PREFIX = "/hooks/"


def declared_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def too_large(send: Send, max_bytes: int) -> None:
    body = json.dumps({"error": f"the body is over {max_bytes} bytes"}).encode()
    headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class LimitWebhookBodies:
    def __init__(self, app: App, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith(HOOKS_PREFIX):
            await self.app(scope, receive, send)
            return
        length = declared_length(scope)
        body = (
            None
            if length is not None and length > self.max_bytes
            else await self.read_body(receive)
        )
        if body is None:
            await too_large(send, self.max_bytes)
            return
        await self.app(scope, replay(body, receive), send)

    async def read_body(self, receive: Receive) -> bytes | None:
        """The body, or None once it passes the limit (or the client went away)."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
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
