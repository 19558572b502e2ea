"""An agent's page: its figures from the sample, its charts from the recorded history, and
its failure share from the database. The agent is its event type today (one per type)."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from console.live import realtime
from console.live.agent_rows import AgentRow
from console.reads.agent_runs import SCAN_ROWS, WINDOWS, failure_shares
from console.views.access import viewer_required
from console.views.dashboard import current_overview, page_series
from workers.core.registry import default_registry


def known_agent(rows: list[AgentRow], event_type: str) -> AgentRow | None:
    """The agent's row; None for an agent the registry declares that has not run yet. Http404
    for a type nothing knows: no figures, no registration."""
    row = next((r for r in rows if r.event_type == event_type), None)
    if row is None and event_type not in default_registry:
        raise Http404(f"No agent for {event_type!r}: none has run, and none is registered here.")
    return row


@viewer_required
def agent_page(request: HttpRequest, event_type: str) -> HttpResponse:
    view = current_overview()
    row = known_agent(view.agents, event_type)
    part = realtime.agent_key(event_type)
    streams = [s.info for s in view.streams]
    shares = failure_shares(event_type).get(event_type, {})
    return render(
        request,
        "console/agent.html",
        {
            "event_type": event_type,
            "row": row,
            "shares": [(name, shares.get(name)) for name in WINDOWS],
            "scan_rows": SCAN_ROWS,
            "live": [part],
            "page": "overview",
            "chart_series": page_series(streams, part, view.at_ms, (event_type,)),
        },
    )
