"""The suite's own Redis server, when the session started one (no ``REDIS_URL``)."""

from __future__ import annotations

from workers.redis.embedded import PrivateServer

_private: list[PrivateServer] = []


def remember(server: PrivateServer) -> None:
    """Called by the session's ``redis_url`` fixture once it started its own server."""
    _private.append(server)


def private_server() -> PrivateServer | None:
    """The suite's own server, or None when the suite runs on ``REDIS_URL``."""
    return _private[0] if _private else None
