"""A logical stream split into partition streams, and which partition an event goes to.

``STREAMDESK_PARTITIONS=1`` (the default) keeps the logical stream's own key, as before. With
more, partition ``i`` of ``streamdesk:events`` is ``streamdesk:{events:i}``: the braces are a
Redis Cluster hash tag, and every key made from a partition's name (its dead letters, counters,
waits, the gate records of its events) carries the same tag, so each Lua call of the engine
touches one slot. An event goes to the partition of a stable hash of its ordering key (its
subject by default), so the events of one subject stay in order in one partition.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from workers.core.errors import ConfigurationError
from workers.core.keys import slot_tag

MAX_PARTITIONS = 1024


def partition_index(ordering_key: str, count: int) -> int:
    """Which of ``count`` partitions ``ordering_key`` belongs to: the same in every process
    and release (Python's ``hash()`` is salted per process, so it cannot be used)."""
    if count == 1:
        return 0
    digest = hashlib.blake2b(ordering_key.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % count


def partition_name(stream: str, index: int) -> str:
    """``streamdesk:events`` -> ``streamdesk:{events:3}``; a name without ``:`` is all tag."""
    head, sep, tail = stream.rpartition(":")
    return f"{head}{sep}{{{tail}:{index}}}"


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
        return [partition_name(self.stream, i) for i in range(self.count)]

    def stream_for(self, ordering_key: str) -> str:
        """The partition stream an event with this ordering key is published to."""
        if self.single:
            return self.stream
        return partition_name(self.stream, partition_index(ordering_key, self.count))

    def owns(self, stream: str) -> bool:
        return stream in self.streams


def logical_stream(stream: str) -> str:
    """The logical stream a partition stream belongs to (a stream without a tag is its own):
    ``streamdesk:{events:3}`` -> ``streamdesk:events``."""
    tag = slot_tag(stream)
    if tag == stream:
        return stream
    name, sep, index = tag.rpartition(":")
    if not sep or not index.isdigit():
        return stream
    start = stream.find("{")
    return stream[:start] + name + stream[start + len(tag) + 2 :]
