"""Several agents on one event type (issue 31 item 1): each named agent is a consumer group
of its own, with its own pending entries, dead letters, pause and idempotency."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter

import pytest
import redis
from pydantic import BaseModel

from tests.support.engine import STREAM, AnyData, run_burst, run_fleet, xadd
from workers.core.config import EngineConfig
from workers.core.errors import ConfigurationError
from workers.core.events import Envelope, event_hash
from workers.core.fanout import TARGET_FIELD, run_hash
from workers.core.keys import Keys
from workers.core.registry import Registry
from workers.fanout import select
from workers.models import AgentRun

pytestmark = pytest.mark.django_db(transaction=True)

A, B = "agents:triage", "agents:summarise"


class Ticket(BaseModel):
    n: int


def two_agents() -> Registry:
    """Agent A takes every ticket; agent B fails every 10th for good (no retry)."""
    registry = Registry()

    @registry.agent("ticket.created", schema=Ticket, name="triage")
    async def triage(event: object, ctx: object) -> str:
        return "triaged"

    @registry.agent("ticket.created", schema=Ticket, name="summarise", max_deliveries=1)
    async def summarise(event: object, ctx: object) -> str:
        if event.data.n % 10 == 0:  # type: ignore[attr-defined]
            raise RuntimeError(f"cannot summarise ticket {event.data.n}")  # type: ignore[attr-defined]
        return "summarised"

    return registry


def publish(r: redis.Redis, n: int, type_: str = "ticket.created", start: int = 1) -> None:
    with r.pipeline(transaction=False) as pipe:
        for i in range(start, start + n):
            event = {"type": type_, "source": "t", "id": f"e{i}", "data": {"n": i}}
            pipe.xadd(STREAM, {"event": json.dumps(event)})
        pipe.execute()


def runs_by_agent(**filters: object) -> Counter[tuple[str, str]]:
    rows = AgentRun.objects.filter(**filters).values_list("agent", "status")
    return Counter(rows)


def group_info(r: redis.Redis) -> dict[str, dict[str, object]]:
    return {str(g["name"]): g for g in r.xinfo_groups(STREAM)}


def test_two_agents_each_run_every_event_once(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    publish(r, 300)
    run_fleet(redis_url, config, two_agents())
    got = runs_by_agent()
    assert got == {
        ("triage", "succeeded"): 300,
        ("summarise", "succeeded"): 270,
        ("summarise", "dead"): 30,
    }
    # Once per agent and event: one row each, one attempt each, both linked to the event.
    for agent in ("triage", "summarise"):
        rows = AgentRun.objects.filter(agent=agent)
        assert rows.values("event_key").distinct().count() == 300
        assert set(rows.values_list("attempts", flat=True)) == {1}
    sample = AgentRun.objects.filter(event_id="e7")
    assert sample.values("event_key").distinct().count() == 1
    key = sample.first().event_key  # type: ignore[union-attr]
    assert {row.event_hash for row in sample} == {
        run_hash(key, "triage"),
        run_hash(key, "summarise"),
    }
    # Own dead letters: B's, naming its group; A's pending list, lag and B's all empty.
    letters = r.xrange(f"{STREAM}:dead")
    assert len(letters) == 30 and {f["group"] for _, f in letters} == {B}
    groups = group_info(r)
    assert {A, B, "agents"} <= set(groups)
    assert all(groups[g]["pending"] == 0 and groups[g]["lag"] == 0 for g in (A, B))
    keys = Keys()
    assert r.hget(keys.group_stats(STREAM, A), "processed") == "300"
    assert r.hget(keys.group_stats(STREAM, B), "processed") == "270"
    assert r.hget(keys.group_stats(STREAM, B), "dead_lettered") == "30"
    assert r.hget(keys.group_stats(STREAM, A), "dead_lettered") is None


def test_pausing_one_agent_leaves_the_other_running(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry = two_agents()
    run_fleet(redis_url, config, registry)  # creates the groups
    r.set(Keys().paused(STREAM, B), json.dumps({"by": "test"}))
    publish(r, 300)
    run_fleet(redis_url, config, registry)
    assert runs_by_agent() == {("triage", "succeeded"): 300}
    groups = group_info(r)
    assert groups[B]["lag"] == 300 and groups[A]["lag"] == 0
    r.delete(Keys().paused(STREAM, B))
    run_fleet(redis_url, config, registry)
    assert runs_by_agent()[("summarise", "succeeded")] == 270


def test_idempotency_is_per_agent(r: redis.Redis, redis_url: str, config: EngineConfig) -> None:
    publish(r, 5)
    publish(r, 5)  # the same five events (same ids) again
    run_fleet(redis_url, config, two_agents())
    assert AgentRun.objects.count() == 10  # five per agent, not ten
    keys = Keys()
    for group in (A, B):
        assert r.hget(keys.group_stats(STREAM, group), "idempotency_hits") == "5"


def test_runworker_agent_runs_only_the_named_agents(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry = two_agents()
    publish(r, 20)
    workers = run_fleet(redis_url, config, registry, agents=["triage"])
    assert {w.config.group for w in workers} == {A}
    assert {w.config.consumer for w in workers} == {f"{config.consumer}@triage"}
    assert runs_by_agent() == {("triage", "succeeded"): 20}
    # Every agent's group exists, whether or not this worker runs it: B misses nothing.
    assert group_info(r)[B]["lag"] == 20
    with pytest.raises(ConfigurationError, match=r"no agent is named 'nobody'.*triage"):
        select(registry, ["nobody"])


def test_other_groups_pass_what_is_not_theirs(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """An unknown type and a malformed entry are dead-lettered once, by the home group; an
    entry meant for one group runs there alone; another type's events are acked unread."""
    registry = two_agents()

    @registry.agent("other.thing", schema=AnyData)
    async def other(event: object, ctx: object) -> str:
        return "other"

    xadd(r, {"type": "nobody.takes", "source": "t", "id": "x", "data": {}})
    r.xadd(STREAM, {"event": "{not json"})
    xadd(r, {"type": "other.thing", "source": "t", "id": "o", "data": {}})
    event = {"type": "ticket.created", "source": "t", "id": "only-b", "data": {"n": 1}}
    r.xadd(STREAM, {"event": json.dumps(event), TARGET_FIELD: B})
    run_fleet(redis_url, config, registry)
    letters = r.xrange(f"{STREAM}:dead")
    assert sorted(f["reason"] for _, f in letters) == ["decode-error", "unknown-type"]
    assert {f["group"] for _, f in letters} == {"agents"}
    assert runs_by_agent() == {("summarise", "succeeded"): 1, ("", "succeeded"): 1}
    assert all(g["pending"] == 0 and g["lag"] == 0 for g in group_info(r).values())


