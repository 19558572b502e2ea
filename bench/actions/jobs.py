"""One bulk action through the real path, timed: the operation queues the job, ``jobs.run``
works it through. Imported by the bulk-actions benchmark's subprocess (Django set up here).

Where the time goes is measured by wrapping, for the run only, the four steps of a batch in
``workers/operations/jobs.py``: reading the page (``Work.page``), acting on it
(``Work.apply``: the Lua calls), saving cursor and counts (``jobs._save``: one UPDATE) and pacing
(``jobs._pace``: the rate limit's sleep). The rest (the cancel check before each batch, taking and
ending the job, the audit record) is "other". The wrappers cost two clock reads a batch.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")

import django

django.setup()

import redis  # noqa: E402

from bench.actions.load import GONE, GROUP, RESCUER, STREAM  # noqa: E402
from workers import operations  # noqa: E402
from workers.core.keys import Keys  # noqa: E402
from workers.models import BulkJob, Door  # noqa: E402
from workers.operations import jobs  # noqa: E402
from workers.operations.actions import DeadFilter  # noqa: E402
from workers.operations.batches import Work  # noqa: E402
from workers.redis.consumers import Target  # noqa: E402
from workers.store.audit import Actor  # noqa: E402

ACTOR = Actor("bench", Door.CLI)
KEYS = Keys()
OWNER = f"bench-actions:{os.getpid()}"
REDRIVE, CLAIM_ALL = "redrive", "claim-all"
DEFAULT, OFF = "default", "off"
# The job's rate limit when an operator queues it (BulkJob.rate_per_s's default).
DEFAULT_RATE = float(BulkJob._meta.get_field("rate_per_s").default)
RATES = {DEFAULT: DEFAULT_RATE, OFF: 1e9}
PARTS = ("read", "act", "save", "pace")


def _never() -> bool:
    return False


@dataclass
class JobRun:
    action: str
    rate: str  # DEFAULT or OFF
    status: str
    done: int
    skipped: int
    seconds: float  # the operation (queueing) plus jobs.run, wall clock
    queue_s: float  # the operation alone
    batches: int
    parts: dict[str, float]  # seconds in each step of PARTS, plus "other"
    progress: list[tuple[float, int]] = field(default_factory=list)  # (monotonic, done)

    @property
    def rate_per_s(self) -> float:
        return self.done / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("progress")
        return out


class Clock:
    """Seconds spent in each step of the job's batches, while ``timing()`` is active."""

    def __init__(self) -> None:
        self.seconds = dict.fromkeys(PARTS, 0.0)

    def _wrap(self, part: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return call(*args, **kwargs)
            finally:
                self.seconds[part] += time.perf_counter() - began

        return timed

    @contextlib.contextmanager
    def timing(self) -> Iterator[None]:
        saved = (Work.page, Work.apply, jobs._save, jobs._pace)
        Work.page = self._wrap("read", Work.page)  # type: ignore[method-assign]
        Work.apply = self._wrap("act", Work.apply)  # type: ignore[method-assign]
        jobs._save = self._wrap("save", jobs._save)
        jobs._pace = self._wrap("pace", jobs._pace)
        try:
            yield
        finally:
            Work.page, Work.apply, jobs._save, jobs._pace = saved  # type: ignore[method-assign]


def queue(client: redis.Redis, action: str) -> int:
    """What an operator's click does: the operation, which queues a bulk job (over 1,000
    entries, or any filter). Returns the job's id."""
    if action == REDRIVE:
        out = operations.redrive(ACTOR, STREAM, filter=DeadFilter(), client=client, keys=KEYS)
    else:
        # No worker runs here: the rescuer is a name, as with the CLI's claim --create.
        out = operations.claim_all(
            ACTOR, STREAM, GROUP, GONE, RESCUER, target=Target.ANY, client=client, keys=KEYS
        )
    if out.job_id is None:
        raise RuntimeError(f"{action} did not queue a bulk job: {out}")
    return out.job_id


def run_job(
    client: redis.Redis,
    action: str,
    rate: str,
    should_stop: Callable[[], bool] = _never,
    on_started: Callable[[], None] | None = None,
) -> JobRun:
    """Queue the action and run its job here until it ends (or ``should_stop()``)."""
    clock = Clock()
    progress: list[tuple[float, int]] = []
    began = time.perf_counter()
    if on_started is not None:
        on_started()
    job_id = queue(client, action)
    queued = time.perf_counter()
    if rate != DEFAULT:  # operations queue at the default; the benchmark lifts it
        BulkJob.objects.filter(pk=job_id).update(rate_per_s=RATES[rate])
    with clock.timing():
        job = jobs.run(
            job_id,
            client,
            KEYS,
            OWNER,
            should_stop=should_stop,
            progress=lambda j: progress.append((time.monotonic(), j.done)),
        )
    seconds = time.perf_counter() - began
    parts = dict(clock.seconds)
    parts["other"] = max(0.0, seconds - (queued - began) - sum(parts.values()))
    return JobRun(
        action=action,
        rate=rate,
        status=str(job.status),
        done=job.done,
        skipped=job.skipped,
        seconds=seconds,
        queue_s=queued - began,
        batches=len(progress),
        parts=parts,
        progress=progress,
    )
