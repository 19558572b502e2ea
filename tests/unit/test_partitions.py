"""Partitions: names, the stable choice of partition, and what a partitioned worker runs."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

import pytest
from redis.crc import key_slot

from workers.core.config import EngineConfig
from workers.core.errors import ConfigurationError
from workers.core.keys import Keys, logical_stream, slot_tag
from workers.core.partitions import (
    CLUSTER_SLOTS,
    Partitions,
    cluster_slot,
    partition_index,
    partition_name,
)


def test_one_partition_keeps_the_streams_own_key() -> None:
    layout = Partitions("streamdesk:events")
    assert layout.single and layout.streams == ["streamdesk:events"]
    assert layout.stream_for("anything") == "streamdesk:events"


def test_partition_names_carry_a_hash_tag_and_map_back() -> None:
    layout = Partitions("streamdesk:events", 3)
    assert layout.streams == [
        "streamdesk:{events:0.1}",
        "streamdesk:{events:1.3}",
        "streamdesk:{events:2.4}",
    ]
    assert partition_name("orders", 0, 1) == "{orders:0}"
    for stream in layout.streams:
        assert logical_stream(stream) == "streamdesk:events"
        assert logical_stream(stream + ":dead") == "streamdesk:events:dead"
    # On a cluster one partition is tagged too: the stream and its gate records share a slot.
    assert Partitions("streamdesk:events", 1, tagged=True).streams == ["streamdesk:{events:0}"]
    # A stream that is not a partition is its own logical stream.
    assert logical_stream("streamdesk:events") == "streamdesk:events"
    assert logical_stream("app:{tenant}") == "app:{tenant}"


@pytest.mark.parametrize("count", [2, 3, 5, 8, 64])
def test_partitions_spread_evenly_over_the_slot_space(count: int) -> None:
    """Partition i's slot lies in the i-th of ``count`` equal slot ranges, so a cluster of
    masters with equal contiguous ranges (the usual layout) gets its share of partitions:
    plain ``events:i`` tags put two of three partitions on one of three masters."""
    slots = [cluster_slot(slot_tag(s)) for s in Partitions("app:events", count).streams]
    assert slots == sorted(slots)
    for i, slot in enumerate(slots):
        assert i * CLUSTER_SLOTS // count <= slot < (i + 1) * CLUSTER_SLOTS // count
    # The slot Redis computes is the one the names were chosen for.
    assert cluster_slot("events:0") == 16382 == key_slot(b"streamdesk:{events:0}")


def test_every_key_of_a_partition_lives_in_its_slot() -> None:
    keys, stream = Keys(), Partitions("streamdesk:events", 3).streams[2]
    made = [
        stream + ":dead",
        keys.stats(stream),
        keys.waits(stream, "agents"),
        keys.gate("abc", stream),
        keys.webhook_seen(stream, "d1"),
    ]
    assert {slot_tag(k) for k in made} == {"events:2.4"}
    # Unpartitioned, a gate record keeps the name it always had.
    assert keys.gate("abc", "streamdesk:events") == "streamdesk:idem:abc"
    assert keys.gate("abc") == "streamdesk:idem:abc"


def test_the_partition_of_a_key_is_stable_across_processes() -> None:
    here = [partition_index(f"subject-{i}", 8) for i in range(50)]
    code = (
        "from workers.core.partitions import partition_index;"
        "print([partition_index(f'subject-{i}', 8) for i in range(50)])"
    )
    # A fresh interpreter has another hash() salt: the choice must not depend on it.
    there = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert str(here) == there.strip()
    assert partition_index("anything", 1) == 0


def test_keys_spread_evenly_over_partitions() -> None:
    counts = Counter(partition_index(f"order-{i}", 8) for i in range(8000))
    assert set(counts) == set(range(8))
    assert max(counts.values()) < 1.15 * 1000 and min(counts.values()) > 0.85 * 1000


def test_bad_partition_settings_are_refused_with_the_reason() -> None:
    with pytest.raises(ConfigurationError, match="between 1 and 1024, got 0"):
        EngineConfig(partitions=0)
    with pytest.raises(ConfigurationError, match="has braces"):
        EngineConfig(stream="app:{x}", partitions=4)


def test_a_partitioned_worker_runs_a_loop_per_partition_each_its_own_consumer() -> None:
    config = EngineConfig(consumer="w", concurrency=10, partitions=4)
    loops = config.per_partition()
    assert [c.stream for c in loops] == Partitions("streamdesk:events", 4).streams
    assert [c.consumer for c in loops] == ["w.0", "w.1", "w.2", "w.3"]
    # Each loop may use the process's 10 slots, which they share (engine/slots.py).
    assert {c.concurrency for c in loops} == {10}
    assert EngineConfig(consumer="w").per_partition() == [EngineConfig(consumer="w")]
