"""A logical stream split into partition streams, and which partition an event goes to.

``STREAMDESK_PARTITIONS=1`` (the default) keeps the logical stream's own key, as before. With
more, partition ``i`` of ``streamdesk:events`` is ``streamdesk:{events:i}``: the braces are a
Redis Cluster hash tag, and every key made from a partition's name (its dead letters, counters,
waits, the gate records of its events) carries the same tag, so each Lua call of the engine
touches one slot. An event goes to the partition of a stable hash of its ordering key (its
subject by default), so the events of one subject stay in order in one partition.
"""

from __future__ import annotations

import functools
import hashlib
from binascii import crc_hqx
from dataclasses import dataclass

from workers.core.errors import ConfigurationError

MAX_PARTITIONS = 1024
CLUSTER_SLOTS = 16384


def partition_index(ordering_key: str, count: int) -> int:
    """Which of ``count`` partitions ``ordering_key`` belongs to: the same in every process
    and release (Python's ``hash()`` is salted per process, so it cannot be used)."""
    if count == 1:
        return 0
    digest = hashlib.blake2b(ordering_key.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


def cluster_slot(tag: str) -> int:
    """The Redis Cluster slot of a hash tag (CRC16 of it, modulo 16384)."""
    return crc_hqx(tag.encode("utf-8"), 0) % CLUSTER_SLOTS


@functools.cache
def partition_tag(name: str, index: int, count: int) -> str:
    """``events:3``, or ``events:3.<n>`` for the first ``n`` that puts the tag's slot in the
    ``index``-th of ``count`` equal slot ranges: masters usually hold equal contiguous ranges
    (``valkey-cli --cluster create`` makes them so), so the partitions spread over them as
    evenly as they can, where plain CRC16 would put two of three partitions on one master."""
    first, last = index * CLUSTER_SLOTS // count, (index + 1) * CLUSTER_SLOTS // count
    tag, n = f"{name}:{index}", 0
    while not first <= cluster_slot(tag) < last:
        n += 1
        tag = f"{name}:{index}.{n}"
    return tag


def partition_name(stream: str, index: int, count: int) -> str:
    """``streamdesk:events`` -> ``streamdesk:{events:3}`` (or ``{events:3.<n>}``, see
    ``partition_tag``); a name without ``:`` is all tag."""
    head, sep, tail = stream.rpartition(":")
    return f"{head}{sep}{{{partition_tag(tail, index, count)}}}"


@dataclass(frozen=True, slots=True)
class Partitions:
    """The partition streams of one logical stream. ``tagged`` forces hash-tagged names for
    a single partition too: on a cluster, the stream and its gate records must share a slot."""

    stream: str
    count: int = 1
    tagged: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.count <= MAX_PARTITIONS:
            raise ConfigurationError(
                f"partitions must be between 1 and {MAX_PARTITIONS}, got {self.count}"
            )
        if "{" in self.stream or "}" in self.stream:
            raise ConfigurationError(
                f"stream {self.stream!r} has braces: Streamdesk adds the cluster hash tag to "
                "partition names itself; name the logical stream without them"
            )

    @property
    def single(self) -> bool:
        """One partition under the logical stream's own key (the layout before partitions)."""
        return self.count == 1 and not self.tagged

    @property
    def streams(self) -> list[str]:
        if self.single:
            return [self.stream]
        return [partition_name(self.stream, i, self.count) for i in range(self.count)]

    def stream_for(self, ordering_key: str) -> str:
        """The partition stream an event with this ordering key is published to."""
        if self.single:
            return self.stream
        return partition_name(self.stream, partition_index(ordering_key, self.count), self.count)
