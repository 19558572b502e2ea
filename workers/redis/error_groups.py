"""The error groups of dead letters, read back, and the backfill of letters written before
they had a fingerprint.

The groups are written by the script that writes each letter (``deadletter.py``,
``lua/error_groups.lua``): one hash per stream, fingerprint -> the group's record, and per
group a sorted set of its letters' ids. Reading every group is one HGETALL per stream,
whatever the number of letters: the console's Errors page never reads the dead streams.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, cast

import redis

from workers.core.keys import EVENT_FIELD, Keys, dead_stream
from workers.core.lua import lua_script
from workers.redis.deadletter import (
    ERROR_GROUPS,
    FINGERPRINT_FIELD,
    event_type,
    group_meta,
    letter_fingerprint,
)

BACKFILL = ERROR_GROUPS + lua_script(__package__, "error_backfill")
DROP = ERROR_GROUPS + lua_script(__package__, "error_drop")
BACKFILL_BATCH = 500


@dataclass(frozen=True, slots=True)
class ErrorGroup:
    stream: str
    fingerprint: str
    count: int  # its dead letters now
    seen: int  # letters ever added
    first_ms: int
    last_ms: int
    kind: str
    message: str
    frame: str
    error: str  # a sample letter's last line
    sample: str  # that letter's dead id
    types: dict[str, int] = field(default_factory=dict)  # letters seen by event type
    groups: dict[str, int] = field(default_factory=dict)  # ... by consumer group


def _group(stream: str, fingerprint: str, raw: str) -> ErrorGroup | None:
    try:
        rec = json.loads(raw)
        return ErrorGroup(
            stream, fingerprint, int(rec["n"]), int(rec["seen"]), int(rec["first"]),
            int(rec["last"]), str(rec["kind"]), str(rec["message"]), str(rec["frame"]),
            str(rec.get("error", "")), str(rec.get("sample", "")),
            _counts(rec.get("types")), _counts(rec.get("groups")),
        )  # fmt: skip
    except (ValueError, KeyError, TypeError):  # not written by us: left out, not a 500
        return None


def _counts(value: Any) -> dict[str, int]:
    # cjson writes an empty table as {} or []: both mean none.
    return {str(k): int(v) for k, v in value.items()} if isinstance(value, dict) else {}


def read_groups(client: redis.Redis, keys: Keys, streams: Iterable[str]) -> list[ErrorGroup]:
    """Every stream's error groups, the largest first (one round trip)."""
    names = sorted(streams)
    with client.pipeline(transaction=False) as pipe:
        for stream in names:
            pipe.hgetall(keys.error_groups(stream))
        # A key of another type (WRONGTYPE) is a stream without groups, not a failed page.
        replies = pipe.execute(raise_on_error=False)
    found = [
        g
        for stream, rows in zip(names, replies, strict=True)
        if isinstance(rows, dict)
        for fp, raw in rows.items()
        if (g := _group(stream, fp, raw)) is not None
    ]
    return sorted(found, key=lambda g: (-g.count, -g.last_ms, g.stream, g.fingerprint))


def read_group(client: redis.Redis, keys: Keys, stream: str, fingerprint: str) -> ErrorGroup | None:
    try:
        raw = client.hget(keys.error_groups(stream), fingerprint)
    except redis.ResponseError:  # a key of another type: no group there
        return None
    return _group(stream, fingerprint, str(raw)) if raw is not None else None


def member_ids(
    client: redis.Redis, keys: Keys, stream: str, fingerprint: str, start: int = 0, stop: int = -1
) -> list[str]:
    """The group's dead-letter ids, newest first (``start``/``stop`` as ZREVRANGE's)."""
    ids = client.zrevrange(keys.error_members(stream, fingerprint), start, stop)
    return [_unpadded(str(i)) for i in cast(list[Any], ids)]


def _unpadded(member: str) -> str:
    """A member as the dead id it stands for: its sequence is padded to 20 digits in the set
    (``lua/error_groups.lua``), so that letters of one millisecond sort in order."""
    ms, _, seq = member.partition("-")
    return f"{ms}-{int(seq or 0)}"


def unfingerprinted(
    client: redis.Redis, streams: Iterable[str], groups: Iterable[ErrorGroup]
) -> int:
    """Letters in no group: the dead streams' lengths (O(1) each) less the groups' counts.
    Letters from before fingerprints, or dead-lettered by an operator, until the backfill."""
    names = sorted(streams)
    with client.pipeline(transaction=False) as pipe:
        for stream in names:
            pipe.xlen(dead_stream(stream))
        lengths = pipe.execute(raise_on_error=False)
    total = sum(n for n in lengths if isinstance(n, int))  # a key of another type: none
    return max(0, total - sum(g.count for g in groups))


def backfill(
    client: redis.Redis, keys: Keys, stream: str, after: str = "-", batch: int = BACKFILL_BATCH
) -> tuple[int, str | None]:
    """One batch of the backfill: the letters after ``after`` that have no fingerprint field
    join their groups (one script call). Returns how many joined and the cursor for the next
    batch, None at the end. Redoing a batch adds nothing twice (the members are a set)."""
    start = after if after == "-" else f"({after}"
    page = cast(list[Any], client.xrange(dead_stream(stream), start, "+", count=batch))
    cursor = str(page[-1][0]) if len(page) == batch else None
    return _join(client, keys, stream, page), cursor


def group_latest(client: redis.Redis, keys: Keys, stream: str, count: int) -> int:
    """The newest ``count`` letters join their groups if they have no fingerprint: letters an
    operator just dead-letters by hand (the gate's script writes them, and the gate layer
    knows nothing of error groups). Their fingerprint is their reason's."""
    if count <= 0:
        return 0
    page = cast(list[Any], client.xrevrange(dead_stream(stream), "+", "-", count=count))
    return _join(client, keys, stream, page)


def _join(client: redis.Redis, keys: Keys, stream: str, letters: list[Any]) -> int:
    """Letters without a fingerprint field join their groups, in one script call."""
    args: list[str] = []
    for dead_id, fields in letters:
        if FINGERPRINT_FIELD in fields:
            continue
        error, reason = str(fields.get("error", "")), str(fields.get("reason", ""))
        found = letter_fingerprint(error, reason)
        args += [str(dead_id), found.digest, group_meta(found, error or reason)]
        args += [event_type(str(fields.get(EVENT_FIELD, ""))), str(fields.get("group", ""))]
    if not args:
        return 0
    group_keys = [keys.error_groups(stream), keys.error_backfilled(stream)]
    return int(cast(int, client.eval(BACKFILL, 3, dead_stream(stream), *group_keys, *args)))


def drop_gone(
    client: redis.Redis, keys: Keys, stream: str, fingerprint: str, ids: list[str]
) -> int:
    """``ids`` of the group whose letters a group's job found gone leave the group (a
    redrive or purge takes out only the letters it finds)."""
    if not ids:
        return 0
    index = keys.error_groups(stream)
    return int(cast(int, client.eval(DROP, 1, index, fingerprint, *ids)))
