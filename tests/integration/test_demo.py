"""The demo ``make run`` starts: its producer also opens and moves tickets through the outbox."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
import redis
from django.core.management import call_command

from tests.support.engine import run_burst
from workers.core.config import EngineConfig
from workers.core.registry import default_registry
from workers.examples.tickets.models import Ticket
from workers.from_settings import rate_budgets
from workers.models import AgentRun, OutboxEvent, RunStatus


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


@pytest.mark.django_db(transaction=True)
def test_demoproducer_feeds_the_example_agents_and_they_all_succeed(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    call_command("demoproducer", "--count", "60", "--rate", "1000", "--seed", "5", "--no-tickets")
    entries = [(i, json.loads(f["event"])["type"]) for i, f in r.xrange("streamdesk:events")]
    types = Counter(t for _, t in entries)
    assert types["github.issue.opened"] >= 5 and types["security.credential_leaked"] >= 2
    # The LangGraph example's events only with the extra installed (as in CI).
    assert types["deploy.failed"] >= (3 if "deploy.failed" in default_registry else 0)
    # Keep only the example agents' events: a worker runs every one of them to success.
    keep = {"github.issue.opened", "security.credential_leaked", "deploy.failed"}
    r.xdel("streamdesk:events", *[i for i, t in entries if t not in keep])
    run_burst(redis_url, config, default_registry, budgets=rate_budgets())
    runs = AgentRun.objects.all()
    assert runs.count() == sum(types[t] for t in keep)
    assert {run.status for run in runs} == {RunStatus.SUCCEEDED}
