"""Keyed rate budgets (``ctx.tool("api:{data.tenant}")``): one bucket per value in Redis."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from dataclasses import replace
from typing import Any

import pytest
import redis
import redis.asyncio as aredis

from tests.support.engine import AnyData, counters, pending, run_many, xadd
from workers.core.config import EngineConfig
from workers.core.errors import ConfigurationError
from workers.core.keys import Keys
from workers.core.registry import Registry
from workers.models import AgentRun, RunStatus
from workers.runtime.context import current_context, rate_limited
from workers.runtime.ratelimit import Budget, Limiter, levels, queue_levels

pytestmark = pytest.mark.django_db(transaction=True)
PREFIX = "streamdesk:"
KEYS = Keys(PREFIX)


def takes(redis_url: str, budget: Budget, calls: list[tuple[str, str]]) -> list[bool]:
    """``(bucket, holder)`` takes, in order, from one Limiter."""

    async def go() -> list[bool]:
        client = aredis.Redis.from_url(redis_url, decode_responses=True)
        try:
            limiter = Limiter(client, {budget.name: budget}, PREFIX)
            return [(await limiter.take(bucket, holder)).ok for bucket, holder in calls]
        finally:
            await client.aclose()

    return asyncio.run(go())


def test_keyed_buckets_each_have_the_budgets_burst_in_their_own_slot(
    r: redis.Redis, redis_url: str
) -> None:
    api = Budget("api", rate=1, burst=2)
    calls = [("api:a", "1"), ("api:a", "2"), ("api:a", "3"), ("api:b", "4"), ("api:b", "5")]
    assert takes(redis_url, api, calls) == [True, True, False, True, True]
    # Each value's bucket has its own keys, named (and hash-tagged) by the bucket.
    assert r.hget("streamdesk:budget:{api:a}", "taken") == "2"
    assert r.zrange("streamdesk:budget:{api:a}:held", 0, -1) == ["3"]
    assert r.hget("streamdesk:budget:{api:b}", "taken") == "2"
    assert not r.exists(KEYS.budget("api"))
    assert set(r.zrange(KEYS.budget_keys("api"), 0, -1)) == {"api:a", "api:b"}

    with r.pipeline() as pipe:
        queue_levels(pipe, PREFIX, {"api": api})
        (level,) = levels(pipe.execute(), {"api": api})
    # The budget's own (unkeyed) bucket is untouched; two keyed ones are live.
    assert level.keyed == 2 and level.taken == 0 and level.tokens == 2


def test_a_keyed_bucket_expires_once_it_would_be_full_again(r: redis.Redis, redis_url: str) -> None:
    api = Budget("api", rate=10, burst=2)
    assert takes(redis_url, api, [("api:a", "1"), ("api:a", "2")]) == [True, True]
    # Empty: full again in burst / rate = 200 ms; the keys go 1 s after that.
    ttl_ms = r.pttl(KEYS.budget("api:a"))
    assert 1000 < ttl_ms <= 1200
    expiry = r.zscore(KEYS.budget_keys("api"), "api:a") or 0
    assert abs(expiry - (time.time() * 1000 + ttl_ms)) < 500
    # A reservation keeps the keys until it is due and the bucket has refilled behind it.
    assert takes(redis_url, api, [("api:a", "3")]) == [False]
    assert 1100 < r.pttl(KEYS.budget_held("api:a")) <= 1300
    # An unkeyed budget's keys never expire.
    assert takes(redis_url, api, [("api", "4")]) == [True]
    assert r.pttl(KEYS.budget("api")) == -1


def test_a_keyed_budget_needs_its_base_budget(redis_url: str) -> None:
    api = Budget("api", rate=1, burst=1)
    with pytest.raises(ConfigurationError, match="no rate budget named 'apx'"):
        takes(redis_url, api, [("apx:a", "1")])


def test_a_keyed_budget_across_two_workers_holds_each_values_window(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """Two tenants' events on two workers: each tenant's calls stay within its own bucket's
    ``burst + rate * T``, the same bound as an unkeyed budget's, and each event runs once."""
    granted: dict[str, list[float]] = defaultdict(list)
    starts: list[str] = []

    @rate_limited("api:{data.tenant}")
    async def call_api() -> None:
        granted[current_context().envelope.data["tenant"]].append(time.monotonic())  # type: ignore[union-attr]

    async def agent(event: Any, ctx: Any) -> None:
        starts.append(event.hash)
        await call_api()

    registry = Registry()
    registry.register("test.limited", AnyData, agent)
    for n in range(16):
        data = {"tenant": "t1" if n % 2 else "t2", "n": n}
        xadd(r, {"type": "test.limited", "source": "t", "id": f"e{n}", "data": data})
    configs = [replace(config, consumer=name, max_deliveries=1) for name in ("a", "b")]
    run_many(redis_url, configs, registry, budgets={"api": Budget("api", rate=10, burst=2)})

    assert AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count() == 16
    stats = counters(r)
    assert stats.get("dead_lettered", 0) == 0 and stats.get("failed", 0) == 0
    assert pending(r) == 0 and stats["deferred"] >= 4
    assert max(starts.count(h) for h in set(starts)) <= 2
    assert sorted(granted) == ["t1", "t2"] and all(len(g) == 8 for g in granted.values())
    for times in granted.values():
        times.sort()
        for i in range(len(times)):
            for j in range(i + 1, len(times)):
                assert j - i + 1 <= 2 + 10 * (times[j] - times[i]) + 1, (i, j, times)


def test_a_keyed_budget_fails_an_event_without_its_field(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    async def agent(event: Any, ctx: Any) -> None:
        await ctx.tool("api:{data.tenant}")

    registry = Registry()
    registry.register("test.limited", AnyData, agent)
    xadd(r, {"type": "test.limited", "id": "x", "data": {}})
    configs = [replace(config, max_deliveries=1)]
    run_many(redis_url, configs, registry, budgets={"api": Budget("api", rate=1, burst=1)})
    assert "the event has no data.tenant" in AgentRun.objects.get().error
