"""The pause watch and the housekeeper on their own (no Worker): the watch learns each
pause and resume from the channel, without reading the flag on a timer; the heartbeat
reports the state it is given, and at rest keeps itself alive with one command."""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable

import pytest
import redis
import redis.asyncio as aredis

from tests.support.memory_store import MemoryRunStore
from workers.core.config import EngineConfig
from workers.engine.housekeeping import (
    FULL_BEAT_S,
    INDEX_KEEP_MS,
    Housekeeper,
    Status,
    full_beat_every,
)
from workers.engine.pause import PauseWatch
from workers.engine.ports import Ports
from workers.engine.timeline import Timeline
from workers.gate import Gate
from workers.monitor.sample import WORKER_WINDOW_MS, collect
from workers.operations import actions
from workers.redis.listener import Listener
from workers.store.dbwriter import DbWriter


async def _until(condition: object, timeout_s: float = 5.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():  # type: ignore[operator]
            await asyncio.sleep(0.01)


class Kept:
    """A housekeeper on its own, with what it was given (closed by ``close``)."""

    def __init__(
        self,
        client: aredis.Redis,
        config: EngineConfig,
        status: Callable[[], Status],
        halt: asyncio.Event,
    ) -> None:
        store = MemoryRunStore()
        self.db = DbWriter(store)
        timeline = Timeline(config, functools.partial(self.db.post, store.record))
        self.gate = Gate(client, config.keys, config.lease_ms, config.done_ttl_s)
        self.watch = PauseWatch(client, config.keys, config.stream, config.group, lambda: 0, halt)
        self.keeper = Housekeeper(
            Ports(config, client, self.gate, self.db, timeline),
            inflight={},
            hold_deferrals=_hold,
            pause=self.watch,
            status=status,
        )

    async def close(self) -> None:
        await self.db.close()
        await self.gate.aclose()


async def _hold() -> None:
    return None


def _resting() -> Status:
    return Status(started_ms=1, processed=0, stopping=False)


async def _follow(redis_url: str, config: EngineConfig) -> tuple[list[str | None], list[str], bool]:
    client = aredis.Redis.from_url(redis_url, decode_responses=True)
    sync = redis.Redis.from_url(redis_url, decode_responses=True)
    halt = asyncio.Event()
    seen: list[str | None] = []
    status = Status(started_ms=1, processed=7, stopping=False)
    kept = Kept(client, config, lambda: status, halt)
    keeper, watch = kept.keeper, kept.watch
    listener = Listener(client)  # as the worker's: the watch handles the pause channel
    listener.register(watch.channel, watch)
    listener.attend()
    states = [keeper.info()["state"]]
    await _until(lambda: sync.pubsub_numsub(config.keys.pause_channel)[0][1] == 1)
    await asyncio.to_thread(actions.pause, sync, config.keys, config.stream, config.group, "alice")
    await _until(lambda: watch.paused)
    seen.append(watch.by)
    halted = halt.is_set()
    states.append(keeper.info()["state"])
    await asyncio.to_thread(actions.resume, sync, config.keys, config.stream, config.group)
    await _until(lambda: not watch.paused)
    seen.append(watch.by)
    status = Status(started_ms=1, processed=7, stopping=True)
    states.append(keeper.info()["state"])
    await listener.leave()
    await kept.close()
    await client.aclose()
    sync.close()
    return seen, states, halted


@pytest.mark.serial  # counts the whole server's commands or subscribers
def test_pause_watch_hears_each_pause_and_resume_on_the_channel(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    seen, states, halted = asyncio.run(_follow(redis_url, config))
    assert seen[0] is not None and seen[0].startswith("alice at ")
    assert seen[1] is None
    assert halted  # a pause ends the worker's blocking read
    assert states == ["running", "paused", "draining"]


def marked_ms() -> int:
    """An index score 20 s old: within the index's two-minute window."""
    return int(time.time() * 1000) - 20_000


async def _beats(
    redis_url: str, config: EngineConfig, *, expire_between: bool, marked: int = 0
) -> None:
    """One beat; then the heartbeat marked (or deleted: expired) behind its back; then
    beats up to the next whole write."""
    client = aredis.Redis.from_url(redis_url, decode_responses=True)
    kept = Kept(client, config, _resting, asyncio.Event())
    keeper = kept.keeper
    key = config.keys.worker(config.consumer)
    await keeper.beat()
    assert await client.hget(key, "state") == "running"
    if expire_between:
        await client.delete(key)  # expired (a stalled loop, a Redis restart)
    else:
        # Marked: a write of the whole heartbeat would overwrite both.
        await client.hset(key, "processed", "marked")
        await client.zadd(config.keys.workers_index, {config.consumer: marked})
    for _ in range(full_beat_every(config.heartbeat_s) - 2):
        await keeper.beat()
    await kept.close()
    await client.aclose()


def test_an_unchanged_heartbeat_only_pushes_its_expiry_back(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    key = config.keys.worker(config.consumer)
    marked = marked_ms()
    asyncio.run(_beats(redis_url, config, expire_between=False, marked=marked))
    assert r.hget(key, "processed") == "marked"
    assert r.zscore(config.keys.workers_index, config.consumer) == marked
    assert 0 < r.pttl(key) <= max(config.heartbeat_s * 2000, 2000)
    # The console's "last heartbeat" comes from the expiry, not the index's old score.
    [worker] = collect(r, config.keys).workers
    assert worker.last_seen_ms > marked + 15_000
    # Its expiry is two beats: the console drops a dead worker within 6 s at the defaults.
    assert EngineConfig().heartbeat_s * 2 == 6


def test_a_heartbeat_that_expired_is_written_whole_again(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    key = config.keys.worker(config.consumer)
    asyncio.run(_beats(redis_url, config, expire_between=True))
    assert r.hget(key, "state") == "running"
    assert r.zscore(config.keys.workers_index, config.consumer) == pytest.approx(
        time.time() * 1000, abs=10_000
    )


@pytest.mark.parametrize(("heartbeat_s", "every"), [(3.0, 20), (0.5, 120), (10.0, 6), (90.0, 1)])
def test_the_whole_heartbeat_is_written_at_least_once_a_minute(
    heartbeat_s: float, every: int
) -> None:
    # The console reads the workers index over two minutes (sample.WORKER_WINDOW_MS): a
    # slow heartbeat must still refresh its score in time.
    assert full_beat_every(heartbeat_s) == every
    assert every * heartbeat_s <= max(FULL_BEAT_S, heartbeat_s) < WORKER_WINDOW_MS / 1000


async def _chores(redis_url: str, config: EngineConfig) -> None:
    client = aredis.Redis.from_url(redis_url, decode_responses=True)
    kept = Kept(client, config, _resting, asyncio.Event())
    keeper = kept.keeper
    await keeper.chores()
    await keeper.chores()  # within the cadence: nothing more
    await kept.close()
    await client.aclose()


def test_the_sweeps_chores_trim_the_workers_index(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """A killed worker's member used to stay in the index for good (a clean exit removes it)."""
    now_ms = int(time.time() * 1000)
    index = config.keys.workers_index
    r.zadd(index, {"killed-long-ago": now_ms - INDEX_KEEP_MS - 60_000, "recent": now_ms - 60_000})
    asyncio.run(_chores(redis_url, config))
    assert r.zrange(index, 0, -1) == ["recent"]
