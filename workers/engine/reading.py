"""The worker's two reads of its group: its own pending entries at start, and new ones."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Protocol

from redis.asyncio import Redis

from workers.core.config import EngineConfig
from workers.engine.pause import PauseWatch
from workers.fanout import OwnReader
from workers.flow import Flow
from workers.redis import bus
from workers.redis.bus import Delivery


class ReadingWorker(Protocol):
    """What the reads need of the worker (engine/worker.py; it is not imported here)."""

    config: EngineConfig
    client: Redis
    stopping: asyncio.Event
    halt: asyncio.Event
    pause: PauseWatch
    flow: Flow
    own: OwnReader | None

    async def while_paused(self) -> bool: ...
    async def wait_for_slots(self) -> int: ...
    async def admit(self, batch: list[Delivery]) -> None: ...


async def recover_own_pending(worker: ReadingWorker) -> None:
    """Entries this consumer name read before a restart (id 0), before anything new."""
    c, after = worker.config, "0"
    while not worker.stopping.is_set():
        if worker.pause.paused:
            if await worker.while_paused():
                return
            continue
        found = await bus.read_own_pending(
            worker.client, c.stream, c.group, c.consumer, after, c.batch_size
        )
        if not found:
            return
        after = found[-1].entry_id
        ids = [d.entry_id for d in found]
        counts = await bus.delivery_counts(worker.client, c.stream, c.group, ids)
        for delivery in found:
            delivery.deliveries = counts.get(delivery.entry_id, 1)
        found = await worker.flow.screen(found)  # a keyed entry may wait for its turn
        await worker.wait_for_slots()
        if found:
            await worker.admit(found)


async def read_new(worker: ReadingWorker, want: int, block_ms: int) -> list[Delivery]:
    """One XREADGROUP, with the pause flag as it was when it returned. A stop or a pause
    ends the wait at once (BLOCK is long at rest: entries, not a timer, end a read)."""
    c = worker.config
    if worker.stopping.is_set() or worker.pause.paused:
        return []
    worker.halt.clear()
    if worker.flow.on:
        return await _read_keyed(worker, want, block_ms)
    if worker.own is not None:
        return await _read_own(worker, worker.own, want, block_ms)
    read = asyncio.ensure_future(
        bus.read_new_paused(
            worker.client, c.stream, c.group, c.consumer, want, block_ms, worker.pause.key
        )
    )
    if not await _until_halted(worker, read):
        return []  # entries the server sent meanwhile stay pending, to be reclaimed
    batch, flag = read.result()
    worker.pause.set(flag)
    return batch


async def _read_keyed(worker: ReadingWorker, want: int, block_ms: int) -> list[Delivery]:
    """With keyed agents (workers/flow): a script reads and places keyed events at once
    and cannot block, so at rest the wait is an XREAD that consumes nothing."""
    got = await worker.flow.read(want, worker.pause.key)
    if got.read:
        worker.pause.set(got.flag)
    if not got.batch and got.last:
        block = worker.flow.block_after(got.last, block_ms)
        await _until_halted(worker, asyncio.ensure_future(block))
    return got.batch


async def _read_own(
    worker: ReadingWorker, own: OwnReader, want: int, block_ms: int
) -> list[Delivery]:
    """A named agent's group (workers/fanout): a script reads and lets others' entries by
    in the server, and cannot block, so at rest the wait is an XREAD that consumes nothing."""
    batch, flag, last = await own.read(want, worker.pause.key)
    worker.pause.set(flag)
    if not batch and last:
        await _until_halted(worker, asyncio.ensure_future(own.block_after(last, block_ms)))
    return batch


async def _until_halted(worker: ReadingWorker, read: asyncio.Future[Any]) -> bool:
    """Wait for ``read`` unless the worker is halted first (then cancel it): True if it
    finished."""
    halted = asyncio.ensure_future(worker.halt.wait())
    try:
        await asyncio.wait((read, halted), return_when=asyncio.FIRST_COMPLETED)
    finally:
        halted.cancel()
    if not read.done():
        read.cancel()
        with contextlib.suppress(BaseException):
            await read
        return False
    return True
