"""The Redis page's parsing and warnings, from real servers' replies (tests/unit/replies/:
``redis-cli info`` and ``SLOWLOG GET 4`` of Valkey 8.1 and Redis 7.0.15), with no server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from redis._parsers.helpers import parse_info

from console.live.redis_info import (
    NodeInfo,
    eviction_warning,
    memory_warning,
    node_info,
    persistence_warning,
    slow_entries,
)
from console.live.redis_panel import RedisReading, build, resolution_for
from console.templatetags.streamdesk_redis import micros, whose
from workers.monitor.history import MINUTE, SECOND

REPLIES = Path(__file__).parent / "replies"
GiB = 1024**3


def info_of(server: str) -> dict[str, Any]:
    return dict(parse_info((REPLIES / f"{server}_info.txt").read_text()))


def node(server: str = "valkey8", **fields: Any) -> NodeInfo:
    return node_info(info_of(server) | fields)


def test_node_info_valkey_8() -> None:
    info = node("valkey8")
    assert info.server == "Valkey 8.1.8"
    assert info.role == "master"
    assert info.used_memory == 1_216_200
    assert (info.maxmemory, info.policy, info.used_pct) == (0, "noeviction", None)
    assert info.system_memory > GiB
    assert info.aof_enabled and info.aof_rewrite_status == "ok" and info.aof_write_status == "ok"
    assert info.rdb_saves == 0 and info.rdb_bgsave_status == "ok"
    assert info.changes_since_save == 4
    assert (info.connected_clients, info.blocked_clients, info.maxclients) == (1, 0, 10_000)
    assert (info.keys, info.keys_with_ttl) == (2, 0)
    assert info.ops_per_s >= 0


def test_keys_are_summed_over_every_database() -> None:
    info = node_info({"db0": {"keys": 5, "expires": 2}, "db9": {"keys": 1, "expires": 1}})
    assert (info.keys, info.keys_with_ttl) == (6, 3)


def test_node_info_redis_7_0() -> None:
    info = node("redis70")
    assert info.server == "Redis 7.0.15"
    assert not info.aof_enabled
    assert info.rdb_last_save_s == 1796569686
    assert info.evicted_keys == 0 and info.expired_keys == 0


def test_node_info_without_fields_is_zeros_not_an_error() -> None:
    info = node_info({"redis_version": "6.2.14", "maxmemory": "not a number"})
    assert (info.server, info.maxmemory, info.rdb_saves) == ("Redis 6.2.14", 0, None)


@pytest.mark.parametrize("server", ["valkey8", "redis70"])
def test_slow_entries_from_a_real_reply(server: str) -> None:
    entries = slow_entries(json.loads((REPLIES / f"{server}_slowlog.json").read_text()))
    assert len(entries) == 4
    newest = entries[0]
    assert newest.command.startswith("XADD streamdesk:events * event yyy")
    assert newest.command.endswith("…")  # the server cut the argument; we cut the line
    assert newest.client_name == "streamdesk-console"
    assert newest.client_addr.startswith("127.0.0.1:")
    assert newest.at_s > 1_700_000_000 and newest.duration_us > 0
    assert [e.id for e in entries] == sorted((e.id for e in entries), reverse=True)


def test_slow_entries_before_redis_4_have_no_client() -> None:
    (entry,) = slow_entries([[7, 1700000000, 12_500, ["XADD", "s", "*", "event", "{}"]]])
    assert (entry.command, entry.client_addr, entry.client_name) == ("XADD s * event {}", "", "")


def test_slow_entries_skip_what_is_not_an_entry() -> None:
    assert slow_entries([["garbage"], [1, 2, 3, ["PING"], "a", "b"]])[0].command == "PING"
    assert slow_entries("ERR") == []


@pytest.mark.parametrize("policy", ["allkeys-lru", "allkeys-lfu", "allkeys-random"])
def test_allkeys_policies_can_drop_streams(policy: str) -> None:
    warning = eviction_warning(node(maxmemory=GiB, maxmemory_policy=policy))
    assert warning is not None and warning.level == "bad"
    assert f"maxmemory-policy {policy} can evict any key" in warning.text
    assert "a stream with its consumer groups and pending entries" in warning.text
    assert "gate records" in warning.text and "noeviction" in warning.text


@pytest.mark.parametrize(
    "policy", ["volatile-lru", "volatile-lfu", "volatile-ttl", "volatile-random"]
)
def test_volatile_policies_can_drop_gate_records(policy: str) -> None:
    warning = eviction_warning(node(maxmemory=GiB, maxmemory_policy=policy))
    assert warning is not None and warning.level == "warn"
    assert "keys with a TTL" in warning.text
    assert "gate (idempotency) records" in warning.text
    assert "an event can run twice" in warning.text


def test_a_volatile_policy_that_evicted_needs_attention() -> None:
    warning = eviction_warning(node(maxmemory=GiB, maxmemory_policy="volatile-lru", evicted_keys=3))
    assert warning is not None and warning.level == "bad"
    assert "3 keys were evicted since the server started" in warning.text
    one = eviction_warning(node(maxmemory=GiB, maxmemory_policy="allkeys-lru", evicted_keys=1))
    assert one is not None and "1 key was evicted since" in one.text


def test_noeviction_is_not_a_warning() -> None:
    assert eviction_warning(node(maxmemory=GiB, maxmemory_policy="noeviction")) is None


def test_no_memory_limit_evicts_nothing_whatever_the_policy() -> None:
    assert eviction_warning(node(maxmemory=0, maxmemory_policy="allkeys-lru")) is None
    assert memory_warning(node(maxmemory=0, used_memory=50 * GiB)) is None


def test_memory_near_the_limit_says_what_happens_there() -> None:
    full = memory_warning(node(maxmemory=GiB, used_memory=int(0.95 * GiB)))
    assert full is not None and "95% of maxmemory" in full.text and "fail with OOM" in full.text
    assert memory_warning(node(maxmemory=GiB, used_memory=GiB // 2)) is None


def test_a_failed_save_or_rewrite_is_a_warning() -> None:
    assert persistence_warning(node()) is None
    bad = persistence_warning(node(rdb_last_bgsave_status="err", aof_last_write_status="err"))
    assert bad is not None
    assert "the last RDB save (bgsave) and the last AOF write failed" in bad.text
    # The AOF's statuses mean nothing while it is off.
    assert persistence_warning(node("redis70", aof_last_write_status="err")) is None


def test_the_panel_merges_every_nodes_slow_log_newest_first() -> None:
    reading = RedisReading(
        nodes=[
            _reading("a:1", [[1, 100, 5, ["GET", "x"], "c", "streamdesk-console"]]),
            _reading("b:2", [[9, 200, 7, ["SET", "x", "1"], "c", "streamdesk-worker:w-1"]]),
        ],
        points=[],
    )
    from workers.retention import Retention

    panel = build(reading, [], Retention(604_800), at_ms=300_000, cluster=True)
    assert [(e.node, e.command) for e in panel.slowlog] == [("b:2", "SET x 1"), ("a:1", "GET x")]
    assert panel.warnings == [] and panel.level == "ok"


def _reading(name: str, slow: list[Any]) -> Any:
    from console.live.redis_panel import NodeReading

    return NodeReading(name, node(), "", slow_entries(slow, name), "")


def test_the_growth_window_reads_few_points() -> None:
    assert resolution_for(15 * 60_000) == MINUTE
    assert resolution_for(20_000) == SECOND


def test_units_and_whose_connection() -> None:
    assert (micros(850), micros(12_345), micros(1_250_000)) == ("850 µs", "12.3 ms", "1.25 s")
    assert whose("streamdesk-worker:host-1-0") == "a worker"
    assert whose("streamdesk-console") == "the console"
    assert whose("") == "unnamed: not Streamdesk"
