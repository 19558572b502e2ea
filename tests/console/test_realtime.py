"""The push: one sampler, a tick a second, and published events move the numbers."""

from __future__ import annotations

import asyncio
import itertools
import re

import pytest
import redis
from channels.testing import WebsocketCommunicator
from django.test import Client

from console.live import ticker
from tests.support.console import next_tick, open_socket, process
from tests.support.engine import STREAM
from workers import publish
from workers.core.config import EngineConfig

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

PROCESSED = re.compile(r'data-metric="processed">([\d,]+)<')


async def processed_in(communicator: WebsocketCommunicator) -> int | None:
    tick = await next_tick(communicator)
    found = PROCESSED.search(tick["fragments"].get("overview", ""))
    return int(found.group(1).replace(",", "")) if found else None


async def test_published_events_move_the_next_push(
    r: redis.Redis, redis_url: str, config: EngineConfig, staff_client: Client
) -> None:
    publish("demo.echo", {"n": 0})
    await asyncio.to_thread(process, redis_url, config)
    communicator = await open_socket(staff_client, ["overview"])
    try:
        assert await processed_in(communicator) == 1
        for n in range(1, 6):
            publish("demo.echo", {"n": n})
        await asyncio.to_thread(process, redis_url, config)
        assert await processed_in(communicator) == 6
    finally:
        await communicator.disconnect()
        await ticker.stop()


async def test_a_page_gets_only_its_fragments(
    r: redis.Redis, redis_url: str, config: EngineConfig, staff_client: Client
) -> None:
    publish("demo.echo", {"n": 0})
    await asyncio.to_thread(process, redis_url, config)
    communicator = await open_socket(staff_client, [f"group:{STREAM}:agents"])
    try:
        tick = await next_tick(communicator)
        assert list(tick["fragments"]) == [f"group:{STREAM}:agents"]
        assert "Consumers" in tick["fragments"][f"group:{STREAM}:agents"]
    finally:
        await communicator.disconnect()
        await ticker.stop()


async def test_two_sockets_share_one_sampler(r: redis.Redis, staff_client: Client) -> None:
    first = await open_socket(staff_client, ["overview"])
    second = await open_socket(staff_client, ["overview"])
    try:
        a = [(await next_tick(first))["at_ms"] for _ in range(3)]
        b = [(await next_tick(second))["at_ms"] for _ in range(3)]
        assert set(a) & set(b)  # the same ticks reach both sockets
        # One sampler: ticks a second apart, never two per second.
        assert all(later - earlier >= 500 for earlier, later in itertools.pairwise(a))
        # The broadcaster records nothing: history is the recorder's (workers/monitor/recorder.py).
        assert str(r.get("streamdesk:console:broadcaster")).startswith("console:")
        assert not r.exists("streamdesk:{history}:1s", "streamdesk:{history}:recorder")
    finally:
        await first.disconnect()
        await second.disconnect()
        await ticker.stop()


async def test_a_failing_stream_does_not_stop_the_push_for_the_others(
    r: redis.Redis, staff_client: Client
) -> None:
    r.xadd(STREAM, {"event": '{"type": "demo.echo", "data": {}}'})
    r.xgroup_create(STREAM, "agents", id="0")
    r.xadd("orders/eu", {"event": '{"type": "demo.echo", "data": {}}'})
    r.xgroup_create("orders/eu", "team/a", id="0")  # a name with "/": no URL could be built
    r.xadd("streamdesk:broken", {"event": "{}"})
    r.hset("streamdesk:stats:streamdesk:broken", "processed", "lots")  # not a count
    r.sadd("streamdesk:stats:streams", STREAM, "orders/eu", "streamdesk:broken")
    names = ["overview", f"stream:{STREAM}", "stream:streamdesk:broken"]
    communicator = await open_socket(staff_client, names)
    try:
        fragments = (await next_tick(communicator))["fragments"]
        assert f'href="/streams/{STREAM}/groups/agents/"' in fragments["overview"]
        assert 'href="/streams/orders~2Feu/groups/team~2Fa/"' in fragments["overview"]
        assert "cannot be read" in fragments["stream:streamdesk:broken"]
        assert "Length" in fragments[f"stream:{STREAM}"]
    finally:
        await communicator.disconnect()
        await ticker.stop()
