"""Engine counters and worker heartbeats, read by ``manage.py streams`` and the console."""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
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
    "retried",  # entries held back on purpose (a retry's backoff) taken up again when due
    "deferred",  # an agent out of a rate budget: rerun when its token is due
    "retries",  # failed attempts held for their backoff, to run again (not dead-lettered)
    "cancelled",  # runs an operator cancelled: the agent stopped (or never ran), entry acked
    "waits",  # runs that gave back their slot to wait (ctx.sleep, ctx.wait_for_event)
    "answers",  # waits an event answered: the waiting run resumed
)


def queue_counts(
    pipe: Pipeline, keys: Keys, stream: str, counts: Counter[str], group: str = ""
) -> None:
    """Add to the stream's counters, and to its ``group``'s (one agent's, or the home
    group's: per agent on the console and ``/metrics``)."""
    non_zero = {k: v for k, v in counts.items() if v}
    if not non_zero:
        return
    key = keys.stats(stream)
    own = keys.group_stats(stream, group) if group else None
    for name, value in non_zero.items():
        pipe.hincrby(key, name, value)
        if own is not None:
            pipe.hincrby(own, name, value)
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


# Upper bounds (seconds) of the run duration histogram's buckets: agents range from a few
# milliseconds (a lookup) to minutes (a model loop with tools). Changing them is safe: a
# bucket stored under an old bound is counted in every new bucket at or above it.
DURATION_BUCKETS_S = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    120.0,
    300.0,
)
INF = "+Inf"


# Each bucket's field suffix, ``+Inf`` last: formatted once, not per run.
_BOUNDS = (*(repr(b) for b in DURATION_BUCKETS_S), INF)


def duration_increments(durations_s: Mapping[str, Iterable[float]]) -> dict[str, float]:
    """One batch's run durations, per event type, as increments of the durations hash's fields:
    ``<type>|<bound>`` (runs in that bucket only, not cumulative) and ``<type>|sum``. Summed here
    so a batch of N runs costs a few HINCRBYs, not N."""
    out: dict[str, float] = {}
    for event_type, values in durations_s.items():
        seconds = list(values)
        in_bucket = Counter(bisect_left(DURATION_BUCKETS_S, s) for s in seconds)
        for i, n in in_bucket.items():
            out[f"{event_type}|{_BOUNDS[i]}"] = n
        out[f"{event_type}|sum"] = sum(seconds)
    return out


def queue_durations(pipe: Pipeline, keys: Keys, durations_s: Mapping[str, Iterable[float]]) -> None:
    """The batch's run durations into the shared histogram (every worker adds to one hash)."""
    for name, value in duration_increments(durations_s).items():
        if name.endswith("|sum"):
            pipe.hincrbyfloat(keys.run_durations, name, value)
        else:
            pipe.hincrby(keys.run_durations, name, int(value))


@dataclass(frozen=True, slots=True)
class Durations:
    """One event type's run durations: cumulative bucket counts (``le`` bound -> runs that
    took at most that long, ``+Inf`` last), their total in seconds, and the number of runs."""

    buckets: list[tuple[str, int]]
    sum_s: float
    count: int


def durations_by_type(raw: Mapping[str, str]) -> dict[str, Durations]:
    """``HGETALL`` of the durations hash, as cumulative buckets per event type."""
    counts: dict[str, dict[float, int]] = {}
    sums: dict[str, float] = {}
    for field, value in raw.items():
        event_type, _, name = field.rpartition("|")
        if not event_type:
            continue
        try:
            if name == "sum":
                sums[event_type] = float(value)
            else:
                bound = float("inf") if name == INF else float(name)
                per_type = counts.setdefault(event_type, {})
                per_type[bound] = per_type.get(bound, 0) + int(value)
        except ValueError:  # a field this code never writes: not ours to count
            continue
    out: dict[str, Durations] = {}
    for event_type, per_bound in counts.items():
        buckets = [
            (repr(b), sum(n for stored, n in per_bound.items() if stored <= b))
            for b in DURATION_BUCKETS_S
        ]
        total = sum(per_bound.values())
        out[event_type] = Durations([*buckets, (INF, total)], sums.get(event_type, 0.0), total)
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
    pipe: Pipeline, keys: Keys, consumer: str, info: dict[str, Any], ttl_ms: int, now_ms: int
) -> None:
    key = keys.worker(consumer)
    # A stream a worker reads is known from its first heartbeat, before any event is counted.
    pipe.sadd(keys.streams_index, str(info["stream"]))
    pipe.hset(key, mapping={k: str(v) for k, v in info.items()})
    pipe.pexpire(key, ttl_ms)
    pipe.zadd(keys.workers_index, {consumer: now_ms})
