"""The database side of the console benchmark: a dead event's timeline, and an operator's
history of audit records and bulk jobs, so the event, jobs and audit pages show what a
deployment that has run for a while shows. Run in the timing process (it has Django set up)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import redis

from bench.console.load import CONSUMERS, GROUP, STREAM
from workers.core.events import decode_envelope, event_hash
from workers.core.keys import EVENT_FIELD, dead_stream
from workers.core.steps import Kind
from workers.models import AuditRecord, BulkJob, Door, JobStatus, TimelineStep

# More than a page of each: the audit page shows 100 records, the jobs page its latest jobs.
AUDIT_RECORDS = 1_000
JOBS = 200


def dead_event(client: redis.Redis) -> str:
    """The entry of the oldest dead letter, given the timeline a worker writes when it
    dead-letters an event (a ``dead_lettered`` step at the letter's time): its event page then
    looks for the letter among the 1,000 the minute around that step holds. Returns its id."""
    [(letter_id, letter)] = client.xrange(dead_stream(STREAM), count=1)
    entry_id = str(letter["entry_id"])
    [(_, fields)] = client.xrange(STREAM, entry_id, entry_id)
    hashed = event_hash(decode_envelope(fields[EVENT_FIELD]))
    at = datetime.fromtimestamp(int(str(letter_id).split("-")[0]) / 1000, tz=UTC)
    failed = {"stream": STREAM, "entry_id": entry_id, "consumer": CONSUMERS[0]}
    steps = [
        TimelineStep(event_hash=hashed, at=at, kind=Kind.FAILED, attempt=n, **failed)
        for n in range(1, 5)
    ]
    steps.append(
        TimelineStep(event_hash=hashed, at=at, kind=Kind.DEAD_LETTERED, attempt=5, **failed)
    )
    TimelineStep.objects.bulk_create(steps)
    return entry_id


def operator_records() -> None:
    """Finished bulk jobs and the audit records of operators' actions (none queued: the
    websocket part's daphne runs a job runner that would act on the data set)."""
    if AuditRecord.objects.exists():
        return
    common: dict[str, Any] = {"stream": STREAM, "door": Door.CONSOLE}
    jobs = BulkJob.objects.bulk_create(
        BulkJob(
            action="redrive",
            status=JobStatus.DONE,
            total=196,
            done=190,
            skipped=6,
            created_by=f"operator-{n % 7}",
            reason="payment provider back",
            **common,
        )
        for n in range(JOBS)
    )
    AuditRecord.objects.bulk_create(
        AuditRecord(
            actor=f"operator-{n % 7}",
            action="retry" if n % 3 else "redrive",
            group=GROUP,
            target={"ids": [f"{n}-0"]},
            count=1,
            outcome="ok",
            reason="flaky downstream",
            job=jobs[n % JOBS] if n % 10 == 0 else None,
            **common,
        )
        for n in range(AUDIT_RECORDS)
    )
