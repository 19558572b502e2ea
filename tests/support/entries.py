"""Pending entries, dead letters and live consumers, shaped as the engine leaves them."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time

import redis

from workers.core.keys import Keys, dead_stream
from workers.models import AuditRecord, Door
from workers.operations import Actor
from workers.redis import stats

STREAM = "streamdesk:events"
GROUP = "agents"
ALICE = Actor("alice", Door.CONSOLE)
KEYS = Keys()
DEAD = dead_stream(STREAM)


def event(n: int, kind: str = "demo.echo") -> str:
    return json.dumps({"type": kind, "source": "test", "id": f"e{n}", "data": {"n": n}})


def pending_entries(
    r: redis.Redis, n: int, consumer: str = "old", stream: str = STREAM, group: str = GROUP
) -> list[str]:
    """``n`` new entries, read (so pending) by ``consumer``."""
    with contextlib.suppress(redis.ResponseError):  # the group exists
        r.xgroup_create(stream, group, id="$", mkstream=True)
    with r.pipeline(transaction=False) as pipe:
        for i in range(n):
            pipe.xadd(stream, {"event": event(i)})
        ids = [str(i) for i in pipe.execute()]
    r.xreadgroup(group, consumer, {stream: ">"}, count=n)
    return ids


def dead_letters(
    r: redis.Redis,
    n: int,
    kind: str = "demo.echo",
    reason: str = "max-deliveries",
    stream: str = STREAM,
    first: int = 0,
) -> list[str]:
    """``n`` dead letters shaped like the engine's; returns their ids."""
    with r.pipeline(transaction=False) as pipe:
        for i in range(first, first + n):
            pipe.xadd(
                dead_stream(stream),
                {
                    "event": event(i, kind),
                    "stream": stream,
                    "group": GROUP,
                    "entry_id": f"{i + 1}-0",
                    "deliveries": "5",
                    "reason": reason,
                    "error": "boom",
                    "dead_at": "2026-01-01T00:00:00+00:00",
                    "by": "w1",
                },
            )
        return [str(i) for i in pipe.execute()]


def live_consumer(
    r: redis.Redis, consumer: str, stream: str = STREAM, group: str = GROUP, ttl_s: int = 60
) -> None:
    """``consumer`` as a running ``runworker`` leaves it: a consumer of the group (its first
    read creates it) with a heartbeat, written by the engine's own ``queue_heartbeat``."""
    with contextlib.suppress(redis.ResponseError):  # the group exists
        r.xgroup_create(stream, group, id="$", mkstream=True)
    r.xgroup_createconsumer(stream, group, consumer)
    info = {"consumer": consumer, "host": socket.gethostname(), "pid": os.getpid()}
    info |= {"stream": stream, "group": group, "state": "running"}
    with r.pipeline(transaction=False) as pipe:
        stats.queue_heartbeat(pipe, Keys(), consumer, info, ttl_s * 1000, int(time.time() * 1000))  # type: ignore[arg-type]
        pipe.execute()


def only_record() -> AuditRecord:
    [record] = AuditRecord.objects.all()
    return record


# An action's outcome as JSON (CLI --json, the API, ``ActionOutcome.as_dict``): docs/actions.md.
OUTCOME_KEYS = {
    "action",
    "stream",
    "group",
    "count",
    "skipped",
    "outcome",
    "ids",
    "new_ids",
    "detail",
    "job_id",
    "audit_id",
}
