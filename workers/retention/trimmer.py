"""The trim: one script call per stream (``lua/trim.lua``), from a worker's chores or by hand.

Why the bound: XTRIM drops entries whether a group has read them or not; a trimmed entry
that was never delivered is lost, and a pending one leaves its group a pending id that
points at nothing (the engine then acks it as ``deleted``). So the script trims only below
the oldest entry any group still needs, read in the same atomic call as the trim: a group
created or moved back meanwhile cannot slip between the two.

Why ``~`` (whole radix-tree nodes, up to 100 entries each by default): it is the cheap
trim Redis recommends, and retention is a floor, not an exact edge. ``LIMIT`` bounds the
work of one call, so the first trim of a stream that grew for months does not hold the
server: the rest goes a minute later.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import redis
from redis.asyncio import Redis as AsyncRedis

from workers.core.keys import Keys
from workers.core.lua import lua_script
from workers.retention.policy import Retention

TRIM = lua_script(__package__, "trim")
# One trim a minute per stream for the whole fleet: the record's next due time.
TRIM_EVERY_MS = 60_000
# The most entries the length cap's safety check (and a dry run's count) reads.
PROBE = 1_000
# The most entries one XTRIM removes (about 10,000 radix-tree nodes).
LIMIT = 1_000_000


@dataclass(frozen=True, slots=True)
class Trim:
    """What one call did. ``status``: ``trimmed`` (it ran: ``trimmed`` may be 0), ``later``
    (not the stream's turn yet), ``missing`` (no such stream), ``no-group`` (nobody reads
    it: nothing is trimmed), ``off`` (retention and cap both 0)."""

    status: str
    trimmed: int = 0  # a dry run: entries older than the cut (at most PROBE), or past the cap
    cut: str = ""  # the MINID trimmed to, "" if age did not apply
    max_len: int = 0  # the MAXLEN applied, 0 if none
    bound: str = ""  # the oldest entry a group needs
    held_by: str = ""  # the group that held the trim back, "" if none did
    note: str = ""

    @classmethod
    def of(cls, reply: Any) -> Trim:
        status, *rest = cast(list[Any], reply)
        if not rest:
            return cls(str(status))
        trimmed, cut, max_len, bound, held_by, note = rest
        return cls(str(status), int(trimmed), cut, int(max_len), bound, held_by, note)


def _args(retention: Retention, every_ms: int, dry_run: bool, by: str) -> list[Any]:
    return [
        retention.retention_s * 1000,
        retention.max_len,
        every_ms,
        "1" if dry_run else "0",
        by,
        PROBE,
        LIMIT,
    ]


def trim(
    client: redis.Redis,
    keys: Keys,
    stream: str,
    retention: Retention,
    *,
    by: str,
    dry_run: bool = False,
) -> Trim:
    """Trim ``stream`` now (``manage.py trim``), whoever's turn it is."""
    if retention.off:
        return Trim("off")
    script = client.register_script(TRIM)
    args = _args(retention, 0, dry_run, by)
    return Trim.of(script(keys=[stream, keys.retention(stream)], args=args))


async def trim_turn(
    client: AsyncRedis, keys: Keys, stream: str, retention: Retention, *, by: str
) -> Trim:
    """A worker's turn: trims only if the stream's last trim is TRIM_EVERY_MS old (one
    command either way; none when retention is off)."""
    if retention.off:
        return Trim("off")
    script = client.register_script(TRIM)
    args = _args(retention, TRIM_EVERY_MS, False, by)
    return Trim.of(await script(keys=[stream, keys.retention(stream)], args=args))
