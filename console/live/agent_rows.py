"""Per-agent rows for the overview's table and an agent's page: plain Python, no I/O.

An agent is its event type today (one agent per type). Its figures come from the sample's run
duration histogram and usage hash (``workers.monitor.agents``): runs/s and tokens/s against
the recorded point the stream rates use, percentiles over every run the histogram holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from workers.monitor import agents
from workers.monitor.history import Point
from workers.monitor.sample import Sample

QUANTILES = (0.5, 0.95, 0.99)


@dataclass(frozen=True, slots=True)
class AgentRow:
    event_type: str  # the agent's name today; a named agent (issue 31) takes its place
    runs: int  # attempts that ran to an end (succeeded or failed), since the counters began
    runs_per_s: float | None  # over the rate window; None without a recorded baseline
    p50_s: float | None
    p95_s: float | None
    p99_s: float | None
    mean_s: float | None
    calls: int
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    tokens_per_s: float | None

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


def agent_rows(sample: Sample, baseline: Point | None) -> list[AgentRow]:
    """One row per event type the histogram or the usage hash knows, the busiest first."""
    now = agents.type_entries(sample.durations, sample.usage)
    old = baseline.get("y") if baseline else None
    dt_s = (sample.at_ms - baseline["t"]) / 1000 if baseline else 0.0
    rows = [_row(t, entry, old, dt_s) for t, entry in now.items()]
    return sorted(rows, key=lambda r: (-r.runs, r.event_type))


def _row(
    event_type: str, entry: agents.TypeEntry, old: dict[str, agents.TypeEntry] | None, dt_s: float
) -> AgentRow:
    # A baseline recorded before points carried types ("y") gives no rate, not a spike.
    rates = agents.rates(old.get(event_type), entry, dt_s) if old is not None else None
    buckets = agents.bounded(entry["b"])
    p50, p95, p99 = (agents.quantile(q, buckets) for q in QUANTILES)
    calls, prompt, completion, cost = entry["u"]
    return AgentRow(
        event_type=event_type,
        runs=int(entry["b"][-1]),
        runs_per_s=rates.runs_per_s if rates else None,
        p50_s=p50,
        p95_s=p95,
        p99_s=p99,
        mean_s=agents.mean_s(None, entry),
        calls=int(calls),
        prompt_tokens=int(prompt),
        completion_tokens=int(completion),
        cost_usd=float(cost),
        tokens_per_s=(rates.prompt_tokens_per_s + rates.completion_tokens_per_s) if rates else None,
    )
