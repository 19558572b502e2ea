"""Creating the consumer groups of named agents where each must start.

A named agent's group, created while the home group exists, starts just before the home
group's oldest pending entry (at its last delivered one when nothing is pending): the new
agent takes every event the fleet had not finished, and none of the history already done
(``manage.py replay`` runs that). Before any group exists it starts at the stream's first
entry, as the home group does, so events published before the first worker are not skipped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import redis
from redis.asyncio import Redis

from workers.redis import bus

MAX_SEQ = 18_446_744_073_709_551_615  # the largest sequence number of an entry id


def id_before(entry_id: str) -> str:
    """The entry id just before ``entry_id``: a group created there reads it next."""
    ms_text, _, seq_text = entry_id.partition("-")
    ms, seq = int(ms_text), int(seq_text or 0)
    if seq > 0:
        return f"{ms}-{seq - 1}"
    return f"{ms - 1}-{MAX_SEQ}" if ms > 0 else "0"


def start_given(home: Mapping[str, Any] | None, oldest: str | None) -> str:
    """The rule of the module's docstring, given the home group's XINFO GROUPS row (None:
    no home group) and its oldest pending entry's id (None: nothing pending). The engine
    and a replay (``workers/replay/groups.py``) both create groups by it."""
    if home is None:
        return "0"
    if oldest:
        return id_before(oldest)
    return str(home.get("last-delivered-id") or "0")


def pending_in(home: Mapping[str, Any] | None) -> bool:
    """Whether the home group holds pending entries (then its oldest must be asked)."""
    return home is not None and int(home.get("pending") or 0) > 0


async def start_of(client: Redis, stream: str, home: str) -> str:
    """Where a new named agent's group on ``stream`` starts (see the module's docstring)."""
    try:
        groups = cast(list[dict[str, Any]], await client.xinfo_groups(stream))
    except redis.ResponseError:  # no such stream yet
        return "0"
    found = next((g for g in groups if str(g.get("name")) == home), None)
    oldest = (await client.xpending(stream, home)).get("min") if pending_in(found) else None
    return start_given(found, str(oldest) if oldest else None)


async def ensure_groups(
    client: Redis, stream: str, home: str, named: Sequence[str], with_home: bool
) -> list[str]:
    """Create the home group (if this process reads it) and every named agent's group that
    is missing on ``stream``. Returns the groups it created."""
    created: list[str] = []
    if with_home and await bus.ensure_group(client, stream, home):
        created.append(home)
    if not named:
        return created
    try:
        existing = {str(g.get("name")) for g in await client.xinfo_groups(stream)}
    except redis.ResponseError:
        existing = set()
    missing = [g for g in named if g not in existing]
    if not missing:
        return created
    start = await start_of(client, stream, home)
    for group in missing:
        if await bus.ensure_group(client, stream, group, start):
            created.append(group)
    return created
