"""The quiet recorder on a real 3-master cluster: its one round trip reads streams (and their
counters) in different slots through the cluster pipeline, and its write, stamped with the
server's clock inside the script, lands in the ``{history}`` slot."""

from __future__ import annotations

import json
import time
from typing import Any, cast

from redis.cluster import RedisCluster

from tests.support.cluster import cluster as cluster
from tests.support.cluster import rc as rc
from workers.core.keys import Keys
from workers.core.partitions import Partitions
from workers.monitor.history import to_point
from workers.monitor.recorder import Cadence, Recorder
from workers.monitor.sample import collect

KEYS = Keys()
LAYOUT = Partitions("streamdesk:events", 3, tagged=True)


def test_the_quiet_recorder_reads_every_slot_and_writes_only_changes(rc: RedisCluster) -> None:
    client = cast(Any, rc)
    for i, stream in enumerate(LAYOUT.streams):
        rc.xadd(stream, {"n": str(i)})
        rc.xgroup_create(stream, "agents", id="0")
        rc.hset(KEYS.stats(stream), "processed", i)
        rc.sadd(KEYS.streams_index, stream)
    # A lease renewed and names read again at the next tick: the whole pipeline on a cluster.
    cadence = Cadence(lease_ttl_ms=2_000, names_s=0.5)
    recorder = Recorder(client, KEYS, "test-recorder", cadence)
    assert recorder.tick() == 3
    (first,) = [json.loads(m) for m in rc.zrange(KEYS.history("1s"), 0, -1)]
    assert first["s"] == to_point(collect(client, KEYS))["s"]
    time.sleep(1.0)
    assert recorder.tick() == 0  # nothing changed in any slot
    assert int(rc.pttl(KEYS.history_recorder)) > 1_500  # renewed
    rc.xadd(LAYOUT.streams[2], {"n": "again"})
    assert (recorder.tick() or 0) >= 1  # a write (more sets if a bucket turned)
    *_, changed = [json.loads(m) for m in rc.zrange(KEYS.history("1s"), 0, -1)]
    assert changed["s"][LAYOUT.streams[2]]["n"] == 2
    assert changed["s"] == to_point(collect(client, KEYS))["s"]
