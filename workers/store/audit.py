"""Who acted, through which door, and what came of it: the ``AuditRecord`` of every action.

Shared by ``operations/__init__.py`` (one record per action) and ``jobs.py`` (a bulk job's record is
written when the job is created and brought up to date when it ends).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

from workers.core.errors import ActionRefused, InvalidAction
from workers.models import AuditRecord, BulkJob, Door

T = TypeVar("T")

# Entry ids kept in an audit record or an outcome; the count says how many there were.
MAX_LISTED_IDS = 1000


class Action(StrEnum):
    CLAIM = "claim"
    CLAIM_ALL = "claim-all"
    REMOVE_CONSUMER = "remove-consumer"
    RETRY = "retry"
    DEAD_LETTER = "dead-letter"
    REDRIVE = "redrive"
    PURGE = "purge"
    # A range of the stream fed back to one agent (workers/replay/), as a bulk job.
    REPLAY = "replay"
    FORCE_RERUN = "force-rerun"
    CANCEL = "cancel"  # an event's run (running or waiting) cancelled: workers/cancel/
    # An operator answered a run waiting for an event (approve/reject): workers/waits/answers.py
    ANSWER = "answer"
    PAUSE = "pause"
    RESUME = "resume"
    CANCEL_JOB = "cancel-job"
    TOKEN_CREATE = "token-create"
    TOKEN_REVOKE = "token-revoke"
    # The engine's housekeeping removed a consumer with no heartbeat and nothing pending.
    PRUNE_CONSUMER = "prune-consumer"


class Result(StrEnum):
    """An audit record's outcome. ``ok``: something was done; ``noop``: the action was
    asked for something and did nothing (every id skipped, already paused, no such
    consumer); ``refused``: it was not done because doing it would lose work or it named
    something that does not exist. A bulk job's record reads ``queued`` until the job ends,
    then ``ok``, ``cancelled``, ``partial`` or ``failed`` (see ``jobs.py``)."""

    OK = "ok"
    NOOP = "noop"
    PARTIAL = "partial"
    REFUSED = "refused"
    FAILED = "failed"
    DRY_RUN = "dry-run"
    QUEUED = "queued"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class Actor:
    """Who acts: a user name (``cli:<user>@<host>`` from the command line) and the door."""

    name: str
    door: Door


@dataclass(frozen=True)
class ActionOutcome:
    """What an action did. ``ids``: the entries acted on (or, for a dry run, that would be),
    the first 1,000; ``count`` says how many in all."""

    action: str
    stream: str
    group: str
    count: int
    skipped: int
    outcome: str
    ids: tuple[str, ...] = ()
    new_ids: tuple[str, ...] = ()
    detail: str = ""
    job_id: int | None = None
    audit_id: int = 0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, for ``--json`` and the API."""
        return {
            "action": self.action,
            "stream": self.stream,
            "group": self.group,
            "count": self.count,
            "skipped": self.skipped,
            "outcome": self.outcome,
            "ids": list(self.ids),
            "new_ids": list(self.new_ids),
            "detail": self.detail,
            "job_id": self.job_id,
            "audit_id": self.audit_id,
        }


@dataclass
class Entry:
    """An audit record being put together: filled in as the action goes, written once."""

    actor: Actor
    action: Action
    stream: str = ""
    group: str = ""
    target: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    count: int = 0
    skipped: int = 0
    done_ids: list[str] = field(default_factory=list)
    new_ids: list[str] = field(default_factory=list)
    detail: str = ""

    def guarded(self, fn: Callable[[], T]) -> T:
        """``fn()``; a refusal (ActionRefused, InvalidAction) is recorded, then raised."""
        try:
            return fn()
        except (ActionRefused, InvalidAction) as exc:
            self.detail = str(exc)
            self.write(Result.REFUSED)
            raise

    def write(self, result: Result, job: BulkJob | None = None) -> ActionOutcome:
        record = AuditRecord.objects.create(
            actor=self.actor.name,
            door=self.actor.door,
            action=self.action,
            stream=self.stream,
            group=self.group,
            target=self.target,
            count=self.count,
            skipped=self.skipped,
            reason=self.reason,
            outcome=result,
            detail=self.detail,
            job=job,
        )
        return ActionOutcome(
            action=self.action,
            stream=self.stream,
            group=self.group,
            count=self.count,
            skipped=self.skipped,
            outcome=result,
            ids=tuple(self.done_ids[:MAX_LISTED_IDS]),
            new_ids=tuple(self.new_ids[:MAX_LISTED_IDS]),
            detail=self.detail,
            job_id=job.pk if job else None,
            audit_id=record.pk,
        )


def ids_target(ids: list[str]) -> dict[str, Any]:
    return {"ids": ids[:MAX_LISTED_IDS]}


def failure_detail(done_before: str, exc: BaseException) -> str:
    """What an action had done when it failed, then the error."""
    error = f"{type(exc).__name__}: {exc}"
    return f"{done_before}; then failed: {error}" if done_before else f"failed: {error}"
