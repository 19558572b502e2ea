"""The settle decision (``workers/engine/settlement.py``), route by route, without a server:
outcomes are stored in the in-memory run store, then planned."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict

from tests.support.memory_store import MemoryRunStore
from workers.core.registry import Registry
from workers.core.retry import RetryPolicy
from workers.engine.attempts import Attempt, answers_looked_up
from workers.engine.intake import Rejected, to_runnable
from workers.engine.outcomes import Settled, Stored, sort_outcomes
from workers.engine.settlement import Timing, plan_rejects, plan_settlement
from workers.redis.bus import Delivery
from workers.store.protocols import RunStore

POLICY = RetryPolicy(max_deliveries=3, base_ms=1_000, cap_ms=60_000)
TIMING = Timing(claim_idle_ms=30_000, lease_ms=10_000)


class AnyData(BaseModel):
    model_config = ConfigDict(extra="allow")


async def _noop(event: object, ctx: object) -> None:
    return None


REGISTRY = Registry()
REGISTRY.register("test.plan", AnyData, _noop)


def delivery(entry_id: str, event_id: str = "", deliveries: int = 1) -> Delivery:
    event = {"type": "test.plan", "id": event_id or entry_id, "data": {}}
    return Delivery(entry_id, {"event": json.dumps(event)}, deliveries)


def attempt(entry_id: str, deliveries: int = 1, token: int = 1) -> Attempt:
    runnable = to_runnable(delivery(entry_id, deliveries=deliveries), "s", REGISTRY, 1 << 20)
    return Attempt(runnable, f"w1/{entry_id}", token, datetime.now(UTC), 0.0)


def stored(batch: list[Settled], store: RunStore) -> Stored:
    """What the settler's database stage hands its Redis stage."""
    sorted_ = sort_outcomes(batch, POLICY)
    committed = store.commit([s.finish() for s in sorted_.oks])
    return Stored(
        sorted_.oks,
        sorted_.fails,
        sorted_.decisions,
        sorted_.deferred,
        committed,
        waiting=sorted_.waiting,
    )


def test_plan_success_acks_and_marks_done() -> None:
    a = attempt("1-0")
    plan = plan_settlement(stored([Settled(a, ok=True, result=1)], MemoryRunStore()), TIMING)
    assert plan.done == [a] and plan.acks == ["1-0"]
    assert not (plan.released or plan.retries or plan.dead or plan.deferrals or plan.fenced)
    assert +plan.counts == {"processed": 1}


def test_plan_success_acks_duplicate_followers_once() -> None:
    a = attempt("1-0")
    follower = delivery("2-0", event_id="1-0")
    a.followers.append(follower)
    plan = plan_settlement(stored([Settled(a, ok=True)], MemoryRunStore()), TIMING)
    assert plan.acks == ["1-0", "2-0"]
    assert plan.duplicates == [(a, follower)]
    assert +plan.counts == {"processed": 1, "idempotency_hits": 1}


def test_plan_success_of_a_fenced_lease_acks_nothing() -> None:
    store = MemoryRunStore()
    old = attempt("1-0", token=1)
    takeover = attempt("1-0", token=2)
    store.fence([takeover.run])
    plan = plan_settlement(stored([Settled(old, ok=True)], store), TIMING)
    assert plan.fenced == [old]
    assert not (plan.done or plan.acks)
    assert +plan.counts == {"fenced": 1}


def test_plan_failure_retries_after_the_backoff() -> None:
    a = attempt("1-0", deliveries=2)
    a.followers.append(delivery("2-0", event_id="1-0"))
    plan = plan_settlement(stored([Settled(a, ok=False, error="boom")], MemoryRunStore()), TIMING)
    (retry,) = plan.retries
    assert plan.released == [a] and not plan.acks and not plan.dead
    # Backoff 2 s at the second delivery: idle for all but 2 s of the 30 s reclaim time.
    assert (retry.ids, retry.retry_in_ms, retry.idle_ms, retry.due_ms) == (
        ["1-0", "2-0"],
        2_000,
        28_000,
        2_000,
    )
    assert +plan.counts == {"failed": 1, "retries": 1}


def test_plan_retry_never_waits_past_the_reclaim_time() -> None:
    a = attempt("1-0", deliveries=2)
    timing = Timing(claim_idle_ms=1_500, lease_ms=1_000)
    plan = plan_settlement(stored([Settled(a, ok=False)], MemoryRunStore()), timing)
    (retry,) = plan.retries
    assert (retry.idle_ms, retry.due_ms) == (0, 1_500)


def test_plan_failure_at_max_deliveries_is_dead_lettered() -> None:
    a = attempt("1-0", deliveries=3)
    plan = plan_settlement(stored([Settled(a, ok=False, error="boom")], MemoryRunStore()), TIMING)
    (dead,) = plan.dead
    assert (dead.outcome.attempt, dead.reason) == (a, "max-deliveries")
    assert plan.released == [a] and not plan.retries and not plan.acks
    assert +plan.counts == {"failed": 1, "dead_lettered": 1}


