"""Every operator action the console and the API offer: its form and its engine call.

The views never branch on what was posted: the URL names an action, this table says which
form validates it and which function of ``workers.operations`` does it, so the console, the
API and the command line share one implementation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
from django import forms

from console.actions import action_forms as f
from workers import operations
from workers.core.registry import default_registry
from workers.core.steps import Kind
from workers.from_settings import action_args, engine_config, home_group, stream_partitions
from workers.models import BulkJob, Door
from workers.operations import ActionOutcome, Actor
from workers.operations.redrive import find_letter
from workers.store.audit import Result
from workers.store.timeline_rows import PUBLISHED, Step

Call = Callable[[Actor, dict[str, Any], dict[str, Any]], ActionOutcome]


@dataclass(frozen=True, slots=True)
class ConsoleAction:
    label: str
    form: type[forms.Form]
    call: Call
    # Destructive or bulk: the console asks before posting.
    confirm: str = ""


def actor(user: Any, door: Door) -> Actor:
    return Actor(user.get_username(), door)


GROUP_ACTIONS: dict[str, ConsoleAction] = {
    "claim": ConsoleAction(
        "Claim",
        f.ClaimForm,
        lambda a, where, d: operations.claim(
            a,
            where["stream"],
            where["group"],
            d["ids"],
            d["consumer"],
            dry_run=d["dry_run"],
            **action_args(),
        ),
    ),
    "claim-all": ConsoleAction(
        "Claim all entries of a consumer",
        f.ClaimAllForm,
        lambda a, where, d: operations.claim_all(
            a,
            where["stream"],
            where["group"],
            d["from_consumer"],
            d["to_consumer"],
            dry_run=d["dry_run"],
            **action_args(),
        ),
        confirm="Claim every pending entry of this consumer?",
    ),
    "remove-consumer": ConsoleAction(
        "Remove consumer",
        f.ConsumerForm,
        lambda a, where, d: operations.remove_consumer(
            a, where["stream"], where["group"], d["consumer"], **action_args()
        ),
        confirm="Remove this consumer? Refused while it has pending entries.",
    ),
    "retry": ConsoleAction(
        "Retry now",
        f.IdsForm,
        lambda a, where, d: operations.retry_now(
            a,
            where["stream"],
            where["group"],
            d["ids"],
            dry_run=d["dry_run"],
            **action_args(),
            home=home_group(),
            claim_idle_ms=engine_config().claim_idle_ms,
        ),
    ),
    "deadletter": ConsoleAction(
        "Dead-letter",
        f.DeadLetterForm,
        lambda a, where, d: operations.dead_letter(
            a,
            where["stream"],
            where["group"],
            d["ids"],
            d["reason"],
            dry_run=d["dry_run"],
            **action_args(),
            home=home_group(),
        ),
        confirm="Move the selected entries to the dead letters?",
    ),
    "cancel": ConsoleAction(
        "Cancel",
        f.CancelEntriesForm,
        lambda a, where, d: operations.cancel_entries(
            a,
            where["stream"],
            where["group"],
            d["ids"],
            d["reason"],
            dry_run=d["dry_run"],
            **action_args(),
            home=home_group(),
        ),
        confirm="Cancel the selected entries' runs? They end cancelled and never run again.",
    ),
    "pause": ConsoleAction(
        "Pause",
        f.GroupForm,
        lambda a, where, d: operations.pause(
            a, where["stream"], where["group"], dry_run=d["dry_run"], **action_args()
        ),
        confirm="Pause this group? Workers stop taking new entries within a second.",
    ),
    "resume": ConsoleAction(
        "Resume",
        f.GroupForm,
        lambda a, where, d: operations.resume(
            a, where["stream"], where["group"], dry_run=d["dry_run"], **action_args()
        ),
    ),
}


def _redrive(a: Actor, where: dict[str, Any], d: dict[str, Any]) -> ActionOutcome:
    if d.get("all"):
        return operations.redrive(
            a,
            where["stream"],
            filter=d["filter"],
            dry_run=d["dry_run"],
            **action_args(),
            home=home_group(),
        )
    return operations.redrive(
        a, where["stream"], ids=d["ids"], dry_run=d["dry_run"], **action_args(), home=home_group()
    )


def _purge(a: Actor, where: dict[str, Any], d: dict[str, Any]) -> ActionOutcome:
    chosen: dict[str, Any] = {"filter": d["filter"]} if d.get("all") else {"ids": d["ids"]}
    return operations.purge(
        a, where["stream"], reason=d["reason"], dry_run=d["dry_run"], **chosen, **action_args()
    )


DEAD_ACTIONS: dict[str, ConsoleAction] = {
    "redrive": ConsoleAction("Retry", f.DeadFilterForm, _redrive),
    "purge": ConsoleAction(
        "Purge", f.PurgeForm, _purge, confirm="Delete these dead letters for good?"
    ),
}


def preview(stream: str, form: f.DeadFilterForm) -> operations.Preview:
    filtered = form.cleaned_data["filter"]
    return operations.preview_redrive(stream, filtered, **action_args(), home=home_group())


def rerun(user: Any, door: Door, event_hash: str, reason: str) -> ActionOutcome:
    return operations.force_rerun(
        actor(user, door), event_hash, reason, **action_args(), home=home_group()
    )


def cancel(user: Any, door: Door, event_hash: str, reason: str) -> ActionOutcome:
    return operations.cancel(
        actor(user, door), event_hash, reason, **action_args(), home=home_group()
    )


def answer(
    user: Any, door: Door, event_hash: str, approved: bool, comment: str, stream: str = ""
) -> ActionOutcome:
    """Approve or reject a waiting run, whose wait is on ``stream`` (a partition) or, not
    given, on one of the engine's stream's partitions."""
    return operations.answer(
        actor(user, door),
        event_hash,
        approved,
        comment,
        streams=wait_streams(stream),
        registry=default_registry,
        **action_args(),
    )


def wait_streams(stream: str = "") -> list[str]:
    """Where waits are looked for: ``stream``'s partitions, the engine's by default."""
    return stream_partitions(stream or engine_config().stream)


def retry_letter(user: Any, door: Door, stream: str, dead_id: str) -> ActionOutcome:
    """One dead letter's Retry button: redriven unless its event already ran (the gate and
    the database are asked first), so an event that succeeded meanwhile is not sent again."""
    return operations.redrive(
        actor(user, door), stream, ids=[dead_id], skip_done=True, **action_args(), home=home_group()
    )


def job_of(outcome: ActionOutcome | None) -> BulkJob | None:
    """The bulk job an action was queued as, for its total ("queued as job #7 (196 entries)")."""
    if outcome is None or outcome.job_id is None or outcome.outcome != Result.QUEUED:
        return None
    return BulkJob.objects.filter(pk=outcome.job_id).first()


def dead_letter_of(client: redis.Redis, steps: list[Step]) -> tuple[str, str] | None:
    """(stream, dead letter id) of an event whose last step is being dead-lettered, if the
    letter is still there (not redriven or purged): the event page's Retry button."""
    dead = [s for s in steps if s.kind != PUBLISHED]
    if not dead or dead[-1].kind != Kind.DEAD_LETTERED:
        return None
    last = dead[-1]
    found = find_letter(client, last.stream, last.entry_id, int(last.at.timestamp() * 1000))
    return (last.stream, found) if found else None
