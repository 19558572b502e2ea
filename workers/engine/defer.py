"""Events waiting for a rate budget's token: released, still pending, rerun when due by
whichever of the group's workers is free then.

Settling a deferred entry (``queue_defer``) leaves it in this consumer's pending list, sets
its delivery count back by one (a wait is not a delivery) and its idle time so that any
worker's XAUTOCLAIM finds it ``GRACE_MS`` after the token is due, should nobody take it
before. It also writes the due time (the server's clock, as the bucket's) into the group's
deferred set, ``deferred_entries(stream, group)``. Every worker with a free slot takes the
entries due from that set (``take_due``: one script call that moves each to its own pending
list, only if it is still where it was deferred), on a timer set to the set's next due time.
So a backlog one worker read and deferred is spread over the live workers as its tokens come
due, each entry runs at its token's time, not at a sweep's, and runs once. A worker learns
the set's next due time from its own deferrals, from each take, and by looking at least once
a ``LOOK_S`` (on its read loop's turns) or a quarter of the claim idle time (``hold``).

A wait longer than the claim idle time cannot be expressed as an idle time (it would have
to be negative), so such an entry would be reclaimable before its token is due: another
worker would take it, add a delivery, defer it again, and so on every claim idle time.
``Deferrals.hold`` renews the idle time of those entries while this worker lives, the way
the housekeeper renews the entries of long agents.
"""

from __future__ import annotations

import asyncio
import heapq
import random
import time
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from workers.core.keys import deferred_entries
from workers.core.lua import lua_script
from workers.redis.bus import Delivery

_TAKE = lua_script(__package__, "defer_take")
_QUEUE = lua_script(__package__, "defer_queue")

# XAUTOCLAIM may take a waiting entry only this long after its token is due. A worker's
# timer takes it from the deferred set at the due time; were a reclaim to take it as well,
# both would deliver it, the second over --max-deliveries. Only the waits nobody took in
# time (every worker busy, or dead) pay the grace.
GRACE_MS = 1000
# A due entry may be taken from the deferred set for this long; then it is left to XAUTOCLAIM,
# which can take it only GRACE_MS after it was due: the two never take it both.
PULL_WINDOW_MS = GRACE_MS // 2
# A worker that knows of no deferred entry due soon looks at the set at most this often (on
# its read loop's turns: an idle worker's read blocks longer).
LOOK_S = 1.0
# Workers waiting for the same due entry wake together (a blocked read's timeout is served
# on the server's clock tick, every 100 ms at hz 10) and are answered in the same order each
# time: each waits up to this long, at random, before it takes, so that the race is a fair
# coin, not won by the same worker every time. A busy worker, slower to come round, loses
# more: the backlog goes where there are free slots.
JITTER_MS = 5
# The deferred set lives a day past its last write (longer if a wait is longer).
KEEP_MS = 24 * 3600 * 1000


def idle_ms(claim_idle_ms: int, wait_ms: float) -> int:
    """The idle time that makes an entry reclaimable ``GRACE_MS`` after a wait, or as late
    as an idle time can: a claim idle time from now (``Deferrals.hold`` renews that)."""
    return max(int(claim_idle_ms - wait_ms - GRACE_MS), 0)


_HOLD = lua_script(__package__, "defer_hold")


@dataclass(order=True, slots=True)
class Waiting:
    due: float  # time.monotonic()
    entry_id: str
    # When XAUTOCLAIM could take it (time.monotonic()): the grace after the due time, or
    # sooner for a long wait, until ``hold`` pushes it on.
    claimable: float = field(compare=False)


