"""Issue 32's honest edges: a Retry now on a running entry, the event page of a running
event, and what the audit page says of refused and no-op actions."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

import pytest
import redis
from django.test import Client

from tests.support.actions import hash_of
from tests.support.console import ACT, HTMX, pending_entries, text
from tests.support.engine import STREAM
from workers.core.keys import Keys
from workers.core.steps import Kind
from workers.models import AuditRecord, TimelineStep

pytestmark = pytest.mark.django_db(transaction=True)
KEYS = Keys()


def first_event() -> dict[str, object]:
    """The event of ``pending_entries``' first entry."""
    return {"type": "demo.echo", "id": "e0", "data": {"n": 0}}


def run_now(r: redis.Redis, owner: str, lease_s: int = 30) -> str:
    """The gate record an agent holds while it runs the first entry's event (as acquire.lua
    writes it). Returns the event hash."""
    event_hash = hash_of(first_event())
    lease_until = int(time.time() * 1000) + lease_s * 1000
    mapping = {"state": "running", "owner": owner, "token": 1, "lease_until": lease_until}
    r.hset(KEYS.gate(event_hash, STREAM), mapping=mapping)  # type: ignore[arg-type]
    return event_hash


def test_retry_now_on_a_running_entry_says_where_it_runs(
    r: redis.Redis, operator_client: Client
) -> None:
    ids = pending_entries(r)
    run_now(r, f"worker-7/{ids[0]}")
    body = text(operator_client.post(f"{ACT}retry/", {"ids": ids[:1]}, headers=HTMX))
    assert "running now on worker-7: the gate decides, nothing re-run" in body
    assert "1 done" not in body
    record = AuditRecord.objects.get()
    assert (record.outcome, record.skipped, record.target) == ("noop", 1, {"ids": ids[:1]})
    assert record.detail == "running now on worker-7: the gate decides, nothing re-run"


def test_event_page_of_a_running_event_says_where_and_for_how_long(
    r: redis.Redis, viewer_client: Client
) -> None:
    ids = pending_entries(r)
    event_hash = run_now(r, f"worker-7/{ids[0]}")
    started = datetime.now(UTC) - timedelta(seconds=58)
    TimelineStep.objects.create(
        event_hash=event_hash,
        stream=STREAM,
        entry_id=ids[0],
        at=started,
        kind=Kind.RAN,
        consumer="worker-7",
        attempt=1,
    )
    body = text(viewer_client.get(f"/streams/{STREAM}/entries/{ids[0]}/"))
    assert 'data-running="worker-7"' in body
    assert "for 58." in body and "none recorded yet" not in body


def test_event_page_of_a_running_event_without_its_start(
    r: redis.Redis, viewer_client: Client
) -> None:
    ids = pending_entries(r)
    run_now(r, f"worker-7/{ids[0]}")
    body = text(viewer_client.get(f"/streams/{STREAM}/entries/{ids[0]}/"))
    assert "its start is not recorded yet" in body and "none recorded yet" not in body


def test_event_page_ignores_an_expired_lease_and_an_operators_hold(
    r: redis.Redis, viewer_client: Client
) -> None:
    ids = pending_entries(r)
    run_now(r, f"worker-7/{ids[0]}", lease_s=-1)
    assert "none recorded yet" in text(viewer_client.get(f"/streams/{STREAM}/entries/{ids[0]}/"))
    run_now(r, "dead-letter:alice")
    body = text(viewer_client.get(f"/streams/{STREAM}/entries/{ids[0]}/"))
    assert "none recorded yet" in body and "data-running" not in body


def test_audit_page_shows_what_a_noop_said(r: redis.Redis, operator_client: Client) -> None:
    ids = pending_entries(r)
    r.xack(STREAM, "agents", ids[0])
    operator_client.post(f"{ACT}retry/", {"ids": ids[:1]}, headers=HTMX)
    body = text(operator_client.get("/audit/"))
    assert "1 not pending" in body and ids[0] in body


def test_audit_page_shows_what_a_refusal_said(r: redis.Redis, operator_client: Client) -> None:
    ids = pending_entries(r)
    said = text(
        operator_client.post(
            f"{ACT}claim/", {"ids": ids[:1], "consumer": "gone-worker"}, headers=HTMX
        )
    )
    record = AuditRecord.objects.get()
    assert record.outcome == "refused" and record.target == {"ids": ids[:1]}
    assert record.detail and record.detail in said.replace("&#x27;", "'")
    body = text(operator_client.get("/audit/")).replace("&#x27;", "'")
    assert record.detail in body


@pytest.mark.parametrize(
    ("asked", "pressed"), [("1h", "1 hour"), ("24h", "24 hours"), ("", "5 min"), ("7y", "5 min")]
)
def test_chart_range_in_the_url_is_pressed_at_first_render(
    r: redis.Redis, viewer_client: Client, asked: str, pressed: str
) -> None:
    pending_entries(r)
    body = text(viewer_client.get(f"/streams/{STREAM}/groups/agents/", {"range": asked}))
    buttons = re.findall(r'aria-pressed="true">([^<]+)</button>', body)
    assert buttons == [pressed]
