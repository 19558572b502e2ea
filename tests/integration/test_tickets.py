"""The outbox example: a Ticket's creation and status changes reach the triage agent."""

from __future__ import annotations

import pytest
import redis
from django.db import transaction

from tests.support.engine import run_burst
from workers.core.config import EngineConfig
from workers.core.registry import default_registry
from workers.examples.tickets.models import Ticket
from workers.models import AgentRun, OutboxEvent, RunStatus
from workers.producers.relay import Relay

pytestmark = pytest.mark.django_db(transaction=True)


def test_ticket_changes_are_relayed_and_triaged(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    ticket = Ticket.objects.create(title="Checkout is down", customer="acme")
    other = Ticket.objects.create(title="Invoice address typo")
    ticket.status = "closed"
    ticket.save()
    ticket.title = "Checkout was down"  # no status change: no event
    ticket.save()

    rows = list(OutboxEvent.objects.order_by("id").values_list("type", "subject"))
    assert rows == [
        ("ticket.created", f"ticket/{ticket.pk}"),
        ("ticket.created", f"ticket/{other.pk}"),
        ("ticket.status_changed", f"ticket/{ticket.pk}"),
    ]
    assert Relay(r).run_once() == 3
    run_burst(redis_url, config, default_registry)

    runs = AgentRun.objects.filter(status=RunStatus.SUCCEEDED, source="outbox")
    results = {(run.event_type, run.result["ticket_id"]): run.result for run in runs}
    assert results == {
        ("ticket.created", ticket.pk): {
            "ticket_id": ticket.pk,
            "priority": "urgent",
            "queue": "on-call",
        },
        ("ticket.created", other.pk): {
            "ticket_id": other.pk,
            "priority": "normal",
            "queue": "billing",
        },
        ("ticket.status_changed", ticket.pk): {
            "ticket_id": ticket.pk,
            "action": "ask-for-feedback",
        },
    }

    # The routing agent wrote its decision on the rows, through its route_ticket tool.
    routed = dict(Ticket.objects.values_list("pk", "queue"))
    assert routed == {ticket.pk: "on-call", other.pk: "billing"}
    created = runs.get(event_type="ticket.created", subject=f"ticket/{other.pk}")
    assert created.llm_calls == 2 and created.prompt_tokens > 0


def test_a_rolled_back_ticket_emits_nothing(r: redis.Redis) -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        Ticket.objects.create(title="never saved")
        raise RuntimeError("abort")
    assert not Ticket.objects.exists() and not OutboxEvent.objects.exists()
