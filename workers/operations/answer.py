"""Answer: an operator approves or rejects a run waiting for an event, by publishing the
event it waits for (``workers/waits/answers.py`` says what that event holds). The console's
Waiting page, ``manage.py answer`` and ``POST /api/waits/<event hash>/answer/`` call it;
docs/actions.md#answer.

Refused, and recorded so, when the run has no wait on the streams named, sleeps (a sleep is
cancelled, not answered) or no longer waits (answered, timed out, cancelled). The check
and the XADD are one script call (``lua/answer.lua``), so a wait that ends meanwhile gets
no answer; a worker answers the wait when it reads the event.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import redis

from workers.core.errors import ActionRefused, InvalidAction
from workers.core.events import Envelope
from workers.core.keys import EVENT_FIELD, Keys
from workers.core.lua import lua_script
from workers.core.registry import Registry
from workers.operations import inputs, steps
from workers.store.audit import Action, ActionOutcome, Actor, Entry
from workers.waits import answers, view
from workers.waits.view import WaitView

PUBLISH = lua_script(__package__, "answer")


def answer(
    actor: Actor,
    event_hash: str,
    approved: bool,
    comment: str = "",
    *,
    by: str = "",
    streams: Sequence[str],
    client: redis.Redis,
    keys: Keys,
    registry: Registry | None = None,
) -> ActionOutcome:
    """Approve (``approved``) or reject the waiting run ``event_hash``, whose wait is on one
    of ``streams`` (a stream, or a partitioned stream's partitions). ``by``: the name the
    answer carries (the actor's by default; the audit record names the actor either way)."""
    event_hash = inputs.event_hash(event_hash)
    comment = inputs.reason(comment, required=False)
    if not isinstance(approved, bool):
        raise InvalidAction("approved", "true (approve) or false (reject)")
    names = [inputs.stream(s) for s in streams]
    by = inputs.name("by", by) if by.strip() else actor.name
    target = {"event_hash": event_hash, "approved": approved, "by": by}
    entry = Entry(actor, Action.ANSWER, names[0] if names else "", target=target, reason=comment)

    def step() -> None:
        found = view.find(client, keys, names, event_hash)
        if found is not None:
            entry.stream, entry.group = found.stream, found.group
        wait = answers.check(found, event_hash)
        door = str(actor.door)
        envelope = answers.envelope_of(wait, approved, by, comment, door, registry)
        entry_id = publish(client, keys, wait, envelope)
        entry.count, entry.done_ids = 1, [entry_id]
        verdict = "approved" if approved else "rejected"
        entry.detail = (
            f"{verdict}: {envelope.type} published as {entry_id}; "
            "the run resumes when a worker reads it"
        )

    return steps.run(entry, step)


def publish(client: redis.Redis, keys: Keys, wait: WaitView, envelope: Envelope) -> str:
    """XADD the answer to the wait's stream if the run still waits; else ActionRefused."""
    record = keys.wait(wait.stream, wait.event_hash)
    script = client.register_script(PUBLISH)
    status, detail = (
        _text(v) for v in script(keys=[record, wait.stream], args=[envelope.to_json(), EVENT_FIELD])
    )
    if status == "ok":
        return detail
    # It ended between the read and the script: say how, as the read would have.
    now = None if status == "gone" else replace(wait, state=status, kind=detail)
    raise ActionRefused(answers.refusal(now, wait.event_hash))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
