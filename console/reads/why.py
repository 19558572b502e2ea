"""Why an entry held back on purpose waits, for the pending rows: its latest timeline step.

The engine records each deferral, failure and busy recheck as a step (``workers/engine/
timeline.py``) with its detail. One indexed query per page (the timeline's stream/entry
index) reads them; the wait's *time* still comes from Redis (``waits``), this only names it:
"waiting for budget github:42", "timed out", "failed", "duplicate", "cancelled, stopping".
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from workers.core.steps import Kind

_BUDGET = re.compile(r"rate budget '([^']+)'")
_PLAN = re.compile(r"; retry in \d+ ms$")
_HELD = (Kind.DEFERRED, Kind.FAILED, Kind.BUSY, Kind.CANCEL_REQUESTED)


def reason(kind: str, detail: str) -> str:
    """A few words for a step that holds its entry back; "" for any other step."""
    if kind == Kind.DEFERRED:
        budget = _BUDGET.search(detail)
        return f"waiting for budget {budget[1]}" if budget else "waiting out a Retry-After"
    if kind == Kind.FAILED:
        return "timed out" if "AgentTimeout" in detail else "failed"
    if kind == Kind.BUSY:
        return "duplicate of a running event"
    if kind == Kind.CANCEL_REQUESTED:
        # Still pending: its agent has not stopped yet (a sync agent's thread runs on).
        return "cancelled, stopping"
    return ""


@dataclass(frozen=True, slots=True)
class Latest:
    """An entry's latest timeline step, and its latest failure's first line ("" if none)."""

    kind: str
    detail: str
    error: str


def latest(stream: str, ids: list[str]) -> dict[str, Latest]:
    """Entry id -> its latest step and failure, in one indexed query."""
    from workers.models import TimelineStep

    if not ids:
        return {}
    found: dict[str, Latest] = {}
    rows = (
        TimelineStep.objects.filter(stream=stream, entry_id__in=ids)
        .order_by("entry_id", "at", "id")
        .values_list("entry_id", "kind", "detail")
    )
    for entry_id, kind, detail in rows:  # ordered by time: the last one wins
        error = found[entry_id].error if entry_id in found else ""
        if kind == Kind.FAILED:  # "<error>; retry in 2000 ms": the queue shows when itself
            error = _PLAN.sub("", detail.split("\n", 1)[0])[:300]
        found[entry_id] = Latest(kind, detail, error)
    return found


def reasons(stream: str, ids: list[str]) -> dict[str, str]:
    """Entry id -> why it waits, for the ids whose latest step holds them back."""
    out = {}
    for entry_id, step in latest(stream, ids).items():
        if step.kind in _HELD and (why := reason(step.kind, step.detail)):
            out[entry_id] = why
    return out
