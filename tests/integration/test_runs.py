"""The database side of the gate: fenced commits on AgentRun rows."""

from __future__ import annotations

import pytest
from django.utils import timezone

from workers.models import AgentRun, RunStatus
from workers.runs import Claim, Finish, RunStore

pytestmark = pytest.mark.django_db


def claim(event_hash: str, lease: str) -> Claim:
    return Claim(
        event_hash=event_hash,
        lease=lease,
        consumer="c",
        event_type="demo.echo",
        event_id="1",
        source="s",
        subject="",
        stream="streamdesk:events",
        entry_id="1-0",
        started_at=timezone.now(),
    )


def test_commit_with_the_current_lease_succeeds() -> None:
    store = RunStore()
    assert store.claim([claim("h", "a#1")]) == set()
    assert store.commit([Finish("h", "a#1", 1.5, {"ok": True})]) == {"a#1"}
    row = AgentRun.objects.get(event_hash="h")
    assert (row.status, row.result, row.duration_ms) == (RunStatus.SUCCEEDED, {"ok": True}, 1.5)


def test_commit_after_takeover_is_fenced() -> None:
    store = RunStore()
    store.claim([claim("h", "a#1")])
    store.claim([claim("h", "b#2")])  # the lease was taken over
    assert store.commit([Finish("h", "a#1", 1.0, "stale")]) == set()
    assert store.commit([Finish("h", "b#2", 1.0, "fresh")]) == {"b#2"}
    row = AgentRun.objects.get(event_hash="h")
    assert (row.result, row.attempts, row.lease) == ("fresh", 2, "b#2")


def test_a_succeeded_row_makes_a_claim_a_duplicate() -> None:
    store = RunStore()
    store.claim([claim("h", "a#1")])
    store.commit([Finish("h", "a#1", 1.0, 1)])
    assert store.claim([claim("h", "c#1"), claim("other", "d#1")]) == {"h"}
    assert AgentRun.objects.get(event_hash="h").lease == "a#1"


def test_commit_is_idempotent() -> None:
    store = RunStore()
    store.claim([claim("h", "a#1")])
    assert store.commit([Finish("h", "a#1", 1.0, 1)]) == {"a#1"}
    assert store.commit([Finish("h", "a#1", 1.0, 1)]) == {"a#1"}


def test_batch_commit_mixes_fenced_and_current() -> None:
    store = RunStore()
    store.claim([claim("h1", "a#1"), claim("h2", "a#1b")])
    store.claim([claim("h2", "b#2")])
    committed = store.commit([Finish("h1", "a#1", 1, "x"), Finish("h2", "a#1b", 1, "y")])
    assert committed == {"a#1"}
    assert AgentRun.objects.get(event_hash="h2").status == RunStatus.RUNNING


def test_failure_is_recorded_and_a_retry_reopens_the_row() -> None:
    store = RunStore()
    store.claim([claim("h", "a#1")])
    store.fail([Finish("h", "a#1", 2.0, error="boom")])
    assert AgentRun.objects.get(event_hash="h").status == RunStatus.FAILED
    store.claim([claim("h", "a#2")])
    row = AgentRun.objects.get(event_hash="h")
    assert (row.status, row.attempts, row.error) == (RunStatus.RUNNING, 2, "")
