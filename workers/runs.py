"""Fenced writes of ``AgentRun`` rows: a result commits only under the current lease.

The hot paths (claim and commit) are plain SQL run with ``executemany``: building ORM
expressions per row cost more than the database itself. The SQL is portable between
SQLite (>= 3.24) and PostgreSQL; values go through the model fields' own adapters.
"""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from workers.models import AgentRun, RunStatus

TABLE = AgentRun._meta.db_table
INSERT_COLUMNS = (
    "event_hash", "event_type", "event_id", "source", "subject", "stream", "entry_id",
    "status", "attempts", "lease", "consumer", "created_at", "started_at", "error",
)  # fmt: skip
# Rows per statement: far under SQLite's 32766 bound variables.
CHUNK_ROWS = 500


def _values(rows: int, columns: int) -> str:
    row = f"({', '.join(['%s'] * columns)})"
    return ", ".join([row] * rows)


def insert_sql(rows: int) -> str:
    """One multi-row INSERT: one statement, not one per row, keeps the GIL handoffs down."""
    return (
        f"INSERT INTO {TABLE} ({', '.join(INSERT_COLUMNS)}) VALUES "
        f"{_values(rows, len(INSERT_COLUMNS))} ON CONFLICT (event_hash) DO NOTHING"
    )


def commit_sql(rows: int) -> str:
    """One UPDATE ... FROM (SQLite >= 3.33, PostgreSQL), fenced on the lease.

    It must start with UPDATE (not WITH): Python's sqlite3 reports no rowcount otherwise.
    """
    jsonb = "::jsonb" if connection.vendor == "postgresql" else ""
    first = "SELECT %s AS h, %s AS l, %s AS r, %s AS d"
    source = " UNION ALL ".join([first] + ["SELECT %s, %s, %s, %s"] * (rows - 1))
    return (
        f"UPDATE {TABLE} SET status = %s, finished_at = %s, error = '', "
        f"result = v.r{jsonb}, duration_ms = v.d FROM ({source}) AS v "
        f"WHERE {TABLE}.event_hash = v.h AND {TABLE}.lease = v.l AND {TABLE}.status = %s"
    )


def chunks(items: list[Any], size: int = CHUNK_ROWS) -> list[list[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


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


def _db_time(value: datetime) -> Any:
    return connection.ops.adapt_datetimefield_value(value)


def _db_json(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


class RunStore:
    """The Django implementation of the engine's run store.

    Methods are synchronous and open no transaction of their own: the engine's ``DbWriter``
    runs them in its database thread inside ``atomic()``, several at a time.
    """

    def atomic(self) -> AbstractContextManager[Any]:
        return transaction.atomic()

    def close(self) -> None:
        """Close this thread's connection (the engine calls it from its database thread)."""
        connection.close()

    def claim(self, claims: list[Claim]) -> set[str]:
        """Register attempts. Returns the hashes whose run already succeeded (duplicates)."""
        if not claims:
            return set()
        existing = dict(
            AgentRun.objects.filter(event_hash__in=[c.event_hash for c in claims]).values_list(
                "event_hash", "status"
            )
        )
        done = {h for h, status in existing.items() if status == RunStatus.SUCCEEDED}
        now = _db_time(timezone.now())
        rows = [self._row(c, now) for c in claims if c.event_hash not in existing]
        # A racing claimer's row wins (DO NOTHING); our commit is then fenced.
        with connection.cursor() as cursor:
            for chunk in chunks(rows):
                cursor.execute(insert_sql(len(chunk)), [v for row in chunk for v in row])
        for c in claims:
            if c.event_hash in existing and c.event_hash not in done:
                self._retake(c)
        return done

    @staticmethod
    def _row(c: Claim, now: Any) -> tuple[Any, ...]:
        return (
            c.event_hash, c.event_type, c.event_id, c.source, c.subject, c.stream, c.entry_id,
            RunStatus.RUNNING.value, 1, c.lease, c.consumer, now, _db_time(c.started_at), "",
        )  # fmt: skip

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
        now = _db_time(timezone.now())
        succeeded, running = RunStatus.SUCCEEDED.value, RunStatus.RUNNING.value
        updated = 0
        with connection.cursor() as cursor:
            for chunk in chunks(finishes):
                params: list[Any] = []
                for f in chunk:
                    params += [f.event_hash, f.lease, _db_json(f.result), f.duration_ms]
                cursor.execute(commit_sql(len(chunk)), [succeeded, now, *params, running])
                updated += cursor.rowcount
        leases = {f.lease for f in finishes}
        if updated == len(finishes):
            return leases
        # Some were fenced (or committed by an earlier try of this same batch): ask.
        rows = AgentRun.objects.filter(
            event_hash__in=[f.event_hash for f in finishes], status=RunStatus.SUCCEEDED
        ).values_list("lease", flat=True)
        return leases & set(rows)

    def fail(self, finishes: list[Finish]) -> None:
        """Record failed attempts (failures are rare: a statement each is fine)."""
        now = timezone.now()
        for f in finishes:
            AgentRun.objects.filter(lease=f.lease, status=RunStatus.RUNNING).update(
                status=RunStatus.DEAD if f.dead else RunStatus.FAILED,
                error=f.error,
                finished_at=now,
                duration_ms=f.duration_ms,
            )

    def mark_dead(self, errors: dict[str, str]) -> None:
        """Dead-lettered without a new attempt (their workers kept dying): close the rows."""
        now = timezone.now()
        for event_hash, error in errors.items():
            AgentRun.objects.filter(event_hash=event_hash).exclude(
                status=RunStatus.SUCCEEDED
            ).update(status=RunStatus.DEAD, error=error, finished_at=now)
