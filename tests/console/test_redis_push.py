"""The Redis panel travels in the sampler's tick: rendered once for every open tab, so two
browsers cost Redis no more than one (counted by the server itself, INFO commandstats)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from channels.testing import WebsocketCommunicator
from django.test import Client

from console.live import ticker
from console.live.fleet_cost import meter_for as fleet_meter
from console.live.realtime import redis_key, redis_summary_key
from console.live.redis_panel import meter_for
from console.runtime import redis_client
from tests.support.console import next_tick, open_socket
from workers import from_settings

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio, pytest.mark.serial]

TICKS = 4


@pytest.fixture(autouse=True)
def fresh_console_client(redis_url: str) -> Iterator[None]:
    """A console client of its own: the meters this test sets to read every tick go with it."""
    from_settings._client.cache_clear()
    yield
    from_settings._client.cache_clear()


def calls(r: redis.Redis, command: str) -> int:
    """Calls of ``command`` and its subcommands (Redis 7 counts ``slowlog|get`` apart)."""
    stats: dict[str, Any] = r.info("commandstats")
    found = [
        int(v["calls"])
        for k, v in stats.items()
        if k == f"cmdstat_{command}" or k.startswith(f"cmdstat_{command}|")
    ]
    assert found, f"the server has not counted {command} yet"
    return sum(found)


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
        # Each tick read (the count sees them), once for both tabs (two tabs would be 2x).
        assert TICKS - 1 <= after - before <= TICKS + 1, (before, after)
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


async def server_commands_per_tick(r: redis.Redis, socket: WebsocketCommunicator) -> float:
    """Every command the server ran per tick, over TICKS ticks (less this count's own INFO)."""
    before = int(r.info("stats")["total_commands_processed"])
    await ticks(socket, TICKS)
    return (int(r.info("stats")["total_commands_processed"]) - before - 1) / TICKS


async def test_a_second_tab_adds_no_command_a_tick(r: redis.Redis, staff_client: Client) -> None:
    """The whole server's count, the sampler's every read included (each 10 s reading
    made every tick, so each tick costs the same)."""
    meter_for(redis_client()).read_every_s = 0
    fleet_meter(redis_client()).read_every_s = 0
    first = await open_socket(staff_client, [redis_key(), redis_summary_key(), "overview"])
    try:
        await ticks(first, 2)
        alone = await server_commands_per_tick(r, first)
        second = await open_socket(staff_client, [redis_key(), redis_summary_key(), "overview"])
        try:
            await ticks(first, 2)
            together = await server_commands_per_tick(r, first)
        finally:
            await second.disconnect()
        print(f"server commands a tick: {alone:.1f} with one tab, {together:.1f} with two")
        assert together <= alone + 1, (alone, together)
    finally:
        await first.disconnect()
        await ticker.stop()
