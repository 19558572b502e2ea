"""Engine counters and worker heartbeats, read by ``manage.py streams`` and the console."""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

import redis
from redis.asyncio.client import Pipeline

from workers.keys import Keys

# Every counter a worker keeps per stream.
COUNTERS = (
    "processed",  # agent ran and its result committed
    "failed",  # agent raised (each failed attempt)
    "dead_lettered",  # moved to <stream>:dead
    "idempotency_hits",  # duplicate of a finished event: acked, nothing ran
    "busy",  # another live worker holds the event's lease
    "fenced",  # a result refused because the lease was taken over
    "deleted",  # a pending entry whose payload was deleted from the stream
    "reclaimed",  # entries taken over from idle consumers
)


def queue_counts(pipe: Pipeline, keys: Keys, stream: str, counts: Counter[str]) -> None:
    non_zero = {k: v for k, v in counts.items() if v}
    if not non_zero:
        return
    key = keys.stats(stream)
    for name, value in non_zero.items():
        pipe.hincrby(key, name, value)
    pipe.sadd(keys.streams_index, stream)


def read_counts(client: redis.Redis, keys: Keys, streams: list[str]) -> dict[str, dict[str, int]]:
    with client.pipeline(transaction=False) as pipe:
        for stream in streams:
            pipe.hgetall(keys.stats(stream))
        replies = pipe.execute()
    return {
        stream: {name: int(reply.get(name, 0)) for name in COUNTERS}
        for stream, reply in zip(streams, replies, strict=True)
    }


def known_streams(client: redis.Redis, keys: Keys) -> list[str]:
    return sorted(str(s) for s in cast(set[str], client.smembers(keys.streams_index)))


def queue_heartbeat(
    pipe: Pipeline, keys: Keys, consumer: str, info: dict[str, Any], ttl_s: int, now_ms: int
) -> None:
    key = keys.worker(consumer)
    # A stream a worker reads is known from its first heartbeat, before any event is counted.
    pipe.sadd(keys.streams_index, str(info["stream"]))
    pipe.hset(key, mapping={k: str(v) for k, v in info.items()})
    pipe.expire(key, ttl_s)
    pipe.zadd(keys.workers_index, {consumer: now_ms})
