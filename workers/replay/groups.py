"""The agent's consumer group, made before its copies are: a copy is meant for that group
alone, and a group created after the copies (the agent's first runworker, later) would
start after them (``workers/fanout/groups.py``: at the home group's oldest pending entry,
or its last delivered one), while every other group had acked them unread: lost. So a
replay creates a missing group where the engine would have, and the copies follow it."""

from __future__ import annotations

from typing import Any, cast

import redis

from workers.fanout.groups import pending_in, start_given


def start_of(client: redis.Redis, stream: str, group: str, home: str) -> str | None:
    """Where ``group`` would start on ``stream`` if the engine created it now; None when it
    exists. The home group starts at the stream's first entry, as ``runworker`` makes it."""
    try:
        groups = {
            str(g.get("name")): g for g in cast(list[dict[str, Any]], client.xinfo_groups(stream))
        }
    except redis.ResponseError:  # no stream yet
        groups = {}
    if group in groups:
        return None
    found = None if group == home else groups.get(home)
    summary = cast(dict[str, Any], client.xpending(stream, home)) if pending_in(found) else {}
    oldest = summary.get("min")
    return start_given(found, str(oldest) if oldest else None)


def ensure_group(client: redis.Redis, stream: str, group: str, home: str) -> bool:
    """Create ``group`` on ``stream`` if missing (see the module's docstring). True if made."""
    start = start_of(client, stream, group, home)
    if start is None:
        return False
    try:
        client.xgroup_create(stream, group, id=start, mkstream=True)
    except redis.ResponseError as exc:
        if "BUSYGROUP" in str(exc):  # a worker made it meanwhile
            return False
        raise
    return True
