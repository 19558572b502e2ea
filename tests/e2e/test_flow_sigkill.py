"""Flow control survives a SIGKILL (issue 29): two real ``runworker`` processes share 240
events over 12 subjects of an agent declared ``key="subject", concurrency=1``; one is
SIGKILLed mid-run and the survivor reclaims its entries after the claim idle time (1.5 s).
Each subject's events must run in publish order, never two at once, each once.

The agent (bench/flow/agents.py, ``flow.order``) sleeps 50 ms and RPUSHes its start and end
to a Redis list, so the check (bench/flow/order.py) reads the order the server took them
in. The test process does not import the agents (that would add their types to its default
registry)."""

from __future__ import annotations

import contextlib
import json
import signal
import time
from typing import cast

import pytest
import redis

from bench.flow import order
from bench.flow.names import AGENT_MODULE, ORDER_KEY, ORDER_TYPE
from tests.support.engine import STREAM, pending
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.models import AgentRun, RunStatus

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SUBJECTS, PER_SUBJECT, RUN_MS = 12, 20, 50
TOTAL = SUBJECTS * PER_SUBJECT


def publish(r: redis.Redis, subjects: range, ms: int = RUN_MS) -> None:
    """Round robin over ``subjects``: seq 0 of each, then seq 1, ..."""
    with r.pipeline(transaction=False) as pipe:
        for seq in range(PER_SUBJECT):
            for s in subjects:
                data = {"seq": seq, "ms": ms}
                event = {"type": ORDER_TYPE, "source": "t", "id": f"o{s}-{seq}",
                         "subject": f"order/{s}", "data": data}  # fmt: skip
                pipe.xadd(STREAM, {"event": json.dumps(event)})
        pipe.execute()


def records(r: redis.Redis) -> list[order.Record]:
    return order.parse(cast(list[str], r.lrange(ORDER_KEY, 0, -1)))


def victim_running(recs: list[order.Record], pid: int) -> bool:
    """Has the victim started a run it has not ended?"""
    starts = sum(1 for rec in recs if rec.pid == pid and rec.kind == "start")
    return starts > sum(1 for rec in recs if rec.pid == pid and rec.kind == "end")


def consumers(r: redis.Redis) -> set[str]:
    try:
        return {str(c["name"]) for c in r.xinfo_consumers(STREAM, "agents")}
    except redis.ResponseError:  # no stream or group yet
        return set()


def test_flow_sigkill_each_subject_runs_in_order_one_at_a_time_once(
    r: redis.Redis, workers: Workers
) -> None:
    workers.env["STREAMDESK_AGENT_MODULES"] = AGENT_MODULE
    # A key's next event goes to the worker that ran the one before, so whoever reads a
    # subject's first event runs the whole subject: the victim reads half the subjects
    # alone, slowly enough (4 s a subject) to be cut short; both race for the other half.
    victim = workers.start("victim")
    wait_for(lambda: consumers(r) >= {"victim"}, what="the victim reading")
    half = SUBJECTS // 2
    publish(r, range(half), ms=4 * RUN_MS)
    wait_for(lambda: any(x.pid == victim.pid for x in records(r)), what="the victim's runs")
    workers.start("survivor")
    wait_for(lambda: consumers(r) >= {"victim", "survivor"}, what="both workers reading")
    publish(r, range(half, SUBJECTS))
    wait_for(
        lambda: len(records(r)) >= TOTAL * 2 // 3,  # a start and an end each
        what="a third of the runs",
    )
    # Best when a run of the victim is cut short; its runs are brief, so not always caught.
    with contextlib.suppress(AssertionError):
        wait_for(lambda: victim_running(records(r), victim.pid), timeout_s=3)
    victim.send_signal(signal.SIGKILL)
    kill_ns = time.time_ns()
    victim.wait(timeout=10)

    wait_for(
        lambda: (
            AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count() == TOTAL and pending(r) == 0
        ),
        timeout_s=60,
        what="every event to succeed",
    )
    counts = {f"order/{s}": PER_SUBJECT for s in range(SUBJECTS)}
    verdict = order.check(records(r), counts, victim.pid, kill_ns)
    assert verdict.violations == [], workers.log("survivor")[-3000:]
    assert verdict.completed == TOTAL
    assert {rec.pid for rec in records(r)} == {victim.pid, *(p.pid for p in workers.procs[1:])}
    assert not r.keys("streamdesk:flow:*:q:*")
