"""Bounded reads behind the pages: one page of entries, pending entries or dead letters.

Every function reads at most a page (plus one to know there is more) or, for filters Redis
cannot apply itself, at most MAX_SCAN entries; nothing walks a whole stream or PEL.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, cast

import redis

from console.params import MAX_U64, valid_entry_id
from console.reads.entry_states import EntryState, Group, read_states
from workers.core.errors import EventError
from workers.core.events import decode_envelope, event_hash
from workers.core.keys import EVENT_FIELD, Keys, dead_stream
from workers.core.storable import encodable

PAGE_SIZE = 50
# Pending entries read to fill one page when filtering by deliveries (XPENDING cannot).
MAX_SCAN = 1_000
# Nothing comes after the largest id: an exclusive range from it is an error in Redis.
LAST_ID = f"{MAX_U64}-{MAX_U64}"
# A malformed record's fields are shown raw, each cut to this.
RAW_FIELD_CHARS = 500


def valid_id(value: str) -> bool:
    return valid_entry_id(value)


def _ms(entry_id: str) -> int:
    return int(entry_id.split("-", 1)[0])


@dataclass(frozen=True, slots=True)
class Summary:
    """What a list shows of an event without validating it against its schema."""

    type: str
    subject: str
    source: str
    size: int


def summarize(raw: str | None) -> Summary:
    if raw is None:
        return Summary("(deleted)", "", "", 0)
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):  # nesting deeper than the parser goes is not JSON here
        return Summary("(not JSON)", "", "", len(raw))
    if not isinstance(body, dict):
        return Summary("(not an object)", "", "", len(raw))
    # Encodable: an escaped lone surrogate in a stored event must not stop its page.
    return Summary(
        encodable(str(body.get("type", "(no type)"))),
        encodable(str(body.get("subject") or "")),
        encodable(str(body.get("source") or "")),
        len(raw),
    )


def hash_of(raw: str | None) -> str | None:
    """The event hash, or None for a payload the engine could not decode either."""
    try:
        return event_hash(decode_envelope(raw))
    except EventError:  # not JSON, no type, too large: the engine dead-letters those too
        return None


@dataclass(frozen=True, slots=True)
class EntryRow:
    id: str
    at_ms: int
    summary: Summary
    # done / failed / pending / dead (console/reads/entry_states.py); None when not asked for.
    state: EntryState | None = None


@dataclass(frozen=True, slots=True)
class EntriesPage:
    rows: list[EntryRow]
    older: str | None  # pass as ``before`` for the next (older) page


def entries_page(
    client: redis.Redis,
    stream: str,
    before: str | None = None,
    count: int = PAGE_SIZE,
    groups: list[Group] | None = None,
    *,
    keys: Keys,
) -> EntriesPage:
    """Newest first, starting at ``before`` (inclusive: a jump lands on the id itself); with
    ``groups``, each entry's state too (one more round trip and one database read)."""
    reply = cast(list[Any], client.xrevrange(stream, max=before or "+", min="-", count=count + 1))
    page = reply[:count]
    older = str(reply[count][0]) if len(reply) > count else None
    if groups is None:
        states: list[EntryState | None] = [None] * len(page)
    else:
        entries = [(str(i), hash_of(fields.get(EVENT_FIELD))) for i, fields in page]
        states = list(read_states(client, keys, stream, entries, groups))
    rows = [
        EntryRow(str(i), _ms(str(i)), summarize(fields.get(EVENT_FIELD)), state)
        for (i, fields), state in zip(page, states, strict=True)
    ]
    return EntriesPage(rows, older)


def entry(client: redis.Redis, stream: str, entry_id: str) -> dict[str, str] | None:
    reply = cast(list[Any], client.xrange(stream, min=entry_id, max=entry_id, count=1))
    return dict(reply[0][1]) if reply else None


@dataclass(frozen=True, slots=True)
class PendingRow:
    id: str
    consumer: str
    idle_ms: int
    deliveries: int
    summary: Summary
    # When the engine holds the entry back until (a retry's backoff...: workers/engine/waits.py).
    due_ms: int | None = None


@dataclass(frozen=True, slots=True)
class PendingFilter:
    consumer: str = ""
    min_idle_ms: int = 0
    min_deliveries: int = 0


@dataclass(frozen=True, slots=True)
class PendingPage:
    rows: list[PendingRow]
    after: str | None  # pass as ``after`` for the next page
    scanned_to: str | None  # set when the scan limit stopped a filtered read early


def _xpending(
    client: redis.Redis, stream: str, group: str, start: str, count: int, f: PendingFilter
) -> list[dict[str, Any]]:
    return cast(
        list[dict[str, Any]],
        client.xpending_range(
            stream,
            group,
            min=start,
            max="+",
            count=count,
            consumername=f.consumer or None,
            idle=f.min_idle_ms or None,
        ),
    )


