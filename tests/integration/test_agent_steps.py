"""Durable steps (``ctx.step``) through a real worker, database and Redis."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import pytest
import redis

from tests.support.engine import AnyData, counters, run_burst, xadd
from workers.core.config import EngineConfig
from workers.core.errors import LeaseLost
from workers.core.records import StepWrite
from workers.core.registry import Registry
from workers.models import AgentRun, RunStatus, StepResult
from workers.store import durable_steps

pytestmark = pytest.mark.django_db(transaction=True)


def event(n: int = 1) -> dict[str, Any]:
    return {"type": "test.steps", "source": "t", "id": f"e{n}", "data": {"n": n}}


def test_a_stored_step_is_not_run_again_when_the_event_is_retried(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    calls: Counter[str] = Counter()
    keys: list[str] = []

    async def charge(amount: int) -> dict[str, Any]:
        calls["charge"] += 1
        return {"charge_id": f"ch_{amount}", "amount": amount}

    def notify(charge_id: str) -> str:  # sync: runs in a worker thread
        calls["notify"] += 1
        if calls["notify"] == 1:
            raise ConnectionError("slack is down")
        return f"notified {charge_id}"

    async def agent(event: Any, ctx: Any) -> dict[str, Any]:
        keys.append(ctx.idempotency_key("charge"))
        charged = await ctx.step("charge", charge, 42)
        sent = await ctx.step("notify", notify, charged["charge_id"])
        return {"charged": charged, "sent": sent}

    registry = Registry()
    registry.register("test.steps", AnyData, agent)
    xadd(r, event())
    run_burst(redis_url, config, registry)

    run = AgentRun.objects.get()
    assert run.status == RunStatus.SUCCEEDED and run.attempts == 2
    assert run.result == {
        "charged": {"charge_id": "ch_42", "amount": 42},
        "sent": "notified ch_42",
    }
    assert calls == {"charge": 1, "notify": 2}
    # The same key on both attempts: what a downstream API dedupes on.
    assert keys == [f"{run.event_hash}:charge"] * 2
    stored = dict(StepResult.objects.values_list("name", "token"))
    assert stored == {"charge": 1, "notify": 2}
    assert counters(r)["failed"] == 1


def test_a_sync_agent_gets_the_same_steps(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    calls: Counter[str] = Counter()

    def lookup(n: int) -> dict[str, int]:
        calls["lookup"] += 1
        return {"owner": n * 10}

    def agent(event: Any, ctx: Any) -> Any:
        owner = ctx.step("lookup", lookup, event.data.model_dump()["n"])
        if calls["lookup"] == 1 and calls["agent"] == 0:
            calls["agent"] += 1
            raise RuntimeError("crash after the first step")
        return owner

    registry = Registry()
    registry.register("test.steps", AnyData, agent)
    xadd(r, event(7))
    run_burst(redis_url, config, registry)

    assert AgentRun.objects.get().result == {"owner": 70}
    assert calls["lookup"] == 1


def test_steps_must_return_json_and_have_unique_names(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    async def not_json(event: Any, ctx: Any) -> None:
        await ctx.step("bad", lambda: object())

    async def twice(event: Any, ctx: Any) -> None:
        await ctx.step("same", lambda: 1)
        await ctx.step("same", lambda: 2)

    registry = Registry()
    registry.register("test.notjson", AnyData, not_json)
    registry.register("test.twice", AnyData, twice)
    xadd(r, {"type": "test.notjson", "id": "a", "data": {}})
    xadd(r, {"type": "test.twice", "id": "b", "data": {}})
    run_burst(redis_url, replace(config, max_deliveries=1), registry)

    errors = dict(AgentRun.objects.values_list("event_type", "error"))
    assert "step 'bad' returned a value that is not JSON" in errors["test.notjson"]
    assert "step 'same' ran twice in one run" in errors["test.twice"]
    assert set(AgentRun.objects.values_list("status", flat=True)) == {RunStatus.DEAD}


def write(lease: str, name: str = "s", value: Any = 1) -> StepWrite:
    from datetime import UTC, datetime

    return StepWrite("h" * 64, name, value, 1, "c", lease, 1.0, datetime.now(UTC))


def test_a_fenced_attempt_cannot_store_a_step() -> None:
    AgentRun.objects.create(
        event_hash="h" * 64, event_type="t", stream="s", entry_id="1-0", fence="new#2"
    )
    with pytest.raises(LeaseLost, match="taken over"):
        durable_steps.save(write("old#1"))
    assert durable_steps.save(write("new#2", value={"a": 1})) == {"a": 1}


def test_the_first_stored_value_wins() -> None:
    assert durable_steps.save(write("w1#1", value="first")) == "first"
    assert durable_steps.save(write("w1#1", value="second")) == "first"
    assert durable_steps.load("h" * 64) == {"s": "first"}


def test_stored_steps_and_sandbox_effects_show_in_the_admin(admin_client: Any) -> None:
    durable_steps.save(write("w1#1", value={"charge": "ch_1"}))
    page = admin_client.get("/admin/workers/stepresult/")
    assert page.status_code == 200 and "h" * 12 in page.content.decode()
    assert admin_client.get("/admin/sandbox/sideeffect/").status_code == 200
