"""Fenced writes of ``AgentRun`` rows: a result commits only under the current lease.

Every call handles a whole batch in one transaction with a constant number of
statements in the common case, so the database is not the worker's bottleneck.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import Case, F, FloatField, JSONField, Value, When
from django.db.models.functions import Cast
from django.utils import timezone

from workers.models import AgentRun, RunStatus


@dataclass(frozen=True, slots=True)
class Claim:
    event_hash: str
    lease: str
    consumer: str
    event_type: str
    event_id: str
    source: str
    subject: str
    stream: str
    entry_id: str
    started_at: datetime


@dataclass(frozen=True, slots=True)
class Finish:
    event_hash: str
    lease: str
    duration_ms: float
    result: Any = None
    error: str = ""
    dead: bool = False


def _case(column: str, values: dict[str, Any], field: Any) -> Any:
    expr: Any = Case(
        *[When(lease=lease, then=Value(v, output_field=field)) for lease, v in values.items()],
        output_field=field,
    )
    if connection.features.requires_casted_case_in_updates:
        expr = Cast(expr, output_field=field)
    return expr


class RunStore:
    """The Django implementation of the engine's run store (sync; the engine offloads it)."""

    def claim(self, claims: list[Claim]) -> set[str]:
        """Register attempts. Returns the hashes whose run already succeeded (duplicates)."""
        if not claims:
            return set()
        with transaction.atomic():
            existing = dict(
                AgentRun.objects.filter(event_hash__in=[c.event_hash for c in claims]).values_list(
                    "event_hash", "status"
                )
            )
            done = {h for h, status in existing.items() if status == RunStatus.SUCCEEDED}
            AgentRun.objects.bulk_create(
                [self._new_row(c) for c in claims if c.event_hash not in existing],
                ignore_conflicts=True,  # a racing claimer wins; our commit is then fenced
            )
            for c in claims:
                if c.event_hash in existing and c.event_hash not in done:
                    self._retake(c)
        return done

    @staticmethod
    def _new_row(c: Claim) -> AgentRun:
        return AgentRun(
            event_hash=c.event_hash,
            event_type=c.event_type,
            event_id=c.event_id,
            source=c.source,
            subject=c.subject,
            stream=c.stream,
            entry_id=c.entry_id,
            status=RunStatus.RUNNING,
            attempts=1,
            lease=c.lease,
            consumer=c.consumer,
            started_at=c.started_at,
        )

    @staticmethod
    def _retake(c: Claim) -> None:
        AgentRun.objects.filter(event_hash=c.event_hash).exclude(status=RunStatus.SUCCEEDED).update(
            status=RunStatus.RUNNING,
            lease=c.lease,
            consumer=c.consumer,
            stream=c.stream,
            entry_id=c.entry_id,
            attempts=F("attempts") + 1,
            started_at=c.started_at,
            finished_at=None,
            error="",
        )

    def commit(self, finishes: list[Finish]) -> set[str]:
        """Store results where the lease still matches. Returns the leases that committed."""
        if not finishes:
            return set()
        leases = [f.lease for f in finishes]
        with transaction.atomic():
            updated = AgentRun.objects.filter(lease__in=leases, status=RunStatus.RUNNING).update(
                status=RunStatus.SUCCEEDED,
                finished_at=timezone.now(),
                error="",
                result=_case("result", {f.lease: f.result for f in finishes}, JSONField()),
                duration_ms=_case(
                    "duration_ms", {f.lease: f.duration_ms for f in finishes}, FloatField()
                ),
            )
            if updated == len(leases):
                return set(leases)
            return set(
                AgentRun.objects.filter(lease__in=leases, status=RunStatus.SUCCEEDED).values_list(
                    "lease", flat=True
                )
            )

    def fail(self, finishes: list[Finish]) -> None:
        """Record failed attempts (failures are rare: a statement each is fine)."""
        now = timezone.now()
        with transaction.atomic():
            for f in finishes:
                AgentRun.objects.filter(lease=f.lease, status=RunStatus.RUNNING).update(
                    status=RunStatus.DEAD if f.dead else RunStatus.FAILED,
                    error=f.error,
                    finished_at=now,
                    duration_ms=f.duration_ms,
                )

    def close(self) -> None:
        """Close this thread's connection (the engine calls it from its database thread)."""
        connection.close()

    def mark_dead(self, errors: dict[str, str]) -> None:
        """Dead-lettered without a new attempt (their workers kept dying): close the rows."""
        now = timezone.now()
        with transaction.atomic():
            for event_hash, error in errors.items():
                AgentRun.objects.filter(event_hash=event_hash).exclude(
                    status=RunStatus.SUCCEEDED
                ).update(status=RunStatus.DEAD, error=error, finished_at=now)