def pending_page(
    client: redis.Redis,
    stream: str,
    group: str,
    after: str | None = None,
    f: PendingFilter | None = None,
    count: int = PAGE_SIZE,
    waits: str | None = None,
) -> PendingPage:
    """Pending entries in id order after ``after``, filtered; XPENDING with bounds. With
    ``waits`` (``Keys.waits``), each row's due time is read in the same round trip as its
    event."""
    f = f or PendingFilter()
    found: list[dict[str, Any]] = []
    cursor = f"({after}" if after else "-"
    scanned, exhausted = 0, False
    while len(found) <= count and scanned < MAX_SCAN:
        if cursor == f"({LAST_ID}":
            exhausted = True
            break
        want = min(count + 1, MAX_SCAN - scanned)
        batch = _xpending(client, stream, group, cursor, want, f)
        scanned += len(batch)
        found += [p for p in batch if int(p["times_delivered"]) >= f.min_deliveries]
        if len(batch) < want:
            exhausted = True
            break
        cursor = f"({batch[-1]['message_id']}"
    rows = found[:count]
    if len(found) > count:
        next_after: str | None = str(rows[-1]["message_id"])
    else:
        next_after = None if exhausted else cursor[1:]
    stopped = not exhausted and len(found) <= count
    ids = [str(p["message_id"]) for p in rows]
    summaries, dues = _summaries(client, stream, ids, waits)
    return PendingPage(
        [
            PendingRow(
                str(p["message_id"]),
                str(p["consumer"]),
                int(p["time_since_delivered"]),
                int(p["times_delivered"]),
                s,
                int(due) if due is not None else None,
            )
            for p, s, due in zip(rows, summaries, dues, strict=True)
        ],
        next_after,
        next_after if stopped else None,
    )


def _summaries(
    client: redis.Redis, stream: str, ids: list[str], waits: str | None = None
) -> tuple[list[Summary], list[float | None]]:
    """The event behind each id (one pipelined XRANGE per row, O(page)) and, with ``waits``,
    each id's due time (one ZMSCORE)."""
    if not ids:
        return [], []
    with client.pipeline(transaction=False) as pipe:
        for entry_id in ids:
            pipe.xrange(stream, min=entry_id, max=entry_id, count=1)
        if waits:
            pipe.zmscore(waits, ids)
        replies = pipe.execute()
    dues = replies.pop() if waits else [None] * len(ids)
    return [summarize(r[0][1].get(EVENT_FIELD) if r else None) for r in replies], dues


@dataclass(frozen=True, slots=True)
class DeadRow:
    id: str
    at_ms: int
    entry_id: str
    reason: str
    error: str
    deliveries: int
    by: str
    summary: Summary
    event_hash: str | None
    # The consumer group that dead-lettered it, so its agent (issue 31); "" on old letters.
    group: str = ""
    # Why the letter is not what the engine writes ("" when it is), and then its raw fields.
    malformed: str = ""
    raw: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class DeadPage:
    rows: list[DeadRow]
    older: str | None


def _deliveries(value: str | None) -> int | None:
    """The delivery count as the engine writes it, None for anything else."""
    text = (value or "").strip()
    return int(text) if text.isascii() and text.isdigit() and len(text) <= 20 else None


def _problem(fields: dict[str, str], deliveries: int | None) -> str:
    if EVENT_FIELD not in fields:
        return "no event field"
    if deliveries is None:
        return f"deliveries is {fields.get('deliveries', '(missing)')[:40]!r}, not a count"
    return ""


def dead_row(dead_id: str, fields: dict[str, str]) -> DeadRow:
    """One letter as the page shows it; anything unexpected makes a row marked malformed
    with the raw fields, so one odd letter never hides the others."""
    raw = fields.get(EVENT_FIELD)
    deliveries = _deliveries(fields.get("deliveries"))
    problem = _problem(fields, deliveries)
    return DeadRow(
        id=dead_id,
        at_ms=_ms(dead_id),
        entry_id=fields.get("entry_id", ""),
        reason=fields.get("reason", ""),
        error=fields.get("error", ""),
        deliveries=deliveries or 0,
        by=fields.get("by", ""),
        summary=summarize(raw),
        event_hash=hash_of(raw),
        group=fields.get("group", ""),
        malformed=problem,
        raw=[(str(k), str(v)[:RAW_FIELD_CHARS]) for k, v in fields.items()] if problem else [],
    )


def dead_page(
    client: redis.Redis, stream: str, before: str | None = None, count: int = PAGE_SIZE
) -> DeadPage:
    reply = cast(
        list[Any],
        client.xrevrange(dead_stream(stream), max=before or "+", min="-", count=count + 1),
    )
    rows = [dead_row(str(dead_id), dict(fields)) for dead_id, fields in reply[:count]]
    older = str(reply[count][0]) if len(reply) > count else None
    return DeadPage(rows, older)
