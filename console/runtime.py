"""Console glue: the engine's settings and Redis connection, shared by views and the sampler."""

from __future__ import annotations

from typing import Any

from channels_redis.pubsub import RedisPubSubChannelLayer

from console.sampler import Sampler
from workers.core.keys import Keys
from workers.from_settings import engine_config, rate_budgets, redis_client, redis_url


def keys() -> Keys:
    return engine_config().keys


def make_sampler() -> Sampler:
    return Sampler(redis_client(), keys(), engine_config().claim_idle_ms, rate_budgets())


class ChannelLayer(RedisPubSubChannelLayer):  # type: ignore[misc]
    """channels-redis on the same server as the engine (``REDIS_URL`` or the embedded one).

    The URL is resolved when the layer is first used, not when settings load, so the embedded
    server is found (or started) only by processes that need it.
    """

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("hosts", [redis_url()])
        kwargs.setdefault("prefix", keys().channels)
        super().__init__(**kwargs)
