"""Issue 30's test "an interrupt() graph resumed by an answer from the console": the refunds
example (a LangGraph graph whose node calls interrupt()) waits in a real ``runworker``; an
operator's Approve on the console's Waiting page resumes the graph with the answer
(Command(resume=...)), and the refund is issued once."""

from __future__ import annotations

import pytest
import redis
from django.test import Client

pytest.importorskip("langgraph", reason="the optional langgraph extra is not installed")

from tests.support.engine import xadd
from tests.support.processes import Workers
from tests.support.processes import workers as workers
from tests.support.wait import wait_for
from workers.core.keys import Keys
from workers.examples.sandbox.models import SideEffect
from workers.models import AgentRun, RunStatus

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
HTMX = {"HX-Request": "true"}


def status(event_id: str) -> str | None:
    run = AgentRun.objects.filter(event_id=event_id).first()
    return None if run is None else run.status


def test_an_interrupted_graph_resumes_with_the_consoles_answer(
    r: redis.Redis, workers: Workers, operator_client: Client
) -> None:
    workers.start("w1")
    data = {"order_id": "g1", "amount_cents": 120_00, "reason": "late"}
    xadd(r, {"type": "refund.requested", "source": "shop", "id": "rq-g1", "data": data})
    wait_for(lambda: status("rq-g1") == RunStatus.WAITING, what="the graph to interrupt")
    run_hash = AgentRun.objects.get(event_id="rq-g1").event_hash
    page = operator_client.get("/waits/").content.decode()
    assert f"/waits/{run_hash}/answer/" in page and "refund.approval" in page
    note = r.hget(Keys().wait("streamdesk:events", run_hash), "note") or ""
    assert "120.00" in note  # the interrupt's question, shown beside Approve

    answered = operator_client.post(
        f"/waits/{run_hash}/answer/", {"approved": "true", "comment": "ok"}, headers=HTMX
    )
    assert answered.status_code == 200, answered.content
    wait_for(lambda: status("rq-g1") == RunStatus.SUCCEEDED, what="the graph to resume")
    run = AgentRun.objects.get(event_id="rq-g1")
    assert run.result["approval"] == {"approved": True, "by": "ops", "comment": "ok"}
    assert SideEffect.objects.filter(service="payments", target="order/g1").count() == 1
