"""One attempt at an event, and the small records the worker passes between its stages."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from workers.core import tracing
from workers.core.config import EngineConfig
from workers.core.logs import attempt_fields
from workers.core.records import Run
from workers.engine.intake import Rejected, Runnable
from workers.gate import Gate, Outcome, lease_name
from workers.policy import max_deliveries_of
from workers.redis.bus import Delivery

if TYPE_CHECKING:
    from workers.cancel.requests import CancelRequest
    from workers.runtime.context import AgentContext

log = logging.getLogger("streamdesk.worker")


@dataclass(slots=True, eq=False)
class Attempt:
    runnable: Runnable
    owner: str
    token: int
    started_at: datetime
    started_mono: float
    followers: list[Delivery] = field(default_factory=list)
    takeover: bool = False
    task: asyncio.Task[None] | None = None
    # A sync agent's call in the agents' pool: while it runs, no other worker may start the
    # event, so its lease is kept (``releasable``), past its timeout or the drain timeout.
    thread: concurrent.futures.Future[Any] | None = None
    # With tracing on: when the batch's gate call began (time.time_ns), and the spans.
    gated_ns: int = 0
    trace: tracing.AttemptTrace | None = None
    # Its agent's context once ``_run`` made it; an operator's cancel request (workers/cancel/).
    ctx: AgentContext | None = None
    cancel: CancelRequest | None = None
    # Its batch's lookup of the waits its events answer (workers/waits/), run beside the
    # agent rather than before it: its entries are acked only once the lookup is done, and
    # not at all if it failed (``unanswered``: a redelivery looks again).
    answering: asyncio.Future[Any] | None = None
    unanswered: bool = False

    @property
    def event_hash(self) -> str:
        return self.runnable.event.hash

    @property
    def lease(self) -> str:
        return lease_name(self.owner, self.token)

    @property
    def delivery(self) -> Delivery:
        return self.runnable.delivery

    def log_fields(self, **more: Any) -> dict[str, Any]:
        """The event's fields for the engine's own lines about this attempt, logged outside
        the agent's context (whose lines get them from ``workers.core.logs.HANDLING``)."""
        fields: dict[str, Any] = {
            "event_hash": self.event_hash,
            "entry_id": self.delivery.entry_id,
            "event_type": self.runnable.event.type,
            "consumer": self.owner.rsplit("/", 1)[0],  # owner is "<consumer>/<entry id>"
            **attempt_fields(self.event_hash, self.delivery.deliveries, self.token),
        }
        if self.trace is not None:
            fields["trace_id"] = self.trace.trace_id()
        return fields | more

    @property
    def entry_ids(self) -> list[str]:
        """Its own entry and those of the duplicates waiting on it."""
        return [self.delivery.entry_id, *(d.entry_id for d in self.followers)]

    @property
    def run(self) -> Run:
        return run_record(
            self.runnable, self.lease, self.token, self.owner, self.started_at, self.takeover
        )


@dataclass(slots=True)
class Settlement:
    """What a batch settles without running an agent."""

    rejected: list[Rejected]
    hits: list[Delivery]
    deleted: list[Delivery]
    busy: list[Delivery]
    # Events no agent takes that answered a waiting run: acked (workers/waits/).
    answered: list[Rejected] = field(default_factory=list)
    # Another group's entries (workers/core/fanout.py): acked, counted nowhere.
    passed: list[Delivery] = field(default_factory=list)


@dataclass(slots=True)
class HashGroup:
    """Deliveries of one event hash in one batch: the first leads, the rest wait on it."""

    leader: Runnable
    followers: list[Delivery] = field(default_factory=list)


def run_record(
    runnable: Runnable,
    lease: str,
    token: int,
    owner: str,
    started: datetime | None,
    takeover: bool,
) -> Run:
    event = runnable.event
    return Run(
        event_hash=event.hash,
        lease=lease,
        token=token,
        consumer=owner.split("/", 1)[0],
        event_type=event.type,
        event_id=event.id or "",
        source=event.source,
        subject=event.subject or "",
        stream=event.stream,
        entry_id=event.entry_id,
        started_at=started,
        takeover=takeover,
        deliveries=runnable.delivery.deliveries,
        version=runnable.spec.version,
        agent=runnable.spec.agent,
        event_key=runnable.event_key,
        replay_of=runnable.replay_of,
    )