def test_registry_refuses_what_would_be_ambiguous() -> None:
    registry = Registry()

    async def one(event: object, ctx: object) -> None: ...
    async def two(event: object, ctx: object) -> None: ...

    class Other(BaseModel):
        x: int

    registry.agent("t.a", schema=Ticket)(one)
    with pytest.raises(ValueError, match=r"already has an agent.*name="):
        registry.agent("t.a", schema=Ticket)(two)
    registry.agent("t.a", schema=Ticket, name="second")(two)
    with pytest.raises(ValueError, match="named 'second' already"):
        registry.agent("t.b", schema=Ticket, name="second")(one)
    with pytest.raises(ConfigurationError, match="share one schema"):
        registry.agent("t.a", schema=Other, name="third")(one)
    for bad in ("", "a:b", "x" * 65, "-x"):
        with pytest.raises(ConfigurationError, match="an agent's name must be"):
            registry.agent("t.a", schema=Ticket, name=bad)(one)
    assert [s.name for s in registry.agents_of("t.a")] == ["t.a", "second"]
    assert registry.by_name("t.a") is registry.get("t.a")


def test_upgrade_from_one_group_to_a_group_per_agent(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """A deployment of one agent in one group, with events in flight (a worker died with
    entries pending, more not yet read), gains a named agent: none lost, none run twice."""
    before = Registry()

    @before.agent("ticket.created", schema=Ticket)
    async def triage(event: object, ctx: object) -> str:
        return "triaged"

    publish(r, 20)
    run_burst(redis_url, config, before)  # the old deployment finished these
    publish(r, 30, start=21)
    # A worker of the old deployment read ten and died: they stay pending in its name.
    r.xreadgroup("agents", "old-worker-1", {STREAM: ">"}, count=10)
    assert r.xpending(STREAM, "agents")["pending"] == 10
    after = Registry()
    after.agent("ticket.created", schema=Ticket)(triage)

    @after.agent("ticket.created", schema=Ticket, name="summarise")
    async def summarise(event: object, ctx: object) -> str:
        return "summarised"

    quick = dataclasses.replace(config, claim_idle_ms=1100, lease_ms=1000)
    publish(r, 10, start=51)
    run_fleet(redis_url, quick, after)
    rows = list(AgentRun.objects.values_list("agent", "event_id", "attempts", "status"))
    home = [row for row in rows if row[0] == ""]
    named = [row for row in rows if row[0] == "summarise"]
    # The agent without a name kept its group, its gate and its rows: each event once.
    assert sorted(int(e[1:]) for _, e, _, _ in home) == list(range(1, 61))
    assert all(a == 1 and s == "succeeded" for _, _, a, s in home)
    # The new agent took everything the fleet had not finished (from the oldest pending
    # entry on), once each, and none of the history already done.
    assert sorted(int(e[1:]) for _, e, _, _ in named) == list(range(21, 61))
    assert all(a == 1 and s == "succeeded" for _, _, a, s in named)
    assert all(g["pending"] == 0 and g["lag"] == 0 for g in group_info(r).values())


def test_run_hash_of_an_agent_without_a_name_is_the_events() -> None:
    envelope = Envelope.model_validate({"type": "t", "source": "s", "id": "1", "data": {}})
    h = event_hash(envelope)
    assert run_hash(h, "") == h
    assert len({run_hash(h, "a"), run_hash(h, "b"), run_hash(h, "a", "job-1")}) == 3
