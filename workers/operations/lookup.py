"""Read-only Redis lookups for operator actions: dry runs, job estimates, a run's event.

Nothing here writes; what changes state is in ``actions.py``.
"""

from __future__ import annotations

from typing import Any, cast

import redis

from workers.core.keys import EVENT_FIELD, dead_stream


def still_pending(client: redis.Redis, stream: str, group: str, ids: list[str]) -> list[str]:
    """Those of ``ids`` that are pending in the group (one round trip)."""
    if not ids:
        return []
    with client.pipeline(transaction=False) as pipe:
        for entry_id in ids:
            pipe.xpending_range(stream, group, min=entry_id, max=entry_id, count=1)
        replies: list[Any] = pipe.execute()
    return [entry_id for entry_id, rows in zip(ids, replies, strict=True) if rows]


def still_dead(client: redis.Redis, stream: str, dead_ids: list[str]) -> list[str]:
    """Those of ``dead_ids`` still in ``<stream>:dead`` (one round trip)."""
    if not dead_ids:
        return []
    dead = dead_stream(stream)
    with client.pipeline(transaction=False) as pipe:
        for dead_id in dead_ids:
            pipe.xrange(dead, min=dead_id, max=dead_id, count=1)
        replies: list[Any] = pipe.execute()
    return [dead_id for dead_id, rows in zip(dead_ids, replies, strict=True) if rows]


def consumer_pending(client: redis.Redis, stream: str, group: str, consumer: str) -> int:
    """How many entries one consumer holds, from the group's summary (no scan)."""
    summary: Any = client.xpending(stream, group)
    for row in summary.get("consumers") or []:
        if row["name"] == consumer:
            return int(row["pending"])
    return 0


def entry_event(client: redis.Redis, stream: str, entry_id: str) -> str | None:
    """The ``event`` field of one stream entry, or None when the entry is gone."""
    fields = entry_fields(client, stream, entry_id)
    return str(fields[EVENT_FIELD]) if fields and EVENT_FIELD in fields else None


def entry_fields(client: redis.Redis, stream: str, entry_id: str) -> dict[str, str] | None:
    """Every field of one stream entry, or None when the entry is gone."""
    rows: Any = client.xrange(stream, min=entry_id, max=entry_id, count=1)
    return {str(k): str(v) for k, v in rows[0][1].items()} if rows else None


def server_time_ms(client: redis.Redis) -> int:
    """The Redis server's clock: the one stream entry ids are made from."""
    seconds, micros = cast(tuple[int, int], client.time())
    return int(seconds) * 1000 + int(micros) // 1000
