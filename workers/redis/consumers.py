"""A group's consumers: who may receive claimed entries, and removing ghosts.

A consumer is only a name in the group until some process reads for it. Claiming entries to
a name no ``runworker`` uses parks them where nothing runs them (until a reclaim), so claim
targets are checked here; and a consumer with no heartbeat, nothing pending and no read
for ``consumer_prune_s`` is removed by the engine's housekeeping (``prune``), one atomic Lua
call each, counted in the stream's stats hash so the group page can say how many went.

Redis only: the audit record of a removal is written by the engine's housekeeping
(``workers/engine/housekeeping.record_pruned``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, TypeVar, cast

import redis
import redis.asyncio as aredis

from workers.core.errors import NoSuchGroup, NotAClaimTarget
from workers.core.keys import Keys
from workers.core.lua import lua_script

T = TypeVar("T")

# Live consumers named in a refusal: enough to pick one, bounded for a page or a log line.
MAX_NAMED = 5
PRUNED_PREFIX = "consumers_pruned:"
# Redis' words for a missing group or stream, alone or as a pipeline reports them
# ("Command # 2 (XINFO ...) of pipeline caused error: NOGROUP ...").
MISSING = re.compile(r"(^|caused error: )(NOGROUP|(ERR )?no such key)", re.IGNORECASE)

PRUNE = lua_script(__package__, "prune")


class Target(StrEnum):
    """Which consumers a claim may move entries to."""

    LIVE = "live"  # console and API: a runworker of this group sends heartbeats under it
    KNOWN = "known"  # command line: live, or already a consumer of the group
    ANY = "any"  # command line ``--create``: any name (a claim that moves nothing creates none)


def pruned_field(group: str) -> str:
    """The stats-hash field counting the group's consumers removed by housekeeping."""
    return f"{PRUNED_PREFIX}{group}"


def missing_group(exc: redis.ResponseError, stream: str, group: str) -> NoSuchGroup | None:
    """Redis' NOGROUP / "no such key" refusal (also from inside a script) in words."""
    if MISSING.search(str(exc)):
        return NoSuchGroup(stream, group)
    return None


def _beats_here(beat: Any, stream: str, group: str) -> bool:
    return isinstance(beat, list) and beat == [stream, group]


def live_names(client: redis.Redis, keys: Keys, stream: str, group: str) -> list[str]:
    """The group's consumers a runworker of this group sends heartbeats for."""
    names = [str(c["name"]) for c in _consumers(client, stream, group)]
    with client.pipeline(transaction=False) as pipe:
        for name in names:
            pipe.hmget(keys.worker(name), ["stream", "group"])
        beats = pipe.execute()
    return [n for n, beat in zip(names, beats, strict=True) if _beats_here(beat, stream, group)]


def refusal(
    client: redis.Redis, keys: Keys, stream: str, group: str, consumer: str, target: Target
) -> str:
    """Why ``consumer`` may not receive entries ("" when it may). One round trip (which
    also finds a missing group, even for ``ANY``), one more to name the live consumers
    when it is refused."""

    def read() -> list[Any]:
        with client.pipeline(transaction=False) as pipe:
            pipe.hmget(keys.worker(consumer), ["stream", "group"])
            pipe.xinfo_consumers(stream, group)  # also: is there such a group? (NOGROUP)
            return pipe.execute()

    beat, rows = translated(stream, group, read)
    if target == Target.ANY or _beats_here(beat, stream, group):
        return ""
    known = any(str(c["name"]) == consumer for c in rows)
    if target == Target.KNOWN and known:
        return ""
    if target == Target.LIVE:
        what = "has no runworker heartbeat in" if known else "is not a live consumer of"
    else:
        what = "has no runworker heartbeat and is not a consumer of"
    live = live_names(client, keys, stream, group)
    pick = ", ".join(repr(n) for n in live[:MAX_NAMED]) if live else "none"
    return f"{consumer!r} {what} group {group!r} on {stream!r} (live consumers: {pick})"


def check(
    client: redis.Redis, keys: Keys, stream: str, group: str, consumer: str, target: Target
) -> None:
    """Raise NotAClaimTarget (an InvalidAction on the ``consumer`` field) when ``consumer``
    may not receive entries; NoSuchGroup when there is no such group."""
    why = refusal(client, keys, stream, group, consumer, target)
    if why:
        raise NotAClaimTarget(why)


def translated(stream: str, group: str, fn: Callable[[], T]) -> T:
    """``fn()``, with Redis' NOGROUP / "no such key" raised as NoSuchGroup."""
    try:
        return fn()
    except redis.ResponseError as exc:
        missing = missing_group(exc, stream, group)
        if missing is None:
            raise
        raise missing from exc


def _consumers(client: redis.Redis, stream: str, group: str) -> list[dict[str, Any]]:
    rows = translated(stream, group, lambda: client.xinfo_consumers(stream, group))
    return cast(list[dict[str, Any]], rows)


# -- pruning ghosts (the engine's housekeeping) ---------------------------------------------


@dataclass(frozen=True, slots=True)
class Pruned:
    stream: str
    group: str
    consumer: str
    idle_ms: int


def _candidates(rows: list[dict[str, Any]], own: str, min_idle_ms: int) -> Iterator[Any]:
    for c in rows:
        if str(c["name"]) != own and int(c["pending"]) == 0 and int(c["idle"]) >= min_idle_ms:
            yield c


async def prune(
    client: aredis.Redis, keys: Keys, stream: str, group: str, own: str, min_idle_ms: int
) -> list[Pruned]:
    """Remove the group's consumers that have no heartbeat, nothing pending and no read for
    ``min_idle_ms``; ``own`` (the caller's consumer) is never a candidate. What each removal
    checks at its moment is in ``PRUNE``; the heartbeat is read just before (another key,
    another cluster slot), and a consumer name is one process's (host-pid), never reused."""
    try:
        rows = await client.xinfo_consumers(stream, group)
    except redis.ResponseError:
        return []  # the group was deleted: nothing to prune
    found = list(_candidates(rows, own, min_idle_ms))
    if not found:
        return []
    async with client.pipeline(transaction=False) as pipe:
        for c in found:
            pipe.exists(keys.worker(str(c["name"])))
        beating = await pipe.execute()
    script = client.register_script(PRUNE)
    out = []
    for c, beat in zip(found, beating, strict=True):
        if beat:
            continue
        name = str(c["name"])
        args: list[str | int] = [group, name, min_idle_ms, pruned_field(group)]
        if await script(keys=[stream, keys.stats(stream)], args=args):
            out.append(Pruned(stream, group, name, int(c["idle"])))
    return out
