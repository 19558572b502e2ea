"""How an agent's runs went, from the database: the engine counts failures per stream and
group in Redis and keeps the run duration histogram per event type, not per agent, so the
failure share, the durations and the versions seen come from ``AgentRun`` rows (one per
agent and event, its latest status). One bounded query along an index per page render: the
newest ``SCAN_ROWS`` runs created in the last 24 hours (``(agent, created_at, id)`` for a
named agent, ``(event_type, created_at, id)`` for a home one, ``(created_at, id)`` for all),
counted in Python. Runs are keyed by their agent's name: ``AgentRun.agent``, else (a home
agent, or a row from before agents had names) the event type.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import F
from django.utils import timezone

from workers.models import AgentRun, RunStatus

# The most runs one page reads to count failures: a bound on the page's cost, whatever the
# rate; the page says when the window held more.
SCAN_ROWS = 5_000
# The windows a share is counted over, as the charts' ranges: name and length.
WINDOWS: dict[str, timedelta] = {
    "5m": timedelta(minutes=5),
    "1h": timedelta(hours=1),
    "24h": timedelta(hours=24),
}
FAILED = frozenset({RunStatus.FAILED.value, RunStatus.DEAD.value})
ENDED = FAILED | {RunStatus.SUCCEEDED.value}


@dataclass
class FailureShare:
    """Runs created in a window with an outcome (succeeded, failed, dead-lettered), and how
    many of those failed: failing now (waiting for a retry) or dead-lettered."""

    ended: int = 0
    failed: int = 0
    # False when the window held more than SCAN_ROWS runs: the share is of the newest ones.
    complete: bool = True

    @property
    def pct(self) -> float | None:
        return 100 * self.failed / self.ended if self.ended else None


Shares = dict[str, dict[str, FailureShare]]  # agent name -> window name -> share
# agent, type, status, created_at, duration_ms, version, prompt + completion tokens, cost
Row = tuple[str, str, str, datetime, float | None, str, int, float]


@dataclass
class RunFigures:
    """One agent's runs read for a page: failure shares, run times and versions."""

    shares: dict[str, FailureShare] = field(default_factory=dict)
    # Run times (ms) of the runs that ended, newest first, as read (at most SCAN_ROWS).
    durations_ms: list[float] = field(default_factory=list)
    # Each version seen among the runs read, with how many runs it ran, newest first.
    versions: dict[str, int] = field(default_factory=dict)
    # Model tokens and cost of the runs read.
    tokens: int = 0
    cost_usd: float = 0.0
    # The event type its newest run read was of: a named agent this console does not load
    # is known by its runs.
    event_type: str = ""

    def quantile_ms(self, q: float) -> float | None:
        """The q-quantile (nearest rank) of the run times read; None without any."""
        if not self.durations_ms:
            return None
        ordered = sorted(self.durations_ms)
        return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def agent_of_row(agent: str, event_type: str) -> str:
    """The agent name a run belongs to: its agent, else (a home agent) its event type."""
    return agent or event_type


def _rows(agent: str | None, event_type: str | None, now: datetime) -> tuple[list[Row], datetime]:
    since = now - max(WINDOWS.values())
    runs = AgentRun.objects.filter(created_at__gte=since)
    if agent:  # a named agent: its own index
        runs = runs.filter(agent=agent)
    elif event_type is not None:  # a home agent: its type's runs without a name
        runs = runs.filter(event_type=event_type, agent="")
    fields = ("agent", "event_type", "status", "created_at", "duration_ms", "version")
    used = (F("prompt_tokens") + F("completion_tokens"), F("cost_usd"))
    ordered = runs.order_by("-created_at", "-id")
    rows = list(ordered.values_list(*fields, *used)[:SCAN_ROWS])
    # Short of the cap, every run since ``since`` was read; else only back to the oldest read.
    return rows, rows[-1][3] if len(rows) == SCAN_ROWS else since


def run_figures(
    agent: str | None = None, event_type: str | None = None, now: datetime | None = None
) -> dict[str, RunFigures]:
    """Every agent's figures (neither given), a named agent's (``agent``) or a home agent's
    (``event_type``), by agent name."""
    now = now or timezone.now()
    rows, reached = _rows(agent, event_type, now)
    shares = count(((agent_of_row(r[0], r[1]), r[2], r[3]) for r in rows), now, reached)
    out = {name: RunFigures(found) for name, found in shares.items()}
    for a, t, status, _, took_ms, version, tokens, cost in rows:
        figures = out[agent_of_row(a, t)]
        figures.event_type = figures.event_type or t
        if status in ENDED and took_ms is not None:
            figures.durations_ms.append(float(took_ms))
        if version:
            figures.versions[version] = figures.versions.get(version, 0) + 1
        figures.tokens += int(tokens or 0)
        figures.cost_usd += float(cost or 0)
    return out


def types_of(figures: dict[str, RunFigures]) -> dict[str, str]:
    """Each agent's event type, as its newest run read says (``agent_lines.with_runs``)."""
    return {name: f.event_type for name, f in figures.items()}


def failure_shares(
    agent: str | None = None, event_type: str | None = None, now: datetime | None = None
) -> Shares:
    """Each agent's (or one's, as ``run_figures``) failure share over every window."""
    return {name: f.shares for name, f in run_figures(agent, event_type, now).items()}


def count(rows: Iterable[tuple[str, str, datetime]], now: datetime, reached: datetime) -> Shares:
    out: Shares = {}
    for name, status, created in rows:
        shares = out.setdefault(name, {w: FailureShare() for w in WINDOWS})
        for name, length in WINDOWS.items():
            if created >= now - length and status in ENDED:
                shares[name].ended += 1
                shares[name].failed += status in FAILED
    for shares in out.values():
        for name, length in WINDOWS.items():
            shares[name].complete = reached <= now - length
    return out
