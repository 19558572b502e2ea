"""Durable steps: ``ctx.step`` results in the database, keyed by event hash and step name.

Runs in the worker's database threads. A step is stored inside the worker's grouped write
transaction before the agent moves on; a redelivered or reclaimed event loads its stored
steps once and gets their values back instead of running them again.
"""

from __future__ import annotations

from typing import Any

from workers.errors import LeaseLost
from workers.models import AgentRun, RunStatus, StepResult
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
