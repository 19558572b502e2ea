"""The command line per agent (issue 31 item 1): ``--agent NAME`` wherever ``--group`` goes,
an event hash and ``--agent`` for a run, and ``manage.py streams`` naming each group's agent."""

from __future__ import annotations

import json
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
import redis
from django.core.management import CommandError, call_command
from pydantic import BaseModel

from tests.support.entries import DEAD, STREAM, dead_letters, event, pending_entries
from workers.core.events import decode_envelope, event_hash
from workers.core.fanout import TARGET_FIELD, run_hash
from workers.core.keys import Keys
from workers.core.registry import AgentSpec, default_registry
from workers.models import AgentRun

pytestmark = pytest.mark.django_db

HOME, B = "agents", "agents:summarise"
KEYS = Keys()


class Ticket(BaseModel):
    n: int


async def summarise(event: Any, ctx: object) -> str:
    return "summarised"


@pytest.fixture
def agent_b() -> Iterator[AgentSpec]:
    """A named agent in the default registry (the one the commands read) for one test."""
    spec = default_registry.register("cli.ticket", Ticket, summarise, name="summarise")
    yield spec
    # The registry has no way to unregister: a test's agent must not outlive the test.
    default_registry._named.pop("summarise", None)


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out, stderr=StringIO())
    return out.getvalue()


def both_groups(r: redis.Redis) -> None:
    for group in (HOME, B):
        r.xgroup_create(STREAM, group, id="$", mkstream=True)


def test_pause_and_resume_agent_act_on_its_group_alone(r: redis.Redis, agent_b: AgentSpec) -> None:
    both_groups(r)
    out = run("pause", "--agent", "summarise")
    assert out.startswith(f"pause on {STREAM} group {B}: ok, 1 done")
    assert r.exists(KEYS.paused(STREAM, B)) and not r.exists(KEYS.paused(STREAM, HOME))
    out = run("resume", "--agent", "summarise")
    assert out.startswith(f"resume on {STREAM} group {B}: ok, 1 done")
    assert not r.exists(KEYS.paused(STREAM, B))


def test_agent_named_by_its_type_is_the_home_group(r: redis.Redis) -> None:
    both_groups(r)
    assert f"group {HOME}: dry-run" in run("pause", "--agent", "demo.echo", "--dry-run")


def test_unknown_agent_is_refused_naming_the_agents(r: redis.Redis, agent_b: AgentSpec) -> None:
    with pytest.raises(CommandError, match=r"no agent is named 'nobody' \(the agents: .*summarise"):
        run("pause", "--agent", "nobody")
    with pytest.raises(CommandError, match="no agent is named 'nobody'"):
        run("rerun", "a" * 64, "--agent", "nobody", "--reason", "x")


def test_agent_and_group_together_are_refused(r: redis.Redis, agent_b: AgentSpec) -> None:
    with pytest.raises(CommandError, match="not allowed with"):
        run("retry", "1-0", "--agent", "summarise", "--group", "agents")
    with pytest.raises(CommandError, match="--agent or --group, not both"):
        call_command("pause", agent="summarise", group="agents", stdout=StringIO())


def test_deadletter_and_retry_with_agent_act_in_its_group(
    r: redis.Redis, agent_b: AgentSpec
) -> None:
    ids = pending_entries(r, 2, group=B)
    out = json.loads(run("retry", *ids[:1], "--agent", "summarise", "--json"))
    assert (out["group"], out["count"]) == (B, 1)
    out = json.loads(run("deadletter", *ids, "--agent", "summarise", "--reason", "bad", "--json"))
    assert (out["group"], out["count"]) == (B, 2)
    assert {f["group"] for _, f in r.xrange(DEAD)} == {B}
    rows = AgentRun.objects.all()
    assert {(row.agent, row.status) for row in rows} == {("summarise", "dead")}
    assert all(row.event_hash == run_hash(row.event_key, "summarise") for row in rows)


def test_cancel_with_agent_cancels_that_agent_run_of_the_event(
    r: redis.Redis, agent_b: AgentSpec
) -> None:
    both_groups(r)
    [entry_id] = pending_entries(r, 1, group=B)
    r.xreadgroup(HOME, "gone-worker", {STREAM: ">"})  # pending in the home group too
    raw = r.xrange(STREAM)[0][1]["event"]
    h = event_hash(decode_envelope(raw))
    out = json.loads(run("cancel", h, "--agent", "summarise", "--json"))
    assert (out["outcome"], out["ids"]) == ("ok", [entry_id])
    assert r.xpending(STREAM, B)["pending"] == 0
    assert r.xpending(STREAM, HOME)["pending"] == 1
    assert r.hget(KEYS.gate(run_hash(h, "summarise")), "state") == "cancelled"


def test_streams_names_each_group_agent_with_its_counters(
    r: redis.Redis, agent_b: AgentSpec
) -> None:
    both_groups(r)
    r.xgroup_create(STREAM, "ops-tap", id="$")  # an operator's own reader: no agent of ours
    r.hset(KEYS.group_stats(STREAM, B), mapping={"processed": 7, "dead_lettered": 2})
    r.hset(KEYS.stats(STREAM), "processed", 7)
    lines = run("streams").splitlines()
    assert any(line.startswith(f"  group {HOME} (agent home): 0 consumers") for line in lines)
    [b_line] = [line for line in lines if line.startswith(f"  group {B} ")]
    assert b_line.startswith(f"  group {B} (agent summarise): 0 consumers, 0 pending")
    assert b_line.endswith("; processed 7, dead lettered 2")
    assert any(line.startswith("  group ops-tap: 0 consumers") for line in lines)
    data = json.loads(run("streams", "--json"))
    groups = {g["name"]: g for g in data["streams"][0]["groups"]}
    assert (groups[HOME]["agent"], groups[B]["agent"], groups["ops-tap"]["agent"]) == (
        "",
        "summarise",
        None,
    )
    assert groups[B]["counters"] == {"processed": 7, "dead_lettered": 2}


def test_redrive_and_purge_with_agent_take_its_letters_alone(
    r: redis.Redis, agent_b: AgentSpec
) -> None:
    dead_letters(r, 2)  # the home group's
    raw = event(5)
    b_id = r.xadd(DEAD, {"event": raw, "stream": STREAM, "group": B, "reason": "max-deliveries"})
    out = json.loads(run("redrive", "--all", "--agent", "summarise", "--json"))
    assert (out["outcome"], out["count"]) == ("ok", 1)
    [(_, fields)] = r.xrange(STREAM)
    assert (fields["event"], fields[TARGET_FIELD], fields["retry_of"]) == (raw, B, b_id)
    out = json.loads(run("purge", "--all", "--agent", "demo.echo", "--reason", "x", "--json"))
    assert (out["outcome"], out["count"]) == ("ok", 2)
    assert r.xlen(DEAD) == 0
