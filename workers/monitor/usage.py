"""Model usage by event type as people read it: the console's overview and ``manage.py
streams`` show the same rows, in the same order, from the sample's usage hash."""

from __future__ import annotations

from dataclasses import dataclass

from workers.monitor.sample import UsageByType


@dataclass(frozen=True, slots=True)
class UsageRow:
    event_type: str
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float


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


def usage_total(rows: list[UsageRow]) -> UsageRow:
    """Every row added up, under the event type "total"."""
    return UsageRow(
        "total",
        sum(r.calls for r in rows),
        sum(r.prompt_tokens for r in rows),
        sum(r.completion_tokens for r in rows),
        sum(r.cost_usd for r in rows),
    )


def usd(value: float) -> str:
    """An estimated cost as the console writes it: cents for sums, fractions of a cent for
    the cheap calls they add up."""
    return f"${value:,.2f}" if value >= 1 or value == 0 else f"${value:.4f}"
