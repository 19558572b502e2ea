"""The worker process's one pub/sub subscription (``workers/redis/listener.py``), against a
real server: each message reaches the handlers of its channel, every handler catches up
once subscribed and again after the server killed the connection, a handler's failure does
not silence the other channels, and a partitioned worker's loops share one subscription."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace

import pytest
import redis
import redis.asyncio as aredis

from tests.support.memory_store import MemoryRunStore
from workers.core.config import EngineConfig
from workers.core.registry import Registry
from workers.engine.serve import partition_workers, run_all, stop_all
from workers.redis.client_names import worker_client_name
from workers.redis.listener import Listener

# CLIENT LIST, CLIENT KILL TYPE pubsub and PUBSUB NUMSUB are the whole server's.
pytestmark = pytest.mark.serial

NAME = worker_client_name("listener-test")


class Heard:
    """A handler that records what it is told."""

    def __init__(self, fails_on: str = "") -> None:
        self.catch_ups = 0
        self.messages: list[str] = []
        self.fails_on = fails_on

    async def catch_up(self) -> None:
        self.catch_ups += 1

    async def heard(self, data: str) -> None:
        if data == self.fails_on:
            raise RuntimeError(f"a handler's bug, on {data}")
        self.messages.append(data)


def subscribers(r: redis.Redis, name: str = NAME) -> list[dict[str, str]]:
    """The connections named ``name`` holding a subscription (flag P, or sub > 0)."""
    return [
        c
        for c in r.client_list()
        if c["name"] == name and ("P" in c["flags"] or int(c.get("sub", 0)) > 0)
    ]


async def _until(condition: Callable[[], bool], timeout_s: float = 5.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.01)


async def _listening(
    redis_url: str, handlers: dict[str, list[Heard]], body: Callable[[], Awaitable[None]]
) -> None:
    """``body()`` while a listener runs with ``handlers``, on a client named ``NAME``."""
    client = aredis.Redis.from_url(redis_url, decode_responses=True, client_name=NAME)
    listener = Listener(client)
    for channel, on_channel in handlers.items():
        for handler in on_channel:
            listener.register(channel, handler)
    listener.attend()
    try:
        await body()
    finally:
        await listener.leave()
        await client.aclose()


def test_listener_hands_each_message_to_its_channels_handlers(
    r: redis.Redis, redis_url: str
) -> None:
    first, second, other = Heard(), Heard(), Heard()

    async def body() -> None:
        await _until(lambda: len(subscribers(r)) == 1 and first.catch_ups == 1)
        r.publish("one", "a")
        r.publish("two", "b")
        await _until(lambda: len(other.messages) == 1 and len(second.messages) == 1)

    asyncio.run(_listening(redis_url, {"one": [first, second], "two": [other]}, body))
    assert first.messages == second.messages == ["a"]
    assert other.messages == ["b"]
    assert first.catch_ups == second.catch_ups == other.catch_ups == 1


def test_listener_catches_up_and_hears_again_after_the_server_kills_its_connection(
    r: redis.Redis, redis_url: str
) -> None:
    pause, cancel = Heard(), Heard()

    async def body() -> None:
        await _until(lambda: len(subscribers(r)) == 1 and cancel.catch_ups == 1)
        killed = subscribers(r)[0]["id"]
        assert r.client_kill_filter(_type="pubsub") >= 1
        await _until(lambda: pause.catch_ups == cancel.catch_ups == 2)
        await _until(lambda: [c["id"] for c in subscribers(r)] not in ([], [killed]))
        r.publish("pause", "paused-key")
        r.publish("cancel", "an-event-hash")
        await _until(lambda: pause.messages == ["paused-key"] and cancel.messages != [])
        assert len(subscribers(r)) == 1

    asyncio.run(_listening(redis_url, {"pause": [pause], "cancel": [cancel]}, body))
    assert cancel.messages == ["an-event-hash"]


def test_a_failing_handler_does_not_silence_the_other_channels(
    r: redis.Redis, redis_url: str
) -> None:
    buggy, other = Heard(fails_on="boom"), Heard()

    async def body() -> None:
        await _until(lambda: other.catch_ups == 1 and len(subscribers(r)) == 1)
        r.publish("one", "boom")
        await _until(lambda: other.catch_ups == 2)  # subscribed again, and caught up
        await _until(lambda: len(subscribers(r)) == 1)
        r.publish("two", "still heard")
        await _until(lambda: other.messages == ["still heard"])

    asyncio.run(_listening(redis_url, {"one": [buggy], "two": [other]}, body))


def test_a_partitioned_workers_loops_share_one_subscription(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    name = worker_client_name("listener-partitions")

    async def main() -> int:
        client = aredis.Redis.from_url(redis_url, decode_responses=True, client_name=name)
        workers = partition_workers(
            replace(config, partitions=4), client, Registry(), MemoryRunStore()
        )
        running = asyncio.create_task(run_all(workers))
        try:
            # Each loop beats once it has started, its share of the subscription included.
            beats = [config.keys.worker(w.config.consumer) for w in workers]
            await _until(lambda: r.exists(*beats) == 4 and len(subscribers(r, name)) > 0)
            channels = [config.keys.pause_channel, config.keys.cancel_channel]
            assert [n for _, n in r.pubsub_numsub(*channels)] == [1, 1]
            return len(subscribers(r, name))
        finally:
            stop_all(workers)
            await running
            await client.aclose()

    assert asyncio.run(main()) == 1
    assert subscribers(r, name) == []  # the last loop to stop ended it
