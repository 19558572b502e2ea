"""Where a timer candidate hears the timer channel (``Keys.timers_channel``): through the
worker process's one pub/sub listener (``workers/redis/listener.py``: a ``runworker`` holds a
single subscription for all its channels), or through a subscription of its own where there
is no listener (a cluster, whose asyncio client has no pub/sub; tests; scripts).

Either way ``next`` gives the candidate's thread the next message, or None when its wait is
over; an empty message means "look again" (the listener subscribed anew, and messages may
have been missed meanwhile).
"""

from __future__ import annotations

import contextlib
import queue
from typing import Protocol

import redis

from workers.redis.connection import is_cluster

CATCH_UP = ""


class Wakeups(Protocol):
    def open(self, client: redis.Redis, channel: str) -> None:
        """Start hearing ``channel`` (again, after a lost connection)."""

    def next(self, timeout_s: float | None) -> str | None:
        """The next message, waiting up to ``timeout_s`` (None: until one comes)."""

    def put(self, data: str) -> None:
        """Hand the candidate a message from its own process (its stop)."""

    def close(self) -> None: ...


class Relayed:
    """Messages the process's listener hands over (``heard``, ``catch_up``: its Handler,
    called in the event loop's thread), queued for the candidate's thread."""

    def __init__(self) -> None:
        self._messages: queue.SimpleQueue[str] = queue.SimpleQueue()

    async def catch_up(self) -> None:
        self._messages.put(CATCH_UP)

    async def heard(self, data: str) -> None:
        self._messages.put(data)

    def put(self, data: str) -> None:
        """A message from this process itself (its stop), not through Redis."""
        self._messages.put(data)

    def open(self, client: redis.Redis, channel: str) -> None:
        return None  # the listener subscribes

    def next(self, timeout_s: float | None) -> str | None:
        try:
            return self._messages.get(timeout=timeout_s)
        except queue.Empty:
            return None

    def close(self) -> None:
        return None


class OwnSubscription:
    """A subscription of the candidate's own, on a connection that waits as long as it takes
    and sends no health-check PING: silent for hours at rest, and free."""

    def __init__(self) -> None:
        self._subscriber: redis.Redis | None = None
        self._shared: redis.Redis | None = None
        self._pubsub: redis.client.PubSub | None = None
        self._channel = ""

    def open(self, client: redis.Redis, channel: str) -> None:
        self.close()
        self._shared, self._channel = client, channel
        self._subscriber = _unbounded(client)
        self._pubsub = self._subscriber.pubsub(ignore_subscribe_messages=True)  # type: ignore[no-untyped-call]
        self._pubsub.subscribe(channel)

    def next(self, timeout_s: float | None) -> str | None:
        assert self._pubsub is not None
        while True:
            message = self._pubsub.get_message(timeout=timeout_s)  # type: ignore[arg-type]
            if message is not None:
                return str(message.get("data", ""))
            if timeout_s is not None:
                return None
            # None without a timeout: a subscribe confirmation redis-py swallowed; wait on.

    def put(self, data: str) -> None:
        """A stop from this process: published, so the blocked read returns."""
        if self._shared is not None:
            with contextlib.suppress(redis.RedisError, OSError):
                self._shared.publish(self._channel, data)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self._pubsub is not None:
                self._pubsub.close()
            if self._subscriber is not None and self._subscriber is not self._shared:
                self._subscriber.close()  # its own one-connection pool
        self._pubsub = self._subscriber = None


def _unbounded(client: redis.Redis) -> redis.Redis:
    if is_cluster(client):
        return client  # its pub/sub picks a node of its own
    pool = client.connection_pool
    kwargs = dict(pool.connection_kwargs, socket_timeout=None, health_check_interval=0)
    return redis.Redis(
        connection_pool=redis.ConnectionPool(
            connection_class=pool.connection_class, max_connections=1, **kwargs
        )
    )
