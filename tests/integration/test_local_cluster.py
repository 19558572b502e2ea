"""The local Valkey cluster (``manage.py valkey start --cluster N``): real nodes on free
loopback ports in temp folders, whatever ``REDIS_URL`` says."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading
from collections.abc import Iterator
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from redis.cluster import RedisCluster

from tests.support.cluster import kill_nodes, node_pids, private_cluster
from tests.support.processes import manage
from workers.core.errors import RedisUnavailable
from workers.core.partitions import Partitions
from workers.management.commands.valkey import Command
from workers.redis.cluster import LocalCluster, StartResult
from workers.redis.cluster_node import free_base_port, pid_alive, topology
from workers.redis.connection import aconnect, connect, is_cluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """Three masters, shared by the tests that only read it."""
    with private_cluster() as started:
        yield started


def valkey(*args: str) -> str:
    out = StringIO()
    call_command("valkey", *args, stdout=out)
    return out.getvalue()


def cluster_client(url: str) -> RedisCluster:
    """redis-py's cluster client, as an application would open it from ``REDIS_URL``."""
    client: RedisCluster = RedisCluster.from_url(url, decode_responses=True)  # type: ignore[no-untyped-call]
    return client


def write_keys(url: str, count: int = 30) -> list[str]:
    client = cluster_client(url)
    try:
        keys = [f"key-{i}" for i in range(count)]
        for key in keys:
            client.set(key, key.upper())
        assert [client.get(key) for key in keys] == [key.upper() for key in keys]
    finally:
        client.close()
    return keys


def test_cluster_client_spreads_keys_over_every_master(cluster: LocalCluster) -> None:
    write_keys(cluster.url)
    assert all(node.command("DBSIZE") > 0 for node in cluster.nodes)


def test_cluster_info_is_ok_on_every_node(cluster: LocalCluster) -> None:
    for node in cluster.nodes:
        info = node.cluster_info()
        assert (info["cluster_state"], info["cluster_slots_assigned"]) == ("ok", "16384")


def test_start_again_says_already_running(cluster: LocalCluster) -> None:
    assert cluster.start() == StartResult(False, cluster.url, 0.0)


def test_status_lists_three_masters_and_their_slots(cluster: LocalCluster) -> None:
    status = cluster.status()
    assert status.state == "ok"
    assert [(n.role, n.slots, n.up) for n in status.nodes] == [
        ("master", "0-5460", True),
        ("master", "5461-10921", True),
        ("master", "10922-16383", True),
    ]
    assert [n.pid for n in status.nodes] == node_pids(cluster)


def test_replicas_give_each_master_one_replica() -> None:
    with private_cluster(3, replicas=1) as cluster:
        status = cluster.status()
        assert [n.role for n in status.nodes] == ["master"] * 3 + ["replica"] * 3
        views = topology(cluster.nodes[0])
        followed = sorted(master for _port, _flags, master, _slots in views if master)
        assert followed == cluster.layout.ports[:3]
        write_keys(cluster.url)
        # Every master's writes reach its replica.
        assert all(node.command("WAIT", 1, 2000) == 1 for node in cluster.nodes[:3])


def test_stop_stops_every_node_and_start_brings_the_data_back() -> None:
    with private_cluster() as cluster:
        keys = write_keys(cluster.url)
        pids = node_pids(cluster)
        assert cluster.stop() == 3
        assert not any(pid_alive(pid) for pid in pids)
        assert cluster.status().state == "down"
        assert cluster.start().started
        client = cluster_client(cluster.url)
        try:
            assert [client.get(key) for key in keys] == [key.upper() for key in keys]
        finally:
            client.close()


