"""The settler against a real Redis, with the in-memory run store standing in for the
database: it carries out ``plan_settlement`` in Redis (acks, retries, dead letters,
counters) and finds the one outcome the store refuses among a batch."""

from __future__ import annotations

import asyncio
import functools
import json
from datetime import UTC, datetime

import redis
import redis.asyncio as aredis
from pydantic import BaseModel, ConfigDict

from tests.support.memory_store import MemoryRunStore
from workers.core.config import EngineConfig
from workers.core.keys import dead_stream
from workers.core.registry import Registry
from workers.engine.attempts import Attempt
from workers.engine.intake import to_runnable
from workers.engine.outcomes import Settled
from workers.engine.ports import Ports
from workers.engine.settle import Settler
from workers.engine.timeline import Timeline
from workers.gate import Gate
from workers.redis import bus
from workers.store.dbwriter import DbWriter


class AnyData(BaseModel):
    model_config = ConfigDict(extra="allow")


async def _noop(event: object, ctx: object) -> None:
    return None


REGISTRY = Registry()
REGISTRY.register("test.settle", AnyData, _noop)


async def _attempts(
    client: aredis.Redis, config: EngineConfig, gate: Gate, n: int
) -> list[Attempt]:
    """``n`` events read by this consumer, each with its gate lease taken."""
    for i in range(n):
        event = {"type": "test.settle", "id": f"e{i}", "data": {}}
        await client.xadd(config.stream, {"event": json.dumps(event)})
    await bus.ensure_group(client, config.stream, config.group)
    found = await bus.read_new(client, config.stream, config.group, config.consumer, n, None)
    runnables = [to_runnable(d, config.stream, REGISTRY, 1 << 20) for d in found]
    owners = [f"{config.consumer}/{r.delivery.entry_id}" for r in runnables]
    tickets = await gate.acquire_many(
        [(r.event.hash, o) for r, o in zip(runnables, owners, strict=True)]
    )
    now = datetime.now(UTC)
    return [
        Attempt(r, o, t.token, now, 0.0) for r, o, t in zip(runnables, owners, tickets, strict=True)
    ]


async def _settle(redis_url: str, config: EngineConfig, store: MemoryRunStore) -> list[Attempt]:
    client = aredis.Redis.from_url(redis_url, decode_responses=True)
    gate = Gate(client, config.keys, config.lease_ms, config.done_ttl_s)
    db = DbWriter(store)
    ports = Ports(
        config, client, gate, db, Timeline(config, functools.partial(db.post, store.record))
    )
    finished: list[Attempt] = []
    all_done = asyncio.Event()
    ok, failed, refused = await _attempts(client, config, gate, 3)

    def on_finished(attempt: Attempt) -> None:
        finished.append(attempt)
        if len(finished) == 3:
            all_done.set()

    settler = Settler(ports, store, on_deferred=lambda ids, wait_ms: None, on_finished=on_finished)
    task = asyncio.create_task(settler.run())
    settler.submit(Settled(ok, ok=True, result={"n": 1}))
    settler.submit(Settled(failed, ok=False, error="ValueError: boom"))
    settler.submit(Settled(refused, ok=True, result="too big"))
    await asyncio.wait_for(all_done.wait(), timeout=10)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    await db.close()
    await gate.aclose()
    await client.aclose()
    return [ok, failed, refused]


def test_settler_carries_out_each_route_in_redis(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    store = MemoryRunStore(refuses=lambda finish: finish.result == "too big")
    ok, failed, refused = asyncio.run(_settle(redis_url, config, store))
    pending = r.xpending_range(config.stream, config.group, "-", "+", 10)
    # The success and the unstorable one are acked; the failure waits for its retry.
    assert [p["message_id"] for p in pending] == [failed.delivery.entry_id]
    (letter,) = r.xrange(dead_stream(config.stream))
    assert letter[1]["entry_id"] == refused.delivery.entry_id
    assert letter[1]["reason"] == "unstorable"
    stats = r.hgetall(config.keys.stats(config.stream))
    assert (stats["processed"], stats["failed"], stats["dead_lettered"]) == ("1", "2", "1")
    assert [store.status(a.event_hash) for a in (ok, failed, refused)] == [
        "succeeded",
        "failed",
        "dead",
    ]
