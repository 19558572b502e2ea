"""Stream I/O: publishing entries, creating groups, reading new and pending entries."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import redis
from redis.asyncio import Redis as AsyncRedis
from redis.exceptions import AskError, RedisClusterException

from workers.core.keys import EVENT_FIELD
from workers.redis.connection import is_cluster
from workers.redis.replication import Durability, check_confirmed, queue_wait


@dataclass(slots=True)
class Delivery:
    """One stream entry handed to this worker. ``fields`` is empty for a deleted entry."""

    entry_id: str
    fields: dict[str, str]
    deliveries: int = 1
    reclaimed: bool = False
    # Reclaimed when due after it was held back on purpose (a retry's backoff): no takeover.
    retry: bool = False
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
    if durability is not None and isinstance(client, redis.RedisCluster):
        return _durable_on_cluster(client, entries, durability)
    with client.pipeline(transaction=False) as pipe:
        for stream, payload in entries:
            pipe.xadd(stream, {EVENT_FIELD: payload})
        if durability is not None:
            queue_wait(pipe, durability)
        replies = pipe.execute()
    if durability is not None:
        check_confirmed(int(replies.pop()), durability, f"{len(entries)} event(s)")
    return [str(i) for i in replies]


def _durable_on_cluster(
    client: redis.RedisCluster,
    entries: list[tuple[str, str]],
    durability: Durability,
    retry: bool = True,
) -> list[str]:
    """WAIT counts the replicas of one master's connection, and a cluster pipeline cannot
    route it (it names no key): so the entries of each master go down one pipeline on that
    master's own connection, followed by its WAIT. A master that moved (a failover since the
    slot map was read) answers MOVED: the map is read again and the writes sent once more
    (a copy written before is a duplicate, which the gate runs once). A master that does not
    answer has the map read again for the caller's retry."""
    try:
        return _per_master(client, entries, durability)
    except AskError:  # MOVED too (redis-py parses the code away: match the type)
        if not retry:
            raise
        client.nodes_manager.initialize()  # type: ignore[no-untyped-call]
        return _durable_on_cluster(client, entries, durability, retry=False)
    except (redis.ConnectionError, redis.TimeoutError, RedisClusterException):
        with contextlib.suppress(redis.RedisError, RedisClusterException, OSError):
            client.nodes_manager.initialize()  # type: ignore[no-untyped-call]
        raise


def _per_master(
    client: redis.RedisCluster, entries: list[tuple[str, str]], durability: Durability
) -> list[str]:
    by_node: dict[str, list[int]] = {}
    nodes = {}
    for n, (stream, _) in enumerate(entries):
        node = client.get_node_from_key(stream)  # type: ignore[no-untyped-call]
        nodes[node.name] = node
        by_node.setdefault(node.name, []).append(n)
    ids: list[str] = [""] * len(entries)
    for name, positions in by_node.items():
        master = client.get_redis_connection(nodes[name])
        written = xadd_routed(master, [entries[n] for n in positions], durability)
        for n, entry_id in zip(positions, written, strict=True):
            ids[n] = entry_id
    return ids


async def ensure_group(client: AsyncRedis, stream: str, group: str, start: str = "0") -> bool:
    """Create the group (and the stream) if missing; it starts at the stream's first entry
    (or after ``start``), so events published before any worker ran are not skipped. True
    if created."""
    try:
        await client.xgroup_create(stream, group, id=start, mkstream=True)
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


async def read_new_paused(
    client: AsyncRedis,
    stream: str,
    group: str,
    consumer: str,
    count: int,
    block_ms: int | None,
    paused_key: str,
) -> tuple[list[Delivery], str | None]:
    """``read_new``, and the group's pause flag as it was when the read returned: the GET
    follows the XREADGROUP on the same connection, so Redis runs it once the read unblocks
    and a pause set before an entry was added is always seen with that entry. No extra
    round trip. A cluster may keep the flag on another node: read after the read there."""
    if is_cluster(client):
        batch = await read_new(client, stream, group, consumer, count, block_ms)
        flag = await client.get(paused_key)
        return batch, None if flag is None else str(flag)
    async with client.pipeline(transaction=False) as pipe:
        pipe.xreadgroup(group, consumer, {stream: ">"}, count=count, block=block_ms)
        pipe.get(paused_key)
        reply, flag = await pipe.execute()
    return to_deliveries(reply), None if flag is None else str(flag)


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