def exhausted(runnable: Runnable, config: EngineConfig) -> Rejected | None:
    """Delivered more often than its agent allows without finishing (its workers kept
    dying): dead-lettered without running. None while deliveries are left."""
    n, most = runnable.delivery.deliveries, max_deliveries_of(runnable.spec, config.max_deliveries)
    if n <= most:
        return None
    error = f"delivered {n} times (max {most}) without finishing"
    run = run_record(runnable, "", 0, config.consumer, None, False)
    return Rejected(runnable.delivery, "max-deliveries", error, run)


async def answers_looked_up(attempt: Attempt) -> None:
    """Wait for the attempt's batch's answer lookup (done long before, as a rule): only then
    may its entries be acked. A failed lookup, or a drain's cancel meanwhile, leaves them
    pending (``unanswered``), so that a redelivery looks again."""
    if attempt.answering is None:
        return
    try:
        await asyncio.shield(attempt.answering)
    except BaseException:  # its failure was logged by the admission; a cancel is a drain's
        attempt.unanswered = True


def releasable(attempts: list[Attempt]) -> list[Attempt]:
    """Of the attempts left at the drain timeout, those whose leases may be given back: not
    a sync agent whose thread still runs it. That one keeps its lease (it expires a lease
    time after the process, which exits without the thread, stopped renewing it), so no
    other worker starts the event while the thread may still act on it."""
    out = []
    for attempt in attempts:
        if attempt.thread is not None and not attempt.thread.cancel() and attempt.thread.running():
            log.warning(
                "its thread still runs at the drain timeout: the lease is kept, not released",
                extra=attempt.log_fields(),
            )
        else:
            out.append(attempt)
    return out


def broken_record(gate: Gate, group: HashGroup) -> list[Rejected]:
    """The event's gate record is not a hash: no lease can be taken, so it is dead-lettered
    (with its duplicates) rather than run unguarded or left to fail its whole batch."""
    key = gate.record(group.leader.event.hash)
    error = f"the gate record {key} is not a hash (WRONGTYPE): delete it, then redrive"
    return [Rejected(d, "gate-record", error) for d in (group.leader.delivery, *group.followers)]


@dataclass(slots=True)
class Gated:
    """A batch through the gate: attempts to run, duplicates to ack, busy ones, those whose
    gate record is broken, and the hashes read in the same call (``read``)."""

    attempts: list[Attempt]
    hits: list[Delivery]
    busy: list[Delivery]
    broken: list[Rejected]
    read: list[list[Any] | None]


async def gate_groups(gate: Gate, consumer: str, groups: list[HashGroup], read: list[str]) -> Gated:
    """Gate each group's leader, reading the field names of the ``read`` hashes in the same
    call (``Gate.acquire_reading``)."""
    owners = [f"{consumer}/{g.leader.delivery.entry_id}" for g in groups]
    gated_ns = time.time_ns() if tracing.ACTIVE else 0  # one check per batch
    tickets, fields = await gate.acquire_reading(
        [(g.leader.event.hash, o) for g, o in zip(groups, owners, strict=True)], read
    )
    now, mono = datetime.now(UTC), time.monotonic()
    attempts: list[Attempt] = []
    hits: list[Delivery] = []
    busy: list[Delivery] = []
    broken: list[Rejected] = []
    for group, owner, ticket in zip(groups, owners, tickets, strict=True):
        if ticket.outcome is Outcome.BROKEN:
            broken += broken_record(gate, group)
        elif ticket.outcome is Outcome.HIT:
            hits += [group.leader.delivery, *group.followers]
        elif ticket.outcome is Outcome.BUSY:
            busy += [group.leader.delivery, *group.followers]
        else:
            attempt = Attempt(
                group.leader,
                owner,
                ticket.token,
                now,
                mono,
                list(group.followers),
                takeover=ticket.outcome is Outcome.TAKEOVER,
                gated_ns=gated_ns,
            )
            if attempt.takeover:
                log.info("lease taken over", extra=attempt.log_fields(token=ticket.token))
            attempts.append(attempt)
    return Gated(attempts, hits, busy, broken, fields)
