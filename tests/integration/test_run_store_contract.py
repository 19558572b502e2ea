"""The in-memory run store (tests/support/memory_store.py) answers like the Django one
(workers/store/runs.py): the unit tests that use it stand for the real database only while
both give the same answers to the same calls. Each test runs against both stores."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.support.memory_store import MemoryRunStore
from tests.support.runs import run as support_run
from workers.core.errors import LeaseLost
from workers.core.records import Finish, Run, StepWrite
from workers.models import AgentRun
from workers.store.protocols import RunStore
from workers.store.runs import DjangoRunStore

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(params=["memory", "django"])
def store(request: pytest.FixtureRequest) -> RunStore:
    return MemoryRunStore() if request.param == "memory" else DjangoRunStore()


def status(store: RunStore, event_hash: str) -> str | None:
    if isinstance(store, MemoryRunStore):
        return store.status(event_hash)
    row = AgentRun.objects.filter(event_hash=event_hash).values_list("status", flat=True)
    return str(row[0]) if row else None


def run(event_hash: str, lease: str, token: int = 1, takeover: bool = False) -> Run:
    return support_run(event_hash, lease, token, takeover, started_at=NOW)


def step(r: Run, name: str, value: Any) -> StepWrite:
    return StepWrite(r.event_hash, name, value, r.token, r.consumer, r.lease, 1.0, NOW)


def test_run_store_contract_a_success_commits_and_counts_as_done(store: RunStore) -> None:
    a = run("h", "a/1-0#1")
    assert store.done_among(["h", "other"]) == set()
    assert store.commit([Finish(a, 1.5, {"ok": True})]) == {"a/1-0#1"}
    assert store.done_among(["h", "other"]) == {"h"}
    assert status(store, "h") == "succeeded"


def test_run_store_contract_a_success_is_never_overwritten(store: RunStore) -> None:
    a, b = run("h", "a/1-0#1"), run("h", "b/1-0#2", token=2)
    store.commit([Finish(a, 1.0, "first")])
    assert store.commit([Finish(b, 1.0, "second")]) == set()
    store.fail([Finish(b, 1.0, error="boom")])
    store.mark_dead([Finish(b, 1.0, error="gone", dead=True)])
    assert status(store, "h") == "succeeded"


def test_run_store_contract_a_fence_keeps_out_the_old_lease(store: RunStore) -> None:
    stale, fresh = run("h", "a/1-0#1"), run("h", "b/1-0#2", token=2, takeover=True)
    store.fence([fresh])
    assert status(store, "h") == "running"
    assert store.commit([Finish(stale, 1.0, "stale")]) == set()
    store.fail([Finish(stale, 1.0, error="late")])
    assert status(store, "h") == "running"
    assert store.commit([Finish(fresh, 1.0, "fresh")]) == {"b/1-0#2"}


def test_run_store_contract_failed_then_dead_then_a_redrive_succeeds(store: RunStore) -> None:
    first, retry = run("h", "a/1-0#1"), run("h", "a/1-0#2", token=2)
    redriven = replace(run("h", "a/2-0#3", token=3), entry_id="2-0")
    store.fail([Finish(first, 1.0, error="boom")])
    assert (status(store, "h"), store.done_among(["h"])) == ("failed", set())
    store.fail([Finish(first, 1.0, error="boom", dead=True)])
    assert status(store, "h") == "dead"
    # The dead-lettered entry's attempts are fenced out (issue 26); a redriven copy is not.
    assert store.commit([Finish(retry, 1.0, "late")]) == set()
    assert store.commit([Finish(redriven, 1.0, "ok")]) == {"a/2-0#3"}


def test_run_store_contract_first_step_value_wins(store: RunStore) -> None:
    a, b = run("h", "a/1-0#1"), run("h", "b/1-0#2", token=2)
    assert store.save_steps([step(a, "fetch", 1), step(b, "fetch", 2)]) == [1, 1]
    assert store.save_steps([step(b, "other", {"n": 3})]) == [{"n": 3}]
    assert store.load_steps(["h", "none"]) == {"h": {"fetch": 1, "other": {"n": 3}}, "none": {}}


def test_run_store_contract_a_fenced_out_step_is_lease_lost(store: RunStore) -> None:
    stale, fresh = run("h", "a/1-0#1"), run("h", "b/1-0#2", token=2, takeover=True)
    store.fence([fresh])
    answers = store.save_steps([step(stale, "fetch", 1), step(fresh, "fetch", 2)])
    assert isinstance(answers[0], LeaseLost)
    assert answers[1] == 2
