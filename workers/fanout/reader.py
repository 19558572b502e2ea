"""A named agent's read: what is not its own is let by in the server.

A named agent's group reads every entry of the stream (workers/core/fanout.py). Read as the
home group reads, each entry of another type would cross the wire, be decoded in Python
and acked in a round trip of its own: beside ``make bench``'s probe, one named agent with
nothing of its own cost the worker 13% of its drain. This script (``lua/read_own.lua``)
reads the group's new entries and acks those that are not its own where they are, and a
script cannot block: at rest the wait is an XREAD that consumes nothing, as flow control's.
"""

from __future__ import annotations

import json
import re
from typing import Any

from redis.asyncio import Redis

from workers.core.lua import lua_script
from workers.redis.bus import Delivery
from workers.redis.connection import is_cluster

READ_OWN = lua_script(__package__, "read_own")


# A type every JSON encoder writes as it is (``/`` perhaps as ``\/``, which is searched for
# too): a search of an event's text for it can say that it is not there.
_PLAIN = re.compile(r"[A-Za-z0-9._:/-]+")


def _plain(text: str) -> bool:
    return _PLAIN.fullmatch(text) is not None


def _entries(flat: Any) -> list[Delivery]:
    """The script's kept entries, flat: id, how many field names and values follow, those."""
    items, out, at = list(flat or []), [], 0
    while at < len(items):
        start, end = at + 2, at + 2 + int(items[at + 1])
        fields = {str(items[i]): str(items[i + 1]) for i in range(start, end, 2)}
        out.append(Delivery(str(items[at]), fields))
        at = end
    return out


class OwnReader:
    """Reads ``group``'s new entries on ``stream`` for a named agent of ``event_type``."""

    def __init__(
        self, client: Redis, stream: str, group: str, consumer: str, event_type: str
    ) -> None:
        self.client = client
        self.stream = stream
        self.group = group
        self.consumer = consumer
        self._read = client.register_script(READ_OWN)
        escaped = json.dumps(event_type)[1:-1].replace("/", "\\/")
        self._type_args = [event_type, escaped, "1" if _plain(event_type) else "0"]

    async def read(self, want: int, paused_key: str) -> tuple[list[Delivery], str | None, str]:
        """Up to ``want`` entries read, those of the agent kept: ``(kept, the pause flag as
        it was then, the newest id to block after when nothing was read, else "")``. Reads
        again while a whole batch was all another's (the stream may hold more)."""
        while True:
            kept, read, flag, last = await self._read_once(want, paused_key)
            if kept or read < want or flag is not None:
                return kept, flag, last
            # A whole batch of others' entries, acked: read on, the next may be ours.

    async def _read_once(
        self, want: int, paused_key: str
    ) -> tuple[list[Delivery], int, str | None, str]:
        keys: list[str] = [self.stream]
        args: list[str | int] = [self.group, self.consumer, want, *self._type_args]
        if is_cluster(self.client):  # the flag may be on another node
            reply = await self._read(keys=keys, args=args)
            flag = await self.client.get(paused_key)
        else:
            async with self.client.pipeline(transaction=False) as pipe:
                await self._read(keys=keys, args=args, client=pipe)
                pipe.get(paused_key)
                reply, flag = await pipe.execute()
        flat, read, last = reply
        return _entries(flat), int(read), None if flag is None else str(flag), str(last)

    async def block_after(self, last: str, block_ms: int) -> None:
        """Wait until anything is added after ``last``, ``block_ms`` at most; XREAD (not
        XREADGROUP) consumes nothing."""
        await self.client.xread({self.stream: last}, count=1, block=block_ms)
