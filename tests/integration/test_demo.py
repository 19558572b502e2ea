"""The demo ``make run`` starts: its producer also opens and moves tickets through the outbox."""

from __future__ import annotations

from typing import Any

import pytest
import redis
from django.core.management import call_command

from workers.examples.tickets.models import Ticket
from workers.models import OutboxEvent


@pytest.mark.django_db(transaction=True)
def test_demoproducer_changes_tickets_through_the_outbox(r: redis.Redis, db: Any) -> None:
    call_command("demoproducer", "--count", "21", "--rate", "1000", "--seed", "3")
    assert r.xlen("streamdesk:events") >= 21
    assert Ticket.objects.exists()
    types = set(OutboxEvent.objects.values_list("type", flat=True))
    assert types <= {"ticket.created", "ticket.status_changed"} and "ticket.created" in types


@pytest.mark.django_db(transaction=True)
def test_demoproducer_without_tickets(r: redis.Redis, db: Any) -> None:
    call_command("demoproducer", "--count", "11", "--rate", "1000", "--no-tickets")
    assert not OutboxEvent.objects.exists()
