"""Replays for tests: a registry of two agents on one type, events published in bulk,
a replay planned, started and its job run in-process."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import redis
from pydantic import BaseModel

from tests.support.engine import STREAM
from workers import replay
from workers.core.keys import Keys
from workers.core.registry import Registry
from workers.models import AgentRun, BulkJob, Door
from workers.operations import Actor, jobs
from workers.store.audit import ActionOutcome

ALICE = Actor("alice", Door.CLI)
TYPE = "ticket.created"


class Ticket(BaseModel):
    n: int


async def triage(event: Any, ctx: object) -> dict[str, int]:
    return {"triaged": event.data.n}


def two_agents(second: bool = True) -> Registry:
    """``triage`` and (``second``) ``summarise`` on every ticket, each in a group of its own."""
    registry = Registry()
    registry.agent(TYPE, schema=Ticket, name="triage")(triage)
    if not second:
        return registry

    @registry.agent(TYPE, schema=Ticket, name="summarise")
    async def summarise(event: Any, ctx: object) -> dict[str, int]:
        return {"summarised": event.data.n}

    return registry


def publish(
    r: redis.Redis,
    n: int,
    start: int = 1,
    type_: str = TYPE,
    subject: str | None = None,
    stream: str = STREAM,
) -> list[str]:
    """``n`` events ``e<start>``..., one pipeline; their entry ids."""
    with r.pipeline(transaction=False) as pipe:
        for i in range(start, start + n):
            event: dict[str, Any] = {"type": type_, "source": "t", "id": f"e{i}", "data": {"n": i}}
            if subject is not None:
                event["subject"] = subject
            pipe.xadd(stream, {"event": json.dumps(event)})
        return [str(i) for i in pipe.execute()]


def start(
    r: redis.Redis, registry: Registry, agent: str, dry_run: bool = False, **given: Any
) -> ActionOutcome:
    """``manage.py replay`` without running its job: the dry run, or the job queued."""
    streams = given.pop("streams", [STREAM])
    plan = replay.plan(registry, "agents", agent, streams, **given)
    return replay.replay(ALICE, plan, dry_run=dry_run, client=r)


def run_job(r: redis.Redis, job_id: int, owner: str = "runner-a", **options: Any) -> BulkJob:
    return jobs.run(job_id, r, Keys(), owner, kinds=replay.JOB_KINDS, **options)


def replay_now(r: redis.Redis, registry: Registry, agent: str, **given: Any) -> BulkJob:
    outcome = start(r, registry, agent, **given)
    assert outcome.job_id is not None, outcome
    return run_job(r, outcome.job_id)


def runs_by_agent(**filters: object) -> Counter[tuple[str, str]]:
    return Counter(AgentRun.objects.filter(**filters).values_list("agent", "status"))


def copies(r: redis.Redis, stream: str = STREAM) -> list[dict[str, str]]:
    """The replay copies on the stream (entries with ``replayed_from``), oldest first."""
    return [f for _, f in r.xrange(stream) if replay.REPLAYED_FROM_FIELD in f]
