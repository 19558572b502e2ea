"""A snapshot of streams, groups and counters from summaries only (no scans)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, cast

import redis

from workers import stats
from workers.keys import Keys, dead_stream, is_dead_stream


@dataclass(frozen=True, slots=True)
class GroupStatus:
    name: str
    consumers: int
    pending: int
    # None when Redis cannot tell (entries deleted inside the unread range, or Redis < 7).
    lag: int | None


@dataclass(frozen=True, slots=True)
class StreamStatus:
    name: str
    length: int
    dead_letters: int
    groups: list[GroupStatus] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Snapshot:
    streams: list[StreamStatus]
    counters: dict[str, int]

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"streams": [asdict(s) for s in self.streams]}
        out.update(self.counters)
        return out


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def stream_names(client: redis.Redis, keys: Keys, extra: list[str]) -> list[str]:
    names = set(stats.known_streams(client, keys)) | set(extra)
    return sorted(n for n in names if not is_dead_stream(n))


def snapshot(client: redis.Redis, keys: Keys, extra_streams: list[str]) -> Snapshot:
    names = stream_names(client, keys, extra_streams)
    with client.pipeline(transaction=False) as pipe:
        for name in names:
            pipe.exists(name)
            pipe.xlen(name)
            pipe.xlen(dead_stream(name))
        replies = pipe.execute()
    streams: list[StreamStatus] = []
    for i, name in enumerate(names):
        exists, length, dead = replies[3 * i : 3 * i + 3]
        groups = _groups(client, name) if exists else []
        streams.append(StreamStatus(name, int(length), int(dead), groups))
    per_stream = stats.read_counts(client, keys, names)
    totals = {c: sum(counts[c] for counts in per_stream.values()) for c in stats.COUNTERS}
    return Snapshot(streams, totals)


def _groups(client: redis.Redis, stream: str) -> list[GroupStatus]:
    try:
        rows = cast(list[dict[str, Any]], client.xinfo_groups(stream))
    except redis.ResponseError:
        return []
    return [
        GroupStatus(
            str(r["name"]), int(r["consumers"]), int(r["pending"]), _int_or_none(r.get("lag"))
        )
        for r in rows
    ]
