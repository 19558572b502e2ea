"""LangGraph's ``interrupt()`` as a durable wait (issue 30) through real ``runworker``
processes: the graph waits holding nothing, an answer resumes it with ``Command(resume=...)``
at the interrupted node, a second answer does nothing; a timeout resumes it with None; two
interrupts in one sync node of a sync agent, what answers them given by
``run_graph(wait_for=...)``; ``ctx.sleep`` inside a node."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

pytest.importorskip("langgraph", reason="the optional langgraph extra is not installed")

from tests.support.engine import pending, xadd
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.core.keys import Keys
from workers.models import AgentRun, RunStatus, StepResult

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
STREAM = "streamdesk:events"
KEYS = Keys()
# The hashes tests/e2e/graph_wait_agents.py counts node runs in (not imported: LangGraph).
PREPARED, APPROVE_RUNS = "graph-waits:prepared", "graph-waits:approve-runs"
FINISHED = "graph-waits:finished"


@pytest.fixture
def graph_workers(workers: Workers) -> Iterator[Workers]:
    workers.env["STREAMDESK_AGENT_MODULES"] = "tests.e2e.graph_wait_agents"
    yield workers


def ask(r: redis.Redis, order: str, kind: str = "test.graph_ask", **data: Any) -> None:
    xadd(r, {"type": kind, "source": "t", "id": f"ask-{order}", "data": {"order": order, **data}})


def answer(r: redis.Redis, order: str, n: int = 1, **data: Any) -> None:
    event = {"order": order, "approved": True, "by": "alice", **data}
    xadd(r, {"type": "test.graph_answer", "source": "t", "id": f"ans-{order}-{n}", "data": event})


def run_of(event_id: str) -> AgentRun | None:
    return AgentRun.objects.filter(event_id=event_id).first()


def status(event_id: str) -> str | None:
    run = run_of(event_id)
    return None if run is None else run.status


def interrupt_steps(event_id: str) -> int:
    run = run_of(event_id)
    if run is None:
        return 0
    return StepResult.objects.filter(
        event_hash=run.event_hash, name__startswith="interrupt:"
    ).count()


def waiting_on(r: redis.Redis, event_id: str) -> str | None:
    """The step of the run's wait while it waits (its wait record), else None."""
    run = run_of(event_id)
    if run is None:
        return None
    record = r.hgetall(KEYS.wait(STREAM, run.event_hash))
    return record["step"] if record.get("state") == "waiting" else None


def test_an_interrupt_waits_and_its_answer_resumes_the_graph(
    r: redis.Redis, graph_workers: Workers
) -> None:
    graph_workers.start("w1")
    ask(r, "g1")
    wait_for(lambda: status("ask-g1") == RunStatus.WAITING, what="the graph to wait")
    wait_for(lambda: pending(r) == 0, what="the waiting run's entry acked")
    assert r.zcard(KEYS.waiting(STREAM)) == 1
    answer(r, "other")  # another order's answer: no match
    answer(r, "g1", 1, comment="fine")
    answer(r, "g1", 2, approved=False)  # a second answer: it resumes nothing
    wait_for(lambda: status("ask-g1") == RunStatus.SUCCEEDED, what="the graph to resume")
    run = run_of("ask-g1")
    assert run is not None
    got = {"order": "g1", "approved": True, "by": "alice", "comment": "fine"}
    assert run.result == {"order": "g1", "answers": [got]}
    wait_for(lambda: pending(r) == 0, what="every answer acked")
    time.sleep(0.5)
    # The node before the interrupt ran once; the interrupted node twice (LangGraph reruns
    # it from its start with the answer), its durable step once.
    assert r.hget(PREPARED, "g1") == "1"
    assert r.hget(APPROVE_RUNS, "g1") == "2"
    assert r.hget(FINISHED, "g1") == "1"
    names = set(StepResult.objects.filter(event_hash=run.event_hash).values_list("name", flat=True))
    assert "before-interrupt" in names
    assert interrupt_steps("ask-g1") == 1
    assert r.xlen(f"{STREAM}:dead") == 0
    assert r.zcard(KEYS.waiting(STREAM)) == 0


