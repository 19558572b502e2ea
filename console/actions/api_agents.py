"""``/api/agents/``: the agents' figures as JSON, one object per agent as the Agents page and
an agent's page show them (console/live/agent_lines.py, console/reads/agent_runs.py), in the
manner of ``api.py``. ``console/urls.py`` mounts it under ``/api/``."""

from __future__ import annotations

from dataclasses import asdict, fields
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.urls import path, reverse

from console.actions.api import api_view
from console.live.agent_lines import AgentLine, agent_lines, with_runs
from console.live.agent_rows import AgentRow
from console.live.overview import build
from console.live.sampler import TICK_READ
from console.reads.agent_runs import WINDOWS, FailureShare, RunFigures, run_figures, types_of
from console.runtime import keys, redis_client
from workers.core.registry import default_registry
from workers.from_settings import engine_config
from workers.monitor.history import SECOND, HistoryStore
from workers.monitor.sample import collect

# An agent without histogram figures (a named one: the histogram is per event type) has
# these keys too, null, so every object has one shape.
HISTOGRAM_FIELDS = [f.name for f in fields(AgentRow) if f.name != "event_type"]


def _share(share: FailureShare | None) -> dict[str, Any]:
    if share is None:
        return {"ended": 0, "failed": 0, "pct": None, "complete": True}
    return {**asdict(share), "pct": share.pct}


def _groups(line: AgentLine) -> list[dict[str, Any]]:
    return [
        {
            "stream": g.info.stream,
            "group": g.info.name,
            "pending": g.info.pending,
            "lag": g.info.lag,
            "paused_by": g.info.paused_by,
            "ack_s": g.rates.ack_s,
            "counters": g.info.counters,
        }
        for g in line.groups
    ]


def _agent(line: AgentLine, figures: RunFigures) -> dict[str, Any]:
    histogram = asdict(line.figures) if line.figures else dict.fromkeys(HISTOGRAM_FIELDS)
    histogram.pop("event_type", None)
    return {
        **histogram,
        "name": line.name,
        "agent": line.agent,
        "event_type": line.event_type,
        "group": line.group,
        "groups": _groups(line),
        "pending": line.pending,
        "lag": line.lag,
        "paused": bool(line.paused),
        "counters": line.counters,
        "version": line.version,
        "failed": {name: _share(figures.shares.get(name)) for name in WINDOWS},
        "runs_read": {
            "ended": len(figures.durations_ms),
            "p50_ms": figures.quantile_ms(0.5),
            "p95_ms": figures.quantile_ms(0.95),
            "p99_ms": figures.quantile_ms(0.99),
            "tokens": figures.tokens,
            "cost_usd": figures.cost_usd,
            "versions": figures.versions,
        },
        "url": reverse("agent", args=[line.name]),
    }


@api_view(operate=False)
def agent_list(request: HttpRequest) -> JsonResponse:
    """Every agent, home agents by type first, then named ones by name: one sample, the
    recorded rate baseline, and one bounded query of the runs."""
    client, config = redis_client(), engine_config()
    sample = collect(client, keys())
    recent = HistoryStore(client, keys()).newest({SECOND: TICK_READ[SECOND]})[SECOND.name]
    view = build(sample, recent, config.claim_idle_ms, config.group)
    figures = run_figures()
    lines = with_runs(agent_lines(view, default_registry, config.group), types_of(figures))
    body = [_agent(line, figures.get(line.name, RunFigures())) for line in lines]
    return JsonResponse({"agents": body})


urlpatterns = [path("agents/", agent_list, name="api_agents")]
