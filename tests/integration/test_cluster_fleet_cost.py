"""The fleet's cost on a real 3-master cluster: the cluster clients (sync and asyncio) name
every node's connection, and a reading adds up the worker connections of every node."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import cast

import pytest
from redis.cluster import RedisCluster

from console.live.fleet_cost import FleetCostMeter
from tests.support.cluster import cluster as cluster
from tests.support.cluster import rc as rc
from workers.redis.client_names import worker_client_name
from workers.redis.cluster import LocalCluster
from workers.redis.connection import aconnect, connect

NAME = worker_client_name("cluster-test")


def named(rc: RedisCluster, name: str) -> int:
    """Connections called ``name`` over every node."""
    found = 0
    for node in rc.get_nodes():  # type: ignore[no-untyped-call]
        found += sum(1 for c in rc.client_list(target_nodes=node) if c["name"] == name)
    return found


@pytest.fixture
def worker(cluster: LocalCluster) -> Iterator[RedisCluster]:
    client = cast(RedisCluster, connect(cluster.url, client_name=NAME))
    yield client
    client.close()


def test_cluster_client_names_every_nodes_connection(
    rc: RedisCluster, worker: RedisCluster
) -> None:
    for n in range(30):  # keys over every master's slots
        worker.set(f"k{n}", n)
    assert named(rc, NAME) == 3


def test_async_cluster_client_names_its_connections(
    rc: RedisCluster, cluster: LocalCluster
) -> None:
    name = worker_client_name("async-cluster-test")

    async def connected() -> int:
        client = await aconnect(cluster.url, client_name=name)
        try:
            for n in range(30):
                await client.set(f"k{n}", n)
            return named(rc, name)
        finally:
            await client.aclose()

    assert asyncio.run(connected()) == 3


def test_fleet_cost_adds_up_every_nodes_worker_connections(
    rc: RedisCluster, worker: RedisCluster
) -> None:
    if "tot-cmds" not in rc.client_list(target_nodes=rc.get_random_node())[0]:
        pytest.skip("this server has no tot-cmds in CLIENT LIST")
    for n in range(30):
        worker.set(f"k{n}", n)
    meter = FleetCostMeter(read_every_s=0)
    assert meter.current(rc).measuring
    for n in range(30):
        worker.get(f"k{n}")
    found = meter.current(rc)
    # An earlier test's closed cluster client may still hold its idle connections (redis-py
    # leaves them to the garbage collector): they are counted, and send nothing.
    assert found.workers_only and found.connections is not None and found.connections >= 3
    assert found.commands_s is not None and found.window_s is not None
    assert round(found.commands_s * found.window_s) == 30
