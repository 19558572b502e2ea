"""Events waiting for a rate budget's token: released, still pending, rerun when due.

A deferred entry stays in this consumer's pending list. Settling it (``queue_defer``) sets
its delivery count back by one (a wait is not a delivery) and its idle time so that any
worker's XAUTOCLAIM finds it ``GRACE_MS`` after the token is due, should this worker die
meanwhile. This worker also keeps a timer, so that normally it reruns the entry itself, on
time, with one script call that takes the entry back only if it is still its own.

A wait longer than the claim idle time cannot be expressed as an idle time (it would have
to be negative), so such an entry would be reclaimable before its token is due: another
worker would take it, add a delivery, defer it again, and so on every claim idle time.
``Deferrals.hold`` renews the idle time of those entries while this worker lives, the way
the housekeeper renews the entries of long agents.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio import Redis
from redis.asyncio.client import Pipeline

from workers.core.lua import lua_script
from workers.redis.bus import Delivery

_TAKE_BACK = lua_script(__package__, "defer_take_back")

# Others may reclaim a waiting entry only this long after its token is due. This worker's
# own timer reruns it at the due time; were its reclaim loop (or another worker's) to take
# it as well, both would deliver it, the second over --max-deliveries. Only the waits of a
# worker that died pay the grace.
GRACE_MS = 1000


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
    def __init__(
        self, client: Redis, stream: str, group: str, consumer: str, claim_idle_ms: int
    ) -> None:
        self.client = client
        self.stream = stream
        self.group = group
        self.consumer = consumer
        self.claim_idle_ms = claim_idle_ms
        self._heap: list[Waiting] = []
        self._take_back = client.register_script(_TAKE_BACK)
        self._hold = client.register_script(_HOLD)

    def __len__(self) -> int:
        return len(self._heap)

    def add(self, entry_ids: list[str], wait_ms: int) -> None:
        now = time.monotonic()
        due = now + wait_ms / 1000
        claimable = self._claimable(now, wait_ms)
        for entry_id in entry_ids:
            heapq.heappush(self._heap, Waiting(due, entry_id, claimable))

    async def hold(self) -> None:
        """Keep entries whose token is further off than the claim idle time from being
        reclaimed while this worker lives. Called every quarter of the claim idle time, it
        renews each such entry with at least half of that time to spare."""
        now = time.monotonic()
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
        if not self._heap:
            return None
        return max(0, int((self._heap[0].due - time.monotonic()) * 1000) + 1)

    def due(self) -> bool:
        return bool(self._heap) and self._heap[0].due <= time.monotonic()

    async def take_due(self, want: int) -> list[Delivery]:
        """Up to ``want`` entries whose token is due, taken back for a rerun."""
        now = time.monotonic()
        ids: list[str] = []
        while self._heap and self._heap[0].due <= now and len(ids) < want:
            ids.append(heapq.heappop(self._heap).entry_id)
        if not ids:
            return []
        rows = await self._take_back(keys=[self.stream], args=[self.group, self.consumer, *ids])
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
    """One XCLAIM per entry: count back, and idle so XAUTOCLAIM finds it after the grace."""
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
