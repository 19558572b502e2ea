"""The refunds example (workers/examples/refunds, issue 30) in real ``runworker`` processes:
a small refund is issued at once; a large one waits for an operator's ``refund.approval``
(the event the console's Approve/Reject publishes) and is issued once when approved, not at
all when rejected, and still once when its worker was SIGKILLed while it waited."""

from __future__ import annotations

import signal
import time
from typing import Any

import pytest
import redis

pytest.importorskip("langgraph", reason="the optional langgraph extra is not installed")

from tests.support.engine import pending, xadd
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.core.keys import Keys
from workers.examples.sandbox.models import SideEffect
from workers.models import AgentRun, RunStatus

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
STREAM = "streamdesk:events"
KEYS = Keys()
LARGE_CENTS = 250_00  # above the example's threshold (50.00)


def request(r: redis.Redis, order: str, amount_cents: int) -> None:
    data = {"order_id": order, "amount_cents": amount_cents, "reason": "arrived broken"}
    xadd(r, {"type": "refund.requested", "source": "shop", "id": f"rq-{order}", "data": data})


def approve(r: redis.Redis, order: str, approved: bool, n: int = 1, by: str = "alice") -> None:
    """What the console's Approve/Reject button publishes: the match's data fields, the
    decision, who made it and why."""
    data: dict[str, Any] = {"order_id": order, "approved": approved, "by": by, "comment": "ok"}
    event = {"type": "refund.approval", "source": "console", "id": f"ap-{order}-{n}", "data": data}
    xadd(r, event)


def run_of(order: str) -> AgentRun | None:
    return AgentRun.objects.filter(event_id=f"rq-{order}").first()


def status(order: str) -> str | None:
    run = run_of(order)
    return None if run is None else run.status


def refunds(order: str) -> list[SideEffect]:
    return list(SideEffect.objects.filter(service="payments", target=f"order/{order}"))


def waits_for_approval(r: redis.Redis, order: str) -> None:
    wait_for(lambda: status(order) == RunStatus.WAITING, what="the refund to wait")
    wait_for(lambda: pending(r) == 0, what="the waiting run's entry acked")


def test_a_small_refund_is_issued_at_once(r: redis.Redis, workers: Workers) -> None:
    workers.start("w1")
    request(r, "s1", 12_50)
    wait_for(lambda: status("s1") == RunStatus.SUCCEEDED, what="the refund")
    run = run_of("s1")
    assert run is not None and run.result["outcome"] == "refunded 12.50 on order s1"
    assert "approval" not in run.result
    [effect] = refunds("s1")
    assert (effect.payload["amount_cents"], effect.replays) == (12_50, 0)
    assert effect.idempotency_key == f"{run.event_hash}:refund"
    assert r.zcard(KEYS.waiting(STREAM)) == 0


def test_a_large_refund_approved_is_issued_once(r: redis.Redis, workers: Workers) -> None:
    workers.start("w1")
    request(r, "l1", LARGE_CENTS)
    waits_for_approval(r, "l1")
    assert refunds("l1") == []
    approve(r, "other", True)  # another order's approval: no match
    approve(r, "l1", True, 1)
    approve(r, "l1", True, 2, by="bob")  # approved twice: the second does nothing
    wait_for(lambda: status("l1") == RunStatus.SUCCEEDED, what="the refund")
    run = run_of("l1")
    assert run is not None
    assert run.result["outcome"] == "refunded 250.00 on order l1 (approved by alice)"
    assert run.result["approval"] == {"approved": True, "by": "alice", "comment": "ok"}
    wait_for(lambda: pending(r) == 0, what="every approval acked")
    time.sleep(0.5)
    [effect] = refunds("l1")
    assert effect.replays == 0
    assert r.xlen(f"{STREAM}:dead") == 0


def test_a_large_refund_rejected_is_not_issued(r: redis.Redis, workers: Workers) -> None:
    workers.start("w1")
    request(r, "l2", LARGE_CENTS)
    waits_for_approval(r, "l2")
    approve(r, "l2", False, by="bob")
    wait_for(lambda: status("l2") == RunStatus.SUCCEEDED, what="the agent to finish")
    run = run_of("l2")
    assert run is not None and run.result["outcome"] == "not refunded: bob rejected: ok"
    assert "refund" not in run.result
    assert refunds("l2") == []


def test_a_waiting_refund_survives_its_workers_sigkill(r: redis.Redis, workers: Workers) -> None:
    first = workers.start("first")
    request(r, "k1", LARGE_CENTS)
    waits_for_approval(r, "k1")
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    approve(r, "k1", True)  # while no worker runs
    workers.start("second")
    wait_for(lambda: status("k1") == RunStatus.SUCCEEDED, what="the refund")
    run = run_of("k1")
    assert run is not None and run.result["approval"]["approved"] is True
    assert len(refunds("k1")) == 1
