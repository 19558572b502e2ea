"""What a worker does beside processing: renewing leases, keeping its heartbeat, writing
the timeline steps of agents that run long."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from workers.engine.ports import UsesPorts
from workers.engine.timeline import START_LINGER_S
from workers.gate import CANCEL_ASKED
from workers.redis import consumers, stats
from workers.retention import Retention, trim_turn

if TYPE_CHECKING:
    from workers.engine.attempts import Attempt
    from workers.engine.pause import PauseWatch
    from workers.engine.ports import Ports

log = logging.getLogger("streamdesk.worker")

# A heartbeat lives for this many beats: one missed beat (a stalled loop) is no death.
HEARTBEAT_BEATS = 2
# At least this often the whole heartbeat is written even if nothing in it changed (it
# refreshes the workers index, which the console reads over the last two minutes:
# monitor/sample.WORKER_WINDOW_MS); in between, an unchanged one only has its expiry pushed
# back: one command a beat.
FULL_BEAT_S = 60.0
# How often ghost consumers are looked for: a tenth of the prune time, within these bounds
# (one XINFO CONSUMERS per look). Only the worker whose turn it is to sweep the group looks
# (engine/sweep.py), so a fleet looks about once per sweep, not once per worker.
PRUNE_EVERY_MIN_S = 0.5
PRUNE_EVERY_MAX_S = 60.0
# A worker not heard of for this long leaves the workers index (which the console reads
# over two minutes: monitor/sample.WORKER_WINDOW_MS).
INDEX_KEEP_MS = 10 * 60_000


def prune_every_s(consumer_prune_s: float) -> float | None:
    """How often ghost consumers are looked for; None when pruning is off."""
    if consumer_prune_s <= 0:
        return None
    return min(max(consumer_prune_s / 10, PRUNE_EVERY_MIN_S), PRUNE_EVERY_MAX_S)


def full_beat_every(heartbeat_s: float) -> int:
    """Every how many beats the heartbeat is written whole (20 at the 3 s default)."""
    return max(1, int(FULL_BEAT_S / max(heartbeat_s, 0.001)))


@dataclass(frozen=True, slots=True)
class Status:
    """What the heartbeat says of the worker besides its attempts, read at each beat."""

    started_ms: int
    processed: int
    stopping: bool


class Housekeeper(UsesPorts):
    """Given the worker's collaborators: ``inflight`` (its attempts by event hash, read at
    each renewal and beat), ``hold_deferrals`` (keeps deferred entries from being reclaimed),
    ``pause`` (the group's pause flag, for the heartbeat's state), ``status()`` for the
    heartbeat and ``on_cancel`` (workers/cancel/), told of cancel requests the renewal found."""

    def __init__(
        self,
        ports: Ports,
        *,
        inflight: Mapping[str, Attempt],
        hold_deferrals: Callable[[], Awaitable[None]],
        pause: PauseWatch,
        status: Callable[[], Status],
        on_cancel: Callable[[list[Attempt]], None] = lambda attempts: None,
    ) -> None:
        super().__init__(ports)
        self.on_cancel = on_cancel  # attempts whose gate records carry a cancel request
        self.inflight = inflight
        self.hold_deferrals = hold_deferrals
        self.pause = pause
        self.status = status
        self._written: dict[str, Any] = {}  # the heartbeat as last written whole
        self._beats = 0
        self._full_every = full_beat_every(ports.config.heartbeat_s)
        self._chores_at: float | None = None  # monotonic: this worker's last chores

    def start(self) -> list[asyncio.Task[None]]:
        tasks = [
            asyncio.create_task(self._every(self.config.lease_ms / 3000, self.renew), name="renew"),
            asyncio.create_task(self._every(self.config.heartbeat_s, self.beat), name="heartbeat"),
            asyncio.create_task(
                self._every(self.config.claim_idle_ms / 4000, self.hold_deferrals),
                name="hold-deferrals",
            ),
        ]
        if self.timeline.on:
            every = self._every(START_LINGER_S, self.write_started)
            tasks.append(asyncio.create_task(every, name="timeline"))
        return tasks

    async def _every(self, interval_s: float, step: Any) -> None:
        while True:
            try:
                await step()
            except Exception as exc:
                log.warning("%s failed: %s", step.__name__, exc)
            await asyncio.sleep(interval_s)

    async def renew(self) -> None:
        """Extend the lease of every running agent, so a long agent is not taken over."""
        attempts = list(self.inflight.values())
        held = await self.gate.renew_many([(a.event_hash, a.owner, a.token) for a in attempts])
        for attempt, ok in zip(attempts, held, strict=True):
            if not ok:
                log.warning(
                    "lease lost for %s: its result will be refused",
                    attempt.lease,
                    extra=attempt.log_fields(),
                )
        self.on_cancel([a for a, ok in zip(attempts, held, strict=True) if ok == CANCEL_ASKED])
        # Reset the idle time of entries still ours, so no one reclaims a long agent's entry
        # (or its waiting duplicates) and inflates their delivery counts.
        ids: list[Any] = [
            entry_id
            for attempt, ok in zip(attempts, held, strict=True)
            if ok
            for entry_id in attempt.entry_ids
        ]
        if ids:
            await self.client.xclaim(
                self.config.stream, self.config.group, self.config.consumer, 0, ids, justid=True
            )

    async def chores(self) -> None:
        """The group's fleet-wide chores, on this worker's turns at its sweep (so a fleet
        does them about once per turn, not once per worker), at most every
        ``prune_every_s`` (a minute when pruning is off): trim the workers index, look for
        ghost consumers, trim the stream by retention. A failed chore is logged, not raised:
        it must not cost the sweep."""
        every_s = prune_every_s(self.config.consumer_prune_s)
        now = time.monotonic()
        if self._chores_at is not None and now - self._chores_at < (every_s or PRUNE_EVERY_MAX_S):
            return
        self._chores_at = now
        chores = [self.trim_index, self.trim_stream]
        chores += [self.prune] if every_s is not None else []
        for chore in chores:
            try:
                await chore()
            except Exception as exc:
                log.warning("%s failed: %s", chore.__name__, exc)

    async def trim_index(self) -> None:
        """Drop workers not heard of for INDEX_KEEP_MS from the workers index: a clean exit
        removes its own member, a killed worker's stayed for good (one per pid, restarts
        add up)."""
        old_ms = int(time.time() * 1000) - INDEX_KEEP_MS
        await self.client.zremrangebyscore(self.keys.workers_index, "-inf", old_ms)

    async def trim_stream(self) -> None:
        """Trim the stream by its retention (workers/retention: the engine's one seam). The
        stream's record says when the next trim is due, so whichever worker's chores come
        round first after that trims, once a minute for the fleet; the others' calls return
        at once."""
        c = self.config
        done = await trim_turn(self.client, self.keys, c.stream, Retention.of(c), by=c.consumer)
        if done.trimmed:
            log.info("retention: trimmed %d entries of %s", done.trimmed, c.stream)
        if done.note:
            log.warning("retention of %s: %s", c.stream, done.note)

    async def prune(self) -> None:
        """Remove the group's ghost consumers (``consumers.prune``), audited."""
        c = self.config
        pruned = await consumers.prune(
            self.client,
            self.keys,
            c.stream,
            c.group,
            c.consumer,
            c.consumer_prune_s * 1000,
        )
        for p in pruned:
            log.info(
                "pruned consumer %s of %s group %s: no heartbeat, nothing pending",
                p.consumer,
                p.stream,
                p.group,
            )
        if pruned:
            self.db.post(record_pruned, pruned)

    async def write_started(self) -> None:
        self.timeline.flush_started(time.monotonic())

    def info(self) -> dict[str, Any]:
        current = next(iter(self.inflight.values()), None)
        status = self.status()
        return {
            "consumer": self.config.consumer,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "stream": self.config.stream,
            "group": self.config.group,
            "concurrency": self.config.concurrency,
            "started_ms": status.started_ms,
            "processed": status.processed,
            "inflight": len(self.inflight),
            "current": (
                f"{current.runnable.event.type} {current.delivery.entry_id}" if current else ""
            ),
            "state": self.state(status),
        }

    def state(self, status: Status) -> str:
        if status.stopping:
            return "draining"
        return "paused" if self.pause.paused else "running"

    async def beat(self) -> None:
        ttl_ms = max(int(self.config.heartbeat_s * HEARTBEAT_BEATS * 1000), 2000)
        info = self.info()
        info["ttl_ms"] = ttl_ms
        self._beats += 1
        # At rest nothing in it changes: keeping it alive is one command (0: it is gone).
        key = self.keys.worker(self.config.consumer)
        if (
            info == self._written
            and self._beats % self._full_every
            and await self.client.pexpire(key, ttl_ms)
        ):
            return
        async with self.client.pipeline(transaction=False) as pipe:
            stats.queue_heartbeat(
                pipe,
                self.keys,
                self.config.consumer,
                info,
                ttl_ms,
                int(time.time() * 1000),
            )
            await pipe.execute()
        self._written = info

    async def farewell(self) -> None:
        """A clean exit removes the heartbeat at once instead of letting it expire."""
        try:
            async with self.client.pipeline(transaction=False) as pipe:
                pipe.delete(self.keys.worker(self.config.consumer))
                pipe.zrem(self.keys.workers_index, self.config.consumer)
                await pipe.execute()
        except Exception as exc:
            log.warning("could not remove heartbeat: %s", exc)


def record_pruned(pruned: list[consumers.Pruned]) -> None:
    """One audit record per consumer removed, by "housekeeping" through the engine's door."""
    from workers.models import Door  # Django's models: loaded once the database is in use
    from workers.store.audit import Action, Actor, Entry, Result

    actor = Actor("housekeeping", Door.ENGINE)
    for p in pruned:
        entry = Entry(actor, Action.PRUNE_CONSUMER, p.stream, p.group, {"consumer": p.consumer})
        entry.count = 1
        entry.detail = f"no heartbeat, nothing pending, idle {p.idle_ms // 1000} s"
        entry.write(Result.OK)
