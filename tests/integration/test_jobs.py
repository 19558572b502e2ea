"""Bulk jobs (workers/operations/jobs.py): batches after a cursor, a database lease, pacing,
cancel."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import timedelta

import pytest
import redis
from django.db import connection
from django.utils import timezone

from tests.support.entries import GROUP, STREAM, dead_letters, live_consumer, pending_entries
from tests.support.wait import wait_for
from workers import operations
from workers.core.errors import ActionRefused, JobNotRunnable
from workers.core.keys import Keys, dead_stream
from workers.models import AuditRecord, BulkJob, Door, JobStatus
from workers.operations import Actor, jobs
from workers.operations.actions import DeadFilter
from workers.operations.jobs import JobRunner

pytestmark = pytest.mark.django_db

ALICE = Actor("alice", Door.CONSOLE)
KEYS = Keys()
DEAD = dead_stream(STREAM)
FAST = 1_000_000.0  # entries/s: pacing out of the way


def redrive_job(r: redis.Redis, f: DeadFilter | None = None, rate: float = FAST) -> BulkJob:
    return jobs.create(
        ALICE, "redrive", STREAM, "", jobs.filter_params(f or DeadFilter()), "", rate_per_s=rate
    )


def after_calls(n: int, then: Callable[[], object] = lambda: None) -> Callable[[], bool]:
    """A ``should_stop`` that says no ``n`` times, then calls ``then`` and says yes."""
    calls = [0]

    def should_stop() -> bool:
        calls[0] += 1
        if calls[0] <= n:
            return False
        then()
        return True

    return should_stop


def retry_ofs(r: redis.Redis) -> list[str]:
    return [f["retry_of"] for _, f in r.xrange(STREAM)]


def test_bulk_redrive_moves_every_letter_in_batches(r: redis.Redis) -> None:
    dead = dead_letters(r, 3000)
    job = redrive_job(r)
    batches: list[int] = []
    ended = jobs.run(
        job.pk, r, KEYS, "runner-a", batch=500, progress=lambda j: batches.append(j.done)
    )
    assert (ended.status, ended.done, ended.skipped, ended.cursor) == ("done", 3000, 0, dead[-1])
    # A full last page needs one more (empty) read to find the end.
    assert sorted(set(batches)) == [500, 1000, 1500, 2000, 2500, 3000]
    assert retry_ofs(r) == dead and r.xlen(DEAD) == 0


def test_bulk_job_audit_record_is_brought_up_to_date_when_it_ends(r: redis.Redis) -> None:
    dead_letters(r, 10)
    job = redrive_job(r)
    assert AuditRecord.objects.get(job=job).outcome == "queued"
    jobs.run(job.pk, r, KEYS, "runner-a")
    record = AuditRecord.objects.get(job=job)
    assert (record.outcome, record.count, record.action) == ("ok", 10, "redrive")
    assert f"bulk job #{job.pk} done" in record.detail


def test_bulk_job_stopped_after_two_batches_is_resumed_after_its_cursor(r: redis.Redis) -> None:
    dead = dead_letters(r, 3000)
    job = redrive_job(r)
    stopped = jobs.run(job.pk, r, KEYS, "runner-a", batch=500, should_stop=after_calls(2))
    assert (stopped.status, stopped.done, stopped.cursor, stopped.owner) == (
        "queued",
        1000,
        dead[999],
        "",
    )
    assert [j.pk for j in jobs.runnable_jobs()] == [job.pk]
    ended = jobs.run(job.pk, r, KEYS, "runner-b", batch=500)
    assert (ended.status, ended.done, ended.skipped) == ("done", 3000, 0)
    assert retry_ofs(r) == dead  # each letter exactly once, in order


def test_bulk_job_whose_runner_died_is_resumable_once_its_lease_expires(r: redis.Redis) -> None:
    dead_letters(r, 20)
    job = redrive_job(r)
    BulkJob.objects.filter(pk=job.pk).update(
        status=JobStatus.RUNNING, owner="dead-runner", lease_until=timezone.now() + timedelta(60)
    )
    assert jobs.runnable_jobs() == []
    with pytest.raises(JobNotRunnable, match="dead-runner"):
        jobs.run(job.pk, r, KEYS, "runner-b")
    BulkJob.objects.filter(pk=job.pk).update(lease_until=timezone.now() - timedelta(seconds=1))
    assert jobs.run(job.pk, r, KEYS, "runner-b").done == 20


def test_bulk_job_redoing_a_batch_redrives_nothing_twice(r: redis.Redis) -> None:
    dead = dead_letters(r, 1500)
    job = redrive_job(r)
    jobs.run(job.pk, r, KEYS, "runner-a", batch=500, should_stop=after_calls(1))
    # As if the runner had crashed before saving its first batch: the cursor is lost.
    BulkJob.objects.filter(pk=job.pk).update(cursor="", done=0)
    ended = jobs.run(job.pk, r, KEYS, "runner-b", batch=500)
    assert (ended.status, ended.done) == ("done", 1000)
    assert sorted(retry_ofs(r)) == sorted(dead)


def test_bulk_job_over_a_fixed_id_list_resumes_after_its_cursor(r: redis.Redis) -> None:
    ids = pending_entries(r, 1200)
    job = jobs.create(ALICE, "claim", STREAM, GROUP, {"ids": ids, "consumer": "new"}, "")
    jobs.run(job.pk, r, KEYS, "runner-a", batch=500, should_stop=after_calls(1))
    ended = jobs.run(job.pk, r, KEYS, "runner-b", batch=500)
    assert (ended.done, ended.skipped) == (1200, 0)
    rows = r.xpending_range(STREAM, GROUP, min="-", max="+", count=2000)
    assert {row["consumer"] for row in rows} == {"new"}


def test_bulk_claim_all_pages_through_a_consumers_entries(r: redis.Redis) -> None:
    ids = pending_entries(r, 1500, consumer="dead-worker")
    live_consumer(r, "live")
    out = operations.claim_all(ALICE, STREAM, GROUP, "dead-worker", "live", client=r, keys=KEYS)
    BulkJob.objects.filter(pk=out.job_id).update(rate_per_s=FAST)
    ended = jobs.run(out.job_id or 0, r, KEYS, "runner-a", batch=400)
    assert (ended.status, ended.done, ended.total) == ("done", 1500, 1500)
    rows = r.xpending_range(STREAM, GROUP, min="-", max="+", count=2000)
    assert {row["message_id"] for row in rows if row["consumer"] == "live"} == set(ids)


def test_bulk_redrive_filter_skips_letters_that_do_not_match(r: redis.Redis) -> None:
    dead_letters(r, 30, kind="demo.echo")
    fail = dead_letters(r, 20, kind="demo.fail", first=30)
    job = redrive_job(r, DeadFilter(type="demo.fail"))
    ended = jobs.run(job.pk, r, KEYS, "runner-a", batch=7)
    assert ended.done == 20
    assert retry_ofs(r) == fail and r.xlen(DEAD) == 30


def test_bulk_redrive_ignores_letters_dead_lettered_after_it_was_queued(r: redis.Redis) -> None:
    dead = dead_letters(r, 5)
    out = operations.redrive(ALICE, STREAM, filter=DeadFilter(), client=r, keys=KEYS)
    time.sleep(0.002)  # later letters get ids in a later millisecond
    dead_letters(r, 5, first=5)
    BulkJob.objects.filter(pk=out.job_id).update(rate_per_s=FAST)
    assert jobs.run(out.job_id or 0, r, KEYS, "runner-a").done == 5
    assert retry_ofs(r) == dead


def test_queued_job_cancelled_ends_at_once(r: redis.Redis) -> None:
    dead_letters(r, 10)
    job = redrive_job(r)
    out = jobs.cancel(Actor("bob", Door.CLI), job.pk)
    job.refresh_from_db()
    assert (job.status, out.outcome, out.action) == ("cancelled", "ok", "cancel-job")
    assert AuditRecord.objects.get(job=job, action="redrive").outcome == "cancelled"
    with pytest.raises(JobNotRunnable):
        jobs.run(job.pk, r, KEYS, "runner-a")
    assert r.xlen(DEAD) == 10


def test_running_job_cancelled_stops_after_its_current_batch(r: redis.Redis) -> None:
    dead_letters(r, 2000)
    job = redrive_job(r)

    def cancel_once(j: BulkJob) -> None:
        if j.done == 500:
            jobs.cancel(ALICE, j.pk)

    ended = jobs.run(job.pk, r, KEYS, "runner-a", batch=500, progress=cancel_once)
    assert (ended.status, ended.done) == ("cancelled", 500)
    assert r.xlen(DEAD) == 1500


def test_cancelling_an_ended_job_is_refused(r: redis.Redis) -> None:
    job = redrive_job(r)
    jobs.run(job.pk, r, KEYS, "runner-a")
    with pytest.raises(ActionRefused, match="already ended"):
        jobs.cancel(ALICE, job.pk)
    assert AuditRecord.objects.get(action="cancel-job").outcome == "refused"


def test_bulk_job_failing_half_way_is_recorded_as_partial(r: redis.Redis) -> None:
    dead_letters(r, 1500)
    job = redrive_job(r)

    def fill_the_stream() -> None:
        # A stream at the largest possible id takes no new entry: the third batch fails.
        r.xadd(STREAM, {"event": "{}"}, id="18446744073709551615-18446744073709551615")

    stop = after_calls(2, then=fill_the_stream)
    ended = jobs.run(job.pk, r, KEYS, "runner-a", batch=500, should_stop=lambda: stop() and False)
    assert (ended.status, ended.done) == ("failed", 1000)
    assert "ResponseError" in ended.error
    record = AuditRecord.objects.get(job=job)
    assert (record.outcome, record.count) == ("partial", 1000)


def test_bulk_job_is_paced_to_its_rate(r: redis.Redis) -> None:
    dead_letters(r, 2000)
    job = redrive_job(r, rate=1000)
    started = time.monotonic()
    jobs.run(job.pk, r, KEYS, "runner-a", batch=500)
    # Four batches of 500 at 1,000/s: at least three pauses of about half a second.
    assert time.monotonic() - started >= 1.4


@pytest.mark.django_db(transaction=True)
def test_two_runners_never_run_the_same_job(r: redis.Redis) -> None:
    dead = dead_letters(r, 2000)
    job = redrive_job(r, rate=20_000)
    barrier = threading.Barrier(2)
    refused: list[str] = []

    def runner(owner: str) -> None:
        barrier.wait()
        try:
            jobs.run(job.pk, r, KEYS, owner, batch=100)
        except JobNotRunnable:
            refused.append(owner)
        finally:
            connection.close()  # this thread's own connection

    threads = [threading.Thread(target=runner, args=(f"runner-{i}",)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(refused) == 1
    assert retry_ofs(r) == dead


def test_job_runner_runs_every_runnable_job_once(r: redis.Redis) -> None:
    dead_letters(r, 10)
    first, second = redrive_job(r), redrive_job(r)
    assert JobRunner(r, KEYS, "console:1").run_once() == 2
    statuses = set(BulkJob.objects.values_list("status", flat=True))
    assert statuses == {"done"}
    assert BulkJob.objects.get(pk=first.pk).done + BulkJob.objects.get(pk=second.pk).done == 10


@pytest.mark.django_db(transaction=True)
def test_job_runner_thread_picks_up_a_job_and_stops(r: redis.Redis) -> None:
    dead_letters(r, 10)
    job = redrive_job(r)
    stop = threading.Event()
    thread = threading.Thread(
        target=JobRunner(r, KEYS, "console:1", poll_s=0.05).run_forever, args=(stop,)
    )
    thread.start()
    try:
        wait_for(
            lambda: BulkJob.objects.get(pk=job.pk).status == "done",
            timeout_s=10,
            what="the runner thread to finish the job",
        )
    finally:
        stop.set()
        thread.join(timeout=10)
    assert not thread.is_alive()
    assert BulkJob.objects.get(pk=job.pk).done == 10