def test_two_concurrent_starts_start_one_cluster(tmp_path: Path) -> None:
    base = free_base_port(3)
    results: list[bool] = []

    def start() -> None:
        results.append(LocalCluster(tmp_path, base_port=base).start().started)

    threads = [threading.Thread(target=start) for _ in range(2)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert sorted(results) == [False, True]
    finally:
        kill_nodes(LocalCluster(tmp_path, base_port=base))


def test_start_that_times_out_names_a_log_file(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path, base_port=free_base_port(3))
    try:
        # Masters hold their state at fail for 2 s after a start: no cluster is ok by then.
        with pytest.raises(RedisUnavailable, match=r"not ready within 1 s: .*valkey\.log"):
            cluster.start(timeout_s=1)
    finally:
        kill_nodes(cluster)


def test_command_starts_shows_and_stops_a_cluster(settings: Any, tmp_path: Path) -> None:
    settings.STREAMDESK_DATA_DIR = tmp_path
    base = free_base_port(3)
    url_line = f"REDIS_URL=redis://127.0.0.1:{base}/0"
    try:
        out = valkey("start", "--cluster", "3", "--port", str(base))
        assert "cluster started in" in out and url_line in out
        assert (tmp_path / "cluster" / str(base) / "nodes.conf").exists()
        again = valkey("start", "--cluster", "3", "--port", str(base))
        assert "cluster already running" in again and url_line in again
        status = valkey("status", "--cluster").splitlines()
        assert sum(" master " in line and line.endswith("up") for line in status) == 3
        assert status[-1].startswith("cluster_state: ok")
        with pytest.raises(CommandError, match="holds another cluster"):
            valkey("start", "--cluster", "4", "--port", str(base))
        assert valkey("stop", "--cluster").strip() == "stopped 3 nodes"
        assert valkey("stop", "--cluster").strip() == "not running"
    finally:
        kill_nodes(LocalCluster(tmp_path / "cluster", base_port=base))


def test_command_refuses_fewer_than_three_masters() -> None:
    with pytest.raises(CommandError, match="at least 3 masters"):
        valkey("start", "--cluster", "2")


def test_command_refuses_replicas_without_cluster() -> None:
    with pytest.raises(CommandError, match="--replicas is for a cluster"):
        valkey("start", "--replicas", "1")


@contextlib.contextmanager
def taken_port() -> Iterator[int]:
    """A free base port for 3 nodes whose second port this test holds. Another test's
    server may take a port found free before it is bound here: then look again."""
    for _ in range(20):
        base = free_base_port(3)
        taken = socket.socket()
        try:
            taken.bind(("127.0.0.1", base + 1))
        except OSError:
            taken.close()
            continue
        with taken:
            taken.listen()
            yield base
        return
    raise AssertionError("no free port to hold in 20 tries")


def test_command_refuses_taken_ports(settings: Any, tmp_path: Path) -> None:
    settings.STREAMDESK_DATA_DIR = tmp_path
    with taken_port() as base, pytest.raises(CommandError, match=f"port {base + 1} is taken"):
        valkey("start", "--cluster", "3", "--port", str(base))
    assert not list((tmp_path / "cluster").glob("*/valkey.pid"))


def test_status_without_a_cluster_says_so(settings: Any, tmp_path: Path) -> None:
    settings.STREAMDESK_DATA_DIR = tmp_path
    assert valkey("status", "--cluster").strip() == f"no cluster in {tmp_path / 'cluster'}"


def test_help_documents_the_cluster_flags() -> None:
    text = Command().create_parser("manage.py", "valkey").format_help()
    assert "--cluster [N]" in text and "--replicas N" in text and "not for production" in text


def test_a_cluster_node_gives_a_cluster_client(cluster: LocalCluster) -> None:
    client = connect(cluster.url)
    assert is_cluster(client) and len(client.get_primaries()) == 3  # type: ignore[attr-defined]
    client.close()

    async def engine() -> int:
        aclient = await aconnect(cluster.url)
        assert is_cluster(aclient)
        primaries = len(aclient.get_primaries())  # type: ignore[attr-defined]
        await aclient.aclose()
        return primaries

    assert asyncio.run(engine()) == 3


def test_a_command_on_a_cluster_reads_the_configured_partitions(cluster: LocalCluster) -> None:
    env = {**os.environ, "REDIS_URL": cluster.url, "DEBUG": "1", "STREAMDESK_PARTITIONS": "3"}
    result = manage(env, "streams")
    assert result.returncode == 0, result.stderr
    names = [line.split()[0] for line in result.stdout.splitlines() if "length" in line]
    assert names == Partitions("streamdesk:events", 3, tagged=True).streams
