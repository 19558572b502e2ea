"""A backlog deferred on a rate budget is spread over the live workers as its tokens come due."""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest
import redis
import redis.asyncio as aredis

from tests.support.engine import STREAM, AnyData, counters, pending, xadd
from workers.core.config import EngineConfig
from workers.core.keys import deferred_entries
from workers.core.registry import Registry
from workers.engine.defer import PULL_WINDOW_MS, Deferrals, queue_defer
from workers.engine.worker import Worker
from workers.models import AgentRun, RunStatus
from workers.redis.bus import Delivery
from workers.runtime.context import current_context, rate_limited
from workers.runtime.ratelimit import Budget
from workers.store.runs import DjangoRunStore

pytestmark = pytest.mark.django_db(transaction=True)
EVENTS = 40
API = Budget("api", rate=10, burst=2)


def run_second_when(url: str, configs: list[EngineConfig], registry: Registry, go: Any) -> None:
    """The first worker alone until ``go`` (an asyncio.Event) is set, then both."""

    async def main() -> None:
        clients = [aredis.Redis.from_url(url, decode_responses=True) for _ in configs]
        a, b = (
            Worker(c, client, registry, DjangoRunStore(), budgets={"api": API})
            for c, client in zip(configs, clients, strict=True)
        )
        try:
            first = asyncio.create_task(a.run())
            await asyncio.wait_for(go.wait(), 20)
            await asyncio.wait_for(asyncio.gather(first, b.run()), 30)
        finally:
            for client in clients:
                await client.aclose()

    asyncio.run(main())


