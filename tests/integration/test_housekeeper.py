"""The housekeeper on its own (no Worker): it follows the group's pause key and tells its
``on_pause`` callback of each change, and its heartbeat reports the status it is given."""

from __future__ import annotations

import asyncio
import functools

import redis
import redis.asyncio as aredis

from tests.support.memory_store import MemoryRunStore
from workers.core.config import EngineConfig
from workers.engine.housekeeping import Housekeeper, Status
from workers.engine.ports import Ports
from workers.engine.timeline import Timeline
from workers.gate import Gate
from workers.store.dbwriter import DbWriter


async def _follow_pause(redis_url: str, config: EngineConfig) -> tuple[list[str | None], list[str]]:
    client = aredis.Redis.from_url(redis_url, decode_responses=True)
    store = MemoryRunStore()
    db = DbWriter(store)
    timeline = Timeline(config, functools.partial(db.post, store.record))
    gate = Gate(client, config.keys, config.lease_ms, config.done_ttl_s)
    told: list[str | None] = []
    status = Status(started_ms=1, processed=7, stopping=False)

    async def hold() -> None:
        return None

    keeper = Housekeeper(
        Ports(config, client, gate, db, timeline),
        inflight={},
        hold_deferrals=hold,
        on_pause=told.append,
        status=lambda: status,
    )
    key = config.keys.paused(config.stream, config.group)
    states = [keeper.info()["state"]]
    await client.set(key, "alice at 11:23")
    await keeper.check_pause()
    await keeper.check_pause()  # unchanged: not told again
    states.append(keeper.info()["state"])
    await client.delete(key)
    await keeper.check_pause()
    status = Status(started_ms=1, processed=7, stopping=True)
    states.append(keeper.info()["state"])
    await db.close()
    await gate.aclose()
    await client.aclose()
    return told, states


def test_housekeeper_tells_each_pause_change_once(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    told, states = asyncio.run(_follow_pause(redis_url, config))
    assert told == ["alice at 11:23", None]
    assert states == ["running", "paused", "draining"]
