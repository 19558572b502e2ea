"""How often an agent's runs fail, from the database: the engine counts failures per stream
in Redis, not per event type, so the share comes from ``AgentRun`` rows (one per event, its
latest status). One bounded query along an index per page render: the newest ``SCAN_ROWS``
runs created in the last 24 hours (``(event_type, created_at, id)`` for one agent,
``(created_at, id)`` for all), counted per window in Python.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

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


Shares = dict[str, dict[str, FailureShare]]  # event type -> window name -> share


def failure_shares(event_type: str | None = None, now: datetime | None = None) -> Shares:
    """Each event type's (or one's) failure share over every window in WINDOWS."""
    now = now or timezone.now()
    since = now - max(WINDOWS.values())
    runs = AgentRun.objects.filter(created_at__gte=since)
    if event_type is not None:
        runs = runs.filter(event_type=event_type)
    rows = list(
        runs.order_by("-created_at", "-id").values_list("event_type", "status", "created_at")[
            :SCAN_ROWS
        ]
    )
    # Short of the cap, every run since ``since`` was read; else only back to the oldest read.
    reached = rows[-1][2] if len(rows) == SCAN_ROWS else since
    return count(rows, now, reached)


def count(rows: Iterable[tuple[str, str, datetime]], now: datetime, reached: datetime) -> Shares:
    out: Shares = {}
    for event_type, status, created in rows:
        shares = out.setdefault(event_type, {w: FailureShare() for w in WINDOWS})
        for name, length in WINDOWS.items():
            if created >= now - length and status in ENDED:
                shares[name].ended += 1
                shares[name].failed += status in FAILED
    for shares in out.values():
        for name, length in WINDOWS.items():
            shares[name].complete = reached <= now - length
    return out
