"""What a pipeline needs on a real cluster (workers/redis/pipelines.py): a script and the
clock queued on a cluster pipeline, and a stale slot map (as after a failover) followed
by reading it again, for the webhook's publish and the durable publish alike."""

from __future__ import annotations

from typing import Any, cast

import pytest
import redis
from redis.cluster import RedisCluster

from tests.support.cluster import cluster as cluster
from tests.support.cluster import rc as rc
from workers.core.errors import NotReplicated
from workers.redis.bus import xadd_routed
from workers.redis.connection import connect
from workers.redis.pipelines import on_master, queue_script, queues_time, server_ms
from workers.redis.replication import Durability

KEY = "streamdesk:{events:0}"


def stale_map(rc: RedisCluster, key: str) -> None:
    """The client believes another master serves ``key``'s slot: it answers MOVED."""
    slot = rc.keyslot(key)
    owner = rc.get_node_from_key(key)
    other = next(n for n in rc.get_primaries() if n.name != owner.name)
    rc.nodes_manager.slots_cache[slot] = [other]


def test_a_script_and_the_clock_go_through_a_cluster_pipeline(rc: RedisCluster) -> None:
    script = rc.register_script("return redis.call('INCRBY', KEYS[1], ARGV[1])")
    with rc.pipeline(transaction=False) as pipe:
        assert not queues_time(pipe)  # a cluster pipeline cannot route TIME
        queue_script(pipe, script, ["{a}:n"], [2])
        queue_script(pipe, script, ["{b}:n"], [3])
        assert pipe.execute() == [2, 3]
    plain = cast(redis.Redis, connect(f"redis://127.0.0.1:{rc.get_primaries()[0].port}/0"))
    assert abs(server_ms(cast(Any, rc)) - server_ms(plain, plain.time())) < 5_000


def test_on_master_reads_the_slot_map_again_after_a_moved(rc: RedisCluster) -> None:
    stale_map(rc, KEY)
    calls: list[str] = []

    def run(master: redis.Redis) -> Any:
        calls.append(str(master.connection_pool.connection_kwargs["port"]))
        return master.xadd(KEY, {"event": "{}"})

    entry_id = on_master(cast(Any, rc), KEY, run)
    assert len(calls) == 2 and calls[0] != calls[1]
    assert [i for i, _ in rc.xrange(KEY)] == [entry_id]


def test_a_durable_publish_reads_the_slot_map_again_after_a_moved(rc: RedisCluster) -> None:
    stale_map(rc, KEY)
    # Past the MOVED, the write lands; no replica here confirms it, which is said.
    with pytest.raises(NotReplicated):
        xadd_routed(cast(Any, rc), [(KEY, "{}")], Durability(replicas=1, timeout_ms=50))
    assert rc.xlen(KEY) == 1
