"""One reading of every stream, group, consumer and worker, from Redis summaries only.

A sample costs the same with 100 entries or 1,000,000: XINFO STREAM/GROUPS/CONSUMERS, the
XPENDING summary, the engine's counters and retention records, the rate budgets' levels, the
model usage hash, the run duration histogram and each group's own counters, in three
pipelined round trips, O(streams + groups + workers + budgets). Nothing here reads a stream,
a pending entries list or a dead-letter stream (a stream's first entry comes with XINFO
STREAM).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import redis

from workers.core.keys import Keys, dead_stream, is_dead_stream
from workers.core.lua import lua_script
from workers.monitor.records import (
    ConsumerInfo,
    GroupInfo,
    Sample,
    StreamInfo,
    UsageByType,
    WorkerInfo,
)
from workers.redis import stats
from workers.redis.consumers import pruned_field
from workers.redis.pipelines import queue_script, queues_time, server_ms
from workers.retention import TrimRecord
from workers.runtime.ratelimit import Budget, Level, levels, queue_levels

# The sample's records live in records.py; they are imported from here too.
__all__ = [
    "MAX_STREAMS",
    "WORKER_WINDOW_MS",
    "ConsumerInfo",
    "GroupInfo",
    "Sample",
    "StreamInfo",
    "UsageByType",
    "WorkerInfo",
    "collect",
]

# A worker whose heartbeat is older than this is left out of the index query; its hash
# expires on its own (two beats), this only bounds the index read; it is refreshed at
# least every minute (engine/housekeeping.FULL_BEAT_S).
WORKER_WINDOW_MS = 120_000
MAX_WORKERS = 500
MAX_STREAMS = 200
# Per stream in the second round trip: XINFO STREAM, XINFO GROUPS, the dead letters' XLEN,
# the counters' HGETALL and the waiting runs' ZCARD.
PER_STREAM = 6
StreamReply = tuple[Any, Any, Any, Any, Any, Any]
# Per group in the third round trip: XINFO CONSUMERS, the oldest pending entry, the pause
# flag and the group's own counters.
PER_GROUP = 4


def _int(value: Any, default: int | None = None) -> int | None:
    try:
        return default if value is None else int(value)
    except (TypeError, ValueError):
        return default


OLDEST_PENDING = lua_script(__package__, "oldest_pending")


@dataclass(frozen=True, slots=True)
class _Index:
    now_ms: int
    names: list[str]
    workers: dict[str, int]
    budgets: list[Level]
    usage: UsageByType
    durations: dict[str, stats.Durations]


def collect(
    client: redis.Redis,
    keys: Keys,
    extra_streams: tuple[str, ...] = (),
    budgets: Mapping[str, Budget] | None = None,
) -> Sample:
    """Read one sample: three round trips, whatever the size of the streams.

    ``budgets`` are the configured rate budgets (``workers.from_settings.rate_budgets()``); their
    levels are read in the first round trip, so showing them costs no extra one."""
    index = _index(client, keys, extra_streams, budgets or {})
    stream_replies, heartbeats = _streams_and_workers(client, keys, index.names, index.workers)
    workers = _workers(heartbeats, index.workers, index.now_ms)
    live = {w.consumer for w in workers}
    groups, broken = _groups(client, keys, index.names, stream_replies, live)
    streams = [
        _isolated(name, reply, groups.get(name, []), broken.get(name, ""))
        for name, reply in zip(index.names, stream_replies, strict=True)
    ]
    return Sample(index.now_ms, streams, workers, index.budgets, index.usage, index.durations)


def _index(
    client: redis.Redis, keys: Keys, extra: tuple[str, ...], budgets: Mapping[str, Budget]
) -> _Index:
    with client.pipeline(transaction=False) as pipe:
        timed = queues_time(pipe)
        pipe.smembers(keys.streams_index)
        pipe.zrevrange(keys.workers_index, 0, MAX_WORKERS - 1, withscores=True)
        pipe.hgetall(keys.usage)
        pipe.hgetall(keys.run_durations)
        queue_levels(pipe, keys.prefix, budgets)
        replies = pipe.execute()
    now_ms = server_ms(client, replies.pop(0) if timed else None)
    members, recent, usage, durations, *budget_replies = replies
    names = sorted({str(m) for m in members} | set(extra))
    names = [n for n in names if not is_dead_stream(n)][:MAX_STREAMS]
    workers = {
        str(name): int(score) for name, score in recent if now_ms - score <= WORKER_WINDOW_MS
    }
    # Levels refill to the server's clock, the one the bucket script stamps them with.
    return _Index(
        now_ms,
        names,
        workers,
        levels(budget_replies, budgets, now_ms),
        stats.usage_by_type(usage if isinstance(usage, dict) else {}),
        stats.durations_by_type(durations if isinstance(durations, dict) else {}),
    )


def _streams_and_workers(
    client: redis.Redis, keys: Keys, names: list[str], workers: dict[str, int]
) -> tuple[list[StreamReply], list[_Heartbeat]]:
    with client.pipeline(transaction=False) as pipe:
        for name in names:
            pipe.xinfo_stream(name)
            pipe.xinfo_groups(name)
            pipe.xlen(dead_stream(name))
            pipe.hgetall(keys.stats(name))
            pipe.hgetall(keys.retention(name))
            pipe.zcard(keys.waiting(name))
        for consumer in workers:
            pipe.hgetall(keys.worker(consumer))
            pipe.pttl(keys.worker(consumer))
        replies = pipe.execute(raise_on_error=False)
    split = PER_STREAM * len(names)
    per_stream = [
        (replies[i], replies[i + 1], replies[i + 2], replies[i + 3], replies[i + 4], replies[i + 5])
        for i in range(0, split, PER_STREAM)
    ]
    heartbeats = [
        _Heartbeat(dict(beat) if isinstance(beat, dict) else {}, left_ms)
        for beat, left_ms in zip(replies[split::2], replies[split + 1 :: 2], strict=True)
    ]
    return per_stream, heartbeats


@dataclass(frozen=True, slots=True)
class _Heartbeat:
    """A worker's heartbeat hash ({} once expired) and its remaining lifetime (PTTL)."""

    fields: dict[str, str]
    left_ms: Any

    def age_ms(self) -> int | None:
        """How long ago it beat: an unchanged heartbeat only has its expiry pushed back
        (engine/housekeeping.py), so its last beat is its expiry less its lifetime
        (``ttl_ms``). None when it does not say its lifetime (an older worker)."""
        ttl_ms = _int(self.fields.get("ttl_ms"), None)
        if not ttl_ms or not isinstance(self.left_ms, int) or self.left_ms <= 0:
            return None
        age_ms = ttl_ms - self.left_ms
        return age_ms if age_ms >= 0 else None


