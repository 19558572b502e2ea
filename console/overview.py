"""What the pages show: a sample plus its history, turned into rows for the templates."""

from __future__ import annotations

from dataclasses import dataclass

from console import health, metrics
from console.health import Health, PendingState
from workers.history import History, Point, to_point
from workers.ratelimit import Level
from workers.sample import GroupInfo, Sample, StreamInfo, UsageByType, WorkerInfo

# Rates are averaged over this window so the numbers do not flicker with every tick.
RATE_WINDOW_MS = 5_000


@dataclass(frozen=True, slots=True)
class Spark:
    label: str
    points: str  # SVG polyline points
    last: float
    peak: float


@dataclass(frozen=True, slots=True)
class GroupRow:
    info: GroupInfo
    rates: metrics.GroupRates
    health: Health
    lag_spark: Spark
    # What the oldest pending entry is doing (waiting for a retry, idle, stuck), if any.
    oldest: PendingState | None


@dataclass(frozen=True, slots=True)
class StreamRow:
    info: StreamInfo
    rates: metrics.StreamRates
    health: Health
    sparks: list[Spark]
    hour_sparks: list[Spark]
    groups: list[GroupRow]


@dataclass(frozen=True, slots=True)
class BudgetRow:
    level: Level
    # How full the bucket is, 0-100, for the bar; an overdrawn bucket shows empty.
    fill_pct: int
    # Tokens already promised to deferred events (the level below zero), else 0.
    reserved: float


@dataclass(frozen=True, slots=True)
class UsageRow:
    event_type: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float


@dataclass(frozen=True, slots=True)
class Overview:
    at_ms: int
    streams: list[StreamRow]
    workers: list[WorkerInfo]
    budgets: list[BudgetRow]
    usage: list[UsageRow]

    def stream(self, name: str) -> StreamRow | None:
        return next((s for s in self.streams if s.info.name == name), None)


def baseline(points: list[Point], now_ms: int) -> Point | None:
    """The newest point at least RATE_WINDOW_MS old, else the oldest one there is."""
    for point in reversed(points):
        if now_ms - point["t"] >= RATE_WINDOW_MS:
            return point
    return points[0] if points and points[0]["t"] < now_ms else None


def _spark(label: str, values: list[float]) -> Spark:
    return Spark(
        label, metrics.sparkline(values), values[-1] if values else 0.0, max(values, default=0.0)
    )


def _sparks(points: list[Point], stream: str) -> list[Spark]:
    return [
        _spark("processed/s", metrics.series(points, stream, "p")),
        _spark("added/s", metrics.series(points, stream, "a")),
        _spark("failed/s", metrics.series(points, stream, "f")),
    ]


def budget_rows(budgets: list[Level]) -> list[BudgetRow]:
    return [
        BudgetRow(
            level,
            round(100 * min(max(level.tokens, 0.0), level.budget.burst) / level.budget.burst),
            max(-level.tokens, 0.0),
        )
        for level in budgets
    ]


def usage_rows(usage: UsageByType) -> list[UsageRow]:
    """One row per event type, the most expensive first (then the busiest)."""
    rows = [
        UsageRow(
            event_type,
            int(u["calls"]),
            int(u["prompt_tokens"]),
            int(u["completion_tokens"]),
            u["cost_usd"],
        )
        for event_type, u in usage.items()
    ]
    return sorted(rows, key=lambda r: (-r.cost_usd, -r.calls, r.event_type))


def build(sample: Sample, history: History, claim_idle_ms: int) -> Overview:
    now = to_point(sample)
    old = baseline(history.recent, sample.at_ms)
    recent = [*[p for p in history.recent if p["t"] < sample.at_ms], now]
    rows = []
    for stream in sample.streams:
        rates = metrics.stream_rates(old, now, stream.name)
        groups = [
            GroupRow(
                info=g,
                rates=metrics.group_rates(old, now, g),
                health=health.group_health(g, claim_idle_ms),
                oldest=health.oldest_pending(g, sample.at_ms, claim_idle_ms),
                lag_spark=_spark("lag", metrics.group_series(recent, stream.name, g.name, 0)),
            )
            for g in stream.groups
        ]
        rows.append(
            StreamRow(
                info=stream,
                rates=rates,
                health=health.stream_health(stream, claim_idle_ms),
                sparks=_sparks(recent, stream.name),
                hour_sparks=_sparks(history.hour, stream.name),
                groups=groups,
            )
        )
    return Overview(
        sample.at_ms, rows, sample.workers, budget_rows(sample.budgets), usage_rows(sample.usage)
    )
