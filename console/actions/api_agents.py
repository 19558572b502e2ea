"""``/api/agents/``: the agents' figures as JSON, as the overview's table and an agent's page
show them (console/live/agent_rows.py, console/reads/agent_runs.py), in the manner of
``api.py``. ``console/urls.py`` mounts it under ``/api/``."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.urls import path, reverse

from console.actions.api import api_view
from console.live.agent_rows import AgentRow, agent_rows
from console.live.overview import baseline
from console.live.sampler import TICK_READ
from console.reads.agent_runs import FailureShare, failure_shares
from console.runtime import keys, redis_client
from workers.monitor.history import SECOND, HistoryStore
from workers.monitor.sample import collect


def _share(share: FailureShare | None) -> dict[str, Any]:
    if share is None:
        return {"ended": 0, "failed": 0, "pct": None, "complete": True}
    return {**asdict(share), "pct": share.pct}


def _agent(row: AgentRow, shares: dict[str, FailureShare]) -> dict[str, Any]:
    return {
        **asdict(row),
        "failed": {name: _share(shares.get(name)) for name in ("5m", "1h", "24h")},
        "url": reverse("agent", args=[row.event_type]),
    }


@api_view(operate=False)
def agent_list(request: HttpRequest) -> JsonResponse:
    """Every agent (event type) the histogram or the usage hash knows, the busiest first: one
    sample, the recorded rate baseline, and one bounded query of the runs for the failures."""
    client = redis_client()
    sample = collect(client, keys())
    recent = HistoryStore(client, keys()).newest({SECOND: TICK_READ[SECOND]})[SECOND.name]
    rows = agent_rows(sample, baseline(recent, sample.at_ms))
    shares = failure_shares()
    return JsonResponse({"agents": [_agent(row, shares.get(row.event_type, {})) for row in rows]})


urlpatterns = [path("agents/", agent_list, name="api_agents")]
