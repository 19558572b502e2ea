"""The Redis page on a real 3-master cluster: a card per node (INFO and SLOWLOG are per
node), the slow log of every node in one table with the node that logged it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from redis.cluster import RedisCluster

from console.live.redis_panel import meter_for
from console.runtime import redis_client
from tests.support.cluster import cluster as cluster
from tests.support.cluster import rc as rc
from tests.support.console import text
from workers import from_settings
from workers.redis.cluster import LocalCluster

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def console_on_cluster(cluster: LocalCluster, settings: Any) -> Iterator[None]:
    settings.REDIS_URL = cluster.url
    from_settings._client.cache_clear()
    yield
    from_settings._client.cache_clear()


def test_redis_page_shows_each_node(rc: RedisCluster, staff_client: Client) -> None:
    nodes = rc.get_nodes()
    for node in nodes:  # a private cluster: log every command on every node
        rc.config_set("slowlog-log-slower-than", 0, target_nodes=node)
    meter_for(redis_client()).read_every_s = 0
    body = text(staff_client.get("/redis/"))
    for node in nodes:
        assert f'data-node="{node.name}"' in body
    assert body.count('data-metric="used-memory"') == len(nodes)
    assert "<th>Node</th>" in body
    # Every node logs every command (the page's own reads too): the newest 10 over all.
    assert any(f'<td class="mono">{node.name}</td>' in body for node in nodes)
    assert "on each node" in body
    overview = text(staff_client.get("/"))
    assert f"{len(nodes)} nodes, first" in overview
