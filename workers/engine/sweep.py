"""One reclaim sweep per group for the whole fleet, when a sweep can find something.

A worker that dies leaves its entries pending; once they idle for the claim idle time any
worker may take them over (XAUTOCLAIM). Every worker sweeping every second cost a fleet of
N idle workers N XAUTOCLAIMs a second. Instead a sweep takes a token, ``keys.sweep(stream,
group)`` (SET NX with an expiry). The worker that takes it sweeps, then sets the token to
expire when the next sweep could find something:

- nothing pending: the claim idle time from now (an entry read later idles from then on);
- else the oldest pending entry's id time plus the claim idle time (an entry is read after
  it is added, so it has idled at most since its id's time), but at least the reclaim
  interval from now, which is then the cadence while an old entry stays pending (a long
  agent renewing its own).

The others read the token's remaining time and sleep that long, plus a little (up to a
tenth of the interval) so that they wake after the taker, which sleeps exactly that long,
has taken it again and set its next expiry. A group costs one sweep per claim idle time at
rest whatever the fleet's size. While a sweep runs the token expires within the interval,
so one who reads it then oversleeps by at most that: an entry left by a dead worker is
reclaimed at most twice the interval after it becomes claimable (the claim idle time + 2 s
at the defaults). A worker without a free slot, or paused, leaves the token alone.

An entry held back on purpose (a retry's backoff, a rate budget's wait: ``waits.py``) is
made claimable early, so the pending entries' ages do not bound it: the next sweep is also
no later than the earliest wait still ahead in ``keys.waits``, and the worker that holds an
entry back sweeps when its wait is over whoever holds the token (``soon``), as every worker
sweeping every second used to.

The group's other fleet-wide chores ride on the sweep's turns: the taker looks for ghost
consumers to prune and trims the workers index (engine/housekeeping.py), so a fleet does
them once per turn, not once per worker; a prune time shorter than the claim idle time
shortens the turns to match.

A worker whose turn it is not asks one PTTL per turn; the taker then SET NX, sweeps and
PEXPIREs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Protocol

from redis.asyncio import Redis

from workers.core.config import EngineConfig
from workers.engine.housekeeping import Housekeeper, prune_every_s
from workers.engine.pause import PauseWatch
from workers.engine.reclaim import Reclaimer
from workers.engine.settle import Settler
from workers.engine.timeline import Timeline
from workers.flow import Flow
from workers.redis.bus import Delivery
from workers.redis.connection import UNREACHABLE, is_cluster

log = logging.getLogger("streamdesk.worker")

# A held-back entry is claimable about GRACE_MS after its wait (engine/defer.py): its
# worker sweeps a little after that.
HELD_MARGIN_MS = 1_100
# A token with no expiry (set by hand) or gone between the SET and the PTTL: try again soon.
RETRY_S = 0.1


def chores_every_ms(config: EngineConfig) -> int | None:
    """How often the fleet's chores must run (ghost consumers are looked for a tenth of
    the prune time apart); None when there are none."""
    every_s = prune_every_s(config.consumer_prune_s)
    return None if every_s is None else int(every_s * 1000)


class SweepingWorker(Protocol):
    """What the sweep needs of the worker (engine/worker.py; it is not imported here)."""

    config: EngineConfig
    sweeper: SweepToken
    reclaimer: Reclaimer
    settler: Settler
    timeline: Timeline
    pause: PauseWatch
    stopping: asyncio.Event
    store_down: bool
    housekeeper: Housekeeper
    flow: Flow

    def free_slots(self) -> int: ...
    async def admit(self, batch: list[Delivery]) -> None: ...
    async def step_failed(self, exc: Exception, delay: float) -> None: ...
    async def sleep(self, seconds: float) -> None: ...


class SweepToken:
    """Whose turn it is to sweep the group, and when the next turn is."""

    def __init__(
        self,
        client: Redis,
        key: str,
        stream: str,
        group: str,
        consumer: str,
        claim_idle_ms: int,
        interval_ms: int,
        waits_key: str = "",
        chores_every_ms: int | None = None,
    ) -> None:
        self.client = client
        self.key = key
        self.waits_key = waits_key
        self.nudged = asyncio.Event()
        self.due: float | None = None  # monotonic: when an entry this worker held is due
        self.stream = stream
        self.group = group
        self.consumer = consumer
        self.claim_idle_ms = claim_idle_ms
        self.interval_ms = max(1, min(interval_ms, claim_idle_ms))
        # The longest between turns: the fleet's chores (pruning ghost consumers) ride on
        # them, so a prune time shorter than the claim idle time is kept too.
        self.at_most_ms = min(claim_idle_ms, chores_every_ms or claim_idle_ms)

    def soon(self, wait_ms: float) -> None:
        """This worker held entries back for ``wait_ms``: sweep once they are claimable."""
        due = time.monotonic() + (max(wait_ms, 0) + HELD_MARGIN_MS) / 1000
        self.due = due if self.due is None else min(self.due, due)
        self.nudged.set()

    def take_due(self) -> bool:
        """Whether a wait this worker set is over (then it sweeps, token or not)."""
        if self.due is None or time.monotonic() < self.due:
            return False
        self.due = None
        return True

    async def turn(self, sweep: Callable[[], Awaitable[bool]], force: bool = False) -> float:
        """Take the token and ``sweep()`` (True if it may have left claimable entries
        behind), or learn whose turn it is. Seconds until the next try. ``force``: sweep
        even if another holds the token."""
        if not force:
            # Someone's turn (the usual answer, once per worker per sweep at rest): one
            # command. Two who both find it free race on the SET NX below; one wins.
            left_ms = await self.client.pttl(self.key)
            if left_ms > 0:
                return self._after(left_ms)
        # Held for the interval while sweeping, then set to the next sweep's time.
        if not await self.client.set(self.key, self.consumer, nx=not force, px=self.interval_ms):
            return self._after(await self.client.pttl(self.key))
        more = await sweep()
        next_ms = self.interval_ms if more else await self._next_sweep_ms()
        await self.client.pexpire(self.key, next_ms)
        return next_ms / 1000

    def _after(self, left_ms: int) -> float:
        """Seconds to sleep while another holds the token for ``left_ms``."""
        if left_ms <= 0:  # no expiry (set by hand), or gone since: try again soon
            return RETRY_S
        return float(left_ms) / 1000 + random.uniform(0, self.interval_ms / 10_000)

    async def _next_sweep_ms(self) -> int:
        wall_ms = int(time.time() * 1000)  # the clock waits.py scores with
        cluster = is_cluster(self.client)  # its pipeline refuses TIME: asked apart there
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.xpending(self.stream, self.group)
            if not cluster:
                pipe.time()
            if self.waits_key:
                pipe.zrangebyscore(self.waits_key, wall_ms, "+inf", start=0, num=1, withscores=True)
            replies = await pipe.execute()
        if cluster:
            replies.insert(1, await self.client.time())
        summary, (seconds, micros), *waits = replies
        if not summary or not summary.get("pending"):
            return max(self.interval_ms, self.at_most_ms)
        now_ms = int(seconds) * 1000 + int(micros) // 1000
        oldest_ms = int(str(summary["min"]).split("-", 1)[0])
        due_ms = oldest_ms + self.claim_idle_ms - now_ms
        if waits and waits[0]:
            due_ms = min(due_ms, int(waits[0][0][1]) - wall_ms + HELD_MARGIN_MS)
        return max(self.interval_ms, min(due_ms, self.at_most_ms))


async def take_turns(worker: SweepingWorker) -> None:
    """The worker's turns at the group's sweep, for its life (a background task)."""
    token = worker.sweeper
    while not worker.stopping.is_set():
        wait_s = token.interval_ms / 1000
        if not (worker.pause.paused or worker.store_down) and worker.free_slots() > 0:
            try:
                wait_s = await token.turn(lambda: sweep(worker), force=token.take_due())
            except UNREACHABLE:
                pass  # the read loop reports the outage
            except Exception as exc:
                await worker.step_failed(exc, wait_s)
        await _sleep(worker, token, time.monotonic() + wait_s)


async def _sleep(worker: SweepingWorker, token: SweepToken, until: float) -> None:
    """Until ``until``, or sooner when an entry this worker held back is due."""
    while not worker.stopping.is_set():
        wake = until if token.due is None else min(until, token.due)
        left = wake - time.monotonic()
        if left <= 0:
            return
        token.nudged.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(token.nudged.wait(), timeout=min(left, 3600))


async def sweep(worker: SweepingWorker) -> bool:
    """Reclaim what idled past the claim idle time and admit it; True if more may be left."""
    want = min(worker.free_slots(), worker.config.batch_size)
    found = await worker.reclaimer.claim(want, worker.sweeper.waits_key)
    # A keyed entry waiting for its turn goes back to wait, neither reclaimed nor retried.
    runnable = await worker.flow.screen(found.deliveries)
    if len(runnable) < len(found.deliveries):
        kept = {d.entry_id for d in runnable}
        found.retried -= sum(d.retry for d in found.deliveries if d.entry_id not in kept)
        found.deliveries = runnable
    # A retry coming due is not a takeover from a dead consumer: counted apart.
    taken_over = len(found.deliveries) - found.retried
    counts = Counter(reclaimed=taken_over, retried=found.retried, deleted=len(found.deleted_ids))
    if found.deleted_ids:
        log.info("reclaim: %d pending ids pointed at deleted entries", len(found.deleted_ids))
        worker.timeline.deleted(found.deleted_ids)
    await worker.settler.count(counts)
    if found.deliveries:
        await worker.admit(found.deliveries)
    # The group's other fleet-wide chores ride on the sweep's turn (housekeeping.chores).
    await worker.housekeeper.chores()
    return len(found.deliveries) >= want or worker.reclaimer.cursor != "0-0"
