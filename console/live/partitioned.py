"""A partitioned stream's totals on the overview: its partitions' rows added up, the worst
health first (docs/scaling.md). Each partition keeps its own card and pages; this is the
one place that reads them as one stream."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

from console.live.health import Health, Level
from console.live.overview import StreamRow
from workers.core.keys import logical_stream

N = TypeVar("N", int, float)
SEVERITY: dict[Level, int] = {"ok": 0, "warn": 1, "bad": 2}


@dataclass(frozen=True, slots=True)
class PartitionRow:
    row: StreamRow
    pending: int
    # Undelivered entries over its groups; None when Redis cannot tell for one of them.
    lag: int | None


@dataclass(frozen=True, slots=True)
class PartitionedStream:
    name: str  # the logical stream, ``streamdesk:events``
    partitions: list[PartitionRow]
    health: Health

    @property
    def length(self) -> int:
        return sum(p.row.info.length for p in self.partitions)

    @property
    def dead_letters(self) -> int:
        return sum(p.row.info.dead_letters for p in self.partitions)

    @property
    def processed(self) -> int:
        return sum(p.row.info.counters.get("processed", 0) for p in self.partitions)

    @property
    def processed_s(self) -> float:
        return sum(p.row.rates.processed_s for p in self.partitions)

    @property
    def failed_s(self) -> float:
        return sum(p.row.rates.failed_s for p in self.partitions)

    @property
    def added_s(self) -> float | None:
        return known_sum([p.row.rates.added_s for p in self.partitions])

    @property
    def pending(self) -> int:
        return sum(p.pending for p in self.partitions)

    @property
    def lag(self) -> int | None:
        return known_sum([p.lag for p in self.partitions])


def known_sum(values: Sequence[N | None]) -> N | None:
    """The sum, or None when one of the values is unknown: a total must not pass for known."""
    known = [v for v in values if v is not None]
    return sum(known) if len(known) == len(values) else None


def partition_row(row: StreamRow) -> PartitionRow:
    lag = known_sum([g.info.lag for g in row.groups])
    return PartitionRow(row, sum(g.info.pending for g in row.groups), lag)


def worst(rows: list[StreamRow]) -> Health:
    """The worst partition's level; every partition's reasons, each saying which."""
    levels: list[Level] = [r.health.level for r in rows]
    level: Level = max(levels, key=SEVERITY.__getitem__, default="ok")
    reasons = [f"{r.info.name}: {why}" for r in rows for why in r.health.reasons]
    return Health(level, reasons)


def partitioned(rows: list[StreamRow]) -> list[PartitionedStream]:
    """Every logical stream that has partition streams among ``rows``, in name order."""
    found: dict[str, list[StreamRow]] = {}
    for row in rows:
        name = logical_stream(row.info.name)
        if name != row.info.name:
            found.setdefault(name, []).append(row)
    return [
        PartitionedStream(name, [partition_row(r) for r in parts], worst(parts))
        for name, parts in sorted(found.items())
    ]