def _workers(
    heartbeats: list[_Heartbeat], seen_ms: dict[str, int], now_ms: int
) -> list[WorkerInfo]:
    out = []
    for (name, last_seen_ms), heartbeat in zip(seen_ms.items(), heartbeats, strict=True):
        beat = heartbeat.fields
        if not beat:  # expired: the process is gone
            continue
        out.append(
            WorkerInfo(
                consumer=beat.get("consumer", name),
                host=beat.get("host", ""),
                pid=_int(beat.get("pid"), 0) or 0,
                stream=beat.get("stream", ""),
                group=beat.get("group", ""),
                concurrency=_int(beat.get("concurrency"), 0) or 0,
                processed=_int(beat.get("processed"), 0) or 0,
                inflight=_int(beat.get("inflight"), 0) or 0,
                current=beat.get("current", ""),
                state=beat.get("state", ""),
                started_ms=_int(beat.get("started_ms"), 0) or 0,
                last_seen_ms=_last_beat(heartbeat.age_ms(), last_seen_ms, now_ms),
            )
        )
    return out


def _last_beat(age_ms: int | None, indexed_ms: int, now_ms: int) -> int:
    """When the worker last beat: from its heartbeat's expiry where it says its lifetime,
    else the workers index's score (written with each whole heartbeat)."""
    if age_ms is None:
        return indexed_ms
    return max(indexed_ms, now_ms - age_ms)


