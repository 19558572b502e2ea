"""Dead-lettering takes the fence (issue 26, item 13): an attempt that started before its
entry was dead-lettered, by a worker or by an operator, cannot commit when it wakes up, so an
event is never both succeeded and a dead letter. A later copy of the event (a redrive) still
commits. On the suite's database, SQLite or PostgreSQL."""

from __future__ import annotations

import json

import pytest
import redis

from tests.support.entries import ALICE, DEAD, GROUP, KEYS, STREAM, pending_entries
from tests.support.runs import run
from workers import operations
from workers.core.events import decode_envelope, event_hash
from workers.core.records import Finish, Run
from workers.models import AgentRun, RunStatus
from workers.operations import jobs
from workers.store.runs import DjangoRunStore

pytestmark = pytest.mark.django_db(transaction=True)


def ok(r: Run) -> Finish:
    return Finish(r, 1.0, {"late": True})


def status(event_hash: str = "h") -> str:
    return str(AgentRun.objects.get(event_hash=event_hash).status)


def test_dead_letter_after_takeover_fences_the_frozen_owner() -> None:
    """The frozen owner's lease was taken over; the new owner failed its last delivery."""
    store = DjangoRunStore()
    frozen, fresh = run("h", "a/1-0#1"), run("h", "b/1-0#2", token=2, takeover=True)
    store.fence([fresh])
    store.fail([Finish(fresh, 1.0, error="boom", dead=True)])
    assert store.commit([ok(frozen)]) == set()
    assert status() == RunStatus.DEAD


def test_dead_letter_of_an_exhausted_entry_fences_its_holder() -> None:
    """Dead-lettered without a new attempt (delivered too often): no lease to compare."""
    store = DjangoRunStore()
    frozen, closing = run("h", "a/1-0#1"), run("h", "", token=0)
    store.mark_dead([Finish(closing, None, error="delivered 6 times", dead=True)])
    assert store.commit([ok(frozen)]) == set()
    assert status() == RunStatus.DEAD


def test_late_failure_leaves_a_dead_letter_dead() -> None:
    store = DjangoRunStore()
    frozen, closing = run("h", "a/1-0#1"), run("h", "", token=0)
    store.mark_dead([Finish(closing, None, error="delivered 6 times", dead=True)])
    store.fail([Finish(frozen, 1.0, error="late failure")])
    assert (status(), AgentRun.objects.get().error) == (RunStatus.DEAD, "delivered 6 times")


def test_late_takeover_of_a_dead_entry_cannot_commit() -> None:
    """One more worker held the entry, read just before the dead-lettering, and took over."""
    store = DjangoRunStore()
    closing, late = run("h", "", token=0), run("h", "c/1-0#3", token=3, takeover=True)
    store.mark_dead([Finish(closing, None, error="x", dead=True)])
    store.fence([late])
    assert store.commit([ok(late)]) == set()
    assert status() == RunStatus.DEAD


def test_a_redriven_copy_commits_after_a_dead_letter() -> None:
    store = DjangoRunStore()
    closing = run("h", "", token=0)
    store.mark_dead([Finish(closing, None, error="x", dead=True)])
    redriven = Run(**{**_fields(run("h", "d/9-0#1")), "entry_id": "9-0"})
    assert store.commit([ok(redriven)]) == {"d/9-0#1"}
    assert status() == RunStatus.SUCCEEDED


def _fields(r: Run) -> dict[str, object]:
    return {name: getattr(r, name) for name in Run.__slots__}


def test_operator_dead_letter_fences_the_frozen_holder(r: redis.Redis) -> None:
    """An operator moves a pending entry whose holder froze (its lease ran out): the
    holder's result, when it wakes, is refused."""
    (entry_id,) = pending_entries(r, 1, consumer="frozen")
    raw = r.xrange(STREAM, entry_id, entry_id)[0][1]["event"]
    hashed = event_hash(decode_envelope(raw))
    holder = Run(**{**_fields(run(hashed, f"frozen/{entry_id}#1")), "entry_id": entry_id})
    out = operations.dead_letter(ALICE, STREAM, GROUP, [entry_id], "poison", client=r, keys=KEYS)
    assert out.count == 1 and r.xlen(DEAD) == 1
    assert DjangoRunStore().commit([ok(holder)]) == set()
    row = AgentRun.objects.get(event_hash=hashed)
    assert (row.status, row.entry_id, row.consumer) == (RunStatus.DEAD, entry_id, "alice")
    assert json.loads(raw)["id"] == row.event_id


def test_bulk_dead_letter_job_fences_the_frozen_holders(r: redis.Redis) -> None:
    """The same through a bulk job (many ids, run by the job runner)."""
    ids = pending_entries(r, 3, consumer="frozen")
    job = jobs.create(ALICE, "dead-letter", STREAM, GROUP, {"ids": ids}, "poison")
    assert jobs.run(job.pk, r, KEYS, "runner").done == 3
    for entry_id in ids:
        raw = r.xrange(STREAM, entry_id, entry_id)[0][1]["event"]
        hashed = event_hash(decode_envelope(raw))
        holder = Run(**{**_fields(run(hashed, f"frozen/{entry_id}#1")), "entry_id": entry_id})
        assert DjangoRunStore().commit([ok(holder)]) == set()
        assert status(hashed) == RunStatus.DEAD
