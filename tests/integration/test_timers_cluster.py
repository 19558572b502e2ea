"""Timers on a real 3-master cluster: delayed events held in each partition's slot and moved
into it by one script, a schedule's tick published once, and a candidate woken through the
cluster's pub/sub."""

from __future__ import annotations

import functools
import time
from typing import cast

import redis
from redis.cluster import RedisCluster

from tests.support.cluster import LocalCluster
from tests.support.cluster import cluster as cluster
from tests.support.cluster import rc as rc
from tests.support.wait import wait_for
from workers.core.keys import Keys
from workers.core.partitions import Partitions
from workers.producers.publish import build_envelope, hold_envelopes, scheduled_entry
from workers.redis.connection import connect
from workers.timers import Due, Timer, make, start_timer

KEYS = Keys()
LAYOUT = Partitions("streamdesk:events", 3, tagged=True)


def entries(rc: RedisCluster) -> list[str]:
    return [f["event"] for s in LAYOUT.streams for _, f in rc.xrange(s)]


def test_delayed_events_move_into_their_partitions_once(rc: RedisCluster) -> None:
    client = cast(redis.Redis, rc)
    held = [build_envelope("demo.echo", {"n": n}, subject=f"s{n}") for n in range(30)]
    hold_envelopes(client, LAYOUT, held, Due(delay_ms=1), key_names=KEYS)
    time.sleep(0.01)
    for name in ("a", "b"):
        Timer(client, KEYS, [], functools.partial(scheduled_entry, client), name).work()
    assert sorted(entries(rc)) == sorted(e.to_json() for e in held)
    assert all(rc.zcard(KEYS.delayed(s)) == 0 for s in LAYOUT.streams)
    assert len({s for s in LAYOUT.streams if rc.xlen(s)}) > 1  # spread over partitions


def test_a_tick_is_published_once_on_a_cluster(rc: RedisCluster) -> None:
    client = cast(redis.Redis, rc)
    every_minute = make("* * * * *", type="demo.echo", name="minutely")
    for name in ("a", "b"):
        Timer(client, KEYS, [every_minute], functools.partial(scheduled_entry, client), name).work()
    stream, _ = scheduled_entry(client, every_minute, 0)
    assert rc.xlen(stream) == 1


def test_a_candidate_is_woken_on_a_cluster(rc: RedisCluster, cluster: LocalCluster) -> None:
    client = cast(redis.Redis, rc)
    candidate = start_timer(
        lambda: connect(cluster.url), KEYS, [], functools.partial(scheduled_entry, client), "test"
    )
    try:
        time.sleep(0.5)  # subscribed, looked, dormant
        held = [build_envelope("demo.echo", {"n": 1})]
        hold_envelopes(client, LAYOUT, held, Due(delay_ms=300), key_names=KEYS)
        wait_for(lambda: len(entries(rc)) == 1, timeout_s=3, what="the delayed event")
    finally:
        candidate.stop()
