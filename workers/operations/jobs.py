"""Bulk jobs: one action over many entries, worked through in batches after a cursor.

A job is a ``BulkJob`` row. A runner takes it with a database lease (a conditional UPDATE,
so two runners never hold one job), then repeats: read a page after ``cursor`` (dead
letters matching a filter, a consumer's pending entries, or the job's own id list), act on
it through ``actions.py``, save cursor and counts (renewing the lease). A crash therefore
loses at most one batch, and redoing that batch is harmless: the actions skip entries that
are gone or moved. Pages are paced to ``rate_per_s`` entries a second so workers are not
starved; ``cancel_requested`` is checked before every batch. A Redis outage is waited out as
the worker waits it out (retries after 0.1 s, doubling to 5 s, the lease renewed at each), and
the job goes on after its cursor: only an error that is not an outage fails a job.

Audit: the job's one ``AuditRecord`` is written when the job is created (outcome
``queued``) and brought up to date when it ends: count and skipped from the job, outcome
``ok`` (done), ``cancelled``, or ``partial``/``failed`` (failed with or without work done).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict
from datetime import timedelta
from typing import Any

import redis
from django.db import close_old_connections, connection, transaction
from django.db.models import DateTimeField, F, Q, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from workers.core.errors import ActionRefused, InvalidAction, JobNotRunnable
from workers.core.keys import Keys
from workers.core.storable import describe
from workers.models import AuditRecord, BulkJob, JobStatus
from workers.operations import batches, inputs
from workers.operations.actions import ActionResult, DeadFilter
from workers.operations.batches import JobWork, Kinds
from workers.redis.connection import UNREACHABLE
from workers.store.audit import Action, ActionOutcome, Actor, Entry, Result, ids_target

log = logging.getLogger("streamdesk.jobs")

DEFAULT_BATCH = 500
# How long a runner's claim on a job holds without news; renewed after every batch.
LEASE_S = 60.0
POLL_S = 1.0
# A Redis outage: the first retry after FIRST_RETRY_S, doubling up to MAX_RETRY_S, as the
# worker does (workers/engine/worker.py), so a job resumes as soon as the workers do.
FIRST_RETRY_S = 0.1
MAX_RETRY_S = 5.0
# How often a runner waiting out an outage looks whether it should stop (shutdown).
STOP_CHECK_S = 0.25
# A replay's work is workers/replay's: runners get it through ``kinds`` (batches.py).
JOB_ACTIONS = batches.OWN_ACTIONS | {Action.REPLAY}
FINISHED = (JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED)
# What ``as_dict`` shows of a job, in this order, after its id.
_FIELDS = (
    *("action", "stream", "group", "status", "cancel_requested", "done", "skipped", "total"),
    *("cursor", "rate_per_s", "created_by", "door", "reason", "owner", "error"),
)
_TIMES = ("created_at", "started_at", "finished_at")


def _never() -> bool:
    return False


# -- creating, cancelling, finding ---------------------------------------------------------


def create(
    actor: Actor,
    action: str,
    stream: str,
    group: str,
    params: dict[str, Any],
    reason: str,
    *,
    total: int | None = None,
    rate_per_s: float | None = None,
) -> BulkJob:
    """A queued job and its audit record (outcome ``queued``).

    ``params``: ``ids`` (entry or dead-letter ids) or ``filter`` (a ``DeadFilter`` as a dict)
    or, for claim-all, ``from_consumer``; plus ``consumer`` (claim) or ``idle_ms`` (retry).
    """
    if action not in JOB_ACTIONS:
        raise InvalidAction("action", f"{action!r} cannot run as a bulk job")
    params = _normalised(params)
    if total is None and "ids" in params:
        total = len(params["ids"])
    with transaction.atomic():
        job = BulkJob.objects.create(
            action=action,
            stream=stream,
            group=group,
            params=params,
            total=total,
            created_by=actor.name,
            door=actor.door,
            reason=reason,
            **({"rate_per_s": rate_per_s} if rate_per_s else {}),
        )
        entry = Entry(actor, Action(action), stream, group, _target(params), reason)
        entry.detail = f"bulk job #{job.pk} queued"
        entry.write(Result.QUEUED, job)
    return job


def _normalised(params: dict[str, Any]) -> dict[str, Any]:
    params = dict(params)
    if "ids" in params:
        params["ids"] = sorted(params["ids"], key=inputs.id_order)
    return params


def _target(params: dict[str, Any]) -> dict[str, Any]:
    if "ids" in params:  # an error group's job names its fingerprint too
        named = {k: params[k] for k in ("fingerprint",) if k in params}
        return {**named, **ids_target(params["ids"])}
    if "filter" in params:
        return {"filter": params["filter"]}
    return {"consumer": params.get("from_consumer", ""), "to": params.get("consumer", "")}


def cancel(actor: Actor, job_id: int) -> ActionOutcome:
    """Stop a job: at once if no runner holds it, else after the runner's current batch."""
    job = _get(job_id)
    entry = Entry(actor, Action.CANCEL_JOB, job.stream, job.group, {"job": job.pk})
    if job.status in FINISHED:
        entry.detail = f"job #{job.pk} already ended ({job.status})"
        entry.write(Result.REFUSED, job)
        raise ActionRefused(entry.detail)
    BulkJob.objects.filter(pk=job.pk).update(cancel_requested=True)
    now = timezone.now()
    with transaction.atomic():
        idle = BulkJob.objects.filter(_runnable(now), pk=job.pk)
        if idle.update(status=JobStatus.CANCELLED, finished_at=now, owner="", lease_until=None):
            job.refresh_from_db()
            _close_audit(job)
            entry.detail = f"job #{job.pk} cancelled after {job.done} entries"
        else:
            entry.detail = f"job #{job.pk}: cancel requested; it stops after its current batch"
    return entry.write(Result.OK, job)