def test_a_deferred_backlog_is_spread_over_two_workers_each_event_once(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """Worker a reads the whole backlog and defers all but the burst; b, started then, has
    nothing to read, yet runs its share as the tokens come due. Each event runs with its
    token once, and the budget's window bound holds across both."""
    granted: list[float] = []
    ran_on: dict[str, str] = {}
    seen: set[str] = set()
    all_read = asyncio.Event()

    @rate_limited("api")
    async def call_api() -> None:
        granted.append(time.monotonic())
        ctx = current_context()
        assert ctx.event_hash not in ran_on, "an event ran twice with its token"
        ran_on[ctx.event_hash] = ctx.consumer

    async def agent(event: Any, ctx: Any) -> None:
        seen.add(event.hash)
        if len(seen) == EVENTS:
            all_read.set()
        await call_api()

    registry = Registry()
    registry.register("test.limited", AnyData, agent)
    for n in range(EVENTS):
        xadd(r, {"type": "test.limited", "source": "t", "id": f"e{n}", "data": {}})
    # Each agent call is quick: what b gets it must take at the tokens' times, not because
    # a's slots are busy. One delivery allowed: a deferral counted as one would dead-letter.
    configs = [replace(config, consumer=name, max_deliveries=1) for name in ("a", "b")]
    run_second_when(redis_url, configs, registry, all_read)

    assert AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count() == EVENTS
    stats = counters(r)
    assert stats.get("dead_lettered", 0) == 0 and stats.get("failed", 0) == 0
    # Taken from the deferred set at their tokens' times, not reclaimed after a grace.
    assert stats.get("reclaimed", 0) == 0, stats
    assert pending(r) == 0 and r.zcard(deferred_entries("streamdesk:events", "agents")) == 0
    share = Counter(ran_on.values())
    deferred = stats["deferred"]
    assert deferred >= EVENTS // 2, stats
    # b read nothing: all it ran, a had deferred. It ran a fair share of those.
    assert share["a"] + share["b"] == EVENTS
    assert share["b"] >= deferred // 4 and share["a"] >= deferred // 4, (share, deferred)
    granted.sort()
    for i in range(len(granted)):
        for j in range(i + 1, len(granted)):
            assert j - i + 1 <= 2 + 10 * (granted[j] - granted[i]) + 1, (i, j, granted)


def defer_then_take(redis_url: str, entry: str, wait_ms: int, before: Any = None) -> list[str]:
    """Consumer a defers ``entry`` (due ``wait_ms`` from now); ``before()`` runs; then b,
    which knows nothing else, takes what is due."""

    async def go() -> list[str]:
        client = aredis.Redis.from_url(redis_url, decode_responses=True)
        try:
            async with client.pipeline(transaction=False) as pipe:
                deliveries = [Delivery(entry, {}, deliveries=1)]
                queue_defer(pipe, STREAM, "agents", "a", deliveries, 60_000, wait_ms)
                await pipe.execute()
            if before is not None:
                before()
            b = Deferrals(client, STREAM, "agents", "b", 60_000)
            return [d.entry_id for d in await b.take_due(8)]
        finally:
            await client.aclose()

    return asyncio.run(go())


def read_one(r: redis.Redis) -> str:
    entry = xadd(r, {"type": "t", "id": "1"})
    r.xgroup_create(STREAM, "agents", id="0")
    r.xreadgroup("agents", "a", {STREAM: ">"})
    return entry


def test_a_due_deferred_entry_is_taken_by_any_worker_once(r: redis.Redis, redis_url: str) -> None:
    entry = read_one(r)
    assert defer_then_take(redis_url, entry, wait_ms=0) == [entry]
    [row] = r.xpending_range(STREAM, "agents", "-", "+", 1)
    # The rerun counts as the one delivery (the wait was set back); b owns it now.
    assert row["consumer"] == "b" and row["times_delivered"] == 1
    assert r.zcard(deferred_entries(STREAM, "agents")) == 0


def test_a_deferred_entry_that_moved_is_left_with_its_new_owner(
    r: redis.Redis, redis_url: str
) -> None:
    entry = read_one(r)

    def operator_claims() -> None:
        r.xclaim(STREAM, "agents", "operator", 0, [entry], justid=True)

    assert defer_then_take(redis_url, entry, wait_ms=0, before=operator_claims) == []
    [row] = r.xpending_range(STREAM, "agents", "-", "+", 1)
    assert row["consumer"] == "operator"
    assert r.zcard(deferred_entries(STREAM, "agents")) == 0


def test_a_deferred_entry_past_its_window_is_left_to_xautoclaim(
    r: redis.Redis, redis_url: str
) -> None:
    """Taken from the set only within its window: after it, a reclaim may take it (a grace
    after its due time), and the two must never both deliver it."""
    entry = read_one(r)
    assert defer_then_take(redis_url, entry, wait_ms=-PULL_WINDOW_MS - 50) == []
    [row] = r.xpending_range(STREAM, "agents", "-", "+", 1)
    assert row["consumer"] == "a"


def test_a_deferred_entry_not_yet_due_is_not_taken(r: redis.Redis, redis_url: str) -> None:
    entry = read_one(r)
    assert defer_then_take(redis_url, entry, wait_ms=5_000) == []
    assert r.zcard(deferred_entries(STREAM, "agents")) == 1


def test_a_deferral_another_worker_took_is_no_longer_held(r: redis.Redis, redis_url: str) -> None:
    """a defers an entry, b takes it when due, a only looks (its hold, which finds the set
    empty): a holds nothing, so a burst run ends (it waited for good once in CI)."""
    entry = read_one(r)

    async def go() -> tuple[int, int]:
        client = aredis.Redis.from_url(redis_url, decode_responses=True)
        try:
            a = Deferrals(client, STREAM, "agents", "a", 60_000)
            async with client.pipeline(transaction=False) as pipe:
                queue_defer(pipe, STREAM, "agents", "a", [Delivery(entry, {}, 1)], 60_000, 50)
                await pipe.execute()
            a.add([entry], wait_ms=50)
            held = len(a)
            await asyncio.sleep(0.1)
            b = Deferrals(client, STREAM, "agents", "b", 60_000)
            assert [d.entry_id for d in await b.take_due(8)] == [entry]
            await a.hold()
            assert not a.due()  # it looked just now and knows of nothing due: no take
            return held, len(a)
        finally:
            await client.aclose()

    assert asyncio.run(go()) == (1, 0)
