"""The agent runtime on the console: rate budgets, deferrals and model usage on the overview,
usage and durable steps on the event page, the same numbers in the API; real Redis and DB."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
import redis
import redis.asyncio as aredis
from django.test import Client
from django.utils import timezone

from tests.support.engine import STREAM
from workers.core.keys import Keys
from workers.core.records import Usage
from workers.from_settings import rate_budgets
from workers.models import AgentRun, RunStatus, StepResult
from workers.monitor.sample import collect
from workers.redis import stats
from workers.runtime.ratelimit import Limiter

pytestmark = pytest.mark.django_db(transaction=True)

HASH = "ab" * 32


def text(response: Any) -> str:
    return str(response.content.decode())


def take(redis_url: str, name: str, holders: list[str]) -> list[bool]:
    """Real takes through the engine's limiter, with the budgets the console is configured
    with."""

    async def go() -> list[bool]:
        client = aredis.Redis.from_url(redis_url, decode_responses=True)
        try:
            limiter = Limiter(client, rate_budgets(), Keys().prefix)
            return [(await limiter.take(name, holder)).ok for holder in holders]
        finally:
            await client.aclose()

    return asyncio.run(go())


def spend(redis_url: str, spent: dict[str, Usage]) -> None:
    async def go() -> None:
        client = aredis.Redis.from_url(redis_url, decode_responses=True)
        try:
            async with client.pipeline(transaction=False) as pipe:
                stats.queue_usage(pipe, Keys(), spent)
                await pipe.execute()
        finally:
            await client.aclose()

    asyncio.run(go())


def row_of(body: str, marker: str) -> str:
    """The table row that carries ``marker``, from its ``<tr`` on."""
    start = body.rindex("<tr", 0, body.index(marker))
    return body[start : body.index("</tr>", start)]


def test_overview_budget_shows_its_level_after_takes(
    r: redis.Redis, redis_url: str, staff_client: Client, settings: Any
) -> None:
    # 1 token a minute: nothing refills while the test runs, so the level is exact.
    settings.STREAMDESK_RATE_LIMITS = "api=1/m:3"
    assert take(redis_url, "api", ["a", "b", "c", "d", "e"]) == [True] * 3 + [False] * 2
    row = row_of(text(staff_client.get("/")), 'data-budget="api"')
    assert "1/min" in row and "3 tokens" in row
    assert '<span data-metric="tokens">-2.0</span> of 3 tokens' in row
    assert "2.0 tokens reserved by deferred events" in row
    assert 'data-metric="taken">3<' in row
    assert 'data-metric="deferrals">2<' in row
    assert 'data-metric="waiting">2<' in row
    assert row.startswith('<tr class="warn"')


def test_overview_budget_untouched_is_full(
    r: redis.Redis, staff_client: Client, settings: Any
) -> None:
    settings.STREAMDESK_RATE_LIMITS = "github=50/s:100"
    row = row_of(text(staff_client.get("/")), 'data-budget="github"')
    assert "50/s" in row
    assert '<span data-metric="tokens">100.0</span> of 100 tokens' in row
    assert 'width="100"' in row
    assert "reserved" not in row


def test_overview_keyed_budget_counts_its_live_buckets(
    r: redis.Redis, redis_url: str, staff_client: Client, settings: Any
) -> None:
    settings.STREAMDESK_RATE_LIMITS = "api=1/m:3"
    assert take(redis_url, "api:t1", ["a"]) == [True]
    assert take(redis_url, "api:t2", ["b", "c"]) == [True, True]
    row = row_of(text(staff_client.get("/")), 'data-budget="api"')
    assert '<span data-metric="keyed">2</span> keyed buckets live' in row
    # The row's own level is the unkeyed bucket's, untouched.
    assert '<span data-metric="tokens">3.0</span> of 3 tokens' in row
    [api] = staff_client.get("/api/streams/").json()["budgets"]
    assert api["keyed_buckets"] == 2 and api["taken"] == 0


def test_overview_budgets_empty_state(r: redis.Redis, staff_client: Client, settings: Any) -> None:
    settings.STREAMDESK_RATE_LIMITS = ""
    body = text(staff_client.get("/"))
    assert "No rate budgets configured" in body
    assert "<code>STREAMDESK_RATE_LIMITS</code>" in body


def test_overview_usage_by_event_type(r: redis.Redis, redis_url: str, staff_client: Client) -> None:
    spend(redis_url, {"github.issue.opened": Usage(2, 1200, 300, 0.0123)})
    spend(redis_url, {"github.issue.opened": Usage(1, 800, 100, 0.0077), "demo.echo": Usage()})
    body = text(staff_client.get("/"))
    row = row_of(body, 'data-usage="github.issue.opened"')
    assert 'data-metric="calls">3<' in row
    assert 'data-metric="prompt_tokens">2,000<' in row
    assert 'data-metric="completion_tokens">400<' in row
    assert 'data-metric="cost_usd">$0.0200<' in row
    # A type that made no model call is not a row.
    assert 'data-usage="demo.echo"' not in body


def test_overview_usage_empty_state(r: redis.Redis, staff_client: Client) -> None:
    body = text(staff_client.get("/"))
    assert "No model calls recorded yet" in body
    assert "<code>STREAMDESK_LLM_MODEL</code>" in body


def test_overview_deferred_counter_per_stream(r: redis.Redis, staff_client: Client) -> None:
    r.hset(f"streamdesk:stats:{STREAM}", mapping={"deferred": 4, "failed": 0})
    r.sadd("streamdesk:stats:streams", STREAM)
    body = text(staff_client.get("/"))
    assert 'data-metric="deferred">4<' in body
    assert 'data-metric="deferred_s">0.0/s<' in body


def test_collect_reads_budgets_and_usage_in_three_round_trips(
    r: redis.Redis, redis_url: str, traffic: list[str], settings: Any
) -> None:
    settings.STREAMDESK_RATE_LIMITS = "api=1/m:3,slack=1/s"
    take(redis_url, "api", ["a"])
    spend(redis_url, {"demo.echo": Usage(1, 10, 5, 0.5)})
    client = CountingRedis.from_url(redis_url, decode_responses=True)
    try:
        sample = collect(client, Keys(), budgets=rate_budgets())
    finally:
        client.close()
    assert client.round_trips == 3
    assert [(b.budget.name, b.taken) for b in sample.budgets] == [("api", 1), ("slack", 0)]
    assert sample.usage["demo.echo"]["calls"] == 1
    assert sample.stream(STREAM) is not None


class CountingRedis(redis.Redis):
    """Counts what reaches the server: one per command, one per pipeline execute."""

    round_trips = 0

    def execute_command(self, *args: Any, **options: Any) -> Any:
        self.round_trips += 1
        return super().execute_command(*args, **options)

    def pipeline(self, transaction: bool = True, shard_hint: Any = None) -> Any:
        pipe = super().pipeline(transaction, shard_hint)
        run = pipe.execute

        def execute(raise_on_error: bool = True) -> Any:
            self.round_trips += 1
            return run(raise_on_error)

        pipe.execute = execute  # type: ignore[method-assign]
        return pipe


def make_run(**fields: Any) -> AgentRun:
    return AgentRun.objects.create(
        event_hash=HASH,
        event_type="github.issue.opened",
        stream=STREAM,
        entry_id="1700000000000-0",
        status=RunStatus.SUCCEEDED,
        consumer="w-1",
        **fields,
    )


def store_steps(count: int, value: Any = None) -> None:
    start = timezone.now()
    StepResult.objects.bulk_create(
        StepResult(
            event_hash=HASH,
            name=f"step-{n:03d}",
            value={"n": n} if value is None else value,
            token=2,
            consumer="w-2",
            duration_ms=12.0,
            created_at=start + timedelta(milliseconds=n),
        )
        for n in range(count)
    )


def test_event_page_shows_run_usage(r: redis.Redis, staff_client: Client) -> None:
    make_run(llm_calls=3, prompt_tokens=1500, completion_tokens=250, cost_usd=0.0042)
    body = text(staff_client.get(f"/events/{HASH}/"))
    assert "3 calls · 1,500 prompt + 250 completion tokens · $0.0042 estimated" in body


def test_event_page_without_model_calls_says_so(r: redis.Redis, staff_client: Client) -> None:
    make_run()
    body = text(staff_client.get(f"/events/{HASH}/"))
    assert '<dd data-metric="run-usage">no model calls</dd>' in body
    assert "No durable steps stored for this event" in body


def test_event_page_lists_durable_steps_in_order(r: redis.Redis, staff_client: Client) -> None:
    make_run()
    store_steps(3)
    body = text(staff_client.get(f"/events/{HASH}/"))
    positions = [body.index(f'data-step="step-{n:03d}"') for n in range(3)]
    assert positions == sorted(positions)
    row = row_of(body, 'data-step="step-001"')
    assert "w-2" in row and ">2<" in row and "12 ms" in row
    assert "&quot;n&quot;: 1" in body
    assert "Cut at 2,000 characters" not in body


def test_event_page_cuts_a_long_step_value(r: redis.Redis, staff_client: Client) -> None:
    make_run()
    store_steps(1, value={"text": "x" * 5000 + "END"})
    body = text(staff_client.get(f"/events/{HASH}/"))
    assert "Cut at 2,000 characters: show all 5," in body
    preview, folded = body.split("Cut at 2,000 characters", 1)
    assert "END" not in preview and "END" in folded


def test_event_page_bounds_the_steps(r: redis.Redis, staff_client: Client) -> None:
    make_run()
    store_steps(205)
    body = text(staff_client.get(f"/events/{HASH}/"))
    assert 'data-step="step-199"' in body
    assert 'data-step="step-200"' not in body
    assert "Showing the first 200 of 205 steps." in body


def test_api_streams_includes_budgets_and_usage(
    r: redis.Redis, redis_url: str, viewer_client: Client, settings: Any
) -> None:
    settings.STREAMDESK_RATE_LIMITS = "api=1/m:3"
    take(redis_url, "api", ["a", "b", "c", "d"])
    spend(redis_url, {"demo.echo": Usage(2, 30, 7, 0.25)})
    data = viewer_client.get("/api/streams/").json()
    (budget,) = data["budgets"]
    assert budget["name"] == "api" and budget["burst"] == 3
    assert budget["taken"] == 3 and budget["deferrals"] == 1 and budget["waiting"] == 1
    assert -1.01 < budget["tokens"] < -0.99
    assert data["usage"] == {
        "demo.echo": {"calls": 2, "prompt_tokens": 30, "completion_tokens": 7, "cost_usd": 0.25}
    }