def runnable_jobs(kinds: Kinds | None = None) -> list[BulkJob]:
    """Queued jobs, and running ones whose runner's lease ran out (it died), oldest first,
    of the actions a runner given ``kinds`` can work."""
    ours = Q(action__in=batches.runnable_actions(kinds))
    found = BulkJob.objects.filter(_runnable(timezone.now()), ours)
    return list(found.order_by("created_at", "pk"))


def outcome(job: BulkJob) -> ActionOutcome:
    """A job's outcome as its audit record tells it (the record is final once the job ends)."""
    record = AuditRecord.objects.filter(job=job, action=job.action).order_by("pk").first()
    return ActionOutcome(
        action=job.action,
        stream=job.stream,
        group=job.group,
        count=job.done,
        skipped=job.skipped,
        outcome=record.outcome if record else _result(job),
        detail=record.detail if record else "",
        job_id=job.pk,
        audit_id=record.pk if record else 0,
    )


def as_dict(job: BulkJob) -> dict[str, Any]:
    """JSON-ready (``manage.py jobs --json``)."""
    times = {k: (v.isoformat() if (v := getattr(job, k)) else None) for k in _TIMES}
    return {"id": job.pk, **{k: getattr(job, k) for k in _FIELDS}, **times}


def _get(job_id: int) -> BulkJob:
    try:
        return BulkJob.objects.get(pk=job_id)
    except BulkJob.DoesNotExist:
        raise InvalidAction("job", f"no bulk job #{job_id}") from None


def _runnable(now: Any) -> Q:
    return Q(status=JobStatus.QUEUED) | Q(status=JobStatus.RUNNING, lease_until__lt=now)


# -- running -------------------------------------------------------------------------------


class _LeaseLost(Exception):
    """Another runner took the job over (ours expired): stop without writing."""


def run(
    job_id: int,
    client: redis.Redis,
    keys: Keys,
    owner: str,
    batch: int = DEFAULT_BATCH,
    should_stop: Callable[[], bool] = _never,
    progress: Callable[[BulkJob], None] | None = None,
    lease_s: float = LEASE_S,
    kinds: Kinds | None = None,
) -> BulkJob:
    """Take the job and work it until it ends, is cancelled, or ``should_stop()`` (then it is
    handed back, queued, and any runner resumes it after its cursor). ``JobNotRunnable``:
    it has ended, another runner holds it, or its action is not known here (``kinds``)."""
    work = batches.work_for(_get(job_id), client, keys, batch, kinds)  # before it is taken
    job = _take(job_id, owner, lease_s)
    try:
        return _loop(job, work, owner, should_stop, progress, lease_s)
    except _LeaseLost:
        log.warning("bulk job #%s was taken over by another runner", job.pk)
    except Exception as exc:
        log.exception("bulk job #%s failed", job.pk)
        _end(job, owner, JobStatus.FAILED, describe(exc))
    job.refresh_from_db()
    return job


def _take(job_id: int, owner: str, lease_s: float) -> BulkJob:
    now = timezone.now()
    taken = BulkJob.objects.filter(_runnable(now), pk=job_id).update(
        status=JobStatus.RUNNING,
        owner=owner,
        lease_until=now + timedelta(seconds=lease_s),
        started_at=Coalesce(F("started_at"), Value(now, output_field=DateTimeField())),
    )
    job = _get(job_id)
    if not taken:
        if job.status in FINISHED:
            raise JobNotRunnable(f"bulk job #{job_id} already ended ({job.status})")
        raise JobNotRunnable(f"bulk job #{job_id} is being run by {job.owner}")
    return job


def _loop(
    job: BulkJob,
    work: JobWork,
    owner: str,
    should_stop: Callable[[], bool],
    progress: Callable[[BulkJob], None] | None,
    lease_s: float,
) -> BulkJob:
    retry_s = 0.0  # 0 while Redis answers, else the next wait of an outage
    while True:
        if BulkJob.objects.filter(pk=job.pk, cancel_requested=True).exists():
            return _end(job, owner, JobStatus.CANCELLED)
        if should_stop():
            return _hand_back(job, owner)
        started = time.monotonic()
        try:
            page = work.page(job.cursor)
            result = work.apply(page.ids) if page.ids else ActionResult([], [])
        except UNREACHABLE as exc:
            retry_s = min(retry_s * 2, MAX_RETRY_S) if retry_s else FIRST_RETRY_S
            _wait_out(job, exc, retry_s, should_stop)
            _save(job, owner, lease_s)  # the lease outlives any outage; the cursor stays
            continue
        if retry_s:
            log.warning("bulk job #%s: redis answers again; going on after %s", job.pk, job.cursor)
            retry_s = 0.0
        job.cursor = page.cursor
        job.done += len(result.done)
        job.skipped += len(result.skipped)
        _save(job, owner, lease_s)
        if progress is not None:
            progress(job)
        if page.last:
            return _end(job, owner, JobStatus.DONE)
        _pace(len(page.ids), job.rate_per_s, started)


