"""``taskiq worker bench.idle.peers.taskiq_app:broker``: taskiq-redis's stream broker (the one
its README starts with, and the one with acknowledgements), one no-op task."""

from __future__ import annotations

import os

from taskiq_redis import RedisStreamBroker

broker = RedisStreamBroker(url=os.environ["REDIS_URL"])


@broker.task
async def noop() -> None:
    """Never sent: the worker stays idle."""
