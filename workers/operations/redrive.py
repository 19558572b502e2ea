"""Operator actions on dead letters: scan, redrive, purge, and republish for a force re-run
(whose gate record ``workers.gate.clear_gate`` clears first).

Also the result type and chunking every action shares; ``workers/operations/actions.py``
re-exports all of it, so callers import from there.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import redis

from workers.core.fanout import REPLAY_FIELD, TARGET_FIELD
from workers.core.keys import EVENT_FIELD, Keys, dead_stream
from workers.core.lua import lua_script
from workers.redis.deadletter import ERROR_GROUPS

# Ids per Lua call or pipeline: large enough to be cheap, small enough that one call never
# holds the server for more than a few milliseconds.
CHUNK = 500
ENTRY_ID = re.compile(r"\d+-\d+")


@dataclass(frozen=True, slots=True)
class ActionResult:
    done: list[str]  # ids acted on (for redrive: the dead-letter ids redriven)
    skipped: list[str]  # ids not acted on: gone, not pending, already redriven...
    new_ids: list[str] = field(default_factory=list)  # redrive / rerun: new stream entry ids
    detail: str = ""


def chunks(items: list[str], size: int = CHUNK) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def split_ids(ids: list[str]) -> tuple[list[str], list[str]]:
    """Well-formed entry ids (each once, in order) and the rest, which no command sees:
    a malformed id would fail a whole Lua call."""
    valid = [i for i in dict.fromkeys(ids) if ENTRY_ID.fullmatch(i)]
    ok = set(valid)
    return valid, [i for i in ids if i not in ok]


def not_done(ids: list[str], done: list[str]) -> list[str]:
    """The skipped ids: each id given (once, in order) that was not acted on."""
    acted = set(done)
    return [i for i in dict.fromkeys(ids) if i not in acted]


def entry_ms(entry_id: str) -> int:
    return int(entry_id.split("-", 1)[0])


# Both take each letter out of its error group as it goes (workers/redis/lua/error_groups.lua).
REDRIVE = ERROR_GROUPS + lua_script(__package__, "redrive")

PURGE = ERROR_GROUPS + lua_script(__package__, "purge")


def _group_keys(stream: str) -> list[str]:
    """The error groups' keys, named after the stream alone (no prefix), as the dead stream."""
    keys = Keys()
    return [keys.error_groups(stream), keys.error_backfilled(stream)]


@dataclass(frozen=True, slots=True)
class DeadFilter:
    type: str = ""  # exact event type, "" = any
    reason: str = ""  # exact dead-letter reason, "" = any
    since_ms: int = 0  # dead-lettered at or after (the dead entry id's ms), 0 = any
    until_ms: int = 0  # before, 0 = any
    # The consumer group that dead-lettered it, "" = any: one agent's letters, when several
    # agents take a type (each its own group, workers/core/fanout.py).
    group: str = ""

    def matches(self, dead_id: str, fields: dict[str, str]) -> bool:
        if self.reason and fields.get("reason") != self.reason:
            return False
        if self.group and fields.get("group") != self.group:
            return False
        ms = entry_ms(dead_id)
        if ms < self.since_ms or (self.until_ms and ms >= self.until_ms):
            return False
        return not self.type or event_type(fields.get(EVENT_FIELD, "")) == self.type


def event_type(raw: str) -> str:
    """The ``type`` of a raw event, "" if it is not a JSON object with a string type."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # nested deeper than the parser goes: not an event
        return ""
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if isinstance(kind, str) else ""


def scan_dead(
    client: redis.Redis, stream: str, f: DeadFilter, after: str | None = None, count: int = 500
) -> tuple[list[tuple[str, dict[str, str]]], str | None]:
    """One page of ``<stream>:dead`` after ``after``, filtered. Returns the matches and the
    cursor for the next page (the last id read, matching or not), None at the end. The
    filter's time window narrows the range read, so a recent window never scans old letters."""
    start = f"{f.since_ms}-0" if f.since_ms else "-"
    if after and (not f.since_ms or entry_ms(after) >= f.since_ms):
        start = f"({after}"
    end = str(f.until_ms - 1) if f.until_ms else "+"
    if f.until_ms and f.until_ms <= f.since_ms:
        return [], None
    page = cast(list[Any], client.xrange(dead_stream(stream), start, end, count=count))
    matches = [(str(i), dict(fields)) for i, fields in page if f.matches(str(i), dict(fields))]
    cursor = str(page[-1][0]) if len(page) == count else None
    return matches, cursor