def _groups(
    client: redis.Redis,
    keys: Keys,
    names: list[str],
    stream_replies: list[StreamReply],
    live: set[str],
) -> tuple[dict[str, list[GroupInfo]], dict[str, str]]:
    """XINFO CONSUMERS, the oldest pending entry and the pause flag of every group, in one
    round trip; and, per stream, why one of its groups could not be read."""
    found: list[tuple[str, dict[str, Any]]] = []
    counters: dict[str, Any] = {}
    for name, (info, groups, _, counts, _, _) in zip(names, stream_replies, strict=True):
        if isinstance(info, dict) and isinstance(groups, list):
            found += [(name, g) for g in groups]
            counters[name] = counts if isinstance(counts, dict) else {}
    if not found:
        return {}, {}
    oldest_pending = client.register_script(OLDEST_PENDING)
    with client.pipeline(transaction=False) as pipe:
        for stream, group in found:
            pipe.xinfo_consumers(stream, group["name"])
            waits = keys.waits(stream, str(group["name"]))
            queue_script(pipe, oldest_pending, [stream, waits], [group["name"]])
            pipe.get(keys.paused(stream, str(group["name"])))
            # Per agent (issue 31): its group's counters, in the same round trip.
            pipe.hgetall(keys.group_stats(stream, str(group["name"])))
        replies = pipe.execute(raise_on_error=False)
    out: dict[str, list[GroupInfo]] = {}
    broken: dict[str, str] = {}
    for i, (stream, group) in enumerate(found):
        consumers, oldest, paused, own = replies[PER_GROUP * i : PER_GROUP * (i + 1)]
        try:
            info = _group_info(stream, group, consumers, oldest, live)
        except Exception as exc:  # one odd reply must not blank every stream's numbers
            broken.setdefault(stream, f"group {str(group.get('name'))!r} cannot be read: {exc}")
            continue
        if isinstance(paused, str):
            info = replace(info, paused_by=paused)
        pruned = _int(counters[stream].get(pruned_field(info.name)), 0) or 0
        info = replace(info, consumers_pruned=pruned, counters=group_counters(own))
        out.setdefault(stream, []).append(info)
    return out, broken


def group_counters(reply: Any) -> dict[str, int]:
    """A group's counters hash as every counter's value (0 where absent or garbled: one odd
    field must not hide the group's pending entries)."""
    raw = reply if isinstance(reply, dict) else {}
    return {c: _int(raw.get(c), 0) or 0 for c in stats.COUNTERS}


def _group_info(
    stream: str, group: dict[str, Any], consumers: Any, oldest: Any, live: set[str]
) -> GroupInfo:
    rows = consumers if isinstance(consumers, list) else []
    if isinstance(oldest, Exception):
        if "NOGROUP" not in str(oldest):
            raise oldest
        oldest = None  # the group was removed since XINFO GROUPS: nothing is pending
    first_id, first_idle, due = [*(oldest or []), None, None, None][:3]
    return GroupInfo(
        stream=stream,
        name=str(group["name"]),
        consumers=[
            ConsumerInfo(
                name=str(c["name"]),
                pending=int(c["pending"]),
                idle_ms=int(c["idle"]),
                inactive_ms=_int(c.get("inactive")),
                live=str(c["name"]) in live,
            )
            for c in rows
        ],
        pending=int(group["pending"]),
        lag=_int(group.get("lag")),
        entries_read=_int(group.get("entries-read")),
        last_delivered_id=str(group.get("last-delivered-id", "")),
        oldest_pending_id=str(first_id) if first_id is not None else None,
        oldest_pending_idle_ms=int(first_idle) if first_idle is not None else None,
        oldest_pending_due_ms=int(float(due)) if due is not None else None,
    )


def _isolated(name: str, reply: StreamReply, groups: list[GroupInfo], error: str) -> StreamInfo:
    """The stream's info, or its name and what went wrong: never an exception."""
    try:
        info = _stream_info(name, reply, groups)
    except Exception as exc:  # a garbled counter or reply: this stream only
        return StreamInfo(
            name, False, 0, None, "", 0, dict.fromkeys(stats.COUNTERS, 0), [], _why(exc)
        )
    return replace(info, error=info.error or error)


def _why(exc: Exception) -> str:
    return f"cannot be read: {exc}"


def _refused(reply: Any) -> str:
    """Redis' refusal of XINFO STREAM, except "no such key" (a stream not created yet)."""
    if isinstance(reply, Exception) and "no such key" not in str(reply).lower():
        return _why(reply)
    return ""


def _stream_info(name: str, reply: StreamReply, groups: list[GroupInfo]) -> StreamInfo:
    info, _, dead, counters, trimmed, waiting = reply
    exists = isinstance(info, dict)
    data = info if isinstance(info, dict) else {}
    first = data.get("first-entry")
    return StreamInfo(
        name=name,
        exists=exists,
        length=int(data.get("length", 0)),
        entries_added=_int(data.get("entries-added")),
        last_id=str(data.get("last-generated-id", "")),
        dead_letters=int(dead) if isinstance(dead, int) else 0,
        counters={c: int((counters or {}).get(c, 0)) for c in stats.COUNTERS}
        if isinstance(counters, dict)
        else dict.fromkeys(stats.COUNTERS, 0),
        groups=sorted(groups, key=lambda g: g.name),
        error=_refused(info),
        first_id=str(first[0]) if first and first[0] is not None else None,
        trim=TrimRecord.parse(trimmed),
        waiting=waiting if isinstance(waiting, int) else 0,
    )
