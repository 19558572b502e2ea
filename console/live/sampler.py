"""The console's one sampler: reads a sample a second and broadcasts rendered fragments.

Each console process runs at most one sampler, started by the first websocket. Only the
process that holds the broadcaster lease samples and broadcasts, so N consoles (or N daphne
processes) still push one tick a second, not N. The sampler records nothing: the history it
reads (the rates' baseline, the charts' newest rows) is recorded by the deployment's one
recorder (workers/monitor/recorder.py), whether or not a browser is open.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import redis
from channels.layers import get_channel_layer
from django.db import close_old_connections
from django.db.models import Count, Min
from django.template.loader import render_to_string
from django.utils.safestring import SafeString, mark_safe

from console.live import charts, overview, realtime
from console.live.agent_lines import AgentLine, agent_lines
from console.live.fleet_cost import FleetCost, fleet_cost
from console.live.partitioned import partitioned
from console.live.redis_panel import tick_fragments
from workers.core.config import EngineConfig
from workers.core.keys import DEFAULT_GROUP, Keys
from workers.core.registry import default_registry
from workers.models import BulkJob, OutboxEvent
from workers.monitor.history import SECOND, HistoryStore, Resolution
from workers.monitor.recorder import Lease, holder_name
from workers.monitor.sample import collect
from workers.retention import Retention
from workers.runtime.ratelimit import Budget

RECENT_JOBS = 20


@dataclass(frozen=True, slots=True)
class OutboxBacklog:
    unsent: int
    oldest_age_s: float


def outbox_backlog(now_ms: int) -> dict[str, OutboxBacklog]:
    """Outbox rows the relay has not sent yet, per target stream (one query on the partial
    index of unsent rows: cheap while the relay keeps up, which is when it matters)."""
    rows = (
        OutboxEvent.objects.filter(sent_at__isnull=True)
        .values("stream")
        .annotate(unsent=Count("id"), oldest=Min("created_at"))
    )
    return {
        r["stream"]: OutboxBacklog(
            int(r["unsent"]), max(0.0, now_ms / 1000 - r["oldest"].timestamp())
        )
        for r in rows
    }


def recent_jobs() -> list[BulkJob]:
    """The newest bulk jobs, for the live jobs list (one indexed query a tick)."""
    return list(BulkJob.objects.order_by("-created_at", "-id")[:RECENT_JOBS])


log = logging.getLogger("streamdesk.console")

TICK_S = 1.0

# What a tick reads of the recorded history: the rates' baseline (1 s points back to
# RATE_MAX_AGE_MS) and each chart range's last rows plus the point before them.
TICK_READ: dict[Resolution, int] = {
    r: charts.TAIL_ROWS[name] + 1 for name, r in charts.RANGES.items()
} | {SECOND: max(overview.RATE_MAX_AGE_MS // SECOND.step_ms + 1, charts.TAIL_ROWS["5m"] + 1)}


@dataclass(frozen=True, slots=True)
class Tick:
    at_ms: int
    fragments: dict[str, str]
    series: dict[str, dict[str, realtime.ChartData]]


def _isolated(template: str, context: dict[str, Any], name: str, counter: int = 0) -> str:
    """One stream's part of a page; if it cannot be rendered, its error in its place."""
    try:
        return render_to_string(template, context)
    except Exception as exc:  # one stream must never blank the others
        log.warning("console: stream %r cannot be shown: %s", name, exc)
        return render_to_string(
            "console/_stream_error.html",
            {"name": name, "error": f"cannot be shown: {exc}", "counter": counter},
        )


def stream_cards(view: overview.Overview, outbox: dict[str, OutboxBacklog]) -> list[SafeString]:
    """The overview's card of every stream, each rendered on its own."""
    return [
        mark_safe(
            _isolated(
                "console/_stream_card.html",
                {
                    "row": row,
                    "outbox": outbox,
                    "counter": n,
                    "charts": charts.stream_chart_keys(row.info.name),
                },
                row.info.name,
                n,
            )
        )
        for n, row in enumerate(view.streams, start=1)
    ]


def overview_context(view: overview.Overview) -> dict[str, Any]:
    outbox = outbox_backlog(view.at_ms)
    return {
        "overview": view,
        "outbox": outbox,
        "cards": stream_cards(view, outbox),
        "partitioned": partitioned(view.streams),
    }


def _stream_fragments(row: overview.StreamRow) -> dict[str, str]:
    name = row.info.name
    fragments = {
        realtime.stream_key(name): _isolated("console/_stream_summary.html", {"row": row}, name)
    }
    for group in row.groups:
        key = realtime.group_key(name, group.info.name)
        # Two variants: only operators' sockets get the one with action buttons.
        for operate in (False, True):
            fragments[realtime.operator_variant(key) if operate else key] = _isolated(
                "console/_group_summary.html",
                {"row": row, "group": group, "can_operate": operate},
                name,
            )
    return fragments


