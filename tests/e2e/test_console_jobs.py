"""The console process runs bulk jobs, and resumes one a previous runner left half done."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from tests.support.console import dead_letter_fields
from tests.support.console_server import Console
from tests.support.engine import STREAM
from tests.support.wait import wait_for
from workers import operations
from workers.core.keys import Keys, dead_stream
from workers.models import BulkJob, Door, JobStatus
from workers.operations import jobs
from workers.operations.actions import DeadFilter

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

KEYS = Keys()
LETTERS = 1_200


def dead_letters(r: redis.Redis, count: int) -> None:
    with r.pipeline(transaction=False) as pipe:
        for n in range(count):
            event = {"type": "demo.echo", "source": "jobs-test", "id": f"d{n}", "data": {"n": n}}
            pipe.xadd(dead_stream(STREAM), dead_letter_fields(event, n))
        pipe.execute()


def test_console_resumes_a_half_done_job(
    r: redis.Redis, worker_env: dict[str, str], tmp_path: Path
) -> None:
    dead_letters(r, LETTERS)
    actor = operations.Actor("ops", Door.CONSOLE)
    outcome = operations.redrive(actor, STREAM, filter=DeadFilter(), client=r, keys=KEYS)
    assert outcome.job_id is not None
    batches = iter(range(10))
    # A runner that stops after two batches of 100, as a console would when it is restarted.
    jobs.run(
        outcome.job_id, r, Keys(), "old-console", batch=100, should_stop=lambda: next(batches) >= 2
    )
    job = BulkJob.objects.get(pk=outcome.job_id)
    assert job.status == JobStatus.QUEUED and 0 < job.done < LETTERS

    server = Console(worker_env, tmp_path / "daphne.log")
    try:
        wait_for(server.ready, what="daphne to serve /login/")
        wait_for(
            lambda: BulkJob.objects.get(pk=outcome.job_id).status == JobStatus.DONE,
            what="the console to finish the job",
            timeout_s=60,
        )
    finally:
        server.stop()
    assert r.xlen(dead_stream(STREAM)) == 0
    redriven = [json.loads(f["event"])["id"] for _, f in r.xrange(STREAM)]
    assert sorted(redriven) == sorted(f"d{n}" for n in range(LETTERS))  # each exactly once