def redrive(
    client: redis.Redis,
    stream: str,
    dead_ids: list[str],
    by: str,
    ran: Callable[[list[dict[str, str]]], list[bool]] | None = None,
) -> ActionResult:
    """Put dead letters back on the stream (``retry_of`` = the dead id) and delete them, one
    Lua call per chunk: two operators redriving the same letter publish it once. The event
    keeps its hash, so one that already ran is an idempotency hit, not a second run.
    ``ran`` (the gate check up front): given the letters' fields, which already ran;
    those are skipped, neither published nor deleted, and the detail says "already done"."""
    valid, _ = split_ids(dead_ids)
    ran_ids = _already_ran(client, stream, valid, ran) if ran is not None else []
    valid = [i for i in valid if i not in set(ran_ids)]
    script = client.register_script(REDRIVE)
    done: list[str] = []
    new_ids: list[str] = []
    for chunk in chunks(valid):
        replies = script(
            keys=[stream, dead_stream(stream), *_group_keys(stream)], args=[by, *chunk]
        )
        for dead_id, new_id in zip(chunk, replies, strict=True):
            if new_id:
                done.append(dead_id)
                new_ids.append(str(new_id))
    gone = len(valid) - len(done)
    notes = [f"{len(ran_ids)} already done (its event ran; not redriven)"] if ran_ids else []
    notes += [f"{gone} already gone (redriven or purged)"] if gone else []
    return ActionResult(done, not_done(dead_ids, done), new_ids, "; ".join(notes))


def _already_ran(
    client: redis.Redis,
    stream: str,
    dead_ids: list[str],
    ran: Callable[[list[dict[str, str]]], list[bool]],
) -> list[str]:
    """Those of ``dead_ids`` (still there) whose run ``ran`` says already ran."""
    with client.pipeline(transaction=False) as pipe:
        for dead_id in dead_ids:
            pipe.xrange(dead_stream(stream), dead_id, dead_id, count=1)
        replies: list[Any] = pipe.execute()
    found = [(i, dict(rows[0][1])) for i, rows in zip(dead_ids, replies, strict=True) if rows]
    flags = ran([fields for _, fields in found]) if found else []
    return [dead_id for (dead_id, _), flag in zip(found, flags, strict=True) if flag]


def find_letter(
    client: redis.Redis, stream: str, entry_id: str, near_ms: int, window_ms: int = 60_000
) -> str | None:
    """The dead letter of entry ``entry_id``, written around ``near_ms`` (its timeline step's
    time; a dead letter's id is the server's clock when it was written), or None. Reads at
    most 1,000 letters of that window: never a scan of the whole dead-letter stream."""
    start, end = max(0, near_ms - window_ms), near_ms + window_ms
    page = cast(list[Any], client.xrange(dead_stream(stream), start, end, count=1000))
    found = [str(i) for i, fields in page if fields.get("entry_id") == entry_id]
    return found[-1] if found else None


def purge(client: redis.Redis, stream: str, dead_ids: list[str]) -> ActionResult:
    """Delete dead letters for good; ids already gone are skipped."""
    valid, _ = split_ids(dead_ids)
    script = client.register_script(PURGE)
    done: list[str] = []
    for chunk in chunks(valid):
        flags = script(keys=[dead_stream(stream), *_group_keys(stream)], args=chunk)
        done += [dead_id for dead_id, deleted in zip(chunk, flags, strict=True) if deleted]
    return ActionResult(done, not_done(dead_ids, done))


def republish(
    client: redis.Redis,
    stream: str,
    raw_event: str,
    rerun_of: str,
    group: str = "",
    replay: str = "",
) -> str:
    """XADD the event again (``rerun_of`` says what it repeats), for ``group`` alone if given
    (``for``: the other agents' groups ack it unread, so only that agent runs it again),
    with a forced replay's salt if it repeats one (its run is keyed by it); returns the new
    entry id."""
    fields: dict[Any, Any] = {EVENT_FIELD: raw_event, "rerun_of": rerun_of}
    if group:
        fields[TARGET_FIELD] = group
    if replay:
        fields[REPLAY_FIELD] = replay
    return str(client.xadd(stream, fields))
