"""The database side of the gate: fenced upserts of AgentRun rows."""

from __future__ import annotations

import sqlite3

import pytest
from django.db import connection

from tests.support.runs import run
from workers.core.records import Finish, Run
from workers.models import AgentRun, RunStatus
from workers.store.runs import DjangoRunStore

pytestmark = pytest.mark.django_db


def ok(r: Run, result: object = None) -> Finish:
    return Finish(r, 1.5, result)


def test_first_attempt_commits_without_a_prior_row() -> None:
    store = DjangoRunStore()
    a = run("h", "a/1-0#1")
    assert store.done_among(["h"]) == set()
    assert not AgentRun.objects.exists()  # nothing written before the result
    assert store.commit([ok(a, {"ok": True})]) == {"a/1-0#1"}
    row = AgentRun.objects.get(event_hash="h")
    assert (row.status, row.result, row.duration_ms, row.attempts) == (
        RunStatus.SUCCEEDED,
        {"ok": True},
        1.5,
        1,
    )


def test_takeover_fences_out_the_paused_owner() -> None:
    store = DjangoRunStore()
    stale, fresh = run("h", "a/1-0#1"), run("h", "b/1-0#2", token=2, takeover=True)
    store.fence([fresh])
    assert AgentRun.objects.get(event_hash="h").fence == "b/1-0#2"
    assert store.commit([ok(stale, "stale")]) == set()
    assert store.commit([ok(fresh, "fresh")]) == {"b/1-0#2"}
    row = AgentRun.objects.get(event_hash="h")
    assert (row.result, row.attempts, row.lease, row.consumer) == ("fresh", 2, "b/1-0#2", "b")


def test_a_success_is_never_overwritten() -> None:
    store = DjangoRunStore()
    a, b = run("h", "a/1-0#1"), run("h", "b/1-0#2", token=2)
    store.commit([ok(a, 1)])
    assert store.commit([ok(b, 2)]) == set()
    store.fail([Finish(b, 1.0, error="late failure")])
    row = AgentRun.objects.get(event_hash="h")
    assert (row.status, row.result, row.lease) == (RunStatus.SUCCEEDED, 1, "a/1-0#1")


def test_succeeded_events_are_reported_as_duplicates() -> None:
    store = DjangoRunStore()
    store.commit([ok(run("h", "a/1-0#1"), 1)])
    assert store.done_among(["h", "other"]) == {"h"}
    store.fence([run("h", "c/2-0#1", takeover=True)])
    assert AgentRun.objects.get(event_hash="h").fence == ""  # no fence over a success


@pytest.mark.django_db(transaction=True)
def test_the_event_loops_quick_lookup_agrees_with_the_read_thread_and_only_reads() -> None:
    store = DjangoRunStore()
    store.commit([ok(run("h", "a/1-0#1"), 1)])
    store.fail([Finish(run("f", "a/2-0#1"), 1.0, error="boom")])
    quick = store.quick_lookup()
    if connection.vendor != "sqlite":
        assert quick is None  # PostgreSQL: a network round trip, kept off the event loop
        return
    assert quick is not None
    try:
        assert quick(["h", "f", "other"]) == store.done_among(["h", "f", "other"]) == {"h"}
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            quick._conn.execute("DELETE FROM workers_agentrun")  # type: ignore[union-attr]
        assert AgentRun.objects.count() == 2
    finally:
        quick.close()


def test_commit_is_idempotent() -> None:
    store = DjangoRunStore()
    a = run("h", "a/1-0#1")
    assert store.commit([ok(a, 1)]) == {"a/1-0#1"}
    assert store.commit([ok(a, 1)]) == {"a/1-0#1"}


def test_batch_commit_mixes_fenced_and_current() -> None:
    store = DjangoRunStore()
    store.fence([run("h2", "b/2-0#2", token=2, takeover=True)])
    committed = store.commit([ok(run("h1", "a/1-0#1"), "x"), ok(run("h2", "a/2-0#1"), "y")])
    assert committed == {"a/1-0#1"}
    assert AgentRun.objects.get(event_hash="h2").status == RunStatus.RUNNING


def test_failure_is_recorded_and_a_retry_succeeds() -> None:
    store = DjangoRunStore()
    store.fail([Finish(run("h", "a/1-0#1"), 2.0, error="boom")])
    row = AgentRun.objects.get(event_hash="h")
    assert (row.status, row.error, row.attempts) == (RunStatus.FAILED, "boom", 1)
    assert store.commit([ok(run("h", "a/1-0#2", token=2), "ok")]) == {"a/1-0#2"}
    row = AgentRun.objects.get(event_hash="h")
    assert (row.status, row.error, row.attempts) == (RunStatus.SUCCEEDED, "", 2)


def test_many_rows_in_one_batch() -> None:
    store = DjangoRunStore()
    runs = [run(f"h{i}", f"a/{i}-0#1") for i in range(1200)]  # more than one chunk
    assert len(store.commit([ok(r, i) for i, r in enumerate(runs)])) == 1200
    assert AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count() == 1200


def test_a_batch_holding_one_hash_twice_commits_it_once() -> None:
    """One statement may not update a row twice (PostgreSQL refuses it): such a batch is
    written row by row, the first commit wins and the second is refused like a duplicate."""
    store = DjangoRunStore()
    first, twin, other = run("h", "a/1-0#1"), run("h", "a/2-0#1"), run("g", "a/3-0#1")
    committed = store.commit([ok(first, 1), ok(twin, 2), ok(other, 3)])
    assert committed == {"a/1-0#1", "a/3-0#1"}
    assert AgentRun.objects.count() == 2
    row = AgentRun.objects.get(event_hash="h")
    assert (row.status, row.result, row.lease) == (RunStatus.SUCCEEDED, 1, "a/1-0#1")
