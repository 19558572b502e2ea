"""The release of keyed entries (workers/flow/lua/release.lua) against a real server: the
next entry of a key is handed on in stream order, whatever the ids' digits; a next entry
that left the pending list is dropped and its key leaves the index; a deleted one is handed
on as deleted; a cap above the release's front (16) takes the ranked path and keeps to it."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

import pytest
import redis
from redis import asyncio as aredis

from tests.support.engine import STREAM, AnyData, counters, pending, run_burst
from workers.core.config import EngineConfig
from workers.core.registry import Registry
from workers.flow import Flow
from workers.redis import bus

pytestmark = pytest.mark.django_db(transaction=True)

PAUSED = "streamdesk:paused:x"
ENTRIES = f"streamdesk:flow:{STREAM}:agents:entries"
INDEX = f"streamdesk:flow:{STREAM}:agents:keys"


async def _noop(event: Any, ctx: Any) -> None:
    return None


def keyed_registry(concurrency: int = 1) -> Registry:
    registry = Registry()
    registry.agent("t.keyed", schema=AnyData, key="subject", concurrency=concurrency)(_noop)
    return registry


def add(r: redis.Redis, subject: str, n: int, entry_id: str = "*") -> str:
    event = {"type": "t.keyed", "source": "t", "id": f"{subject}-{n}", "subject": subject}
    return str(r.xadd(STREAM, {"event": json.dumps({**event, "data": {"seq": n}})}, id=entry_id))


def with_flow(
    url: str, config: EngineConfig, scenario: Callable[[Flow, aredis.Redis], Awaitable[Any]]
) -> Any:
    async def run() -> Any:
        client = aredis.Redis.from_url(url, decode_responses=True)
        try:
            await bus.ensure_group(client, STREAM, "agents")
            flow = Flow(client, config, keyed_registry(), asyncio.Event())
            return await scenario(flow, client)
        finally:
            await client.aclose()

    return asyncio.run(run())


def left_clean(r: redis.Redis) -> bool:
    return not r.keys("streamdesk:flow:*:q:*") and not r.exists(ENTRIES) and not r.exists(INDEX)


def test_flow_release_hands_on_in_stream_order_whatever_the_digits(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    # As text "10-0" sorts before "9-1": the queue's members are padded, and unpadded again
    # to hand on (a part that is 0 included).
    ids = [add(r, "order/1", n, i) for n, i in enumerate(["0-1", "0-2", "9-0", "9-1", "10-0"])]

    async def scenario(flow: Flow, client: aredis.Redis) -> list[list[str]]:
        order = [[d.entry_id for d in (await flow.read(10, PAUSED)).batch]]
        for _ in ids:
            await client.xack(STREAM, "agents", order[-1][0])
            await flow.settled(order[-1])
            order.append([d.entry_id for d in flow.ready])
            flow.ready.clear()
        return order

    assert with_flow(redis_url, config, scenario) == [
        ["0-1"],
        ["0-2"],
        ["9-0"],
        ["9-1"],
        ["10-0"],
        [],
    ]
    assert left_clean(r)


def test_flow_release_a_next_entry_acked_by_hand_is_dropped_and_its_key_leaves_the_index(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    first, second = add(r, "order/1", 0), add(r, "order/1", 1)

    async def scenario(flow: Flow, client: aredis.Redis) -> list[str]:
        read = [d.entry_id for d in (await flow.read(10, PAUSED)).batch]
        assert r.zcard(INDEX) == 1
        await client.xack(STREAM, "agents", second)  # by hand: no release
        await client.xack(STREAM, "agents", first)
        await flow.settled([first])
        return read + [d.entry_id for d in flow.ready]

    assert with_flow(redis_url, config, scenario) == [first]
    assert left_clean(r)


def test_flow_release_a_deleted_next_entry_is_handed_on_as_deleted(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    first, second = add(r, "order/1", 0), add(r, "order/1", 1)

    async def scenario(flow: Flow, client: aredis.Redis) -> list[tuple[str, bool, int]]:
        await flow.read(10, PAUSED)
        await client.xdel(STREAM, second)
        await client.xack(STREAM, "agents", first)
        await flow.settled([first])
        return [(d.entry_id, d.deleted, d.deliveries) for d in flow.ready]

    assert with_flow(redis_url, config, scenario) == [(second, True, 1)]


def test_flow_release_a_cap_above_the_front_keeps_to_it_and_runs_every_event(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry, now, most, done = Registry(), [0], [0], []

    @registry.agent("t.keyed", schema=AnyData, key="subject", concurrency=20)
    async def keyed(event: Any, ctx: Any) -> None:
        now[0] += 1
        most[0] = max(most[0], now[0])
        await asyncio.sleep(0.05)
        now[0] -= 1
        done.append(event.data.seq)

    for n in range(50):
        add(r, "order/1", n)
    started = time.monotonic()
    run_burst(redis_url, replace(config, concurrency=32), registry)

    assert most[0] == 20 and sorted(done) == list(range(50))
    assert time.monotonic() - started < 10  # handed on, not found by the sweep
    assert counters(r)["processed"] == 50 and pending(r) == 0
    assert left_clean(r)
