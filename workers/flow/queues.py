"""``Flow``: the engine's side of the key queues (the scripts are ``lua/``).

Order needs the queue to learn of an entry in the order the group hands entries out: were a
worker to read first and place the entry after, another worker could read a later entry of
the same key and place it first. So a worker with keyed agents reads new entries with one
script that runs XREADGROUP and places each keyed event in the same atomic call. That script
cannot block (no script may), so at rest the worker blocks on XREAD after the stream's last
id instead, which consumes nothing, and reads with the script once something is added.

An event that may not run yet is not admitted: it holds no slot and stays pending where it
is. When an entry is acked, ``settled`` releases it, and the next entry of its key is handed
to this worker (claimed without counting a delivery) to run. Hand-offs and new entries share
the free slots in turn, so a key with a long backlog cannot crowd out keys that are waiting
to be read. Were the hand-off lost (a crash), the sweep reclaims the entry like any other,
and ``screen`` lets it run, or puts it back to wait with its delivery count restored.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis

from workers.core.config import EngineConfig
from workers.core.keys import EVENT_FIELD
from workers.core.lua import lua_script
from workers.core.registry import Registry
from workers.flow.specs import spec_args, specs_of
from workers.redis.bus import Delivery
from workers.redis.connection import is_cluster

log = logging.getLogger("streamdesk.worker")

# How long a stream found empty is left unread while hand-offs wait (new events of other
# keys wait at most this much longer).
DRY_PAUSE_S = 0.005
# Reads one ``read`` may make to fill its batch (each reads a whole batch of the stream).
READS_PER_CALL = 4


# Each script starts with the helpers they share.
_COMMON = lua_script(__package__, "common")
READ = _COMMON + lua_script(__package__, "read")
CHECK = _COMMON + lua_script(__package__, "check")
RELEASE = _COMMON + lua_script(__package__, "release")


def _entries(flat: Any) -> list[Delivery]:
    """A script's entries, flat (``append_entry`` in common.lua): id, deliveries, how many
    field names and values follow, those."""
    items, out, at = list(flat or []), [], 0
    while at < len(items):
        start, end = at + 3, at + 3 + int(items[at + 2])
        fields = {str(items[i]): str(items[i + 1]) for i in range(start, end, 2)}
        out.append(Delivery(str(items[at]), fields, int(items[at + 1])))
        at = end
    return out


def _handed(flat: Any, besides: set[str]) -> list[Delivery]:
    """Entries a script handed to this worker (``may_run`` dropped the heads ahead of them),
    less any already in the batch."""
    return [d for d in _entries(flat) if d.entry_id not in besides]


@dataclass(slots=True)
class Read:
    batch: list[Delivery]
    read: bool = False  # the stream was read (``flag`` is the group's pause flag then)
    flag: str | None = None
    last: str = ""  # nothing at all: block after this id


class Flow:
    """Off (every call a no-op, nothing sent) unless an agent declares ``key`` or
    ``concurrency``."""

    def __init__(
        self, client: Redis, config: EngineConfig, registry: Registry, wake: asyncio.Event
    ) -> None:
        c, keys = config, config.keys
        self.client = client
        self.stream, self.group, self.consumer = c.stream, c.group, c.consumer
        self.claim_idle_ms = c.claim_idle_ms
        self.batch_size = c.batch_size
        self.specs = specs_of(registry)
        self._keys = [c.stream, keys.flow_entries(c.stream, c.group)]
        self._index = keys.flow_index(c.stream, c.group)
        # The script appends "<type>:<key value>" to the head of a queue's name.
        head = keys.flow_queue(c.stream, c.group, "", "")[:-1]
        self._read_args: list[Any] = [head, EVENT_FIELD]
        self._spec_args = spec_args(self.specs)
        # Entries handed to this worker, claimed and not yet admitted.
        self.ready: deque[Delivery] = deque()
        self._turn = 0
        self._dry_until = 0.0  # monotonic: the stream was found empty while hand-offs waited
        # Set when a hand-off arrives: it ends the worker's blocking read.
        self.wake = wake
        self.stopping = False
        self._read = client.register_script(READ)
        self._check = client.register_script(CHECK)
        self._release = client.register_script(RELEASE)

    @property
    def on(self) -> bool:
        return bool(self.specs)

    # -- reading -------------------------------------------------------------------------

    async def read(self, want: int, paused_key: str) -> Read:
        """Up to ``want`` entries to run: hand-offs and new entries in turn."""
        share = (want + self._turn) // 2 if self.ready else 0
        self._turn ^= 1
        out = Read(self._take(share))
        # New entries first get their turn; then reads go on until the batch is full or the
        # hand-offs waiting fill it. A batch short of the free slots was followed at once by
        # a read for the few slots left, and the two were admitted, run and settled apart,
        # each with its own commit and round trips, for good: a keyed drain ran in batches
        # of 187 and 13, half of its settles for 7% of its events.
        for _ in range(READS_PER_CALL):
            if want <= len(out.batch) + (len(self.ready) if out.read else 0):
                break
            # While hand-offs wait, a stream found empty is read again only after a pause:
            # each read is a round trip, and every one would find nothing while they drain.
            if self.ready and time.monotonic() < self._dry_until:
                break
            if not await self._read_into(out, want, paused_key):
                break
        out.batch += self._take(want - len(out.batch))
        if out.batch or self.ready:
            out.last = ""
        return out

    async def _read_into(self, out: Read, want: int, paused_key: str) -> bool:
        """One read into ``out``; False unless it read a whole batch (the stream may hold
        more) and the group is not paused (what was read is held until it resumes)."""
        # A whole batch, whatever the free slots: the events that must wait take none. What
        # may run beyond the free slots runs next, after the hand-offs already waiting.
        fresh, read, out.flag, out.last = await self._read_new(self.batch_size, paused_key)
        room = want - len(out.batch)
        out.read, out.batch = True, out.batch + fresh[:room]
        self.ready.extend(fresh[room:])
        if out.last and self.ready:
            self._dry_until = time.monotonic() + DRY_PAUSE_S
        return read >= self.batch_size and out.flag is None

    def _take(self, n: int) -> list[Delivery]:
        return [self.ready.popleft() for _ in range(min(n, len(self.ready)))]

    async def _read_new(self, want: int, paused_key: str) -> tuple[list[Delivery], int, Any, str]:
        keys = [*self._keys, self._index]
        args = [self.group, self.consumer, want, *self._read_args, int(time.time() * 1000)]
        args += self._spec_args
        if is_cluster(self.client):
            reply = await self._read(keys=keys, args=args)
            flag = await self.client.get(paused_key)
        else:
            async with self.client.pipeline(transaction=False) as pipe:
                await self._read(keys=keys, args=args, client=pipe)
                pipe.get(paused_key)
                reply, flag = await pipe.execute()
        flat, read, last = reply
        # Something was read (perhaps only entries that wait): ``last`` is "", read again
        # before blocking.
        return _entries(flat), int(read), None if flag is None else str(flag), str(last)

    async def block_after(self, last: str, block_ms: int) -> None:
        """Wait until anything is added after ``last``, ``block_ms`` at most; XREAD (not
        XREADGROUP) consumes nothing, so a wake-up that finds others took it costs nothing."""
        await self.client.xread({self.stream: last}, count=1, block=block_ms)

    async def screen(self, batch: list[Delivery]) -> list[Delivery]:
        """Of entries taken back (reclaimed, or this consumer's own after a restart), those
        that may run; the others wait again, their delivery count restored."""
        if not self.on or not batch:
            return batch
        ids = [d.entry_id for d in batch]
        args = [self.group, self.consumer, *ids]
        verdicts, handed = await self._check(keys=self._keys, args=args)
        runnable = [d for d, v in zip(batch, verdicts, strict=True) if str(v) in ("", "+")]
        return runnable + _handed(handed, set(ids))

    # -- settling ------------------------------------------------------------------------

    async def settled(self, entry_ids: list[str]) -> None:
        """Entries acked or dead-lettered leave their keys' queues; the next of each key is
        handed to this worker (or, while it stops, made reclaimable at once)."""
        if not self.on or not entry_ids:
            return
        consumer = "" if self.stopping else self.consumer
        args: list[Any] = [self.group, consumer, self.claim_idle_ms, *entry_ids]
        try:
            rows = await self._release(keys=[*self._keys, self._index], args=args)
        except Exception as exc:
            rows = exc
        self.handed(rows)

    async def queue_release(self, pipe: Any, entry_ids: list[str]) -> bool:
        """``settled`` on the settler's own pipeline, after its XACK (no extra round trip);
        True if queued: pass the reply to ``handed``."""
        if not self.on or not entry_ids:
            return False
        args: list[Any] = [self.group, "" if self.stopping else self.consumer, self.claim_idle_ms]
        # EVAL, as the gate's settle scripts: a cluster pipeline cannot load a script first.
        pipe.eval(RELEASE, 3, *self._keys, self._index, *args, *entry_ids)
        return True

    def handed(self, rows: Any) -> None:
        """The release's reply: the next entries of their keys, to run next."""
        if isinstance(rows, Exception):
            # The sweep finds the next entries once they idle: late, never lost.
            log.error("releasing keyed entries failed: %s", rows)
            return
        self.ready.extend(_entries(rows))
        if rows:
            self.wake.set()

    async def give_back(self) -> None:
        """At a stop: hand-offs not started are made reclaimable at once, not a claim idle
        time from now."""
        self.stopping = True
        if not self.ready:
            return
        ids: list[Any] = [d.entry_id for d in self.ready]
        self.ready.clear()
        with contextlib.suppress(Exception):
            await self.client.xclaim(
                self.stream, self.group, self.consumer, 0, ids, idle=self.claim_idle_ms,
                justid=True,
            )  # fmt: skip
