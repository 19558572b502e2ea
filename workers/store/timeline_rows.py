"""An event's lifecycle timeline in the database: written by the engine, read by the console.

``steps_for`` gives the steps of one event across all its deliveries: the stored ones, and
the last attempt's ``ran`` and ``committed`` read off a succeeded ``AgentRun`` row (the
engine does not store those twice). The console puts ``published_step`` (the stream entry
id's own time) in front. ``prune`` deletes old steps (``manage.py prune_timeline``). Kinds
and when each is written: ``workers/engine/timeline.py`` and docs/failures.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.db import transaction
from django.utils import timezone

from workers.core.steps import Kind, StepRecord
from workers.core.storable import storable_text
from workers.models import AgentRun, RunStatus, TimelineStep
from workers.store.sql import db_time, insert_rows, placeholders, raw_cursor

PUBLISHED = "published"
TABLE = TimelineStep._meta.db_table
COLUMNS = ("event_hash", "stream", "entry_id", "at", "kind", "consumer", "attempt", "detail")
# Rows deleted per transaction while pruning, so workers' commits never wait long.
PRUNE_CHUNK_ROWS = 5000


@dataclass(frozen=True, slots=True)
class Step:
    at: datetime
    kind: str
    stream: str
    entry_id: str
    consumer: str
    attempt: int
    detail: str


def steps_for(event_hash: str, limit: int = 500) -> list[Step]:
    """The event's latest ``limit`` steps, oldest first."""
    rows = TimelineStep.objects.filter(event_hash=event_hash).order_by("-at", "-id")[:limit]
    steps = [
        Step(r.at, r.kind, r.stream, r.entry_id, r.consumer, r.attempt, r.detail) for r in rows
    ]
    steps.reverse()
    run = AgentRun.objects.filter(event_hash=event_hash, status=RunStatus.SUCCEEDED).first()
    if run is not None:
        steps = sorted([*steps, *_success_steps(run, steps)], key=lambda s: s.at)[-limit:]
    return steps


def _success_steps(run: AgentRun, stored: list[Step]) -> list[Step]:
    """The committing attempt's ``ran`` (unless stored: it ran long, or was a redelivery)
    and ``committed`` steps, from its run row."""
    stream, entry, consumer, attempt = run.stream, run.entry_id, run.consumer, run.deliveries
    done = run.finished_at or run.created_at
    took = f"agent took {run.duration_ms:.1f} ms" if run.duration_ms is not None else ""
    out = [Step(done, Kind.COMMITTED.value, stream, entry, consumer, attempt, took)]
    ran = (Kind.RAN.value, entry, consumer, attempt)
    if run.started_at and not any(
        (s.kind, s.entry_id, s.consumer, s.attempt) == ran for s in stored
    ):
        out.append(Step(run.started_at, Kind.RAN.value, stream, entry, consumer, attempt, ""))
    return out


def published_step(stream: str, entry_id: str) -> Step:
    """When the entry was added: a stream entry id starts with the server's clock in ms."""
    ms, sep, seq = entry_id.partition("-")
    if not (ms.isdigit() and (not sep or seq.isdigit())):
        raise ValueError(f"{entry_id!r} is not a stream entry id")
    at = datetime.fromtimestamp(int(ms) / 1000, tz=UTC)
    return Step(at, PUBLISHED, stream, entry_id, "", 0, "")


def prune(older_than: timedelta) -> int:
    """Delete steps older than ``older_than``, in short transactions. Returns how many."""
    cutoff = timezone.now() - older_than
    old = TimelineStep.objects.filter(at__lt=cutoff)
    deleted = 0
    while True:
        # Old rows have the lowest ids: the scan finds them first.
        ids = list(old.values_list("id", flat=True)[:PRUNE_CHUNK_ROWS])
        if not ids:
            return deleted
        with transaction.atomic():
            deleted += TimelineStep.objects.filter(id__in=ids).delete()[0]


def insert(steps: list[StepRecord]) -> None:
    """The engine's write (inside its transaction). A step with no event hash (an entry
    deleted while pending) takes the hashes of earlier steps of its entry, or is dropped."""
    rows = [_row(s.event_hash, s) for s in steps if s.event_hash]
    unknown = [s for s in steps if not s.event_hash]
    if unknown:
        hashes = _hashes_of_entries([(s.stream, s.entry_id) for s in unknown])
        rows += [
            _row(h, s) for s in unknown for h in sorted(hashes.get((s.stream, s.entry_id), ()))
        ]
    insert_rows(TABLE, COLUMNS, rows)


def _row(event_hash: str, s: StepRecord) -> list[object]:
    return [
        event_hash, s.stream, s.entry_id, db_time(s.at), s.kind.value, s.consumer, s.attempt,
        storable_text(s.detail),
    ]  # fmt: skip


def _hashes_of_entries(entries: list[tuple[str, str]]) -> dict[tuple[str, str], set[str]]:
    """``(stream, entry id)`` -> event hashes its earlier steps name (rare: no hurry)."""
    found: dict[tuple[str, str], set[str]] = {}
    sql = f"SELECT event_hash FROM {TABLE} WHERE stream = %s AND entry_id = %s"
    with raw_cursor() as cursor:
        for entry in set(entries):
            cursor.execute(placeholders(sql), list(entry))
            found[entry] = {h for (h,) in cursor.fetchall()}
    return found
