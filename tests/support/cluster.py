"""A private Valkey cluster for one test or module: its own temp folder and free loopback
ports, every node killed at the end whatever the test did."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from redis.cluster import RedisCluster

from tests.support.wait import wait_for
from workers.redis.cluster import LocalCluster
from workers.redis.cluster_node import free_base_port, pid_alive
from workers.redis.connection import connect


def node_pids(cluster: LocalCluster) -> list[int]:
    """The pids in the nodes' pid files that are still alive."""
    return [pid for node in cluster.nodes if (pid := node.pid()) is not None]


def kill_nodes(cluster: LocalCluster) -> None:
    """SIGKILL every node, not SIGTERM: a node asked to stop saves first, and one whose
    folder is gone (or a test broke) can refuse to exit."""
    pids = node_pids(cluster)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not any(pid_alive(pid) for pid in pids), 10, "the cluster's nodes to die")


@contextlib.contextmanager
def private_cluster(masters: int = 3, replicas: int = 0) -> Iterator[LocalCluster]:
    """A started cluster of ``masters`` masters with ``replicas`` replicas each."""
    folder = Path(tempfile.mkdtemp(prefix="streamdesk-test-cluster-"))
    cluster = LocalCluster(folder, masters, replicas, free_base_port(masters * (1 + replicas)))
    try:
        cluster.start()
        yield cluster
    finally:
        kill_nodes(cluster)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    """A 3-master cluster for a test module (import the fixture into the module)."""
    with private_cluster() as started:
        yield started


@pytest.fixture
def rc(cluster: LocalCluster) -> Iterator[RedisCluster]:
    """A cluster client on an empty cluster (every master flushed)."""
    client = cast(RedisCluster, connect(cluster.url))
    client.flushall(target_nodes=RedisCluster.PRIMARIES)
    yield client
    client.close()
