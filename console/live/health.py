"""Health marks and the state of a pending entry: the console's one judgement, no I/O.

A mark fires only on trouble someone must act on: work that no live worker will take, an
entry that should have been reclaimed and was not, a paused group. A paused group reads as
paused, never as stuck: its workers neither read nor reclaim on purpose. Failures, retries, dead
letters and idempotency hits are the engine doing its job: they are figures and charts, not
marks (docs/console.md, "Reading the numbers", defines each rule exactly as computed here).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from workers.monitor.sample import GroupInfo, StreamInfo
from workers.operations.actions import parse_pause

Level = Literal["ok", "warn", "bad"]

# An entry reclaimable this long and still not taken is stuck: live workers reclaim every
# second, but only with a free slot, so a busy worker may take a few seconds to get to it.
STUCK_GRACE_MS = 15_000
# A due time and the idle time the engine set beside it agree within this (the engine adds
# 1 s of grace to a rate budget's wait; the worker's clock and Redis' may differ a little).
DUE_SLACK_MS = 2_000


def stuck_after_ms(claim_idle_ms: int) -> int:
    """The idle time past which a pending entry is stuck rather than about to be reclaimed."""
    return claim_idle_ms + max(STUCK_GRACE_MS, claim_idle_ms // 4)


@dataclass(frozen=True, slots=True)
class Health:
    level: Level  # the only thing colour is used for
    reasons: list[str]


@dataclass(frozen=True, slots=True)
class PendingState:
    """What a pending entry is doing, for people: ``waiting`` until ``due_ms`` (held back on
    purpose), ``idle`` (delivered ``idle_ms`` ago, not reclaimable yet), ``reclaimable`` (any
    worker may take it now), ``stuck`` (reclaimable past the grace and not taken) or
    ``paused`` (reclaimable, but its group is paused: nothing reclaims until it is resumed)."""

    kind: Literal["waiting", "idle", "reclaimable", "stuck", "paused"]
    idle_ms: int
    due_ms: int | None = None
    # How far off ``due_ms`` was when the sample was read.
    due_in_ms: int | None = None
    # A reclaimable entry whose held-back wait just ended: when its retry was due. Its idle
    # time is the engine's bookkeeping (an entry published 10 s ago reads "idle 60 s"), so
    # the page says "retry due at" instead.
    retry_due_ms: int | None = None


def pending_state(
    idle_ms: int, due_ms: int | None, at_ms: int, claim_idle_ms: int, *, paused: bool = False
) -> PendingState:
    """``due_ms`` is what the engine wrote in ``waits`` for this entry, if anything. It is
    believed only while the entry's idle time still says the same thing (reclaimable at about
    ``due_ms``): an operator's "retry now" or claim changes the idle time and not the record.
    ``paused``: the entry's group is paused, so nothing reclaims it ("paused", not "stuck")."""
    reclaimable_at = at_ms + claim_idle_ms - idle_ms
    if (
        due_ms is not None
        and at_ms < min(due_ms, reclaimable_at)
        and (reclaimable_at <= due_ms + DUE_SLACK_MS)
    ):
        return PendingState("waiting", idle_ms, due_ms, due_ms - at_ms)
    if idle_ms >= claim_idle_ms and paused:
        # Paused workers do not reclaim: "the next reclaim takes it" and "stuck" are both
        # untrue until someone resumes the group.
        return PendingState("paused", idle_ms)
    if idle_ms > stuck_after_ms(claim_idle_ms):
        return PendingState("stuck", idle_ms)
    if idle_ms >= claim_idle_ms:
        agrees = due_ms is not None and abs(reclaimable_at - due_ms) <= DUE_SLACK_MS
        return PendingState("reclaimable", idle_ms, retry_due_ms=due_ms if agrees else None)
    return PendingState("idle", idle_ms)


def oldest_pending(group: GroupInfo, at_ms: int, claim_idle_ms: int) -> PendingState | None:
    if group.oldest_pending_idle_ms is None:
        return None
    return pending_state(
        group.oldest_pending_idle_ms,
        group.oldest_pending_due_ms,
        at_ms,
        claim_idle_ms,
        paused=bool(group.paused_by),
    )


def _count(n: int, one: str, many: str) -> str:
    return f"{n:,} {one if n == 1 else many}"


def _stuck(group: GroupInfo, claim_idle_ms: int) -> str | None:
    """Why the group is stuck: its oldest pending entry is reclaimable past the grace and no
    live worker took it. Never for a paused group: pausing stops reclaims on purpose."""
    idle_ms = group.oldest_pending_idle_ms
    if group.paused_by or idle_ms is None or idle_ms <= stuck_after_ms(claim_idle_ms):
        return None
    overdue_s = (idle_ms - claim_idle_ms) / 1000
    return (
        f"stuck: the oldest pending entry could be reclaimed {overdue_s:,.0f} s ago and "
        "no worker has taken it"
    )


def group_health(group: GroupInfo, claim_idle_ms: int) -> Health:
    reasons: list[str] = []
    level: Level = "ok"
    if group.paused_by:
        # Who, not the stored ISO time: the group page says when, for people (parse_pause).
        reasons.append(f"paused by {parse_pause(group.paused_by).by}")
        level = "warn"
    if group.live_consumers == 0:
        work = []
        if group.pending:
            work.append(_count(group.pending, "pending entry", "pending entries"))
        if group.lag is None or group.lag:
            work.append(
                "the undelivered entries"
                if group.lag is None
                else _count(group.lag, "new entry", "new entries")
            )
        if work:
            reasons.append(f"no live consumer to take {' and '.join(work)}")
            level = "bad"
        else:
            reasons.append("no live consumer: new events will wait for a worker")
            level = "warn" if level == "ok" else level
    elif (stuck := _stuck(group, claim_idle_ms)) is not None:
        reasons.append(stuck)
        level = "bad"
    return Health(level, reasons)


def stream_health(stream: StreamInfo, claim_idle_ms: int) -> Health:
    """The worst of its groups' marks, with their reasons: the stream and the group pages
    never disagree, because both show these."""
    if stream.error:
        return Health("bad", ["the stream cannot be read"])
    if not stream.exists:
        return Health("warn", ["the stream does not exist yet: no worker has started on it"])
    if not stream.groups:
        return Health("warn", ["no consumer group: no worker has started on this stream"])
    marks = [(g.name, group_health(g, claim_idle_ms)) for g in stream.groups]
    several = len(marks) > 1
    reasons = [f"{name}: {r}" if several else r for name, m in marks for r in m.reasons]
    levels = {m.level for _, m in marks}
    level: Level = "bad" if "bad" in levels else "warn" if "warn" in levels else "ok"
    return Health(level, reasons)
