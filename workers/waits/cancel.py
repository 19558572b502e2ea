"""Operators cancel waiting runs (``workers/operations/cancel.py``): their waits end, out
of every index, their wake-ups taken back, so nothing brings their events back. The gate
record, made ``cancelled`` by the same action, refuses any copy that was already on its way.
On the operators' sync client."""

from __future__ import annotations

import redis

from workers.core.keys import Keys
from workers.core.lua import lua_script
from workers.waits.store import KEEP_MS

CANCEL = lua_script(__package__, "cancel")


def cancel_waits(
    client: redis.Redis, keys: Keys, stream: str, event_hashes: list[str], who: str
) -> int:
    """End the waits of these runs on ``stream``; returns how many were waiting."""
    if not event_hashes:
        return 0
    script = client.register_script(CANCEL)
    head = keys.wait(stream, "")
    args: list[str | int] = [head, KEEP_MS, who, *event_hashes]
    return int(script(keys=[keys.waiting(stream), keys.delayed(stream)], args=args))
