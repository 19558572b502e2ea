"""Why a pending entry waits (issue 29, item 6): the pending rows name what holds an entry
back, from the timeline steps a real worker recorded: "waiting for budget slow", "timed out".
The worker runs in-process against the real server and database for two seconds, then
stops; what it held back stays pending."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from dataclasses import replace
from typing import Any

import pytest
import redis
from django.db import connection
from django.test import Client
from redis import asyncio as aredis

from tests.support.engine import STREAM, AnyData, run_burst, xadd
from tests.support.entries import live_consumer
from workers import operations
from workers.core.config import EngineConfig
from workers.core.events import stored_hash
from workers.core.registry import Registry
from workers.engine.worker import Worker
from workers.models import AgentRun, Door, RunStatus
from workers.operations import Actor
from workers.runtime.ratelimit import Budget
from workers.store.runs import DjangoRunStore

pytestmark = pytest.mark.django_db(transaction=True)

ALICE = Actor("alice", Door.CONSOLE)


async def run_for(url: str, config: EngineConfig, registry: Registry, seconds: float) -> None:
    client = aredis.Redis.from_url(url, decode_responses=True)
    worker = Worker(config, client, registry, DjangoRunStore(), budgets={
        "slow": Budget("slow", rate=1 / 3600, burst=1)})  # fmt: skip
    task = asyncio.create_task(worker.run())
    await asyncio.sleep(seconds)
    worker.request_stop()
    await task
    await client.aclose()


def pending_cells(staff_client: Client) -> dict[str, str]:
    """Each pending row's state cell, as text, by entry id."""
    html = staff_client.get(f"/streams/{STREAM}/groups/agents/").content.decode()
    rows = re.findall(r'/entries/([0-9-]+)/">[^<]+</a></td><td class="mono">[^<]*</td>'
                      r'<td class="num">(.*?)</td>', html, re.S)  # fmt: skip
    return {i: re.sub(r"<[^>]+>", "", c).strip() for i, c in rows}


def test_pending_rows_say_what_holds_each_entry_back(
    r: redis.Redis, redis_url: str, config: EngineConfig, staff_client: Client
) -> None:
    registry = Registry()

    @registry.agent("t.budgeted", schema=AnyData)
    async def budgeted(event: Any, ctx: Any) -> None:
        await ctx.tool("slow")

    @registry.agent("t.hangs", schema=AnyData, timeout_s=0.2)
    async def hangs(event: Any, ctx: Any) -> None:
        await asyncio.sleep(30)

    first = xadd(r, {"type": "t.budgeted", "source": "t", "id": "b1", "data": {}})
    second = xadd(r, {"type": "t.budgeted", "source": "t", "id": "b2", "data": {}})
    hung = xadd(r, {"type": "t.hangs", "source": "t", "id": "h1", "data": {}})
    # The console's claim idle time (60 s), and a retry 20 s off: both waits are ahead.
    worker = replace(config, claim_idle_ms=60_000, retry_base_ms=20_000, consumer="w1")
    asyncio.run(run_for(redis_url, worker, registry, 2.0))
    live_consumer(r, "w1", group="agents")

    cells = pending_cells(staff_client)
    # One of the two took the budget's one token and is done: which one is the race of
    # their agents' first Redis calls (each on a pool connection of its own).
    [waiting] = {first, second} & set(cells)
    assert set(cells) == {waiting, hung}, cells
    assert cells[waiting].startswith("waiting for budget slow, retry at "), cells
    assert cells[hung].startswith("timed out, retry at "), cells


def test_a_running_event_asked_to_cancel_says_so_until_its_agent_stops(
    r: redis.Redis, redis_url: str, config: EngineConfig, staff_client: Client
) -> None:
    """A sync agent's thread cannot be stopped: until it returns, its row says it is being
    cancelled, not that it is running as if nothing had been asked."""
    started, finish, seen = threading.Event(), threading.Event(), {}
    registry = Registry()

    @registry.agent("t.stubborn", schema=AnyData)
    def stubborn(event: Any, ctx: Any) -> str:  # never looks at ctx.cancelled
        started.set()
        finish.wait(10)
        return "finished anyway"

    payload = json.dumps({"type": "t.stubborn", "source": "t", "id": "s1", "data": {}})
    entry_id = xadd(r, payload)

    def operator() -> None:
        try:
            started.wait(10)
            seen["before"] = pending_cells(staff_client).get(entry_id, "")
            operations.cancel(ALICE, stored_hash(payload), client=r, keys=config.keys)
            seen["after"] = pending_cells(staff_client).get(entry_id, "")
        finally:
            finish.set()
            connection.close()

    thread = threading.Thread(target=operator)
    thread.start()
    run_burst(redis_url, config, registry)
    thread.join()

    assert "cancel" not in seen["before"], seen
    assert seen["after"] == "cancelled, stopping", seen
    assert AgentRun.objects.get(event_hash=stored_hash(payload)).status == RunStatus.CANCELLED
    assert pending_cells(staff_client) == {}
