"""Checking an operator action's input, so every door rejects the same things the same way.

Pure: each function returns the cleaned value or raises ``InvalidAction`` naming the field.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from workers.core.errors import InvalidAction
from workers.core.keys import is_dead_stream

if TYPE_CHECKING:
    from workers.operations.actions import DeadFilter

ENTRY_ID = re.compile(r"\d{1,20}-\d{1,20}")
EVENT_HASH = re.compile(r"[0-9a-f]{64}")
MAX_NAME_CHARS = 256
MAX_REASON_CHARS = 2000


def stream(value: str) -> str:
    value = value.strip()
    if not value:
        raise InvalidAction("stream", "a stream name is required")
    if is_dead_stream(value):
        raise InvalidAction("stream", f"name the stream, not its dead letters ({value!r})")
    return _bounded("stream", value)


def name(field: str, value: str) -> str:
    """A group or consumer name."""
    value = value.strip()
    if not value:
        raise InvalidAction(field, f"a {field} name is required")
    return _bounded(field, value)


def entry_ids(ids: list[str], field: str = "ids") -> list[str]:
    """Stream entry ids (``<ms>-<seq>``), without duplicates, in the order given."""
    out: dict[str, None] = {}
    for raw in ids:
        entry_id = raw.strip()
        if not ENTRY_ID.fullmatch(entry_id):
            raise InvalidAction(field, f"{raw!r} is not a stream entry id (<ms>-<seq>)")
        out[entry_id] = None
    if not out:
        raise InvalidAction(field, "at least one entry id is required")
    return list(out)


def id_order(entry_id: str) -> tuple[int, int]:
    """Sort key: stream order, not string order (``10-0`` comes after ``9-0``)."""
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def reason(value: str, required: bool) -> str:
    value = value.strip()
    if required and not value:
        raise InvalidAction("reason", "a reason is required for this action")
    if len(value) > MAX_REASON_CHARS:
        raise InvalidAction("reason", f"at most {MAX_REASON_CHARS} characters")
    return value


def event_hash(value: str) -> str:
    value = value.strip().lower()
    if not EVENT_HASH.fullmatch(value):
        raise InvalidAction("event_hash", f"{value!r} is not an event hash (64 hex digits)")
    return value


def ids_or_filter(
    ids: list[str] | None, filter: DeadFilter | None
) -> tuple[list[str], DeadFilter | None]:
    """Exactly one of dead-letter ids or a filter."""
    if ids and filter is not None:
        raise InvalidAction("ids", "give dead-letter ids or a filter, not both")
    if filter is not None:
        return [], dead_filter(filter)
    if ids is None:
        raise InvalidAction("ids", "give dead-letter ids or a filter")
    return entry_ids(ids), None


def dead_filter(filter: DeadFilter) -> DeadFilter:
    """A dead-letter filter's time window as stream ids can express it: an id's clock starts
    in 1970, and Redis refuses a negative one (the read failed, a 500, before)."""
    for field, ms in (("since", filter.since_ms), ("until", filter.until_ms)):
        if ms < 0:
            raise InvalidAction(field, "before 1970-01-01 UTC, where stream entry ids begin")
    if filter.until_ms and filter.since_ms > filter.until_ms:
        raise InvalidAction("filter", "since is after until")
    return filter


def _bounded(field: str, value: str) -> str:
    if len(value) > MAX_NAME_CHARS:
        raise InvalidAction(field, f"at most {MAX_NAME_CHARS} characters")
    return value
