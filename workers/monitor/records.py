"""What a sample holds (``workers.monitor.sample.collect`` reads it): the streams, their
groups and consumers, the workers, the rate budgets' levels, model usage and run durations.
Plain frozen records, so the console and the exporter share one shape."""

from __future__ import annotations

from dataclasses import dataclass, field

from workers.redis import stats
from workers.retention import TrimRecord
from workers.runtime.ratelimit import Level


@dataclass(frozen=True, slots=True)
class ConsumerInfo:
    name: str
    pending: int
    idle_ms: int
    # Time since the consumer's last successful read (Redis >= 7.2), else None.
    inactive_ms: int | None
    # True when a runworker heartbeat exists for this consumer name.
    live: bool


@dataclass(frozen=True, slots=True)
class GroupInfo:
    stream: str
    name: str
    consumers: list[ConsumerInfo]
    pending: int
    # Undelivered entries; None when Redis cannot tell (deletes in the unread range, Redis < 7).
    lag: int | None
    entries_read: int | None
    last_delivered_id: str
    oldest_pending_id: str | None
    oldest_pending_idle_ms: int | None
    # When the oldest pending entry is due again if the engine holds it back on purpose (a
    # retry's backoff, a rate budget, a duplicate waiting on its twin), else None (``waits``).
    oldest_pending_due_ms: int | None = None
    # Who paused the group and when ("alice at ..."), or None while it runs.
    paused_by: str | None = None
    # Consumers the engine's housekeeping removed (no heartbeat, nothing pending), ever.
    consumers_pruned: int = 0
    # The group's own engine counters (``Keys.group_stats``: processed, failed, ...), every
    # one of ``stats.COUNTERS``; zeros before its workers counted anything there.
    counters: dict[str, int] = field(default_factory=dict)

    @property
    def live_consumers(self) -> int:
        return sum(1 for c in self.consumers if c.live)


@dataclass(frozen=True, slots=True)
class StreamInfo:
    name: str
    exists: bool
    length: int
    # Every entry ever added (Redis >= 7), so deletes and trims do not hide arrivals.
    entries_added: int | None
    last_id: str
    dead_letters: int
    counters: dict[str, int]
    groups: list[GroupInfo] = field(default_factory=list)
    # Why this stream could not be read (a key of another type, a garbled counter...), else "".
    # The page shows it in the stream's place; the other streams are read as usual.
    error: str = ""
    # How far back it reaches: its first entry's id (XINFO STREAM), None when empty; and its
    # last trim by retention (workers/retention), None before the first.
    first_id: str | None = None
    trim: TrimRecord | None = None
    # Runs waiting for an event or a time (``Keys.waiting``, workers/waits): holding nothing.
    waiting: int = 0


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    consumer: str
    host: str
    pid: int
    stream: str
    group: str
    concurrency: int
    processed: int
    inflight: int
    current: str
    state: str
    started_ms: int
    last_seen_ms: int


# Model usage paid for, per event type: {type: {calls, prompt_tokens, completion_tokens,
# cost_usd}} (``workers.redis.stats.usage_by_type``).
UsageByType = dict[str, dict[str, float]]


@dataclass(frozen=True, slots=True)
class Sample:
    at_ms: int
    streams: list[StreamInfo]
    workers: list[WorkerInfo]
    # Every configured rate budget's level, in configuration order.
    budgets: list[Level] = field(default_factory=list)
    usage: UsageByType = field(default_factory=dict)
    # How long agents ran, per event type (``workers.redis.stats.durations_by_type``).
    durations: dict[str, stats.Durations] = field(default_factory=dict)

    def stream(self, name: str) -> StreamInfo | None:
        return next((s for s in self.streams if s.name == name), None)

    def group(self, stream: str, name: str) -> GroupInfo | None:
        info = self.stream(stream)
        return next((g for g in info.groups if g.name == name), None) if info else None
