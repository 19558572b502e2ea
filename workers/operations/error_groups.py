"""Actions on a whole error group (docs/console.md#errors): redrive ("retry") or purge
every dead letter of one fingerprint, always as a tracked bulk job over the group's
members at the moment of asking (a letter that fails again later joins the group anew and
is not taken). The job is the redrive's or purge's own (``jobs.py``): same audit, same
Jobs page, same cancel; its letters leave the group as it goes (``redrive.py``)."""

from __future__ import annotations

import re

import redis

from workers.core.errors import InvalidAction
from workers.core.keys import Keys
from workers.operations import inputs, jobs, steps
from workers.redis.error_groups import member_ids
from workers.store.audit import Action, ActionOutcome, Actor, Entry, Result

FINGERPRINT = re.compile(r"[0-9a-f]{16}")


def fingerprint(value: str) -> str:
    value = value.strip().lower()
    if not FINGERPRINT.fullmatch(value):
        raise InvalidAction("fingerprint", f"{value!r} is not a fingerprint (16 hex digits)")
    return value


def retry_group(
    actor: Actor, stream: str, fp: str, *, reason: str = "", client: redis.Redis, keys: Keys
) -> ActionOutcome:
    """Put every dead letter of the group back on its stream, as a bulk job."""
    return _group_job(actor, Action.REDRIVE, stream, fp, inputs.reason(reason, False), client, keys)


def purge_group(
    actor: Actor, stream: str, fp: str, *, reason: str, client: redis.Redis, keys: Keys
) -> ActionOutcome:
    """Delete every dead letter of the group for good, as a bulk job (a reason is required)."""
    return _group_job(actor, Action.PURGE, stream, fp, inputs.reason(reason, True), client, keys)


def _group_job(
    actor: Actor,
    action: Action,
    stream: str,
    fp: str,
    reason: str,
    client: redis.Redis,
    keys: Keys,
) -> ActionOutcome:
    stream, fp = inputs.stream(stream), fingerprint(fp)
    entry = Entry(actor, action, stream, reason=reason, target={"fingerprint": fp})
    try:
        ids = member_ids(client, keys, stream, fp)
    except redis.RedisError as exc:
        steps.failed(entry, exc)
    if not ids:
        entry.detail = f"error group {fp} has no dead letters"
        return entry.write(Result.NOOP)
    job = jobs.create(actor, action, stream, "", {"ids": ids, "fingerprint": fp}, reason)
    return jobs.outcome(job)
