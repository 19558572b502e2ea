"""Stream I/O: publishing entries, creating groups, reading new and pending entries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis
from redis.asyncio import Redis as AsyncRedis

from workers.core.keys import EVENT_FIELD
from workers.redis.replication import Durability, check_confirmed, queue_wait


@dataclass(slots=True)
class Delivery:
    """One stream entry handed to this worker. ``fields`` is empty for a deleted entry."""

    entry_id: str
    fields: dict[str, str]
    deliveries: int = 1
    reclaimed: bool = False
    # Set once its envelope decodes (for the timeline); empty for entries that do not.
    event_hash: str = ""

    @property
    def raw_event(self) -> str | None:
        return self.fields.get(EVENT_FIELD)

    @property
    def deleted(self) -> bool:
        return not self.fields


def xadd_many(
    client: redis.Redis, stream: str, payloads: list[str], durability: Durability | None = None
) -> list[str]:
    """XADD each JSON payload; one round trip. Returns the entry ids in order. With
    ``durability``, returns only once that many replicas hold them (else NotReplicated)."""
    return xadd_routed(client, [(stream, payload) for payload in payloads], durability)


def xadd_routed(
    client: redis.Redis, entries: list[tuple[str, str]], durability: Durability | None = None
) -> list[str]:
    """XADD each ``(stream, JSON payload)``, as ``xadd_many`` does (one pipeline)."""
    with client.pipeline(transaction=False) as pipe:
        for stream, payload in entries:
            pipe.xadd(stream, {EVENT_FIELD: payload})
        if durability is not None:
            queue_wait(pipe, durability)
        replies = pipe.execute()
    if durability is not None:
        check_confirmed(int(replies.pop()), durability, f"{len(entries)} event(s)")
    return [str(i) for i in replies]


async def ensure_group(client: AsyncRedis, stream: str, group: str) -> bool:
    """Create the group (and the stream) if missing; it starts at the stream's first entry,
    so events published before any worker ran are not skipped. True if created."""
    try:
        await client.xgroup_create(stream, group, id="0", mkstream=True)
    except redis.ResponseError as exc:
        if "BUSYGROUP" in str(exc):
            return False
        raise
    return True


def to_deliveries(reply: Any) -> list[Delivery]:
    """Flatten an XREADGROUP reply for one stream (RESP2 list or RESP3 dict)."""
    if not reply:
        return []
    streams = reply.values() if isinstance(reply, dict) else [r[1] for r in reply]
    out: list[Delivery] = []
    for entries in streams:
        for item in entries:
            if item and item[0] is not None:
                out.append(Delivery(str(item[0]), dict(item[1] or {})))
    return out


async def read_new(
    client: AsyncRedis, stream: str, group: str, consumer: str, count: int, block_ms: int | None
) -> list[Delivery]:
    reply = await client.xreadgroup(group, consumer, {stream: ">"}, count=count, block=block_ms)
    return to_deliveries(reply)


async def read_own_pending(
    client: AsyncRedis, stream: str, group: str, consumer: str, after: str, count: int
) -> list[Delivery]:
    """This consumer's pending entries after ``after`` (history read: no block)."""
    reply = await client.xreadgroup(group, consumer, {stream: after}, count=count)
    return to_deliveries(reply)


async def delivery_counts(
    client: AsyncRedis, stream: str, group: str, entry_ids: list[str]
) -> dict[str, int]:
    """Delivery count of each pending entry, one round trip (XPENDING per id)."""
    if not entry_ids:
        return {}
    async with client.pipeline(transaction=False) as pipe:
        for entry_id in entry_ids:
            pipe.xpending_range(stream, group, min=entry_id, max=entry_id, count=1)
        replies = await pipe.execute()
    counts: dict[str, int] = {}
    for entry_id, rows in zip(entry_ids, replies, strict=True):
        if rows:
            counts[entry_id] = int(rows[0]["times_delivered"])
    return counts


async def pending_count(client: AsyncRedis, stream: str, group: str) -> int:
    summary = await client.xpending(stream, group)
    return int(summary["pending"] or 0)
