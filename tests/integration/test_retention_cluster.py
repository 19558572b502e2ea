"""Retention on a real 3-master cluster: each partition stream and its retention record share
a slot, so the one script trims every partition; the sample reads each record back."""

from __future__ import annotations

import time
from typing import Any, cast

from redis.cluster import RedisCluster

from tests.support.cluster import cluster as cluster
from tests.support.cluster import rc as rc
from workers.core.keys import Keys
from workers.core.partitions import Partitions
from workers.monitor.sample import collect
from workers.retention import Retention, trim

KEYS = Keys()
LAYOUT = Partitions("streamdesk:events", 3, tagged=True)
DAY_MS = 86_400_000


def test_retention_trims_each_partition_in_its_slot(rc: RedisCluster) -> None:
    client = cast(Any, rc)
    start = int(time.time() * 1000) - 10 * DAY_MS
    for stream in [*LAYOUT.streams, "plain:stream"]:  # tagged partitions, and an untagged one
        for i in range(300):
            rc.xadd(stream, {"event": "{}"}, id=f"{start + i}-0")
        rc.xgroup_create(stream, "agents", id="0")
        rc.xreadgroup("agents", "c", {stream: ">"})
        rc.xack(stream, "agents", *[e[0] for e in rc.xrange(stream)])
        done = trim(client, KEYS, stream, Retention(3600), by="test")
        assert done.status == "trimmed" and done.trimmed >= 200, stream
    # The sample reads the partitions (a cluster's streams are partitions: an untagged
    # stream's group keys are in other slots).
    sample = collect(client, KEYS, tuple(LAYOUT.streams))
    for stream in LAYOUT.streams:
        info = sample.stream(stream)
        assert info is not None and info.trim is not None and info.trim.by == "test"
        assert info.first_id == rc.xrange(stream, count=1)[0][0]