def test_a_node_failing_after_its_answer_is_retried_with_that_answer(
    r: redis.Redis, graph_workers: Workers
) -> None:
    graph_workers.start("w1")
    ask(r, "flaky1")
    wait_for(lambda: status("ask-flaky1") == RunStatus.WAITING, what="the graph to wait")
    answer(r, "flaky1", comment="kept")
    wait_for(lambda: status("ask-flaky1") == RunStatus.SUCCEEDED, what="the retry", timeout_s=40)
    run = run_of("ask-flaky1")
    assert run is not None and run.attempts >= 3  # asked, answered and failed, retried
    assert [a["comment"] for a in run.result["answers"]] == ["kept"]
    # The retry goes straight to the stored answer: the node runs once more, not twice.
    assert r.hget(APPROVE_RUNS, "flaky1") == "3"
    assert (r.hget(PREPARED, "flaky1"), r.hget(FINISHED, "flaky1")) == ("1", "1")
    assert interrupt_steps("ask-flaky1") == 1


def test_an_interrupt_times_out_and_the_node_gets_none(
    r: redis.Redis, graph_workers: Workers
) -> None:
    graph_workers.start("w1")
    ask(r, "late", timeout_s=1)
    wait_for(lambda: status("ask-late") == RunStatus.WAITING, what="the graph to wait")
    wait_for(lambda: status("ask-late") == RunStatus.SUCCEEDED, what="the timeout", timeout_s=10)
    run = run_of("ask-late")
    assert run is not None and run.result == {"order": "late", "answers": [None]}
    answer(r, "late")  # after the timeout: answers nothing, acked quietly
    wait_for(lambda: pending(r) == 0, what="the late answer acked")
    assert r.xlen(f"{STREAM}:dead") == 0
    assert (r.hget(PREPARED, "late"), r.hget(FINISHED, "late")) == ("1", "1")


def test_two_interrupts_in_a_sync_node_of_a_sync_agent_wait_in_turn(
    r: redis.Redis, graph_workers: Workers
) -> None:
    graph_workers.start("w1")
    ask(r, "t1", kind="test.graph_ask_twice")
    wait_for(lambda: waiting_on(r, "ask-t1") is not None, what="the first interrupt's wait")
    first_step = waiting_on(r, "ask-t1")
    answer(r, "t1/2")  # the second interrupt's answer before its wait began: not kept
    answer(r, "t1", 1, comment="first")
    # The run's status may still say waiting while the replay runs: its wait record tells
    # the waits apart (a new step, waiting), so the second answer follows the second wait.
    second = lambda: waiting_on(r, "ask-t1") not in (None, first_step)  # noqa: E731
    wait_for(second, what="the second interrupt's wait")
    answer(r, "t1/2", 2, comment="second")
    wait_for(lambda: status("ask-t1") == RunStatus.SUCCEEDED, what="the graph to finish")
    run = run_of("ask-t1")
    assert run is not None
    comments = [a["comment"] for a in run.result["answers"]]
    assert comments == ["first", "second"]
    assert r.hget(PREPARED, "t1") == "1"
    assert r.hget(APPROVE_RUNS, "t1") == "3"  # asked, resumed once per answer
    assert r.hget(FINISHED, "t1") == "1"
    assert interrupt_steps("ask-t1") == 2


def test_a_sleep_inside_a_node_resumes_at_that_node(r: redis.Redis, graph_workers: Workers) -> None:
    graph_workers.start("w1")
    ask(r, "n1", kind="test.graph_nap")
    wait_for(lambda: status("ask-n1") == RunStatus.WAITING, what="the node's sleep")
    wait_for(lambda: status("ask-n1") == RunStatus.SUCCEEDED, what="the graph to finish")
    run = run_of("ask-n1")
    assert run is not None and run.result == {"order": "n1", "answers": ["slept"]}
    assert r.hget(PREPARED, "n1") == "1"
    assert r.hget(APPROVE_RUNS, "n1") == "2"  # the sleeping node runs again, from its start
    assert r.hget(FINISHED, "n1") == "1"
