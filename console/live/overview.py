"""What the pages show: a sample plus its history, turned into rows for the templates."""

from __future__ import annotations

from dataclasses import dataclass, field

from console.live import health, metrics
from console.live.agent_rows import AgentRow, agent_rows
from console.live.health import Health, PendingState
from workers.core.fanout import agent_of
from workers.core.keys import DEFAULT_GROUP
from workers.monitor.history import Point, to_point
from workers.monitor.sample import GroupInfo, Sample, StreamInfo, WorkerInfo
from workers.monitor.usage import UsageRow, usage_rows
from workers.runtime.ratelimit import Level

# Rates are averaged over this window so the numbers do not flicker with every tick.
RATE_WINDOW_MS = 5_000
# A recorded point older than this is no baseline: a rate over a long outage of the recorder
# would be an average, not the rate now.
RATE_MAX_AGE_MS = 30_000
# Nor is one this recent: a rate over a fraction of a second is noise.
RATE_MIN_WINDOW_MS = 1_000


@dataclass(frozen=True, slots=True)
class GroupRow:
    info: GroupInfo
    rates: metrics.GroupRates
    health: Health
    # What the oldest pending entry is doing (waiting for a retry, idle, stuck), if any.
    oldest: PendingState | None
    # Whose group it is (issue 31): its agent's name for a named agent's group, "" for the
    # home group (every agent without a name), None for a group of no agent of this home's.
    agent: str | None = None


@dataclass(frozen=True, slots=True)
class StreamRow:
    info: StreamInfo
    rates: metrics.StreamRates
    health: Health
    groups: list[GroupRow]


@dataclass(frozen=True, slots=True)
class BudgetRow:
    level: Level
    # How full the bucket is, 0-100, for the bar; an overdrawn bucket shows empty.
    fill_pct: int
    # Tokens already promised to deferred events (the level below zero), else 0.
    reserved: float


@dataclass(frozen=True, slots=True)
class Overview:
    at_ms: int
    streams: list[StreamRow]
    workers: list[WorkerInfo]
    budgets: list[BudgetRow]
    usage: list[UsageRow]
    # One row per agent (event type), the busiest first (console/live/agent_rows.py).
    agents: list[AgentRow] = field(default_factory=list)

    def stream(self, name: str) -> StreamRow | None:
        return next((s for s in self.streams if s.info.name == name), None)

    @property
    def processes(self) -> int:
        """Worker processes: one reading several partitions has a heartbeat per partition."""
        return worker_processes(self.workers)


def worker_processes(workers: list[WorkerInfo]) -> int:
    return len({(w.host, w.pid) for w in workers})


def baseline(points: list[Point], now_ms: int) -> Point | None:
    """The recorded point the rates are measured from (``points`` oldest first): the newest
    one at least RATE_WINDOW_MS old, else the oldest at least RATE_MIN_WINDOW_MS old (a
    recorder that just started), never one older than RATE_MAX_AGE_MS; None if none fits.
    The rate is then the change over the two points' own timestamps."""
    fit = [p for p in points if RATE_MIN_WINDOW_MS <= now_ms - p["t"] <= RATE_MAX_AGE_MS]
    for point in reversed(fit):
        if now_ms - point["t"] >= RATE_WINDOW_MS:
            return point
    return fit[0] if fit else None


def budget_rows(budgets: list[Level]) -> list[BudgetRow]:
    return [
        BudgetRow(
            level,
            round(100 * min(max(level.tokens, 0.0), level.budget.burst) / level.budget.burst),
            max(-level.tokens, 0.0),
        )
        for level in budgets
    ]


def build(
    sample: Sample, recent: list[Point], claim_idle_ms: int, home: str = DEFAULT_GROUP
) -> Overview:
    """Rows for the pages; ``recent`` are the recorded 1 s points of the last
    RATE_MAX_AGE_MS or more (oldest first), the rates' baseline; ``home``: the home group's
    name, which tells each group's agent."""
    now = to_point(sample)
    old = baseline(recent, sample.at_ms)
    rows = []
    for stream in sample.streams:
        rates = metrics.stream_rates(old, now, stream.name)
        groups = [
            GroupRow(
                info=g,
                rates=metrics.group_rates(old, now, g),
                health=health.group_health(g, claim_idle_ms),
                oldest=health.oldest_pending(g, sample.at_ms, claim_idle_ms),
                agent=agent_of(home, g.name),
            )
            for g in stream.groups
        ]
        rows.append(
            StreamRow(
                info=stream,
                rates=rates,
                health=health.stream_health(stream, claim_idle_ms),
                groups=groups,
            )
        )
    return Overview(
        sample.at_ms,
        rows,
        sample.workers,
        budget_rows(sample.budgets),
        usage_rows(sample.usage),
        agent_rows(sample, old),
    )