class Deferrals:
    """This worker's side of the group's deferred entries: a timer on the set's next due
    time, the take, and the renewal of its own far-off waits (``_heap``)."""

    def __init__(
        self, client: Redis, stream: str, group: str, consumer: str, claim_idle_ms: int
    ) -> None:
        self.client = client
        self.stream = stream
        self.group = group
        self.consumer = consumer
        self.claim_idle_ms = claim_idle_ms
        self.key = deferred_entries(stream, group)
        # This consumer's own deferrals not yet due: what ``hold`` renews.
        self._heap: list[Waiting] = []
        # When the group's next deferred entry is due (time.monotonic()), None if none is
        # known; and when this worker last looked.
        self._next: float | None = None
        self._looked = -LOOK_S
        self._take = client.register_script(_TAKE)
        self._hold = client.register_script(_HOLD)

    def __len__(self) -> int:
        """This worker's deferrals not yet due: a due one is the group's, whoever takes it."""
        self._forget_due(time.monotonic())
        return len(self._heap)

    def _forget_due(self, now: float) -> None:
        # Forgotten here too, not only when this worker takes: another worker may have taken
        # the last due entry, and then this one has no due time left to wake it (``due``).
        while self._heap and self._heap[0].due <= now:
            heapq.heappop(self._heap)

    def add(self, entry_ids: list[str], wait_ms: int) -> None:
        now = time.monotonic()
        due = now + wait_ms / 1000
        claimable = self._claimable(now, wait_ms)
        for entry_id in entry_ids:
            heapq.heappush(self._heap, Waiting(due, entry_id, claimable))
        self._next = due if self._next is None else min(self._next, due)

    async def hold(self) -> None:
        """Keep entries whose token is further off than the claim idle time from being
        reclaimed while this worker lives. Called every quarter of the claim idle time, it
        renews each such entry with at least half of that time to spare; and looks at the
        group's deferred set, so that an idle worker joins a backlog another deferred."""
        await self._look()
        now = time.monotonic()
        self._forget_due(now)
        grace_s, half_s = GRACE_MS / 1000, self.claim_idle_ms / 2000
        soon = [
            w for w in self._heap if w.claimable < w.due + grace_s and w.claimable - now < half_s
        ]
        if not soon:
            return
        args: list[Any] = [self.group, self.consumer]
        for w in soon:
            args += [w.entry_id, idle_ms(self.claim_idle_ms, (w.due - now) * 1000)]
        gone = set(await self._hold(keys=[self.stream], args=args))
        for w in soon:
            w.claimable = self._claimable(now, (w.due - now) * 1000)
        if gone:
            self._heap = [w for w in self._heap if w.entry_id not in gone]
            heapq.heapify(self._heap)

    def _claimable(self, now: float, wait_ms: float) -> float:
        return now + (self.claim_idle_ms - idle_ms(self.claim_idle_ms, wait_ms)) / 1000

    def ms_until_next(self) -> int | None:
        if self._next is None:
            return None
        return max(0, int((self._next - time.monotonic()) * 1000) + 1)

    def due(self) -> bool:
        """An entry of the group is due, or it is time to look whether one is."""
        now = time.monotonic()
        return (self._next is not None and self._next <= now) or now - self._looked >= LOOK_S

    async def take_due(self, want: int) -> list[Delivery]:
        """Up to ``want`` of the group's entries whose token is due, taken for a rerun."""
        now = time.monotonic()
        self._forget_due(now)
        if self._next is not None and self._next <= now:  # a race, not a routine look
            await asyncio.sleep(random.uniform(0, JITTER_MS / 1000))
        return await self._look(want)

    async def _look(self, want: int = 0) -> list[Delivery]:
        args: list[str | int] = [self.group, self.consumer, want, PULL_WINDOW_MS]
        rows, head, server_ms = await self._take(keys=[self.stream, self.key], args=args)
        self._looked = now = time.monotonic()
        head_ms = float(head)
        ahead_s = (head_ms - int(server_ms)) / 1000
        self._next = None if head_ms < 0 else now + ahead_s
        return [_delivery(row) for row in rows]


def _delivery(row: Any) -> Delivery:
    entry_id, deliveries, flat = row
    fields = {str(flat[i]): str(flat[i + 1]) for i in range(0, len(flat), 2)}
    return Delivery(str(entry_id), fields, int(deliveries), reclaimed=False)


def queue_defer(
    pipe: Pipeline,
    stream: str,
    group: str,
    consumer: str,
    deliveries: list[Delivery],
    claim_idle_ms: int,
    wait_ms: int,
) -> None:
    """One XCLAIM per entry: count back, and idle so XAUTOCLAIM finds it after the grace;
    and the entries' due time in the group's deferred set, for any worker to take them."""
    idle = idle_ms(claim_idle_ms, wait_ms)
    for d in deliveries:
        pipe.xclaim(
            stream,
            group,
            consumer,
            0,
            [d.entry_id],
            idle=idle,
            retrycount=max(d.deliveries - 1, 0),
            justid=True,
        )
    if deliveries:
        ids = [d.entry_id for d in deliveries]
        args = [consumer, str(wait_ms), str(PULL_WINDOW_MS), str(KEEP_MS), *ids]
        pipe.eval(_QUEUE, 1, deferred_entries(stream, group), *args)
