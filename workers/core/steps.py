"""A timeline step: the kinds of things that happen to a delivery and the row each becomes.

Pure data, shared by the engine that records steps (``workers/engine/timeline.py``), the
store that writes and reads them (``workers/store/timeline_rows.py``) and the models.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

MAX_DETAIL_CHARS = 2000
MAX_SUMMARY_CHARS = 300
DELETED_NOTE = "deleted from the stream while pending; dropped from the pending list"


class Kind(StrEnum):
    RAN = "ran"  # delivered; the gate let the agent start
    IDEMPOTENCY_HIT = "idempotency_hit"  # delivered; the event is done: acked, nothing ran
    BUSY = "busy"  # delivered while another live attempt held the lease: left pending
    FAILED = "failed"  # the agent raised; the lease is released, a retry is scheduled
    FENCED = "fenced"  # finished after its lease was taken over: result refused, not acked
    RELEASED = "released"  # the lease given back without a result (shutdown, admission error)
    COMMITTED = "committed"  # result committed and the entry acked
    DEAD_LETTERED = "dead_lettered"  # written to <stream>:dead and acked
    DELETED = "deleted"  # the entry was deleted from the stream while pending
    DEFERRED = "deferred"  # out of a tool's rate budget: the lease released, rerun when due
    CANCELLED = "cancelled"  # an operator cancelled it: the run ended, the entry acked
    # An operator asked to cancel it while it ran: its worker stops the agent (a sync agent's
    # thread only when it returns), then writes ``cancelled``.
    CANCEL_REQUESTED = "cancel_asked"
    # It waits (ctx.sleep, ctx.wait_for_event): the entry acked, the lease released, no slot
    # held; its event comes back when the wait ends (workers/waits/).
    WAITING = "waiting"


@dataclass(frozen=True, slots=True)
class StepRecord:
    """One row of the timeline. ``attempt`` is the entry's delivery count."""

    event_hash: str
    stream: str
    entry_id: str
    at: datetime
    kind: Kind
    consumer: str
    attempt: int
    detail: str = ""


def clip(text: str, limit: int = MAX_DETAIL_CHARS) -> str:
    """At most ``limit`` characters, keeping both ends (a traceback's end names the error)."""
    if len(text) <= limit:
        return text
    tail = limit * 3 // 4
    return f"{text[: limit - tail - 5]}\n...\n{text[-tail:]}"


def summary(text: str) -> str:
    """The last non-empty line (a traceback's exception and message), at most one line's
    worth, so what follows it in a detail is never clipped away."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    line = lines[-1].strip() if lines else ""
    return line if len(line) <= MAX_SUMMARY_CHARS else f"{line[: MAX_SUMMARY_CHARS - 3]}..."


def now() -> datetime:
    return datetime.now(UTC)
