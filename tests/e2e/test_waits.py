"""Runs that wait (issue 30) through real ``runworker`` processes: a wait answered by an
event, once however often the answer comes; a timeout; matching on ``data.<path>`` and on
``subject`` with an answer that runs its own agent; durable sleeps that give back their
slot; a wait that survives its worker's SIGKILL."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests.support.engine import counters, pending, xadd
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers import operations
from workers.core.keys import Keys
from workers.models import AgentRun, Door, RunStatus, StepResult
from workers.store.audit import Actor

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
STREAM = "streamdesk:events"
KEYS = Keys()
PREPARED, FINISHED, REPLIES = "waits:prepared", "waits:finished", "waits:replies"


@pytest.fixture
def wait_workers(workers: Workers) -> Iterator[Workers]:
    workers.env["STREAMDESK_AGENT_MODULES"] = "tests.e2e.wait_agents"
    yield workers


def ask(r: redis.Redis, order: str, timeout_s: float | None = None) -> None:
    data: dict[str, Any] = {"order": order}
    if timeout_s is not None:
        data["timeout_s"] = timeout_s
    xadd(r, {"type": "test.ask", "source": "t", "id": f"ask-{order}", "data": data})


def answer(r: redis.Redis, order: str, n: int = 1, approved: bool = True) -> None:
    data = {"order": order, "approved": approved}
    xadd(r, {"type": "test.answer", "source": "t", "id": f"ans-{order}-{n}", "data": data})


def run_of(event_id: str) -> AgentRun | None:
    return AgentRun.objects.filter(event_id=event_id).first()


def status(event_id: str) -> str | None:
    run = run_of(event_id)
    return None if run is None else run.status


def test_a_wait_is_answered_once_however_often_the_answer_comes(
    r: redis.Redis, wait_workers: Workers
) -> None:
    wait_workers.start("w1")
    ask(r, "o1")
    wait_for(lambda: status("ask-o1") == RunStatus.WAITING, what="the run to wait")
    # It waits holding nothing: its entry is acked (just after the database write).
    wait_for(lambda: pending(r) == 0, what="the waiting run's entry acked")
    assert r.zcard(KEYS.waiting(STREAM)) == 1
    answer(r, "other")  # another order's answer: no match
    answer(r, "o1", 1)
    answer(r, "o1", 2)  # the same answer again, another event: it resumes nothing
    wait_for(lambda: status("ask-o1") == RunStatus.SUCCEEDED, what="the run to resume")
    run = run_of("ask-o1")
    assert run is not None and run.result == {
        "order": "o1",
        "outcome": "answered",
        "approved": True,
    }
    wait_for(lambda: pending(r) == 0, what="every answer acked")
    time.sleep(0.5)
    assert r.hget(PREPARED, "o1") == "1"  # the step before the wait ran once
    assert r.hget(FINISHED, "o1") == "1"
    got = counters(r)
    assert got.get("waits") == 1 and got.get("answers") == 1
    # Answers no agent takes are acked, even those that answered nothing: no dead letter.
    assert r.xlen(f"{STREAM}:dead") == 0
    assert r.zcard(KEYS.waiting(STREAM)) == 0
    record = r.hgetall(KEYS.wait(STREAM, run.event_hash))
    assert record["state"] == "answered"
    assert json.loads(record["answer"])["id"] == "ans-o1-1"
    assert StepResult.objects.filter(event_hash=run.event_hash).count() == 3


def test_a_wait_times_out_and_the_agent_goes_on(r: redis.Redis, wait_workers: Workers) -> None:
    wait_workers.start("w1")
    ask(r, "late", timeout_s=1)
    wait_for(lambda: status("ask-late") == RunStatus.WAITING, what="the run to wait")
    wait_for(lambda: status("ask-late") == RunStatus.SUCCEEDED, what="the timeout", timeout_s=10)
    run = run_of("ask-late")
    assert run is not None and run.result == {"order": "late", "outcome": "timed out"}
    answer(r, "late")  # after the timeout: answers nothing, acked quietly
    wait_for(lambda: pending(r) == 0, what="the late answer acked")
    assert r.xlen(f"{STREAM}:dead") == 0
    assert r.hget(PREPARED, "late") == "1"


def test_an_answer_with_its_own_agent_runs_it_too(r: redis.Redis, wait_workers: Workers) -> None:
    wait_workers.start("w1")
    xadd(r, {"type": "test.ask_reply", "source": "t", "id": "q1", "data": {"order": "q1"}})
    wait_for(lambda: status("q1") == RunStatus.WAITING, what="the run to wait")
    xadd(
        r,
        {"type": "test.reply", "source": "t", "id": "r1", "subject": "q2", "data": {"order": "q2"}},
    )
    xadd(
        r,
        {"type": "test.reply", "source": "t", "id": "r2", "subject": "q1", "data": {"order": "q1"}},
    )
    wait_for(lambda: status("q1") == RunStatus.SUCCEEDED, what="the run to resume")
    run = run_of("q1")
    assert run is not None and run.result == {"reply": "r2"}
    wait_for(lambda: r.hget(REPLIES, "q1") == "1", what="the reply's own agent")
    assert r.hget(REPLIES, "q2") == "1"
    assert status("r2") == RunStatus.SUCCEEDED


def test_a_matching_event_published_while_no_worker_runs_is_not_lost(
    r: redis.Redis, wait_workers: Workers
) -> None:
    first = wait_workers.start("first")
    ask(r, "o9")
    wait_for(lambda: status("ask-o9") == RunStatus.WAITING, what="the run to wait")
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    answer(r, "o9")  # no worker runs
    wait_workers.start("second")
    wait_for(lambda: status("ask-o9") == RunStatus.SUCCEEDED, what="the run to resume")
    assert r.hget(PREPARED, "o9") == "1"


@pytest.mark.serial  # judges durations by the second: not beside other tests' load
def test_sleeps_give_back_their_slot(r: redis.Redis, wait_workers: Workers) -> None:
    """12 runs of ctx.sleep(2) on 2 slots: about 2 s in all, not the 12 s of sleeps that hold
    their slot; async and sync agents alike."""
    proc = wait_workers.start("w1", "--concurrency", "2")
    started = time.time()
    for n in range(12):
        kind = "test.nap" if n % 2 else "test.nap_sync"
        xadd(r, {"type": kind, "source": "t", "id": f"nap{n}", "data": {"n": n, "seconds": 2}})
    done = lambda: AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count() == 12  # noqa: E731
    wait_for(done, what="twelve sleeps", timeout_s=30)
    elapsed = time.time() - started
    assert elapsed < 2 * 2 + 3, f"12 sleeps of 2 s on 2 slots took {elapsed:.1f} s"
    for run in AgentRun.objects.all():
        slept = run.result["after"] - run.result["before"]
        assert 2.0 <= slept < 4.0, (run.event_id, slept)
    assert proc.poll() is None


def test_a_waiting_run_can_be_cancelled(r: redis.Redis, wait_workers: Workers) -> None:
    wait_workers.start("w1")
    ask(r, "c1", timeout_s=2)
    wait_for(lambda: status("ask-c1") == RunStatus.WAITING, what="the run to wait")
    run = run_of("ask-c1")
    assert run is not None
    outcome = operations.cancel(Actor("alice", Door.CLI), run.event_hash, client=r, keys=KEYS)
    assert "cancelled" in outcome.detail
    assert status("ask-c1") == RunStatus.CANCELLED
    record = r.hgetall(KEYS.wait(STREAM, run.event_hash))
    assert (record["state"], record["cancelled_by"]) == ("cancelled", "alice")
    assert r.zcard(KEYS.waiting(STREAM)) == 0
    assert r.zcard(KEYS.delayed(STREAM)) == 0  # its timeout's wake-up is gone
    answer(r, "c1")  # answers nothing now; the run never comes back
    time.sleep(3)  # past the timeout it had
    assert status("ask-c1") == RunStatus.CANCELLED
    assert r.hget(FINISHED, "c1") is None
    assert pending(r) == 0 and r.xlen(f"{STREAM}:dead") == 0
