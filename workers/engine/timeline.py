"""An event's lifecycle timeline as the engine records it (the step kinds and rows: core/steps.py).

A step is one thing that happened to one delivery of an event, written to the database
(``TimelineStep``) in the same grouped transactions as the run records, so the timeline
outlives stream trimming. Kinds combine what happens together: ``ran`` (delivered, gate
passed, agent started), ``committed`` (result committed, entry acked), ...

Rows are keyed by event hash, a random key: each one costs a B-tree page of its own, as
much as the whole ``AgentRun`` upsert. So the happy path stores none. "published" is the
entry id's time; the last attempt's ``ran`` and ``committed`` of a succeeded event are read
off its ``AgentRun`` row (``timeline.steps_for``). A ``ran`` step is stored only for an
agent still running after ``START_LINGER_S`` (a worker may die under it), one that did not
commit (failed, fenced, released), or a redelivery (reclaimed, taken over).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from workers.core.retry import Verdict
from workers.core.steps import DELETED_NOTE, Kind, StepRecord, clip, now, summary

if TYPE_CHECKING:
    from datetime import datetime

    from workers.core.config import EngineConfig
    from workers.core.retry import Decision
    from workers.engine.attempts import Attempt
    from workers.engine.intake import Rejected
    from workers.engine.outcomes import Settled
    from workers.redis.bus import Delivery

# How long a first delivery's ran step waits in memory: a quick success never needs it.
START_LINGER_S = 0.25


class Timeline:
    """Builds one worker's steps and hands them to ``post`` (unless ``config.timeline`` is
    off: then it does nothing).

    Entries without a decodable envelope have no event hash, hence no timeline; a deleted
    entry's hash is looked up from its earlier steps by the store (``event_hash`` empty).
    """

    def __init__(self, config: EngineConfig, post: Callable[[list[StepRecord]], None]) -> None:
        self.stream = config.stream
        self.consumer = config.consumer
        self._post = post if config.timeline else None
        # Attempts whose ran step is not written yet, oldest first (``flush_started``).
        self._starting: dict[Attempt, None] = {}

    @property
    def on(self) -> bool:
        return self._post is not None

    def step(self, delivery: Delivery, kind: Kind, at: datetime, detail: str = "") -> StepRecord:
        return StepRecord(
            delivery.event_hash,
            self.stream,
            delivery.entry_id,
            at,
            kind,
            self.consumer,
            delivery.deliveries,
            detail,
        )

    def post(self, steps: list[StepRecord]) -> None:
        if self._post is not None and steps:
            self._post(steps)

    def ran_step(self, attempt: Attempt) -> StepRecord:
        delivery = attempt.delivery
        notes = [("retry" if delivery.retry else "reclaimed")] if delivery.reclaimed else []
        if attempt.takeover:
            notes.append(f"took over an expired lease (token {attempt.token})")
        return self.step(attempt.delivery, Kind.RAN, attempt.started_at, "; ".join(notes))

    def ran(self, attempt: Attempt) -> None:
        if self._post is None:
            return
        if attempt.delivery.reclaimed or attempt.takeover:
            self._post([self.ran_step(attempt)])  # a redelivery: rare, and worth its details
        else:
            self._starting[attempt] = None

    def take_start(self, attempt: Attempt) -> bool:
        """True if the attempt's ran step is not written yet: it is now the caller's to write."""
        try:
            del self._starting[attempt]
        except KeyError:
            return False
        return True

    def flush_started(self, now_mono: float) -> None:
        """Write the ran steps of agents that have run ``START_LINGER_S`` or longer."""
        due: list[Attempt] = []
        for attempt in self._starting:
            if now_mono - attempt.started_mono < START_LINGER_S:
                break
            due.append(attempt)
        for attempt in due:
            del self._starting[attempt]
        self.post([self.ran_step(a) for a in due])

    def read_outcomes(
        self, rejected: list[Rejected], hits: list[Delivery], busy: list[Delivery]
    ) -> None:
        """What admission settled without an agent: dead letters, duplicates, busy ones."""
        if self._post is None:
            return
        at = now()
        steps = [
            self.step(r.delivery, Kind.DEAD_LETTERED, at, clip(f"{r.reason}: {r.error}"))
            for r in rejected
            if r.delivery.event_hash
        ]
        steps += [self.step(d, Kind.IDEMPOTENCY_HIT, at) for d in hits]
        steps += [self.step(d, Kind.BUSY, at, "another live attempt holds the lease") for d in busy]
        self.post(steps)

    def settled(
        self,
        oks: list[Settled],
        committed: set[str],
        fails: list[Settled],
        decisions: list[Decision],
    ) -> list[StepRecord]:
        """Steps of finished agents, for the settler to write with their results (in the
        database thread: it reads nothing the event loop changes meanwhile). A commit adds
        none: its ran and committed steps are read off its ``AgentRun`` row."""
        if self._post is None:
            return []
        at = now()
        steps: list[StepRecord] = []
        for s in oks:
            a = s.attempt
            if s.recorded or a.lease in committed:
                continue
            steps += [self.ran_step(a)] if s.start_unwritten else []
            steps.append(self.step(a.delivery, Kind.FENCED, at, f"lease {a.lease} was lost"))
        for s, decision in zip(fails, decisions, strict=True):
            if s.recorded:
                continue
            dead = decision.verdict is Verdict.DEAD
            plan = _plan(decision)
            error, delivery = summary(s.error), s.attempt.delivery
            steps += [self.ran_step(s.attempt)] if s.start_unwritten else []
            steps.append(
                self.step(delivery, Kind.FAILED, at, clip(f"{error}; {plan}\n\n{s.error}"))
            )
            if dead:
                detail = clip(f"{decision.reason}: {error}")
                steps.append(self.step(delivery, Kind.DEAD_LETTERED, at, detail))
        return steps

    def deferred(self, outcomes: list[Settled]) -> list[StepRecord]:
        """Attempts that ran out of a rate budget, for the settler to write."""
        return self._held(outcomes, Kind.DEFERRED)

    def waiting(self, outcomes: list[Settled]) -> list[StepRecord]:
        """Runs that gave back their slot to wait (workers/waits/): what for, until when."""
        return self._held(outcomes, Kind.WAITING)

    def _held(self, outcomes: list[Settled], kind: Kind) -> list[StepRecord]:
        """Attempts that stopped without an outcome, to go on later: each one's ``kind``
        step, its note the outcome's error (why it stopped, until when)."""
        if self._post is None:
            return []
        at = now()
        steps: list[StepRecord] = []
        for s in outcomes:
            if s.recorded:
                continue
            steps += [self.ran_step(s.attempt)] if s.start_unwritten else []
            steps.append(self.step(s.attempt.delivery, kind, at, s.error))
        return steps

    def acked_with(self, duplicates: list[tuple[Attempt, Delivery]]) -> None:
        """Duplicates that waited on a running copy and were acked with its commit."""
        if self._post is None or not duplicates:
            return
        at = now()
        self.post(
            [
                self.step(d, Kind.IDEMPOTENCY_HIT, at, f"duplicate of {a.delivery.entry_id}")
                for a, d in duplicates
            ]
        )

    def released(self, attempts: Iterable[Attempt], reason: str) -> None:
        if self._post is None:
            return
        at = now()
        steps: list[StepRecord] = []
        for a in attempts:
            steps += [self.ran_step(a)] if self.take_start(a) else []
            steps.append(self.step(a.delivery, Kind.RELEASED, at, reason))
        self.post(steps)

    def deleted(self, entry_ids: list[str]) -> None:
        """Pending ids whose entries were deleted; the store finds their events, if any."""
        if self._post is None:
            return
        at = now()
        self.post(
            [
                StepRecord("", self.stream, i, at, Kind.DELETED, self.consumer, 0, DELETED_NOTE)
                for i in entry_ids
            ]
        )


def _plan(decision: Decision) -> str:
    if decision.verdict is Verdict.RETRY:
        return f"retry in {decision.retry_in_ms} ms"
    return "no deliveries left" if decision.reason == "max-deliveries" else decision.reason
