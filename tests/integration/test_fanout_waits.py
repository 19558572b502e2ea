"""A named agent's run that waits (issue 31 item 1 with issue 30's waits): the home group
looks up the answer once, and the run resumes in its own group alone; the other agent of
the type is not woken, nor counts the resumed copy as a duplicate."""

from __future__ import annotations

import json

import pytest
import redis
from pydantic import BaseModel

from tests.support.engine import STREAM, run_fleet
from workers.core.config import EngineConfig
from workers.core.keys import Keys
from workers.core.registry import Registry
from workers.models import AgentRun

pytestmark = pytest.mark.django_db(transaction=True)


class Ticket(BaseModel):
    n: int


def registry_with_a_waiting_agent() -> Registry:
    registry = Registry()

    @registry.agent("ticket.created", schema=Ticket, name="quick")
    async def quick(event: object, ctx: object) -> str:
        return "done at once"

    @registry.agent("ticket.created", schema=Ticket, name="approver")
    async def approver(event, ctx) -> dict[str, object]:  # type: ignore[no-untyped-def]
        answer = await ctx.wait_for_event(
            "ticket.approved", match={"data.n": event.data.n}, timeout_s=600
        )
        return {"approved_by": answer.data["by"] if answer else None}

    return registry


def publish(r: redis.Redis, type_: str, event_id: str, data: dict[str, object]) -> None:
    event = {"type": type_, "source": "t", "id": event_id, "data": data}
    r.xadd(STREAM, {"event": json.dumps(event)})


def test_a_named_agents_wait_resumes_in_its_own_group(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry = registry_with_a_waiting_agent()
    publish(r, "ticket.created", "t1", {"n": 1})
    run_fleet(redis_url, config, registry)
    assert dict(AgentRun.objects.values_list("agent", "status")) == {
        "quick": "succeeded",
        "approver": "waiting",
    }
    publish(r, "ticket.approved", "a1", {"n": 1, "by": "ops"})
    for _ in range(3):  # the answer, then the resumed run (a burst may end between)
        run_fleet(redis_url, config, registry)
        if AgentRun.objects.filter(agent="approver", status="succeeded").exists():
            break
    run = AgentRun.objects.get(agent="approver")
    assert run.status == "succeeded" and run.result == {"approved_by": "ops"}
    # The resumed copy was for the approver's group alone: the quick agent never saw a
    # duplicate, and the answer is no dead letter (nobody takes its type).
    resumed = [f for _, f in r.xrange(STREAM) if f.get("for")]
    assert [f["for"] for f in resumed] == ["agents:approver"]
    quick = r.hgetall(Keys().group_stats(STREAM, "agents:quick"))
    assert quick.get("processed") == "1" and "idempotency_hits" not in quick
    assert r.xlen(f"{STREAM}:dead") == 0
    assert AgentRun.objects.filter(agent="quick").count() == 1
