"""Durable steps: ``ctx.step`` results in the database, keyed by event hash and step name.

Runs in the worker's database threads. A step is stored inside the worker's grouped write
transaction before the agent moves on; a redelivered or reclaimed event loads its stored
steps once and gets their values back instead of running them again.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from workers.errors import LeaseLost
from workers.models import AgentRun, GraphCheckpoint, GraphWrite, RunStatus, StepResult
from workers.records import StepWrite


def load(event_hash: str) -> dict[str, Any]:
    """Every stored step of an event: name -> value."""
    return dict(StepResult.objects.filter(event_hash=event_hash).values_list("name", "value"))


def save(write: StepWrite) -> Any:
    """Store one step unless this attempt's lease was taken over; returns the stored value
    (if two attempts raced, the first one's, so both go on with the same result)."""
    row = (
        AgentRun.objects.filter(event_hash=write.event_hash).values_list("status", "fence").first()
    )
    if row is not None:
        status, fence = row
        if status == RunStatus.SUCCEEDED or fence not in ("", write.lease):
            raise LeaseLost(
                f"step {write.name!r}: event {write.event_hash[:12]} was taken over "
                f"({fence or status}); this attempt stops"
            )
    StepResult.objects.bulk_create(
        [
            StepResult(
                event_hash=write.event_hash,
                name=write.name,
                value=write.value,
                token=write.token,
                consumer=write.consumer,
                duration_ms=write.duration_ms,
                created_at=write.at,
            )
        ],
        ignore_conflicts=True,
    )
    return (
        StepResult.objects.filter(event_hash=write.event_hash, name=write.name)
        .values_list("value", flat=True)
        .get()
    )


def steps_of(event_hash: str, limit: int = 200) -> list[StepResult]:
    """For the console's event page: the first ``limit``, in the order they ran."""
    rows = StepResult.objects.filter(event_hash=event_hash).order_by("created_at", "id")
    return list(rows[:limit])


PRUNE_CHUNK_ROWS = 1000


def prune_succeeded(older_than: timedelta) -> int:
    """Delete the stored steps and graph checkpoints of events that succeeded, stored more
    than ``older_than`` ago: a succeeded event never reads them again (a forced re-run
    discards them anyway). Unfinished events keep theirs. Short transactions."""
    cutoff = timezone.now() - older_than
    done = AgentRun.objects.filter(status=RunStatus.SUCCEEDED).values("event_hash")
    steps = StepResult.objects.filter(created_at__lt=cutoff, event_hash__in=done)
    deleted = 0
    while ids := list(steps.values_list("id", flat=True)[:PRUNE_CHUNK_ROWS]):
        with transaction.atomic():
            deleted += StepResult.objects.filter(id__in=ids).delete()[0]
    graphs = GraphCheckpoint.objects.filter(created_at__lt=cutoff, thread_id__in=done)
    while threads := list(graphs.values_list("thread_id", flat=True).distinct()[:100]):
        with transaction.atomic():
            deleted += GraphWrite.objects.filter(thread_id__in=threads).delete()[0]
            deleted += GraphCheckpoint.objects.filter(thread_id__in=threads).delete()[0]
    return deleted
