"""A group's retry queue: the entries the engine holds back until a due time (a retry's
backoff, a rate budget, a duplicate's twin), with their last error and attempt n of max.

Built on the due times the engine writes beside each hold (``Keys.waits``, a sorted set
scored by due time: ``workers/engine/waits.py``): the next ``limit`` due, each checked
against its pending entry (an operator's Retry now or a claim changes the idle time, not
the record), in two round trips and one indexed query, whatever the size of the group.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

import redis

from console.reads import browse, why
from workers.core.keys import EVENT_FIELD, Keys
from workers.core.registry import default_registry

LIMIT = 50


@dataclass(frozen=True, slots=True)
class RetryRow:
    id: str
    consumer: str
    event_type: str
    deliveries: int  # attempts so far: the entry's delivery count
    max_deliveries: int  # the agent's, else the worker's: dead-lettered after that many
    due_ms: int
    due_in_ms: int
    why: str  # "failed", "timed out", "waiting for budget github:42"... ("" if unrecorded)
    error: str  # the last failure's first line, "" if it has none


def _max_deliveries(event_type: str, default: int) -> int:
    spec = default_registry.get(event_type) if event_type in default_registry else None
    declared = spec.declared.max_deliveries if spec is not None else None
    return declared or default


def retry_queue(
    client: redis.Redis,
    keys: Keys,
    stream: str,
    group: str,
    at_ms: int,
    held: Callable[[int, int], bool],
    max_deliveries: int,
    limit: int = LIMIT,
) -> list[RetryRow]:
    """The next ``limit`` held-back entries of the group, soonest due first. ``held(idle_ms,
    due_ms)``: is the pending entry still held back by that due time (the health rule:
    its idle time agrees)?"""
    due = cast(
        list[tuple[str, float]],
        client.zrangebyscore(
            keys.waits(stream, group), at_ms, "+inf", start=0, num=limit, withscores=True
        ),
    )
    if not due:
        return []
    with client.pipeline(transaction=False) as pipe:
        for entry_id, _ in due:
            pipe.xpending_range(stream, group, entry_id, entry_id, 1)
            pipe.xrange(stream, entry_id, entry_id, count=1)
        replies: list[Any] = pipe.execute()
    steps = why.latest(stream, [entry_id for entry_id, _ in due])
    rows = []
    for n, (entry_id, score) in enumerate(due):
        pending, entry = replies[2 * n], replies[2 * n + 1]
        if not pending:
            continue  # taken meanwhile, acked or dead-lettered
        p = pending[0]
        if not held(int(p["time_since_delivered"]), int(score)):
            continue  # retried by hand or claimed: no longer held back
        raw = entry[0][1].get(EVENT_FIELD) if entry else None
        step = steps.get(entry_id, why.Latest("", "", ""))
        event_type = browse.summarize(raw).type if raw is not None else ""
        rows.append(
            RetryRow(
                id=entry_id,
                consumer=str(p["consumer"]),
                event_type=event_type,
                deliveries=int(p["times_delivered"]),
                max_deliveries=_max_deliveries(event_type, max_deliveries),
                due_ms=int(score),
                due_in_ms=int(score) - at_ms,
                why=why.reason(step.kind, step.detail),
                error=step.error,
            )
        )
    return rows