def test_plan_refused_outcome_is_dead_lettered_as_unstorable() -> None:
    a = attempt("1-0")
    outcome = Settled(a, ok=True, result="x")
    outcome.refuse("value too long")
    plan = plan_settlement(stored([outcome], MemoryRunStore()), TIMING)
    (dead,) = plan.dead
    assert dead.reason == "unstorable" and dead.outcome.error.startswith("unstorable: ")
    assert not (plan.done or plan.acks or plan.retries)
    assert +plan.counts == {"failed": 1, "dead_lettered": 1}


def test_plan_deferral_waits_with_its_followers() -> None:
    a = attempt("1-0", deliveries=3)
    follower = delivery("2-0", event_id="1-0")
    a.followers.append(follower)
    outcome = Settled(a, ok=False, error="budget", wait_ms=750)
    plan = plan_settlement(stored([outcome], MemoryRunStore()), TIMING)
    (deferral,) = plan.deferrals
    # Out of a budget at the last delivery is neither a failure nor dead.
    assert (deferral.ids, deferral.wait_ms) == (["1-0", "2-0"], 750)
    assert plan.released == [a] and not (plan.dead or plan.retries or plan.acks)
    assert +plan.counts == {"deferred": 1}


def test_plan_of_a_mixed_batch_counts_each_route() -> None:
    ok, retried, dead, deferred = (attempt(f"{i}-0", deliveries=i) for i in (1, 2, 3, 1))
    batch = [
        Settled(ok, ok=True),
        Settled(retried, ok=False),
        Settled(dead, ok=False),
        Settled(deferred, ok=False, wait_ms=10),
    ]
    store = MemoryRunStore()
    plan = plan_settlement(stored(batch, store), TIMING)
    assert plan.released == [retried, dead, deferred]
    assert +plan.counts == {
        "processed": 1,
        "failed": 2,
        "dead_lettered": 1,
        "retries": 1,
        "deferred": 1,
    }
    assert store.done_among([a.event_hash for a in (ok, retried)]) == {ok.event_hash}


def test_plan_rejects_rechecks_busy_entries_without_counting_the_delivery() -> None:
    busy = delivery("3-0", deliveries=4)
    plan = plan_rejects([], [], [busy], TIMING)
    (recheck,) = plan.rechecks
    # Looked at again once the holder's lease could have run out.
    assert (recheck.entry_id, recheck.idle_ms, recheck.retrycount, recheck.due_ms) == (
        "3-0",
        20_000,
        3,
        10_000,
    )
    assert +plan.counts == {"busy": 1}


def test_plan_rejects_dead_letters_and_acks_duplicates() -> None:
    bad = Rejected(delivery("1-0"), "invalid-json", "not JSON")
    plan = plan_rejects([bad], [delivery("2-0")], [], TIMING)
    assert plan.dead == [bad] and plan.acks == ["2-0"] and not plan.rechecks
    assert +plan.counts == {"dead_lettered": 1, "idempotency_hits": 1}


def test_plan_rejects_of_nothing_is_empty() -> None:
    assert plan_rejects([], [], [], TIMING).empty


def test_plan_waiting_acks_its_own_entry_not_its_followers() -> None:
    """A follower may be the run's envelope that an answer brought back while this attempt
    settled: the settler hands it back to the worker instead (test_waits_settling.py)."""
    a = attempt("1-0")
    a.followers.append(delivery("2-0", event_id="1-0"))
    waiting = Settled(a, ok=False, waits_for="sleeps 1 s")
    plan = plan_settlement(stored([waiting], MemoryRunStore()), TIMING)
    assert plan.waiting == plan.released == [a]
    assert plan.acks == ["1-0"]


def test_plan_acks_nothing_whose_answer_lookup_failed() -> None:
    """Its batch's waits lookup failed: whatever the outcome, the entries stay pending (a
    redelivery looks again); a success is still marked done, so that it is a hit then."""
    done, waiting, dead = attempt("1-0"), attempt("2-0"), attempt("3-0", deliveries=3)
    done.followers.append(delivery("4-0", event_id="1-0"))
    for a in (done, waiting, dead):
        a.unanswered = True
    batch = [
        Settled(done, ok=True),
        Settled(waiting, ok=False, waits_for="sleeps 1 s"),
        Settled(dead, ok=False, error="boom"),
    ]
    plan = plan_settlement(stored(batch, MemoryRunStore()), TIMING)
    assert plan.done == [done] and not plan.duplicates
    assert plan.acks == [] and plan.dead == []
    assert set(plan.released) == {waiting, dead}


def test_an_attempt_is_settled_only_after_its_batch_answer_lookup() -> None:
    async def go() -> tuple[bool, bool]:
        a = attempt("1-0")
        lookup: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        a.answering = lookup
        waiting = asyncio.create_task(answers_looked_up(a))
        await asyncio.sleep(0.01)
        still = not waiting.done()
        lookup.set_exception(ConnectionError("redis went away"))
        await waiting
        return still, a.unanswered

    assert asyncio.run(go()) == (True, True)
