"""What a worker does beside processing: renewing leases, keeping its heartbeat, writing
the timeline steps of agents that run long."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from typing import TYPE_CHECKING, Any

from workers import group_consumers, stats
from workers.steps import START_LINGER_S

if TYPE_CHECKING:
    from workers.engine import Worker

log = logging.getLogger("streamdesk.worker")

# How often a worker looks whether its group was paused or resumed (docs/actions.md).
PAUSE_POLL_S = 0.5
# How often a worker looks for ghost consumers to prune: a tenth of the prune time, within
# these bounds (one XINFO CONSUMERS per look: cheap, but no need to ask every second).
PRUNE_EVERY_MIN_S = 0.5
PRUNE_EVERY_MAX_S = 60.0


class Housekeeper:
    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.config = worker.config

    def start(self) -> list[asyncio.Task[None]]:
        tasks = [
            asyncio.create_task(self._every(self.config.lease_ms / 3000, self.renew), name="renew"),
            asyncio.create_task(self._every(self.config.heartbeat_s, self.beat), name="heartbeat"),
            asyncio.create_task(self._every(PAUSE_POLL_S, self.check_pause), name="pause"),
            asyncio.create_task(
                self._every(self.config.claim_idle_ms / 4000, self.worker.deferrals.hold),
                name="hold-deferrals",
            ),
        ]
        if self.config.consumer_prune_s > 0:
            every_s = self.config.consumer_prune_s / 10
            every_s = min(max(every_s, PRUNE_EVERY_MIN_S), PRUNE_EVERY_MAX_S)
            tasks.append(asyncio.create_task(self._every(every_s, self.prune), name="prune"))
        if self.worker.timeline.on:
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
        attempts = list(self.worker.inflight.values())
        held = await self.worker.gate.renew_many(
            [(a.event_hash, a.owner, a.token) for a in attempts]
        )
        for attempt, ok in zip(attempts, held, strict=True):
            if not ok:
                log.warning("lease lost for %s: its result will be refused", attempt.lease)
        # Reset the idle time of entries still ours, so no one reclaims a long agent's entry
        # (or its waiting duplicates) and inflates their delivery counts.
        ids: list[Any] = [
            entry_id
            for attempt, ok in zip(attempts, held, strict=True)
            if ok
            for entry_id in attempt.entry_ids
        ]
        if ids:
            await self.worker.client.xclaim(
                self.config.stream, self.config.group, self.config.consumer, 0, ids, justid=True
            )

    async def check_pause(self) -> None:
        """Follow the group's pause key; the read loop stops reading while it is set."""
        key = self.worker.keys.paused(self.config.stream, self.config.group)
        value = await self.worker.client.get(key)
        by = None if value is None else str(value)
        was, self.worker.paused_by = self.worker.paused_by, by
        where = f"{self.config.stream} group {self.config.group}"
        if by is not None and was is None:
            log.info(
                "%s paused (%s): no new reads; finishing %d in flight",
                where,
                by,
                len(self.worker.inflight),
            )
        elif by is None and was is not None:
            log.info("%s resumed: reading again", where)

    async def prune(self) -> None:
        """Remove the group's ghost consumers (``group_consumers.prune``), audited."""
        c = self.config
        pruned = await group_consumers.prune(
            self.worker.client,
            self.worker.keys,
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
            self.worker.db.post(group_consumers.record_pruned, pruned)

    async def write_started(self) -> None:
        self.worker.timeline.flush_started(time.monotonic())

    def info(self) -> dict[str, Any]:
        current = next(iter(self.worker.inflight.values()), None)
        return {
            "consumer": self.config.consumer,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "stream": self.config.stream,
            "group": self.config.group,
            "concurrency": self.config.concurrency,
            "started_ms": self.worker.started_ms,
            "processed": self.worker.processed,
            "inflight": len(self.worker.inflight),
            "current": (
                f"{current.runnable.event.type} {current.delivery.entry_id}" if current else ""
            ),
            "state": self.state(),
        }

    def state(self) -> str:
        if self.worker.stopping.is_set():
            return "draining"
        return "running" if self.worker.paused_by is None else "paused"

    async def beat(self) -> None:
        ttl_s = max(int(self.config.heartbeat_s * 3), 2)
        async with self.worker.client.pipeline(transaction=False) as pipe:
            stats.queue_heartbeat(
                pipe,
                self.worker.keys,
                self.config.consumer,
                self.info(),
                ttl_s,
                int(time.time() * 1000),
            )
            await pipe.execute()

    async def farewell(self) -> None:
        """A clean exit removes the heartbeat at once instead of letting it expire."""
        try:
            async with self.worker.client.pipeline(transaction=False) as pipe:
                pipe.delete(self.worker.keys.worker(self.config.consumer))
                pipe.zrem(self.worker.keys.workers_index, self.config.consumer)
                await pipe.execute()
        except Exception as exc:
            log.warning("could not remove heartbeat: %s", exc)