def _wait_out(
    job: BulkJob, exc: BaseException, wait_s: float, should_stop: Callable[[], bool]
) -> None:
    """Sleep ``wait_s`` through a Redis outage, cut short when the runner must stop. A batch
    the outage cut is redone from the saved cursor: what it had done is gone and is skipped."""
    log.warning("bulk job #%s: redis unavailable (%s); retrying in %.1f s", job.pk, exc, wait_s)
    until = time.monotonic() + wait_s
    while not should_stop() and (left_s := until - time.monotonic()) > 0:
        time.sleep(min(left_s, STOP_CHECK_S))


def _pace(entries: int, rate_per_s: float, started: float) -> None:
    """Sleep so that ``entries`` took at least ``entries / rate_per_s`` seconds."""
    wait_s = entries / rate_per_s - (time.monotonic() - started)
    if wait_s > 0:
        time.sleep(wait_s)


def _save(job: BulkJob, owner: str, lease_s: float) -> None:
    saved = BulkJob.objects.filter(pk=job.pk, owner=owner, status=JobStatus.RUNNING).update(
        cursor=job.cursor,
        done=job.done,
        skipped=job.skipped,
        lease_until=timezone.now() + timedelta(seconds=lease_s),
    )
    if not saved:
        raise _LeaseLost


def _hand_back(job: BulkJob, owner: str) -> BulkJob:
    """Stopping (shutdown): queued again, so the next runner resumes after the cursor."""
    BulkJob.objects.filter(pk=job.pk, owner=owner, status=JobStatus.RUNNING).update(
        status=JobStatus.QUEUED, owner="", lease_until=None
    )
    job.refresh_from_db()
    return job


def _end(job: BulkJob, owner: str, status: JobStatus, error: str = "") -> BulkJob:
    with transaction.atomic():
        ended = BulkJob.objects.filter(pk=job.pk, owner=owner, status=JobStatus.RUNNING).update(
            status=status, finished_at=timezone.now(), lease_until=None, error=error
        )
        job.refresh_from_db()
        if ended:
            _close_audit(job)
    return job


def _result(job: BulkJob) -> Result:
    if job.status == JobStatus.DONE:
        # Nothing matched, or all of it was gone: nothing done, as an action by id says.
        return Result.OK if job.done else Result.NOOP
    if job.status == JobStatus.CANCELLED:
        return Result.CANCELLED
    if job.status == JobStatus.FAILED:
        return Result.PARTIAL if job.done else Result.FAILED
    return Result.QUEUED


def _close_audit(job: BulkJob) -> None:
    """The job's audit record takes its final counts and outcome."""
    detail = f"bulk job #{job.pk} {job.status}: {job.done} done, {job.skipped} skipped"
    if job.error:
        detail += f"; {job.error.rstrip().rsplit(chr(10), 1)[-1]}"
    AuditRecord.objects.filter(job=job, action=job.action).update(
        count=job.done, skipped=job.skipped, outcome=_result(job), detail=detail
    )


class JobRunner:
    """Runs queued jobs (and resumes those whose runner died) until stopped."""

    def __init__(
        self,
        client: redis.Redis,
        keys: Keys,
        owner: str,
        batch: int = DEFAULT_BATCH,
        poll_s: float = POLL_S,
        kinds: Kinds | None = None,
    ) -> None:
        self.client = client
        self.kinds = kinds
        self.keys = keys
        self.owner = owner
        self.batch = batch
        self.poll_s = poll_s

    def run_once(self, should_stop: Callable[[], bool] = _never) -> int:
        """Run every runnable job once; returns how many this runner ran."""
        ran = 0
        for job in runnable_jobs(self.kinds):
            if should_stop():
                break
            try:
                k = self.kinds
                run(job.pk, self.client, self.keys, self.owner, self.batch, should_stop, kinds=k)
            except JobNotRunnable:
                continue  # another runner took it first
            ran += 1
        return ran

    def run_forever(self, stop: threading.Event) -> None:
        """Poll for jobs until ``stop`` is set (a background thread of the console)."""
        try:
            while not stop.is_set():
                ran = 0
                try:
                    ran = self.run_once(stop.is_set)
                except Exception:
                    log.exception("bulk job runner: a pass failed; trying again")
                finally:
                    close_old_connections()
                if not ran:
                    stop.wait(self.poll_s)
        finally:
            connection.close()


def filter_params(f: DeadFilter) -> dict[str, Any]:
    return {"filter": asdict(f)}
