"""How a worker follows its group's pause flag without polling it.

An operator's pause or resume sets or deletes ``keys.paused(stream, group)`` and then
publishes that key's name on ``keys.pause_channel`` (workers/operations/actions.py). A
worker learns of it three ways, none of them a timer at rest:

- the channel: the worker process's one subscription (``workers/redis/listener.py``, shared
  with cancel requests and every partition's loop), on a connection of its own that waits
  with no timeout; on (re)subscribing the flag is read once, for what was missed meanwhile;
- every read: ``bus.read_new_paused`` reads the flag right after XREADGROUP returns, in the
  same round trip, so an entry added after a pause is never started, whatever the channel
  did (a read the channel's pause cuts short reads nothing; one that returned entries first
  holds them until resume);
- while paused, the flag is read again every ``recheck_s`` (30 s; 1 s on a cluster, where
  redis-py's asyncio client has no pub/sub), in case a resume was published while the
  subscription was down.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import redis.asyncio as aredis

from workers.core.keys import Keys
from workers.redis.connection import is_cluster

log = logging.getLogger("streamdesk.worker")

RECHECK_PAUSED_S = 30.0
RECHECK_PAUSED_CLUSTER_S = 1.0


class PauseWatch:
    """The group's pause flag as this worker knows it: ``by`` (who paused it and when) or
    None; ``changed`` is set on every change, ``halt`` when the group is paused (it ends the
    worker's blocking read). ``holding()`` tells the log how many events the worker still
    finishes."""

    def __init__(
        self,
        client: aredis.Redis,
        keys: Keys,
        stream: str,
        group: str,
        holding: Callable[[], int],
        halt: asyncio.Event,
    ) -> None:
        self.client = client
        self.key = keys.paused(stream, group)
        self.channel = keys.pause_channel
        self.where = f"{stream} group {group}"
        self.holding = holding
        self.halt = halt
        self.by: str | None = None
        self.changed = asyncio.Event()
        self.cluster = is_cluster(client)
        self.recheck_s = RECHECK_PAUSED_CLUSTER_S if self.cluster else RECHECK_PAUSED_S

    @property
    def paused(self) -> bool:
        return self.by is not None

    def set(self, by: str | None) -> None:
        """The flag as last read (None: not paused); logs once per change."""
        if by == self.by:
            return
        was, self.by = self.by, by
        self.changed.set()
        if by is not None and was is None:
            self.halt.set()
            log.info(
                "%s paused (%s): no new events; finishing %d in flight",
                self.where,
                by,
                self.holding(),
            )
        elif by is None:
            log.info("%s resumed: reading again", self.where)

    async def read(self) -> None:
        value = await self.client.get(self.key)
        self.set(None if value is None else str(value))

    async def wait_while_paused(self, stopping: asyncio.Event) -> None:
        """Return once resumed, stopping, or after ``recheck_s`` (having read the flag)."""
        self.changed.clear()
        if not self.paused:
            return
        waits = [asyncio.ensure_future(e.wait()) for e in (self.changed, stopping)]
        try:
            done, _ = await asyncio.wait(
                waits, timeout=self.recheck_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            for waiter in waits:
                waiter.cancel()
        if not done:
            await self.read()

    async def catch_up(self) -> None:
        """Called by the process's listener (``workers/redis/listener.py``) once subscribed
        to ``channel``: what changed while there was no subscription."""
        await self.read()

    async def heard(self, data: str) -> None:
        """A message on ``channel``: a paused key's name, maybe another group's."""
        if data == self.key:
            await self.read()
