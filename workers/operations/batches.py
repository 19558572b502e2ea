"""What a bulk job reads and does, page by page (``jobs.py`` runs the pages).

A page is read after the job's cursor: dead letters matching a filter, a consumer's pending
entries, or the next slice of the job's own sorted id list. Acting on a page goes through
``actions.py``, whose actions skip what is gone or moved, so a page done twice is harmless.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

import redis

from workers.core.errors import InvalidAction, JobNotRunnable
from workers.core.keys import DEFAULT_GROUP, Keys
from workers.models import BulkJob
from workers.operations import actions, inputs
from workers.operations.actions import ActionResult, DeadFilter
from workers.redis.error_groups import drop_gone
from workers.store.audit import Action
from workers.store.runs import close_dead_lettered_by_hand

# The actions ``Work`` does. A job of another action (a replay: workers/replay/) brings its
# work from a package built on this one, which the runner's caller passes as ``kinds``.
OWN_ACTIONS = frozenset(
    {Action.CLAIM, Action.CLAIM_ALL, Action.RETRY, Action.DEAD_LETTER, Action.REDRIVE, Action.PURGE}
)


@dataclass(frozen=True, slots=True)
class Page:
    ids: list[str]
    cursor: str  # where the next page starts (exclusive)
    last: bool


class JobWork(Protocol):
    """What a job's runner needs of its work: a page after a cursor, then acting on it."""

    def page(self, after: str) -> Page: ...

    def apply(self, ids: list[str]) -> ActionResult: ...


# ``(job, client, keys, batch) -> work``, by the action it works.
Kinds = Mapping[str, Callable[[BulkJob, redis.Redis, Keys, int], JobWork]]


def runnable_actions(kinds: Kinds | None) -> Iterable[str]:
    return OWN_ACTIONS | set(kinds or ())


def work_for(
    job: BulkJob, client: redis.Redis, keys: Keys, batch: int, kinds: Kinds | None
) -> JobWork:
    """The work of ``job``; ``JobNotRunnable`` when this runner does not know its action (a
    runner started without ``kinds`` leaves a replay to one that has them)."""
    make = (kinds or {}).get(job.action)
    if make is not None:
        return make(job, client, keys, batch)
    if job.action not in OWN_ACTIONS:
        raise JobNotRunnable(f"bulk job #{job.pk}: this runner cannot work {job.action!r} jobs")
    return Work(job, client, keys, batch)


class Work:
    """What one job reads and does, page by page."""

    def __init__(self, job: BulkJob, client: redis.Redis, keys: Keys, batch: int) -> None:
        self.job = job
        self.client = client
        self.keys = keys
        self.params = job.params
        # At most about one second of work per batch, so pacing never sleeps for long.
        self.batch = max(1, min(batch, int(job.rate_per_s)))

    def page(self, after: str) -> Page:
        if "filter" in self.params:
            f = DeadFilter(**self.params["filter"])
            letters, nxt = actions.scan_dead(
                self.client, self.job.stream, f, after or None, self.batch
            )
            return Page([i for i, _ in letters], nxt or after, nxt is None)
        if "from_consumer" in self.params:
            ids = actions.pending_ids(
                self.client,
                self.job.stream,
                self.job.group,
                self.params["from_consumer"],
                after or None,
                self.batch,
            )
            return Page(ids, ids[-1] if ids else after, len(ids) < self.batch)
        listed: list[str] = self.params["ids"]
        start = (
            bisect.bisect_right(listed, inputs.id_order(after), key=inputs.id_order) if after else 0
        )
        ids = listed[start : start + self.batch]
        return Page(ids, ids[-1] if ids else after, start + self.batch >= len(listed))

    def apply(self, ids: list[str]) -> ActionResult:
        job, c, k = self.job, self.client, self.keys
        # The home group the job was asked under (whose runs the group's entries are); a
        # job queued before agents had names is the default's.
        home = str(self.params.get("home") or DEFAULT_GROUP)
        match job.action:
            case Action.CLAIM | Action.CLAIM_ALL:
                return actions.claim(c, job.stream, job.group, ids, self.params["consumer"])
            case Action.RETRY:
                idle_ms = self.params["idle_ms"]
                return actions.retry_now(c, job.stream, job.group, ids, idle_ms, keys=k, home=home)
            case Action.DEAD_LETTER:
                result = actions.dead_letter(
                    c, job.stream, job.group, ids, job.reason, job.created_by, keys=k, home=home
                )
                # As for a few ids (pending.py): timeline steps, and the runs closed as dead.
                detail = f"by {job.created_by}: {job.reason}"
                agent = actions.agent_in(home, job.group)
                close_dead_lettered_by_hand(
                    c, job.stream, result.done, detail, job.created_by, agent
                )
                return result
            case Action.REDRIVE:
                return self._group(actions.redrive(c, job.stream, ids, job.created_by))
            case Action.PURGE:
                return self._group(actions.purge(c, job.stream, ids))
        raise InvalidAction("action", f"{job.action!r} cannot run as a bulk job")

    def _group(self, result: ActionResult) -> ActionResult:
        """An error group's job: its letters found gone leave the group too."""
        if "fingerprint" in self.params:
            fp = self.params["fingerprint"]
            drop_gone(self.client, self.keys, self.job.stream, fp, result.skipped)
        return result
