"""An operator's answer to a waiting run: the event it waits for, to be published to its
stream (``workers/operations/answer.py`` publishes it, audited, in one script with the check
that the run still waits). Pure.

The answer is an ordinary event: of the wait's ``type``, its ``subject`` and ``data`` made
from the wait's ``match`` (``data.order.id: 7`` becomes ``{"order": {"id": 7}}``), plus
``approved``, ``by`` and, if given, ``comment``. A worker that reads it answers the wait
(``workers/waits/lua/answer.lua``) as it would any other matching event, so a run cannot
tell an operator from a system. Its ``source`` is ``streamdesk/operator`` and its ``id``
``answer:<event hash>:<step>``: one answer per wait whichever door it came through, so a
second click, or a second door, publishes a copy the gate treats as a duplicate.

Workers answer the wait when they read the event, so until then a second answer is still
published (and is a duplicate).
"""

from __future__ import annotations

import hashlib
from typing import Any

from workers.core.errors import ActionRefused, InvalidAction, InvalidEventData
from workers.core.events import Envelope, now_utc
from workers.core.registry import Registry
from workers.waits.view import WaitView

SOURCE = "streamdesk/operator"
# The fields an answer adds to ``data``: a wait that matches on one of them itself cannot be
# answered from here (the answer would not match it).
ANSWER_FIELDS = ("approved", "by", "comment")
MAX_ID_CHARS = 256


def answer_id(event_hash: str, step: str) -> str:
    """The answer's event id: the same for every answer to one wait."""
    out = f"answer:{event_hash}:{step}"
    if len(out) <= MAX_ID_CHARS:
        return out
    step_digest = hashlib.sha1(step.encode(), usedforsecurity=False).hexdigest()
    return f"answer:{event_hash}:{step_digest}"


def nested(match: dict[str, Any]) -> dict[str, Any]:
    """The ``data.<path>`` fields of a match as the dict an event's ``data`` would be."""
    data: dict[str, Any] = {}
    for field, value in sorted(match.items()):
        if not field.startswith("data."):
            continue
        *parents, leaf = field.removeprefix("data.").split(".")
        node = data
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
    return data


def refusal(wait: WaitView | None, event_hash: str) -> str:
    """Why ``wait`` cannot be answered, or ``""``."""
    short = event_hash[:12]
    if wait is None:
        return f"run {short} is not waiting: no wait is recorded for it on this stream"
    if not wait.is_event:
        return f"run {short} sleeps until a time, it waits for no answer: cancel it instead"
    if wait.state != "waiting":
        return f"run {short} is not waiting any more ({wait.state.replace('_', ' ')})"
    return ""


def check(wait: WaitView | None, event_hash: str) -> WaitView:
    """``wait`` if it can be answered, else ActionRefused saying why."""
    why = refusal(wait, event_hash)
    if why or wait is None:
        raise ActionRefused(why)
    return wait


def envelope_of(
    wait: WaitView,
    approved: bool,
    by: str,
    comment: str = "",
    door: str = "",
    registry: Registry | None = None,
) -> Envelope:
    """The answer event. ``door`` (console, cli, api) rides as an extension attribute, out
    of the event hash, so the answer is the same event whichever door sent it. When
    ``registry`` knows the type, its schema validates the data (InvalidAction if not)."""
    taken = [f for f in ANSWER_FIELDS if f"data.{f}" in wait.match]
    if taken:
        raise InvalidAction(
            "approved", f"the wait matches on data.{taken[0]} itself: publish its event by hand"
        )
    data = nested(wait.match)
    data.update({"approved": approved, "by": by})
    if comment:
        data["comment"] = comment
    fields: dict[str, Any] = {
        "type": wait.type,
        "source": SOURCE,
        "id": answer_id(wait.event_hash, wait.step),
        "time": now_utc(),
        "data": data,
    }
    if "subject" in wait.match:
        fields["subject"] = wait.match["subject"]
    if door:
        fields["door"] = door
    if registry is not None and wait.type in registry:
        try:
            registry.validate(wait.type, data)
        except InvalidEventData as exc:
            why = f"the answer does not fit its type's schema: {exc}"
            raise InvalidAction("data", why) from exc
    return Envelope.model_validate(fields)
