"""The fleet's cost from a real server's counters: a window counts what the connections
named as workers' sent and nothing else, a reconnect is no spike, and a server without
per-connection counts (Redis 7.0: ``REDIS_URL=redis://127.0.0.1:6379/9``) gives its own
total, labelled as such."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from console.live.fleet_cost import FleetCost, FleetCostMeter
from workers.redis.client_names import worker_client_name
from workers.redis.connection import connect

pytestmark = pytest.mark.serial  # counts the whole server's commands or clients

NAME = worker_client_name("fleet-test")


def counts_per_connection(r: redis.Redis) -> bool:
    return "tot-cmds" in r.client_list()[0]


@pytest.fixture
def worker(redis_url: str) -> Iterator[redis.Redis]:
    client = connect(redis_url, client_name=NAME)
    yield client
    client.close()


@pytest.fixture
def stranger(redis_url: str) -> Iterator[redis.Redis]:
    """A connection with no name: not the fleet's."""
    client = connect(redis_url)
    yield client
    client.close()


def pings(client: redis.Redis, n: int) -> None:
    for _ in range(n):
        client.ping()


def sent(found: FleetCost) -> int:
    assert found.commands_s is not None and found.window_s is not None, found
    return round(found.commands_s * found.window_s)


def test_fleet_cost_counts_only_the_workers_connections(
    r: redis.Redis, worker: redis.Redis, stranger: redis.Redis
) -> None:
    if not counts_per_connection(r):
        pytest.skip("this server has no tot-cmds in CLIENT LIST (Redis 7.0)")
    meter = FleetCostMeter(read_every_s=0)
    worker.ping()
    first = meter.current(r)
    assert first.measuring and first.connections is not None and first.connections >= 1
    pings(worker, 50)
    pings(stranger, 100)
    found = meter.current(r)
    assert found.workers_only
    assert sent(found) == 50


def test_fleet_cost_a_reconnected_connection_is_no_spike(
    r: redis.Redis, worker: redis.Redis
) -> None:
    if not counts_per_connection(r):
        pytest.skip("this server has no tot-cmds in CLIENT LIST (Redis 7.0)")
    meter = FleetCostMeter(read_every_s=0)
    pings(worker, 500)
    meter.current(r)
    worker.connection_pool.disconnect()  # the next command reconnects: a new id
    pings(worker, 30)
    assert sent(meter.current(r)) == 0  # 530 in its life, none of it before the window
    pings(worker, 20)
    assert sent(meter.current(r)) == 20


def test_fleet_cost_without_tot_cmds_is_the_servers_total(
    r: redis.Redis, worker: redis.Redis, stranger: redis.Redis
) -> None:
    if counts_per_connection(r):
        pytest.skip("this server counts commands per connection (run on Redis 7.0)")
    meter = FleetCostMeter(read_every_s=0)
    worker.ping()
    assert meter.current(r).measuring
    pings(stranger, 100)
    found = meter.current(r)
    assert not found.workers_only
    assert found.connections is not None and found.connections >= 1
    # Every client's commands: the stranger's 100, the reading's own CLIENT LIST and INFO.
    assert sent(found) >= 100


def test_fleet_cost_reads_at_most_once_a_window(r: redis.Redis, worker: redis.Redis) -> None:
    meter = FleetCostMeter(read_every_s=3600)
    first = meter.current(r)
    pings(worker, 10)
    assert meter.current(r) is first


def test_fleet_cost_refused_client_list_is_said_not_raised(r: redis.Redis, redis_url: str) -> None:
    user, password = "fleet-cost-no-client", "fleet-cost-pw"
    r.acl_setuser(user, enabled=True, passwords=[f"+{password}"], commands=["+@all", "-client"])
    try:
        limited = redis.Redis.from_url(redis_url, username=user, password=password)
        meter = FleetCostMeter(read_every_s=3600)
        found = meter.current(limited)
        again = meter.current(limited)  # not tried again before the window is over
        limited.close()
    finally:
        r.acl_deluser(user)
    assert "cannot be read" in found.error and not found.measuring
    assert again is found
