"""Helpers of the operator-action tests: events, readers, in-process workers, the gate."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import redis
import redis.asyncio as aredis

from tests.support.engine import STREAM, AnyData
from workers.core.config import EngineConfig
from workers.core.events import Envelope, event_hash
from workers.core.keys import Keys
from workers.core.registry import Registry
from workers.engine.worker import Worker
from workers.gate import Gate, Outcome
from workers.redis.bus import xadd_many
from workers.store.runs import DjangoRunStore

GROUP = "agents"
DEAD = f"{STREAM}:dead"
KEYS = Keys()


def event(i: int, kind: str = "test.count") -> dict[str, Any]:
    return {"type": kind, "source": "t", "id": f"e{i}", "data": {"n": i}}


def hash_of(raw: dict[str, Any]) -> str:
    return event_hash(Envelope.model_validate(raw))


def read_by(r: redis.Redis, consumer: str, n: int, kind: str = "test.count") -> list[str]:
    """Publish ``n`` events and have ``consumer`` read them: ``n`` pending entries."""
    ids = xadd_many(r, STREAM, [json.dumps(event(i, kind)) for i in range(n)])
    r.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
    r.xreadgroup(GROUP, consumer, {STREAM: ">"}, count=n)
    return ids


def owners(r: redis.Redis) -> dict[str, tuple[str, int]]:
    rows = r.xpending_range(STREAM, GROUP, "-", "+", 100_000)
    return {row["message_id"]: (row["consumer"], row["times_delivered"]) for row in rows}


def counting_registry(runs: Counter[str]) -> Registry:
    registry = Registry()

    async def count(ev: Any, ctx: Any) -> None:
        runs[ev.hash] += 1

    registry.register("test.count", AnyData, count)
    return registry


class Background:
    """A long-running (not burst) worker in its own thread and event loop, stopped the way
    SIGTERM stops one."""

    def __init__(self, url: str, config: EngineConfig, registry: Registry) -> None:
        self.url, self.config, self.registry = url, replace(config, burst=False), registry
        self.ready = threading.Event()
        self.thread = threading.Thread(target=lambda: asyncio.run(self._main()))

    async def _main(self) -> None:
        client = aredis.Redis.from_url(self.url, decode_responses=True)
        self.loop = asyncio.get_running_loop()
        self.worker = Worker(self.config, client, self.registry, DjangoRunStore())
        self.ready.set()
        try:
            await self.worker.run()
        finally:
            await client.aclose()

    def __enter__(self) -> Worker:
        self.thread.start()
        assert self.ready.wait(10)
        return self.worker

    def holds_after(self, seconds: float, condition: Callable[[], bool]) -> bool:
        """Whether ``condition`` holds once ``seconds`` have passed on the worker's own event
        loop, checked in that loop. Its timers fire in order of due time, so a worker step due
        earlier (a pause poll, a paused wait) runs first even when a loaded machine delays the
        whole loop; a wall-clock wait in the test's thread would count the delay against it."""

        async def check() -> bool:
            await asyncio.sleep(seconds)
            return condition()

        future = asyncio.run_coroutine_threadsafe(check(), self.loop)
        return future.result(timeout=seconds + 30)

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.worker.request_stop)
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()


def acquire(redis_url: str, event_hash_: str, owner: str) -> Outcome:
    """What the engine's gate answers a worker that read an entry of this event."""

    async def main() -> Outcome:
        client = aredis.Redis.from_url(redis_url, decode_responses=True)
        gate = Gate(client, KEYS, lease_ms=30_000, done_ttl_s=60)
        try:
            [ticket] = await gate.acquire_many([(event_hash_, owner)])
            return ticket.outcome
        finally:
            await gate.aclose()
            await client.aclose()

    return asyncio.run(main())