def workers_context(view: overview.Overview, fleet: FleetCost) -> dict[str, Any]:
    return {
        "workers": view.workers,
        "at_ms": view.at_ms,
        "fleet": fleet,
        # "At rest" only while no worker has an event in flight.
        "at_rest": not any(w.inflight for w in view.workers),
    }


def agent_fragments(lines: list[AgentLine]) -> dict[str, str]:
    """Each agent's page figures (its failures are read per render), in two variants: only
    operators' sockets get the one with the pause button. The agents without a name that
    have not run show the home group alone, the same for each: rendered once for them all,
    so a registry of many such agents costs a tick two renders, not two each."""
    out: dict[str, str] = {}
    shared: dict[bool, str] = {}
    for line in lines:
        key = realtime.agent_key(line.name)
        for operate in (False, True):
            same = line.home and line.figures is None
            html = shared.get(operate) if same else None
            if html is None:
                context = {"line": line, "row": line.figures, "can_operate": operate}
                html = render_to_string("console/_agent_figures.html", context)
                if same:
                    shared[operate] = html
            out[realtime.operator_variant(key) if operate else key] = html
    return out


def render_fragments(
    view: overview.Overview,
    fleet: FleetCost,
    lines: list[AgentLine],
    redis_parts: dict[str, str] | None = None,
) -> dict[str, str]:
    """Every live part of every page, rendered once for all browsers; ``lines``: the
    agents' (``agent_lines``)."""
    fragments: dict[str, str] = {
        realtime.overview_key(): render_to_string("console/_overview.html", overview_context(view)),
        realtime.workers_key(): render_to_string(
            "console/_workers.html", workers_context(view, fleet)
        ),
    }
    jobs = recent_jobs()
    for operate in (False, True):
        key = realtime.jobs_key()
        fragments[realtime.operator_variant(key) if operate else key] = render_to_string(
            "console/_jobs.html", {"jobs": jobs, "can_operate": operate}
        )
    for row in view.streams:
        fragments.update(_stream_fragments(row))
    fragments.update(agent_fragments(lines))
    fragments.update(redis_parts or {})  # the Redis page's, rendered by redis_panel
    return fragments


class Sampler:
    def __init__(
        self,
        client: redis.Redis,
        keys: Keys,
        claim_idle_ms: int,
        budgets: Mapping[str, Budget] | None = None,
        retention: Retention | None = None,
        home: str = DEFAULT_GROUP,
    ) -> None:
        self.client = client
        # The home group's name: which agent each consumer group is (console/live/agent_lines.py).
        self.home = home
        self.keys = keys
        self.claim_idle_ms = claim_idle_ms
        # The configured rate budgets (``rate_budgets()``), whose levels the overview shows.
        self.budgets = dict(budgets or {})
        # This console's retention: the Redis panel's measure for a stream not trimmed yet
        # (the engine's default, 7 days, when not given).
        self.retention = retention or Retention.of(EngineConfig())
        self.history = HistoryStore(client, keys)
        self.lease = Lease(client, keys.console_broadcaster, holder_name("console"))

    def tick(self) -> Tick | None:
        """One sample; rendered fragments if this console is the one that broadcasts."""
        try:
            return self._tick()
        finally:
            # Ticks run in executor threads: give back a connection past its age.
            close_old_connections()

    def _tick(self) -> Tick | None:
        if not self.lease.hold():
            return None  # another console broadcasts: its ticks reach our sockets too
        sample = collect(self.client, self.keys, budgets=self.budgets)
        newest = self.history.newest(TICK_READ)
        view = overview.build(sample, newest[SECOND.name], self.claim_idle_ms, self.home)
        found = charts.charts_of(sample.streams, sample.durations)
        series = charts.series(found, newest, tail=True)
        fleet = fleet_cost(self.client, self.keys.history_recorder)  # every 10 s at most
        # INFO and SLOWLOG every 10 s at most, as the fleet's cost.
        parts = tick_fragments(self.client, self.keys, sample.streams, self.retention, sample.at_ms)
        lines = agent_lines(view, default_registry, self.home)
        return Tick(sample.at_ms, render_fragments(view, fleet, lines, parts), series)

    async def run(self) -> None:
        layer = get_channel_layer()
        assert layer is not None, "CHANNEL_LAYERS is not configured"
        while True:
            started = asyncio.get_running_loop().time()
            try:
                tick = await asyncio.to_thread(self.tick)
                if tick is not None:
                    message: realtime.TickMessage = {
                        "type": "dashboard.tick",
                        "at_ms": tick.at_ms,
                        "fragments": tick.fragments,
                        "series": tick.series,
                    }
                    await layer.group_send(realtime.DASHBOARD_GROUP, dict(message))
            except Exception as exc:  # a Redis outage must not end the sampler
                log.warning("console sampler tick failed: %s", exc)
            elapsed = asyncio.get_running_loop().time() - started
            await asyncio.sleep(max(TICK_S - elapsed, 0.05))
