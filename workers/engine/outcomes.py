"""Finished attempts on their way to the database and Redis: what the settler sorts. Pure."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic_core import to_jsonable_python

from workers.core.records import Finish, Usage
from workers.core.retry import UNSTORABLE, Decision, RetryPolicy
from workers.policy import policy_of

if TYPE_CHECKING:
    from workers.engine.attempts import Attempt


@dataclass(slots=True, eq=False)
class Settled:
    attempt: Attempt
    ok: bool
    result: Any = None
    error: str = ""
    duration_ms: float = 0.0
    # Its ran step is not written yet (timeline.py): a failure writes it, a commit needs none.
    start_unwritten: bool = False
    # Its timeline steps are written (a settle retried after a Redis outage skips them).
    recorded: bool = False
    # Deferred for a rate budget: rerun in this many ms (neither a success nor a failure).
    wait_ms: int | None = None
    # The run's model usage (stored steps included), and what this attempt paid for.
    usage: Usage = field(default_factory=Usage)
    spent: Usage = field(default_factory=Usage)
    # The database refused to store this outcome: it is dead-lettered as unstorable.
    refused: bool = False
    # How it failed, beyond raising: ``timeout`` or ``non-retriable`` (core/retry.py).
    kind: str = ""
    # It waits (``ctx.sleep``, ``ctx.wait_for_event``): what for, in words (workers/waits/).
    waits_for: str | None = None

    def finish(self, dead: bool = False) -> Finish:
        result = None if self.refused else self.result
        return Finish(self.attempt.run, self.duration_ms, result, self.error, dead, self.usage)

    def refuse(self, message: str) -> None:
        """The database's ``message`` leads the error; the agent's own error (if any) stays."""
        self.refused = True
        self.error = f"unstorable: {message}" + (f"\n\n{self.error}" if self.error else "")


def succeeded(attempt: Attempt, value: Any) -> Settled:
    """The agent returned ``value``: stored as JSON, or refused if it has none (an object
    pydantic cannot serialize, a key with a lone surrogate). A rerun would return it again."""
    try:
        return Settled(attempt, ok=True, result=to_jsonable_python(value))
    except Exception as exc:
        outcome = Settled(attempt, ok=True)
        outcome.refuse(f"the result is not JSON: {exc}")
        return outcome


@dataclass(frozen=True, slots=True)
class Stored:
    """A batch sorted for the database and its Redis pipeline; ``committed``: the leases
    whose results the database took."""

    oks: list[Settled]
    fails: list[Settled]
    decisions: list[Decision]
    deferred: list[Settled]
    committed: set[str] = field(default_factory=set)
    # Runs that gave back their slot to wait: acked, their leases released.
    waiting: list[Settled] = field(default_factory=list)


def sort_outcomes(batch: list[Settled], policy: RetryPolicy) -> Stored:
    """``policy``: the worker's; each agent's declarations go over it (``policy_of``)."""
    oks = [s for s in batch if s.ok and not s.refused]
    deferred = [s for s in batch if s.wait_ms is not None and not s.refused]
    waiting = [s for s in batch if s.waits_for is not None and not s.refused]
    fails = [
        s for s in batch if s.refused or (not s.ok and s.wait_ms is None and s.waits_for is None)
    ]
    decisions = [UNSTORABLE if s.refused else decide(s, policy) for s in fails]
    return Stored(oks, fails, decisions, deferred, waiting=waiting)


def decide(failed: Settled, policy: RetryPolicy) -> Decision:
    attempt = failed.attempt
    own = policy_of(attempt.runnable.spec, policy)
    return own.after_failure(attempt.delivery.deliveries, failed.kind)


def merge(parts: list[Stored]) -> Stored:
    return Stored(
        [s for p in parts for s in p.oks],
        [s for p in parts for s in p.fails],
        [d for p in parts for d in p.decisions],
        [s for p in parts for s in p.deferred],
        set().union(*(p.committed for p in parts)),
        [s for p in parts for s in p.waiting],
    )


def subset(stored: Stored, part: list[Settled]) -> Stored:
    """The share of ``stored`` that belongs to ``part`` of its batch."""
    keep = {id(s) for s in part}
    fails = [(s, d) for s, d in zip(stored.fails, stored.decisions, strict=True) if id(s) in keep]
    return Stored(
        [s for s in stored.oks if id(s) in keep],
        [s for s, _ in fails],
        [d for _, d in fails],
        [s for s in stored.deferred if id(s) in keep],
        stored.committed,
        [s for s in stored.waiting if id(s) in keep],
    )


def spent_by_type(batch: list[Settled]) -> dict[str, Usage]:
    out: dict[str, Usage] = {}
    for s in batch:
        if s.spent.calls:
            out.setdefault(s.attempt.runnable.event.type, Usage()).merge(s.spent)
    return out


def run_durations(batch: list[Settled]) -> dict[str, list[float]]:
    """Seconds each agent ran, by event type: every attempt that ran to an end, succeeded or
    failed; a deferral stopped for a budget, not because the agent finished."""
    out: dict[str, list[float]] = {}
    for s in batch:
        if s.wait_ms is None and s.waits_for is None:
            out.setdefault(s.attempt.runnable.event.type, []).append(s.duration_ms / 1000)
    return out
