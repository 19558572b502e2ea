"""The Waiting page, its API and an answer on a real 3-master cluster with 3 partitions: the
page's reads and the answer's script go to the node of the partition the run waits on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from redis.cluster import RedisCluster

from tests.support.cluster import cluster as cluster
from tests.support.cluster import rc as rc
from tests.support.waits import run_hash, wait_for
from workers import from_settings
from workers.core.partitions import Partitions
from workers.models import AuditRecord
from workers.redis.cluster import LocalCluster

pytestmark = pytest.mark.django_db(transaction=True)
LAYOUT = Partitions("streamdesk:events", 3, tagged=True)


@pytest.fixture(autouse=True)
def console_on_cluster(cluster: LocalCluster, settings: Any) -> Iterator[None]:
    settings.REDIS_URL = cluster.url
    settings.STREAMDESK = {**settings.STREAMDESK, "partitions": 3}
    from_settings._client.cache_clear()
    yield
    from_settings._client.cache_clear()


def test_waits_on_a_cluster_listed_and_answered(
    cluster: LocalCluster, rc: RedisCluster, operator_client: Client
) -> None:
    for n, stream in enumerate(LAYOUT.streams):
        rc.delete(stream)
        # No timeout: Waits._wake_timer PUBLISHes in a pipeline, which a cluster client
        # refuses (RedisClusterException): reported to the engine's side, not tested here.
        wait_for(cluster.url, run_hash(n), {"data.n": n}, stream=stream, timeout_ms=0)
    try:
        page = operator_client.get("/waits/").content.decode()
        assert "(3 on all partitions)" in page
        assert operator_client.get("/api/waits/").json()["total"] == 3
        url = f"/waits/{run_hash(2)}/answer/"
        answered = operator_client.post(url, {"approved": "true"}, headers={"HX-Request": "true"})
        assert answered.status_code == 200, answered.content
        [(_, fields)] = rc.xrange(LAYOUT.streams[2])
        assert json.loads(fields["event"])["data"] == {"n": 2, "approved": True, "by": "ops"}
        assert AuditRecord.objects.get().stream == LAYOUT.streams[2]
    finally:
        for n, stream in enumerate(LAYOUT.streams):
            rc.delete(stream, f"{{{stream}}}:waiting", f"{{{stream}}}:wait:{run_hash(n)}")
