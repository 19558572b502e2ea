"""The engine's one seam to retention: the trim is a chore on the sweep's turn, and the
stream's record makes it one trim a minute for the whole fleet, whichever workers' chores
come round."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import time

import redis
import redis.asyncio as aredis

from tests.support.memory_store import MemoryRunStore
from workers.core.config import EngineConfig
from workers.engine.housekeeping import Housekeeper, Status
from workers.engine.pause import PauseWatch
from workers.engine.ports import Ports
from workers.engine.timeline import Timeline
from workers.gate import Gate
from workers.store.dbwriter import DbWriter

DAY_MS = 86_400_000


async def _hold() -> None:
    return None


async def _chores(redis_url: str, config: EngineConfig, workers: int) -> None:
    """``workers`` housekeepers of one group, each doing its chores once, one after another
    (as the sweep's turns come round to each)."""
    client = aredis.Redis.from_url(redis_url, decode_responses=True)
    store = MemoryRunStore()
    db = DbWriter(store)
    timeline = Timeline(config, functools.partial(db.post, store.record))
    gate = Gate(client, config.keys, config.lease_ms, config.done_ttl_s)
    for i in range(workers):
        own = dataclasses.replace(config, consumer=f"worker-{i}")
        keeper = Housekeeper(
            Ports(own, client, gate, db, timeline),
            inflight={},
            hold_deferrals=_hold,
            pause=PauseWatch(client, own.keys, own.stream, own.group, lambda: 0, asyncio.Event()),
            status=lambda: Status(started_ms=1, processed=0, stopping=False),
        )
        await keeper.chores()
    await db.close()
    await gate.aclose()
    await client.aclose()


def _old_entries(r: redis.Redis, config: EngineConfig, count: int) -> None:
    start = int(time.time() * 1000) - 10 * DAY_MS
    for i in range(count):
        r.xadd(config.stream, {"event": "{}"}, id=f"{start + i}-0")
    r.xgroup_create(config.stream, config.group, id="0")
    r.xreadgroup(config.group, "c", {config.stream: ">"})
    r.xack(config.stream, config.group, *[e[0] for e in r.xrange(config.stream)])


def test_retention_chores_trim_once_for_the_fleet(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    config = dataclasses.replace(config, retention_s=3600)
    _old_entries(r, config, 400)
    asyncio.run(_chores(redis_url, config, workers=3))
    record = r.hgetall(config.keys.retention(config.stream))
    assert record["by"] == "worker-0"  # the first whose chores came round; not the others
    assert int(record["trimmed_total"]) == int(record["trimmed"]) >= 300
    assert r.xlen(config.stream) <= 100  # whole nodes of up to 100 go


def test_retention_chores_with_retention_off_leave_the_stream_alone(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    config = dataclasses.replace(config, retention_s=0)
    _old_entries(r, config, 200)
    asyncio.run(_chores(redis_url, config, workers=1))
    assert r.xlen(config.stream) == 200
    assert not r.exists(config.keys.retention(config.stream))
