"""Shared rate budgets (``ctx.tool``): the Redis token bucket and deferred events."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace
from typing import Any

import pytest
import redis
import redis.asyncio as aredis

from tests.support.engine import STREAM, AnyData, counters, pending, run_burst, run_many, xadd
from workers.core.config import EngineConfig
from workers.core.errors import ConfigurationError
from workers.core.keys import Keys
from workers.core.registry import Registry
from workers.engine.defer import GRACE_MS, Deferrals, queue_defer
from workers.models import AgentRun, RunStatus
from workers.redis.bus import Delivery
from workers.runtime.context import rate_limited
from workers.runtime.ratelimit import Budget, Limiter, levels, parse_budgets, queue_levels
from workers.store.timeline_rows import steps_for

pytestmark = pytest.mark.django_db(transaction=True)
PREFIX = "streamdesk:"


def takes(redis_url: str, budget: Budget, holders: list[str]) -> list[tuple[bool, int]]:
    async def go() -> list[tuple[bool, int]]:
        client = aredis.Redis.from_url(redis_url, decode_responses=True)
        try:
            limiter = Limiter(client, {budget.name: budget}, PREFIX)
            grants = [await limiter.take(budget.name, h) for h in holders]
        finally:
            await client.aclose()
        return [(g.ok, g.wait_ms) for g in grants]

    return asyncio.run(go())


def test_the_bucket_grants_its_burst_then_reserves_tokens_in_order(
    r: redis.Redis, redis_url: str
) -> None:
    # One token a second: the waits below are fractions of that interval, so the time this
    # client takes between calls (on a loaded machine) eats into half a second, not 50 ms.
    api = Budget("api", rate=1, burst=3)
    grants = takes(redis_url, api, ["a", "b", "c", "d", "e", "d"])
    assert [ok for ok, _ in grants[:3]] == [True] * 3
    (d_ok, d_wait), (e_ok, e_wait), (again_ok, again_wait) = grants[3:]
    # d holds the next token (due in ~1 s), e the one after; asking again keeps d's place.
    assert not d_ok and 500 <= d_wait <= 1000
    assert not e_ok and d_wait + 500 <= e_wait <= 2000
    assert not again_ok and again_wait <= d_wait
    # By the server's clock, which the bucket counts in: e's token is due one interval after d's.
    d_due, e_due = (r.zscore(Keys(PREFIX).budget_held("api"), h) or 0 for h in ("d", "e"))
    assert 999 <= e_due - d_due <= 1001
    time.sleep(d_wait / 1000 + 0.02)
    assert takes(redis_url, api, ["d"]) == [(True, 0)]
    # e's reservation is not due yet; a newcomer queues behind it.
    (late_ok, late_wait), (new_ok, new_wait) = takes(redis_url, api, ["e", "f"])
    assert not late_ok and not new_ok and new_wait > late_wait

    with r.pipeline() as pipe:
        queue_levels(pipe, PREFIX, {"api": api})
        (level,) = levels(pipe.execute(), {"api": api})
    assert level.taken == 4 and level.deferrals == 3 and level.waiting == 2
    assert level.tokens < 0


def test_budget_specs_parse_and_bad_ones_say_why() -> None:
    budgets = parse_budgets("github=50/s:100, slack=60/m, vault=2/s")
    assert budgets["github"] == Budget("github", 50.0, 100)
    assert budgets["slack"] == Budget("slack", 1.0, 1)
    assert budgets["vault"].burst == 2
    with pytest.raises(ConfigurationError, match="NAME=RATE"):
        parse_budgets("github=fast")
    with pytest.raises(ConfigurationError, match="rate must be above 0"):
        parse_budgets("github=0/s")


def test_a_deferred_event_runs_once_its_token_is_due_and_is_never_dead_lettered(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    granted: list[float] = []
    starts: list[str] = []

    @rate_limited("api")
    async def call_api(n: int) -> int:
        granted.append(time.monotonic())
        return n * 2

    async def agent(event: Any, ctx: Any) -> int:
        starts.append(event.hash)
        return await call_api(event.data.model_dump()["n"])

    registry = Registry()
    registry.register("test.limited", AnyData, agent)
    for n in range(8):
        xadd(r, {"type": "test.limited", "source": "t", "id": f"e{n}", "data": {"n": n}})
    # One delivery allowed: were a deferral counted as one, these would be dead-lettered.
    strict = replace(config, max_deliveries=1)
    run_burst(redis_url, strict, registry, budgets={"api": Budget("api", rate=10, burst=2)})

    assert AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count() == 8
    assert sorted(AgentRun.objects.values_list("result", flat=True)) == [0, 2, 4, 6, 8, 10, 12, 14]
    stats = counters(r)
    assert stats.get("dead_lettered", 0) == 0 and stats.get("failed", 0) == 0
    # The burst of 2 ran at once; most of the rest waited (fewer under load: slow starts
    # let the bucket refill), each at most once, for its reserved token.
    assert 1 <= stats["deferred"] <= 6 and pending(r) == 0
    assert max(starts.count(h) for h in set(starts)) <= 2
    # The budget held: calls in any window of T seconds stay within burst + rate * T (+1 for
    # the jitter between a grant and the agent reading the clock).
    granted.sort()
    for i in range(len(granted)):
        for j in range(i + 1, len(granted)):
            assert j - i + 1 <= 2 + 10 * (granted[j] - granted[i]) + 1, (i, j, granted)
    waited = [h for h in set(starts) if starts.count(h) == 2]
    assert len(waited) == stats["deferred"]
    kinds = [s.kind for s in steps_for(waited[0])]
    assert "deferred" in kinds and kinds[-1] == "committed"


def test_waits_longer_than_the_claim_idle_time_are_not_reclaimed_while_their_worker_lives(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """Tokens up to 5 s away, a claim idle time of 1.5 s and two workers reclaiming every
    100 ms: neither takes the other's (or its own) waiting entries before they are due."""
    starts: list[str] = []

    @rate_limited("api")
    async def call_api() -> None:
        return None

    async def agent(event: Any, ctx: Any) -> None:
        starts.append(event.hash)
        await call_api()

    registry = Registry()
    registry.register("test.limited", AnyData, agent)
    for n in range(6):
        xadd(r, {"type": "test.limited", "source": "t", "id": f"e{n}", "data": {}})
    configs = [replace(config, consumer=name, max_deliveries=1) for name in ("a", "b")]
    run_many(redis_url, configs, registry, budgets={"api": Budget("api", rate=1, burst=1)})

    assert AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count() == 6
    stats = counters(r)
    assert stats.get("reclaimed", 0) == 0, stats
    assert stats.get("dead_lettered", 0) == 0 and stats["deferred"] >= 4
    # Each event ran at most twice: deferred once, then run with its token.
    assert max(starts.count(h) for h in set(starts)) <= 2


