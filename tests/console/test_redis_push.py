"""The Redis panel travels in the sampler's tick: rendered once for every open tab, so two
browsers cost Redis no more than one (counted by the server itself, INFO commandstats)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis
from channels.testing import WebsocketCommunicator
from django.test import Client

from console.live import ticker
from console.live.realtime import redis_key, redis_summary_key
from console.live.redis_panel import meter_for
from console.runtime import redis_client
from tests.support.console import next_tick, open_socket

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio, pytest.mark.serial]

TICKS = 4


def calls(r: redis.Redis, command: str) -> int:
    stats: dict[str, Any] = r.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


async def ticks(communicator: WebsocketCommunicator, count: int) -> list[dict[str, Any]]:
    return [await next_tick(communicator) for _ in range(count)]


async def test_two_tabs_share_one_reading_a_tick(r: redis.Redis, staff_client: Client) -> None:
    # The worst case: a reading every tick (the default is one every 10 s).
    meter_for(redis_client()).read_every_s = 0
    first = await open_socket(staff_client, [redis_key()])
    second = await open_socket(staff_client, [redis_key(), redis_summary_key()])
    try:
        await next_tick(first)
        await next_tick(second)
        before = calls(r, "slowlog")
        got = await ticks(first, TICKS)
        others = await ticks(second, TICKS)
        after = calls(r, "slowlog")
        # One SLOWLOG GET a tick for both tabs (a tick may start while the last is read).
        assert after - before <= TICKS + 1, (before, after)
        assert list(got[-1]["fragments"]) == [redis_key()]
        assert sorted(others[-1]["fragments"]) == [redis_key(), redis_summary_key()]
        shared = {t["at_ms"]: t["fragments"][redis_key()] for t in got}
        same = [t for t in others if t["at_ms"] in shared]
        assert same and all(shared[t["at_ms"]] == t["fragments"][redis_key()] for t in same)
        assert 'data-metric="policy"' in got[-1]["fragments"][redis_key()]
    finally:
        await first.disconnect()
        await second.disconnect()
        await ticker.stop()


async def test_the_panel_is_read_every_10_s_not_every_tick(
    r: redis.Redis, staff_client: Client
) -> None:
    meter_for(redis_client()).read_every_s = 10.0
    socket = await open_socket(staff_client, [redis_key()])
    try:
        await next_tick(socket)
        before = (calls(r, "slowlog"), calls(r, "info"))
        await ticks(socket, TICKS)
        slowlog, info = calls(r, "slowlog") - before[0], calls(r, "info") - before[1]
        assert slowlog <= 1, slowlog  # at most one reading in 4 s
        # This test's own INFO commandstats, and the fleet meter's INFO stats on Redis 7.0.
        assert info <= 3, info
    finally:
        await socket.disconnect()
        await ticker.stop()
        await asyncio.sleep(0)
