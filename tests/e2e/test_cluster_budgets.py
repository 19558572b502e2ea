"""Keyed rate budgets and the deferred set on a real 3-master Valkey cluster: each keyed
bucket in its own slot, the budget's index beside the budget, and a partition's deferred
entries taken by another worker in one script on the partition's slot."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest
from redis.cluster import RedisCluster

from tests.support.cluster import cluster as cluster
from tests.support.cluster import rc as rc
from workers.core.keys import Keys, deferred_entries
from workers.core.partitions import Partitions
from workers.engine.defer import Deferrals, queue_defer
from workers.redis.bus import Delivery
from workers.redis.cluster import LocalCluster
from workers.redis.connection import aconnect
from workers.runtime.ratelimit import Budget, Limiter

pytestmark = [pytest.mark.e2e]

KEYS = Keys()
STREAM = Partitions("streamdesk:events", 3, tagged=True).streams[1]
T = TypeVar("T")


def on(cluster: LocalCluster, run: Callable[..., Awaitable[T]]) -> T:
    async def go() -> T:
        client = await aconnect(cluster.url)
        try:
            return await run(client)
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_keyed_buckets_live_in_their_own_slots_on_a_cluster(
    rc: RedisCluster, cluster: LocalCluster
) -> None:
    api = Budget("api", rate=1, burst=1)

    async def takes(client: object) -> list[bool]:
        limiter = Limiter(client, {"api": api}, KEYS.prefix)  # type: ignore[arg-type]
        calls = [("api:a", "1"), ("api:a", "2"), ("api:b", "3")]
        return [(await limiter.take(bucket, holder)).ok for bucket, holder in calls]

    assert on(cluster, takes) == [True, False, True]
    assert rc.hget(KEYS.budget("api:a"), "deferrals") == "1"
    assert rc.zrange(KEYS.budget_held("api:a"), 0, -1) == ["2"]
    assert rc.pttl(KEYS.budget("api:b")) > 0
    assert set(rc.zrange(KEYS.budget_keys("api"), 0, -1)) == {"api:a", "api:b"}


def test_a_partitions_deferred_entry_is_taken_by_another_worker_on_a_cluster(
    rc: RedisCluster, cluster: LocalCluster
) -> None:
    entry = str(rc.xadd(STREAM, {"event": "{}"}))
    rc.xgroup_create(STREAM, "agents", id="0")
    rc.xreadgroup("agents", "a", {STREAM: ">"})

    async def defer_then_take(client: object) -> list[Delivery]:
        async with client.pipeline(transaction=False) as pipe:  # type: ignore[attr-defined]
            deliveries = [Delivery(entry, {}, deliveries=1)]
            queue_defer(pipe, STREAM, "agents", "a", deliveries, 60_000, wait_ms=50)
            await pipe.execute()
        other = Deferrals(client, STREAM, "agents", "b", 60_000)  # type: ignore[arg-type]
        await other.hold()  # looks at the set: learns when the entry is due
        wait_ms = other.ms_until_next()
        assert wait_ms is not None and wait_ms <= 60
        await asyncio.sleep(wait_ms / 1000)
        return await other.take_due(8)

    [taken] = on(cluster, defer_then_take)
    assert taken.entry_id == entry and taken.fields == {"event": "{}"}
    [row] = rc.xpending_range(STREAM, "agents", "-", "+", 1)
    assert row["consumer"] == "b" and row["times_delivered"] == 1
    assert rc.zcard(deferred_entries(STREAM, "agents")) == 0
