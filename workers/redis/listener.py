"""The worker process's one pub/sub subscription, shared by every feature that follows a
channel (the group's pause flag, cancel requests).

Each feature registers a ``Handler`` for its channel; ``Listener`` subscribes to all of them
on a single connection of its own, hands each message to the handlers of its channel and,
after every (re)subscribe, calls each handler's ``catch_up`` for what was published while
there was no subscription. A lost connection is subscribed again with backoff.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

import redis.asyncio as aredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from workers.redis.connection import is_cluster

log = logging.getLogger("streamdesk.worker")

RESUBSCRIBE_FIRST_S = 0.1
RESUBSCRIBE_MAX_S = 5.0


class Handler(Protocol):
    """What a feature that follows a channel gives the listener."""

    async def catch_up(self) -> None:
        """Called once subscribed, and again after every resubscribe: read what a message
        missed meanwhile would have told."""

    async def heard(self, data: str) -> None:
        """A message published on the handler's channel."""


class Listener:
    """One subscription for the whole process, run while anyone uses it: each ``attend()``
    is matched by one ``leave()``; the first starts the subscription, the last ends it.
    Handlers register before the first ``attend()`` (their channels are subscribed then).
    On a cluster it subscribes to nothing (redis-py's asyncio cluster client has no
    pub/sub): each feature has its own fallback (a recheck, the lease renewal)."""

    def __init__(self, client: aredis.Redis) -> None:
        self.client = client
        self.handlers: dict[str, list[Handler]] = {}
        self._users = 0
        self._task: asyncio.Task[None] | None = None
        self._delay_s = RESUBSCRIBE_FIRST_S

    def register(self, channel: str, handler: Handler) -> None:
        if self._task is not None:
            raise RuntimeError(f"{channel}: handlers register before the listener starts")
        self.handlers.setdefault(channel, []).append(handler)

    def attend(self) -> None:
        self._users += 1
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self.run(), name="listener")

    async def leave(self) -> None:
        self._users -= 1
        if self._users > 0 or self._task is None:
            return
        task, self._task = self._task, None
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    async def run(self) -> None:
        """Subscribe, and subscribe again whenever the connection is lost, until cancelled."""
        if is_cluster(self.client) or not self.handlers:
            return
        subscriber = unbounded(self.client)
        try:
            while True:
                try:
                    await self._listen(subscriber)
                except (aredis.RedisError, OSError) as exc:
                    log.warning(
                        "pub/sub connection lost (%s); subscribing again in %.1f s",
                        exc,
                        self._delay_s,
                    )
                except Exception:  # a handler's bug: the other channels must not go quiet
                    log.exception(
                        "pub/sub listener failed; subscribing again in %.1f s", self._delay_s
                    )
                await asyncio.sleep(self._delay_s)
                self._delay_s = min(self._delay_s * 2, RESUBSCRIBE_MAX_S)
        finally:
            with contextlib.suppress(Exception):
                await subscriber.aclose()

    async def _listen(self, subscriber: aredis.Redis) -> None:
        pubsub = subscriber.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(*self.handlers)
            for handlers in self.handlers.values():
                for handler in handlers:
                    await handler.catch_up()  # what was published while not subscribed
            self._delay_s = RESUBSCRIBE_FIRST_S  # subscribed: the next loss retries soon
            async for message in pubsub.listen():
                await self._dispatch(message.get("channel"), message.get("data"))
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]

    async def _dispatch(self, channel: object, data: object) -> None:
        if not isinstance(channel, str) or not isinstance(data, str):
            return  # the engine's channels carry key names and hashes: text
        for handler in self.handlers.get(channel, ()):
            await handler.heard(data)


def unbounded(client: aredis.Redis) -> aredis.Redis:
    """A client like ``client`` (its name and decoding) whose reads wait as long as it takes:
    a subscription is silent for hours, and the worker client's read timeout (made to
    outlast XREADGROUP BLOCK) would end it every minute. A closed connection still ends it
    at once, whatever retries ``client`` was given: a retried read would resubscribe within
    redis-py, and no handler would catch up on what was published meanwhile."""
    pool = client.connection_pool
    kwargs = dict(
        pool.connection_kwargs,
        socket_timeout=None,
        health_check_interval=0,
        retry=Retry(NoBackoff(), 0),
    )
    return aredis.Redis.from_pool(
        aredis.ConnectionPool(connection_class=pool.connection_class, max_connections=1, **kwargs)
    )
