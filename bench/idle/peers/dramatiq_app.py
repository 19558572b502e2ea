"""``dramatiq bench.idle.peers.dramatiq_app``: the Redis broker, one no-op actor."""

from __future__ import annotations

import os

import dramatiq
from dramatiq.brokers.redis import RedisBroker

dramatiq.set_broker(RedisBroker(url=os.environ["REDIS_URL"]))


@dramatiq.actor
def noop() -> None:
    """Never sent: the worker stays idle."""
