"""Durable steps: ``ctx.step`` results in the database, keyed by event hash and step name.

Runs in the worker's database threads. A step is stored inside the worker's grouped write
transaction before the agent moves on; a redelivered or reclaimed event loads its stored
steps once and gets their values back instead of running them again. Steps saved (or
loaded) while a database call is in flight go together in the next one: three queries for
a batch of saves, one for a batch of loads, whatever their number.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db import transaction
from django.utils import timezone

from workers.core.errors import LeaseLost
from workers.core.records import StepWrite
from workers.models import AgentRun, GraphCheckpoint, GraphWrite, RunStatus, StepResult


def load_many(hashes: list[str]) -> dict[str, dict[str, Any]]:
    """Every stored step of these events: event hash -> name -> value (one query)."""
    found: dict[str, dict[str, Any]] = {h: {} for h in hashes}
    rows = StepResult.objects.filter(event_hash__in=hashes).values_list(
        "event_hash", "name", "value"
    )
    for event_hash, name, value in rows:
        found[event_hash][name] = value
    return found


def load(event_hash: str) -> dict[str, Any]:
    return load_many([event_hash])[event_hash]


def save_many(writes: list[StepWrite]) -> list[Any]:
    """Store steps, three queries for the lot. Each write's answer is the stored value (if
    two attempts raced, the first one's, so both go on with the same result) or, if its
    attempt's lease was taken over meanwhile, a ``LeaseLost`` to raise in that agent."""
    hashes = sorted({w.event_hash for w in writes})
    runs = {
        h: (status, fence)
        for h, status, fence in AgentRun.objects.filter(event_hash__in=hashes).values_list(
            "event_hash", "status", "fence"
        )
    }
    answers: list[Any] = [_lost(w, runs.get(w.event_hash)) for w in writes]
    kept = [w for w, answer in zip(writes, answers, strict=True) if answer is None]
    StepResult.objects.bulk_create(
        [
            StepResult(
                event_hash=w.event_hash,
                name=w.name,
                value=w.value,
                token=w.token,
                consumer=w.consumer,
                duration_ms=w.duration_ms,
                created_at=w.at,
            )
            for w in kept
        ],
        ignore_conflicts=True,
    )
    stored = load_many(sorted({w.event_hash for w in kept}))
    return [
        answer if answer is not None else stored[w.event_hash][w.name]
        for w, answer in zip(writes, answers, strict=True)
    ]


def save(write: StepWrite) -> Any:
    answer = save_many([write])[0]
    if isinstance(answer, LeaseLost):
        raise answer
    return answer


def _lost(write: StepWrite, run: tuple[str, str] | None) -> LeaseLost | None:
    if run is None:
        return None
    status, fence = run
    if status == RunStatus.SUCCEEDED or fence not in ("", write.lease):
        return LeaseLost(
            f"step {write.name!r}: event {write.event_hash[:12]} was taken over "
            f"({fence or status}); this attempt stops"
        )
    return None


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
