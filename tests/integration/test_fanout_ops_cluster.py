"""Operator actions in a named agent's group on a real 3-master cluster: the group's own
counters join each script's keys, in the partition's slot like the stream's."""

from __future__ import annotations

from typing import Any, cast

import pytest
from redis.cluster import RedisCluster

from tests.support.cluster import cluster as cluster
from tests.support.cluster import rc as rc
from tests.support.entries import ALICE, event
from workers import operations
from workers.core.events import decode_envelope, event_hash
from workers.core.fanout import run_hash
from workers.core.keys import Keys
from workers.core.partitions import Partitions

pytestmark = pytest.mark.django_db

KEYS = Keys()
STREAM = Partitions("streamdesk:events", 3, tagged=True).streams[1]
B = "agents:summarise"


def test_dead_letter_and_cancel_in_a_named_group_on_a_cluster(rc: RedisCluster) -> None:
    client = cast(Any, rc)
    rc.xgroup_create(STREAM, B, id="$", mkstream=True)
    ids = [str(rc.xadd(STREAM, {"event": event(i)})) for i in range(3)]
    rc.xreadgroup(B, "gone-worker", {STREAM: ">"})
    rc.sadd(KEYS.streams_index, STREAM)  # where a cancel looks for a run with no row
    out = operations.dead_letter(ALICE, STREAM, B, ids[:2], "bad", client=client, keys=KEYS)
    assert (out.outcome, out.count) == ("ok", 2)
    assert rc.hget(KEYS.group_stats(STREAM, B), "dead_lettered") == "2"
    h = event_hash(decode_envelope(event(2)))
    out = operations.cancel(ALICE, run_hash(h, "summarise"), client=client, keys=KEYS)
    assert (out.outcome, list(out.ids)) == ("ok", [ids[2]])
    assert rc.hget(KEYS.group_stats(STREAM, B), "cancelled") == "1"
    assert rc.xpending(STREAM, B)["pending"] == 0
