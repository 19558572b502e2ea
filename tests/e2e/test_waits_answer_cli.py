"""The command-line door on a real run: a large refund of the refunds example
(workers/examples/refunds) waits for an operator; ``manage.py waits --json`` lists it and
``manage.py answer --approve`` resumes it, the answer checked against the example's
``refund.approval`` schema in that process, and the refund is issued once."""

from __future__ import annotations

import json

import pytest
import redis

pytest.importorskip("langgraph", reason="the optional langgraph extra is not installed")

from tests.support.engine import xadd
from tests.support.processes import Workers, manage
from tests.support.wait import wait_for
from workers.examples.sandbox.models import SideEffect
from workers.models import AgentRun, AuditRecord, RunStatus

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def status(event_id: str) -> str | None:
    run = AgentRun.objects.filter(event_id=event_id).first()
    return None if run is None else run.status


def test_manage_answer_approves_a_waiting_refund(r: redis.Redis, workers: Workers) -> None:
    workers.start("w1")
    data = {"order_id": "c1", "amount_cents": 250_00, "reason": "arrived broken"}
    xadd(r, {"type": "refund.requested", "source": "shop", "id": "rq-c1", "data": data})
    wait_for(lambda: status("rq-c1") == RunStatus.WAITING, what="the refund to wait")

    listed = manage(workers.env, "waits", "--json")
    assert listed.returncode == 0, listed.stderr
    [wait] = json.loads(listed.stdout)["waits"]
    assert (wait["type"], wait["match"]) == ("refund.approval", {"data.order_id": "c1"})

    run_hash = wait["event_hash"]
    answered = manage(
        workers.env, "answer", run_hash, "--approve", "--comment", "photo checked", "--by", "alice"
    )
    assert answered.returncode == 0, answered.stderr
    assert "answer on streamdesk:events group agents: ok, 1 done" in answered.stdout
    wait_for(lambda: status("rq-c1") == RunStatus.SUCCEEDED, what="the refund to resume")
    run = AgentRun.objects.get(event_id="rq-c1")
    assert run.result["approval"] == {"approved": True, "by": "alice", "comment": "photo checked"}
    assert SideEffect.objects.filter(service="payments", target="order/c1").count() == 1

    again = manage(workers.env, "answer", run_hash, "--reject")
    assert again.returncode == 2 and "not waiting any more (answered)" in again.stderr
    assert list(AuditRecord.objects.values_list("door", "outcome")) == [
        ("cli", "refused"),
        ("cli", "ok"),
    ]
