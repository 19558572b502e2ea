"""Runs closed as ``cancelled`` (``workers/cancel/``), with their timeline step.

Two writers: the worker whose agent stopped on an operator's request (``close_cancelled``,
on its database thread, fenced like a commit: only the lease that ran writes), and an
operator cancelling an event that was not running (``close_cancelled_by_hand``). A
cancelled row is final: no later attempt writes over it (``runs.upsert_sql``), and the
duplicate check counts it done, so a lost gate record never starts the event again.
"""

from __future__ import annotations

from datetime import datetime

import redis
from django.db import transaction
from django.utils import timezone

from workers.core.records import Finish
from workers.core.steps import Kind, StepRecord
from workers.models import AgentRun, RunStatus
from workers.store import timeline_rows
from workers.store.runs import CANCELLED, DjangoRunStore, _runs_of_entries, _values
from workers.store.sql import adapters

Closing = tuple[list[Finish], list[StepRecord]]


def close_cancelled(closing: Closing) -> None:
    """The worker's side: ``(finishes, steps)``, inside the database thread's transaction."""
    finishes, steps = closing
    adapt = adapters()
    now = adapt.time(timezone.now())
    rows = [_values(f.run, CANCELLED, "", now, f, adapt) for f in finishes]
    DjangoRunStore._upsert(rows, fenced=True)
    if steps:
        timeline_rows.insert(steps)


def note_cancel_requested(
    stream: str, event_hash: str, entry_ids: list[str], detail: str, by: str, at: datetime
) -> None:
    """The operator asked a running event to stop (at ``at``): a ``cancel_asked`` step per
    entry, so the event page and the pending row say so until its worker ends the run
    ``cancelled``."""
    steps = [
        StepRecord(event_hash, stream, e, at, Kind.CANCEL_REQUESTED, by, 0, detail)
        for e in entry_ids
    ]
    timeline_rows.insert(steps)


def close_cancelled_by_hand(
    client: redis.Redis,
    stream: str,
    event_hash: str,
    entry_ids: list[str],
    detail: str,
    by: str,
    agent: str = "",
) -> str:
    """The operator's side, for a run (agent ``agent``'s) that was not running: its row (if
    it has one) becomes ``cancelled``; one that never started gets one from its entry, so
    its page says what became of it. One ``cancelled`` step per entry. Returns the status the
    row had ("" if none)."""
    now = timezone.now()
    steps = [
        StepRecord(event_hash, stream, entry_id, now, Kind.CANCELLED, by, 0, detail)
        for entry_id in entry_ids
    ]
    with transaction.atomic():
        row = AgentRun.objects.select_for_update().filter(event_hash=event_hash).first()
        was = "" if row is None else str(row.status)
        if row is not None and row.status not in (RunStatus.SUCCEEDED, RunStatus.CANCELLED):
            row.status, row.error, row.fence, row.finished_at = CANCELLED, detail, "", now
            row.save(update_fields=["status", "error", "fence", "finished_at"])
        elif row is None:
            runs = [
                r
                for r in _runs_of_entries(client, stream, entry_ids, by, agent)
                if r.event_hash == event_hash
            ]
            adapt = adapters()
            at = adapt.time(now)
            rows = [
                _values(r, CANCELLED, "", at, Finish(r, None, error=detail), adapt)
                for r in runs[:1]
            ]
            DjangoRunStore._upsert(rows, fenced=False)
        timeline_rows.insert(steps)
    return was
