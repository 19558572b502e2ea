"""The settle decision, pure: what Redis is told about each entry of a stored batch.

``plan_settlement`` takes a batch sorted by the retry policy (``outcomes.sort_outcomes``)
and the leases the database committed, and says which entries to ack, which to retry and
when, which to dead-letter and why, which to defer, and what to count. ``plan_rejects``
does the same for what the read path settles without running an agent (rejects,
duplicates, busy entries to recheck). The settler (``workers/engine/settle.py``) carries a plan
out in one Redis pipeline; nothing here does I/O, so every route is unit-tested.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from workers.core.retry import Verdict
from workers.engine.intake import Rejected
from workers.engine.outcomes import Settled, Stored
from workers.redis.bus import Delivery

if TYPE_CHECKING:
    from workers.engine.attempts import Attempt


@dataclass(frozen=True, slots=True)
class Timing:
    """What the plan needs to know of the worker's clocks."""

    # How long an entry stays pending untouched before XAUTOCLAIM (any worker's) takes it.
    claim_idle_ms: int
    # How long a gate lease lives without renewal.
    lease_ms: int


@dataclass(frozen=True, slots=True)
class Backoff:
    """A failure retried after a backoff: its entries (and its followers') are XCLAIMed with
    ``idle_ms`` so the next XAUTOCLAIM picks them up after ``retry_in_ms``, not a full idle
    time; ``due_ms`` is what the console is told (``waits.py``)."""

    outcome: Settled
    ids: list[str]
    idle_ms: int
    due_ms: int
    retry_in_ms: int


@dataclass(frozen=True, slots=True)
class Dead:
    """A failure dead-lettered: out of deliveries (``max-deliveries``) or ``unstorable``."""

    outcome: Settled
    reason: str


@dataclass(frozen=True, slots=True)
class Deferral:
    """Out of a rate budget: the entries wait ``wait_ms``, uncounted as a delivery."""

    outcome: Settled
    deliveries: list[Delivery]
    wait_ms: int

    @property
    def ids(self) -> list[str]:
        return [d.entry_id for d in self.deliveries]


@dataclass(slots=True)
class Plan:
    # Attempts whose results committed: their gate records become ``done``.
    done: list[Attempt] = field(default_factory=list)
    # Their entries and their duplicates' (followers taken once, see ``plan_settlement``).
    acks: list[str] = field(default_factory=list)
    duplicates: list[tuple[Attempt, Delivery]] = field(default_factory=list)
    # Successes whose lease was taken over: the new owner commits, nothing is acked.
    fenced: list[Attempt] = field(default_factory=list)
    # Leases given back: every failure and deferral.
    released: list[Attempt] = field(default_factory=list)
    retries: list[Backoff] = field(default_factory=list)
    dead: list[Dead] = field(default_factory=list)
    deferrals: list[Deferral] = field(default_factory=list)
    # Runs that wait (workers/waits/): their own entries are acked, their leases released;
    # the wait brings their event back.
    waiting: list[Attempt] = field(default_factory=list)
    counts: Counter[str] = field(default_factory=Counter)


def plan_settlement(stored: Stored, timing: Timing) -> Plan:
    """What to tell Redis about a stored batch; ``stored.committed``: the leases the database
    took. Followers still join their attempts until the pipeline runs, so each attempt's
    list is read once, here, and the acks and the timeline's steps use the same copy."""
    plan = Plan()
    for s in stored.oks:
        attempt = s.attempt
        if attempt.lease in stored.committed:
            plan.done.append(attempt)
        else:
            plan.fenced.append(attempt)
    if plan.done:
        # Not acked while the waits they answer are unknown: redelivered, they are hits then.
        acked = [a for a in plan.done if not a.unanswered]
        plan.duplicates = [(a, d) for a in acked for d in a.followers]
        plan.acks = [a.delivery.entry_id for a in acked]
        plan.acks += [d.entry_id for _, d in plan.duplicates]
    for s, decision in zip(stored.fails, stored.decisions, strict=True):
        plan.released.append(s.attempt)
        if decision.verdict is Verdict.DEAD and s.attempt.unanswered:
            continue  # left pending: its redelivery, out of deliveries, dead-letters it
        if decision.verdict is Verdict.DEAD:
            plan.dead.append(Dead(s, decision.reason))
            continue
        retry_in_ms = decision.retry_in_ms
        plan.retries.append(
            Backoff(
                s,
                s.attempt.entry_ids,
                idle_ms=max(timing.claim_idle_ms - retry_in_ms, 0),
                due_ms=min(retry_in_ms, timing.claim_idle_ms),
                retry_in_ms=retry_in_ms,
            )
        )
    for s in stored.deferred:
        assert s.wait_ms is not None
        plan.released.append(s.attempt)
        plan.deferrals.append(Deferral(s, [s.attempt.delivery, *s.attempt.followers], s.wait_ms))
    for s in stored.waiting:
        # Only its own entry: a follower may be the run's own envelope, brought back by an
        # answer that came while this attempt settled. Acked as a duplicate, the run would
        # wait for good; the settler hands followers back to the worker once this is done.
        plan.released.append(s.attempt)
        plan.waiting.append(s.attempt)
        if not s.attempt.unanswered:
            plan.acks.append(s.attempt.delivery.entry_id)
    counts = plan.counts
    counts["processed"] = len(plan.done)
    counts["idempotency_hits"] = len(plan.duplicates)
    counts["fenced"] = len(plan.fenced)
    counts["failed"] = len(stored.fails)
    counts["dead_lettered"] = len(plan.dead)
    counts["retries"] = len(plan.retries)
    counts["deferred"] = len(plan.deferrals)
    counts["waits"] = len(plan.waiting)
    return plan


@dataclass(frozen=True, slots=True)
class Recheck:
    """A busy entry (another live attempt holds its event) looked at again once the holder's
    lease could have run out; its delivery count is put back, so the wait is not counted."""

    entry_id: str
    idle_ms: int
    retrycount: int
    due_ms: int


@dataclass(slots=True)
class RejectPlan:
    dead: list[Rejected]
    acks: list[str]
    rechecks: list[Recheck]
    counts: Counter[str]

    @property
    def empty(self) -> bool:
        return not (self.dead or self.acks or self.rechecks)


def plan_rejects(
    rejected: list[Rejected], hits: list[Delivery], busy: list[Delivery], timing: Timing
) -> RejectPlan:
    """Dead-letter what cannot run, ack duplicates, recheck busy entries, count it all."""
    rechecks = [
        Recheck(
            d.entry_id,
            idle_ms=timing.claim_idle_ms - timing.lease_ms,
            retrycount=max(d.deliveries - 1, 0),
            due_ms=timing.lease_ms,
        )
        for d in busy
    ]
    counts = Counter(dead_lettered=len(rejected), idempotency_hits=len(hits), busy=len(busy))
    return RejectPlan(list(rejected), [d.entry_id for d in hits], rechecks, counts)
