"""Engine counters and worker heartbeats, read by ``manage.py streams`` and the console."""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

import redis
from redis.asyncio.client import Pipeline

from workers.core.keys import Keys
from workers.core.records import Usage

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
    "deferred",  # an agent out of a rate budget: rerun when its token is due
)


def queue_counts(pipe: Pipeline, keys: Keys, stream: str, counts: Counter[str]) -> None:
    non_zero = {k: v for k, v in counts.items() if v}
    if not non_zero:
        return
    key = keys.stats(stream)
    for name, value in non_zero.items():
        pipe.hincrby(key, name, value)
    pipe.sadd(keys.streams_index, stream)


USAGE_FIELDS = ("calls", "prompt_tokens", "completion_tokens", "cost_usd")


def queue_usage(pipe: Pipeline, keys: Keys, spent: dict[str, Usage]) -> None:
    """What this batch's model calls cost, per event type (replayed steps were paid before)."""
    for event_type, usage in spent.items():
        if not usage.calls:
            continue
        pipe.hincrby(keys.usage, f"{event_type}|calls", usage.calls)
        pipe.hincrby(keys.usage, f"{event_type}|prompt_tokens", usage.prompt_tokens)
        pipe.hincrby(keys.usage, f"{event_type}|completion_tokens", usage.completion_tokens)
        pipe.hincrbyfloat(keys.usage, f"{event_type}|cost_usd", usage.cost_usd)


def usage_by_type(raw: dict[str, str]) -> dict[str, dict[str, float]]:
    """``HGETALL`` of the usage hash, as ``{type: {calls, prompt_tokens, ...}}``."""
    out: dict[str, dict[str, float]] = {}
    for field, value in raw.items():
        event_type, _, name = field.rpartition("|")
        if name in USAGE_FIELDS and event_type:
            out.setdefault(event_type, dict.fromkeys(USAGE_FIELDS, 0.0))[name] = float(value)
    return out


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
