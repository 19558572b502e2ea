"""An agent's own timeout and retry policy (issue 29, items 3 and 5), in-process against a
real server and database: a hung async agent fails its attempt at its timeout while the
others go on, and is dead-lettered with reason ``timeout``; ``NonRetriable`` and a policy's
error types dead-letter at once; a per-agent ``max_deliveries`` and backoff; a 429 with
Retry-After from a real HTTP server waits without spending a delivery; ``on_failure`` is
called once; a retry is counted as ``retried``, not ``reclaimed``."""

from __future__ import annotations

import asyncio
import http.server
import itertools
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import datetime
from typing import Any

import httpx
import pytest
import redis

from tests.support.engine import STREAM, AnyData, counters, pending, run_burst, xadd
from workers.core.config import EngineConfig
from workers.core.errors import NonRetriable
from workers.core.registry import Registry
from workers.core.retry import Retry
from workers.models import AgentRun, RunStatus
from workers.store.timeline_rows import steps_for

pytestmark = pytest.mark.django_db(transaction=True)


def dead_letters(r: redis.Redis) -> dict[str, dict[str, str]]:
    """Dead letters by the event's type."""
    return {json.loads(f["event"])["type"]: f for _, f in r.xrange(f"{STREAM}:dead")}


def test_agent_policy_hung_async_agent_fails_at_its_timeout_and_others_go_on(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    starts: list[float] = []
    cancels: list[float] = []
    quick_done: list[float] = []
    registry = Registry()

    @registry.agent("t.hang", schema=AnyData, timeout_s=1, max_deliveries=2)
    async def hang(event: Any, ctx: Any) -> None:
        starts.append(time.time())
        try:
            await asyncio.Event().wait()  # never set
        except asyncio.CancelledError:
            cancels.append(time.time())
            raise

    @registry.agent("t.quick", schema=AnyData)
    async def quick(event: Any, ctx: Any) -> str:
        await asyncio.sleep(0.05)
        quick_done.append(time.time())
        return "ok"

    xadd(r, {"type": "t.hang", "source": "t", "id": "h", "data": {}})
    for n in range(20):
        xadd(r, {"type": "t.quick", "source": "t", "id": f"q{n}", "data": {}})
    run_burst(redis_url, config, registry)

    assert len(starts) == len(cancels) == 2  # its max_deliveries, not the worker's 3
    assert all(1.0 <= c - s < 1.5 for s, c in zip(starts, cancels, strict=True))
    assert len(quick_done) == 20 and max(quick_done) < starts[0] + 1.0  # served meanwhile
    letter = dead_letters(r)["t.hang"]
    assert letter["reason"] == "timeout" and "ran past its timeout of 1 s" in letter["error"]
    dead_at = datetime.fromisoformat(letter["dead_at"]).timestamp()
    assert dead_at - starts[-1] < 1.5
    row = AgentRun.objects.get(event_type="t.hang")
    assert (row.status, row.attempts) == (RunStatus.DEAD, 2)
    assert (counters(r)["failed"], counters(r)["processed"]) == (2, 20)
    assert pending(r) == 0


def test_agent_policy_worker_setting_times_out_a_sync_agent_after_its_thread_returns(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    spans: list[tuple[float, float]] = []
    registry = Registry()

    @registry.agent("t.slow", schema=AnyData)
    def slow(event: Any, ctx: Any) -> str:
        started = time.time()
        time.sleep(0.8 if not spans else 0)
        spans.append((started, time.time()))
        return "late"

    xadd(r, {"type": "t.slow", "source": "t", "id": "s", "data": {}})
    run_burst(redis_url, replace(config, agent_timeout_s=0.3), registry)

    # The first attempt ran past 0.3 s: failed as a timeout once its thread returned (never
    # settled, nor started again, while it ran); the retry returned in time.
    assert len(spans) == 2 and spans[1][0] >= spans[0][1]
    assert AgentRun.objects.get().status == RunStatus.SUCCEEDED
    assert counters(r)["failed"] == 1


def test_agent_policy_a_sync_agents_own_error_in_time_is_no_timeout(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry = Registry()

    @registry.agent("t.broken", schema=AnyData, timeout_s=5, max_deliveries=1)
    def broken(event: Any, ctx: Any) -> None:
        raise ValueError("bad order")

    xadd(r, {"type": "t.broken", "source": "t", "id": "b", "data": {}})
    run_burst(redis_url, config, registry)

    letter = dead_letters(r)["t.broken"]
    assert letter["reason"] != "timeout" and "ValueError: bad order" in letter["error"]


def test_agent_policy_non_retriable_dead_letters_at_once(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    runs: list[str] = []
    registry = Registry()

    @registry.agent("t.refuse", schema=AnyData)
    async def refuse(event: Any, ctx: Any) -> None:
        runs.append("refuse")
        raise NonRetriable("no such order")

    @registry.agent("t.listed", schema=AnyData, retry=Retry(non_retriable=(KeyError,)))
    async def listed(event: Any, ctx: Any) -> None:
        runs.append("listed")
        raise KeyError("customer")

    xadd(r, {"type": "t.refuse", "source": "t", "id": "a", "data": {}})
    xadd(r, {"type": "t.listed", "source": "t", "id": "b", "data": {}})
    run_burst(redis_url, config, registry)

    assert sorted(runs) == ["listed", "refuse"]  # once each, with 3 deliveries allowed
    letters = dead_letters(r)
    assert {t: f["reason"] for t, f in letters.items()} == {
        "t.refuse": "non-retriable",
        "t.listed": "non-retriable",
    }
    assert "NonRetriable: no such order" in letters["t.refuse"]["error"]
    assert pending(r) == 0


def test_agent_policy_per_agent_max_deliveries_and_backoff(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    starts: list[float] = []
    registry = Registry()

    @registry.agent("t.flaky", schema=AnyData, max_deliveries=4, retry=Retry(base_s=0.4))
    async def flaky(event: Any, ctx: Any) -> None:
        starts.append(time.monotonic())
        raise RuntimeError("down")

    xadd(r, {"type": "t.flaky", "source": "t", "id": "f", "data": {}})
    run_burst(redis_url, config, registry)

    assert len(starts) == 4  # the worker allows 3
    # 0.4 s, 0.8 s, then capped by the claim idle time (1.5 s): not the worker's 50 ms base.
    row = AgentRun.objects.get()
    waits = [s.detail.split("\n", 1)[0] for s in steps_for(row.event_hash) if s.kind == "failed"]
    assert [w.rsplit("; ", 1)[-1] for w in waits] == [
        "retry in 400 ms",
        "retry in 800 ms",
        "retry in 1500 ms",
        "no deliveries left",
    ]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert gaps[0] >= 0.4 and gaps[1] >= 0.8 and gaps[2] >= 1.5
    assert dead_letters(r)["t.flaky"]["deliveries"] == "4"


@pytest.fixture
def busy_then_ok() -> Iterator[tuple[str, list[float]]]:
    """A real HTTP server answering 429 with Retry-After: 1 the first time, then 200."""
    hits: list[float] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            hits.append(time.monotonic())
            if len(hits) == 1:
                self.send_response(429)
                self.send_header("Retry-After", "1")
            else:
                self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", hits
    server.shutdown()
    server.server_close()


def test_agent_policy_429_with_retry_after_waits_without_a_delivery(
    r: redis.Redis,
    redis_url: str,
    config: EngineConfig,
    busy_then_ok: tuple[str, list[float]],
) -> None:
    url, hits = busy_then_ok
    deliveries: list[int] = []
    registry = Registry()

    @registry.agent("t.call", schema=AnyData, max_deliveries=1)
    async def call(event: Any, ctx: Any) -> int:
        deliveries.append(ctx.deliveries)
        async with httpx.AsyncClient() as client:
            response = await client.get(url)
            response.raise_for_status()
        return response.status_code

    xadd(r, {"type": "t.call", "source": "t", "id": "c", "data": {}})
    run_burst(redis_url, config, registry)

    # With one delivery allowed, a counted failure would have dead-lettered it.
    assert len(hits) == 2 and hits[1] - hits[0] >= 1.0
    assert deliveries == [1, 1]
    row = AgentRun.objects.get()
    assert (row.status, row.result) == (RunStatus.SUCCEEDED, 200)
    stats = counters(r)
    assert (stats["deferred"], stats.get("failed", 0), stats.get("dead_lettered", 0)) == (1, 0, 0)


def test_agent_policy_on_failure_is_called_once_when_dead_lettered(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    calls: list[tuple[str, str, int]] = []
    sync_calls: list[str] = []
    registry = Registry()

    async def tell(event: Any, failure: Any) -> None:
        calls.append((event.id, failure.reason, failure.deliveries))

    def tell_sync(event: Any, failure: Any) -> None:
        sync_calls.append(failure.reason)

    @registry.agent("t.fails", schema=AnyData, on_failure=tell)
    async def fails(event: Any, ctx: Any) -> None:
        raise RuntimeError("no")

    @registry.agent("t.refuses", schema=AnyData, on_failure=tell_sync)
    def refuses(event: Any, ctx: Any) -> None:
        raise NonRetriable("never")

    xadd(r, {"type": "t.fails", "source": "t", "id": "f1", "data": {}})
    xadd(r, {"type": "t.refuses", "source": "t", "id": "r1", "data": {}})
    run_burst(redis_url, config, registry)

    assert calls == [("f1", "max-deliveries", 3)]
    assert sync_calls == ["non-retriable"]


def test_agent_policy_a_retry_is_counted_as_retried_not_reclaimed(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    runs: list[int] = []
    registry = Registry()

    @registry.agent("t.once", schema=AnyData)
    async def fails_once(event: Any, ctx: Any) -> str:
        runs.append(ctx.deliveries)
        if len(runs) == 1:
            raise RuntimeError("first time")
        return "ok"

    xadd(r, {"type": "t.once", "source": "t", "id": "o", "data": {}})
    run_burst(redis_url, config, registry)

    assert runs == [1, 2]
    stats = counters(r)
    assert (stats.get("retried", 0), stats.get("reclaimed", 0)) == (1, 0)
    assert AgentRun.objects.get().status == RunStatus.SUCCEEDED