def test_holding_deferrals_renews_only_entries_still_this_consumers(
    r: redis.Redis, redis_url: str
) -> None:
    kept, moved = xadd(r, {"type": "t", "id": "1"}), xadd(r, {"type": "t", "id": "2"})
    r.xgroup_create(STREAM, "agents", id="0")
    r.xreadgroup("agents", "a", {STREAM: ">"})

    async def go() -> int:
        client = aredis.Redis.from_url(redis_url, decode_responses=True)
        try:
            deferrals = Deferrals(client, STREAM, "agents", "a", claim_idle_ms=1000)
            deferrals.add([kept, moved], wait_ms=10_000)
            await asyncio.sleep(0.6)
            # An operator hands one entry to another consumer meanwhile.
            r.xclaim(STREAM, "agents", "operator", 0, [moved], justid=True)
            await deferrals.hold()
        finally:
            await client.aclose()
        return len(deferrals)

    assert asyncio.run(go()) == 1
    rows = {row["message_id"]: row for row in r.xpending_range(STREAM, "agents", "-", "+", 10)}
    # The kept entry's idle time was renewed: claimable in 1 s, not in 0.4 s. Its delivery
    # count is untouched; the moved one stays with its new owner.
    assert rows[kept]["consumer"] == "a" and rows[kept]["time_since_delivered"] < 300
    assert rows[kept]["times_delivered"] == 1
    assert rows[moved]["consumer"] == "operator"


def test_a_deferred_entry_is_left_to_its_own_worker_for_a_grace_after_it_is_due(
    r: redis.Redis,
) -> None:
    """The waiting worker's timer reruns the entry when due; a reclaim at that moment (its
    own loop's or another worker's) would deliver it twice, the second time over the cap."""
    entry = xadd(r, {"type": "t", "id": "1"})
    r.xgroup_create(STREAM, "agents", id="0")
    r.xreadgroup("agents", "a", {STREAM: ">"})
    deliveries = [Delivery(entry, {}, deliveries=1)]
    pipe: Any = r.pipeline(transaction=False)  # the same calls as the worker's async one
    queue_defer(pipe, STREAM, "agents", "a", deliveries, claim_idle_ms=1500, wait_ms=100)
    pipe.execute()
    time.sleep(0.2)  # the token is due
    claimed = r.xautoclaim(STREAM, "agents", "b", 1500, "0-0", justid=True)
    assert claimed == []
    [row] = r.xpending_range(STREAM, "agents", "-", "+", 1)
    assert row["consumer"] == "a" and row["times_delivered"] == 0
    # Were worker a dead, b would find it once the grace is over.
    time.sleep(GRACE_MS / 1000)
    claimed = r.xautoclaim(STREAM, "agents", "b", 1500, "0-0", justid=True)
    assert claimed == [entry]


def test_an_unknown_budget_is_a_clear_failure(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    async def agent(event: Any, ctx: Any) -> None:
        await ctx.tool("githb")

    registry = Registry()
    registry.register("test.limited", AnyData, agent)
    xadd(r, {"type": "test.limited", "id": "x", "data": {}})
    run_burst(redis_url, replace(config, max_deliveries=1), registry, budgets={})
    assert "no rate budget named 'githb'" in AgentRun.objects.get().error
