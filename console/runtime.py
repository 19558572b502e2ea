"""Console glue: the engine's settings and Redis connection, shared by every part of the console."""

from __future__ import annotations

from typing import Any

import redis
from channels_redis.pubsub import RedisPubSubChannelLayer
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.connection import parse_url

from workers import from_settings
from workers.core.keys import Keys
from workers.from_settings import engine_config, redis_url
from workers.redis.client_names import CONSOLE

# Tries of a channel-layer command after the first: after a Redis restart the layer's kept
# connection is dead, and redis-py's default (no retry) let the first websocket's subscribe
# fail with it (a 500) while it reconnected for the next one. A retry reconnects (and
# resubscribes the open sockets' channels) at once; a server that stays down still fails.
LAYER_RETRIES = 3
LAYER_BACKOFF_CAP_S = 0.5
LAYER_BACKOFF_BASE_S = 0.05


def keys() -> Keys:
    return engine_config().keys


def redis_client() -> redis.Redis:
    """The engine's shared sync client, its connections named as the console's, so the
    server's CLIENT LIST tells them from the workers'."""
    return from_settings.redis_client(CONSOLE)


def channel_prefix(keys: Keys, url: str) -> str:
    """The channel layer's prefix. Pub/sub channels belong to the server, not to a db number:
    two consoles on one server, in db 0 and db 9, would get each other's ticks, so a db
    other than 0 is part of the prefix."""
    db = int(parse_url(url).get("db", 0) or 0)  # type: ignore[no-untyped-call]
    return keys.channels if db == 0 else f"{keys.channels}:db{db}"


class ChannelLayer(RedisPubSubChannelLayer):  # type: ignore[misc]
    """channels-redis on the same server as the engine (``REDIS_URL`` or the embedded one).

    The URL is resolved when the layer is first used, not when settings load, so the embedded
    server is found (or started) only by processes that need it.
    """

    def __init__(self, **kwargs: Any) -> None:
        backoff = ExponentialBackoff(cap=LAYER_BACKOFF_CAP_S, base=LAYER_BACKOFF_BASE_S)
        host = {
            "address": redis_url(),
            "retry": Retry(backoff, LAYER_RETRIES),
            "client_name": CONSOLE,
        }
        kwargs.setdefault("hosts", [host])
        kwargs.setdefault("prefix", channel_prefix(keys(), kwargs["hosts"][0]["address"]))
        super().__init__(**kwargs)
