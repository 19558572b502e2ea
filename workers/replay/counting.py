"""Counting a replay's range in Redis, and how far back each stream reaches.

A Python walk of a million entries (XRANGE, decode, compare) takes about 20 s; the count
runs in the server instead (``lua/count.lua``), a stretch of ``PER_CALL`` entries a call so
that no call blocks the workers for long: a million entries in 1.5 to 4 s of server time
(docs/benchmarks.md#replay).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import redis

from workers.core.lua import lua_script
from workers.replay.bounds import LAST

# Entries one call reads: about 50 ms of the server's time (1,000,000 in 50 calls).
PER_CALL = 20_000
COUNT = lua_script(__package__, "count")


@dataclass(frozen=True, slots=True)
class Count:
    read: int  # entries in the range
    taken: int  # of them, events of the agent's type (and subject) as published


def count_range(
    client: redis.Redis,
    stream: str,
    start: str,
    end: str,
    event_type: str,
    subject: str,
    plain: bool,
    per_call: int = PER_CALL,
) -> Count:
    """What the range ``start``..``end`` (inclusive) of ``stream`` holds for a replay."""
    script = client.register_script(COUNT)
    read = taken = 0
    at = start
    while True:
        args: list[str | int] = [at, end, per_call, event_type, subject, int(plain)]
        args += [event_type.replace("/", "\\/"), subject.replace("/", "\\/")]
        got, matched, last = cast(list[Any], script(keys=[stream], args=args))
        read, taken = read + int(got), taken + int(matched)
        if not last:
            return Count(read, taken)
        at = f"({last}"


@dataclass(frozen=True, slots=True)
class Reach:
    """How far back a stream reaches: what replay can still read of it."""

    stream: str
    length: int
    first_id: str  # "" when empty
    last_id: str  # the newest id the stream ever gave ("0-0" for none)
    trimmed: int  # entries added and gone since (trimmed, or deleted)


def reach(client: redis.Redis, stream: str) -> Reach:
    try:
        info = cast(dict[str, Any], client.xinfo_stream(stream))
    except redis.ResponseError:  # no such stream (yet)
        return Reach(stream, 0, "", "0-0", 0)
    first = info.get("first-entry")
    length = int(info.get("length") or 0)
    # entries-added is Redis >= 7; before, what was trimmed is not known.
    added = int(info.get("entries-added") or length)
    return Reach(
        stream,
        length,
        str(first[0]) if first else "",
        str(info.get("last-generated-id") or "0-0"),
        max(0, added - length),
    )


def resolved_end(end: str, found: Reach) -> str:
    """The range's end on one stream: the newest id now when it is open (``+``)."""
    return found.last_id if end == LAST else end
