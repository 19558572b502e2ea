"""The agents: a table of every one (``/agents/``) and an agent's page, with its figures from
the sample, its charts from the recorded history, its runs from the database and, for
operators, the pause of its consumer group (issue 31: a named agent is a group of its own).
"""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from console.live import realtime
from console.live.agent_lines import AgentLine, agent_lines, find, home_group, with_runs
from console.live.overview import Overview
from console.reads.agent_runs import SCAN_ROWS, WINDOWS, RunFigures, run_figures, types_of
from console.views.access import viewer_required
from console.views.dashboard import current_overview, page_series
from workers.core.registry import default_registry
from workers.from_settings import engine_config


def current_lines(view: Overview | None = None) -> tuple[Overview, list[AgentLine]]:
    """A fresh sample's overview and its agents, one line each."""
    view = view or current_overview()
    return view, agent_lines(view, default_registry, engine_config().group)


def known_agent(lines: list[AgentLine], name: str) -> AgentLine:
    """The agent's line. Http404 for a name nothing knows: no group, no figures, no
    registration."""
    line = find(lines, name)
    if line is None:
        raise Http404(f"No agent named {name!r}: none has run, and none is registered here.")
    return line


def figures_of(line: AgentLine) -> RunFigures:
    """Its runs' figures from the database: a named agent's own, a home agent's by type."""
    if line.agent:
        found = run_figures(agent=line.agent)
    else:
        found = run_figures(event_type=line.event_type or line.name)
    return found.get(line.name, RunFigures())


@viewer_required
def agents_page(request: HttpRequest) -> HttpResponse:
    view, lines = current_lines()
    # One bounded query for every agent's runs (the live figures have none).
    figures = run_figures()
    return render(
        request,
        "console/agents.html",
        {
            "lines": with_runs(lines, types_of(figures)),
            "home": home_group(view, engine_config().group),
            "figures": figures,
            "scan_rows": SCAN_ROWS,
            "at_ms": view.at_ms,
            "live": [],
            "page": "agents",
        },
    )


@viewer_required
def agent_page(request: HttpRequest, name: str) -> HttpResponse:
    view, lines = current_lines()
    line = known_agent(lines, name)
    part = realtime.agent_key(line.name)
    streams = [s.info for s in view.streams]
    figures = figures_of(line)
    line = with_runs([line], {line.name: figures.event_type})[0]
    # The run duration histogram is per event type: a home agent's charts are its type's; a
    # named agent shares its type with others, so it has none of its own yet.
    types = (line.event_type,) if line.home and line.event_type else ()
    return render(
        request,
        "console/agent.html",
        {
            "line": line,
            "row": line.figures,
            "figures": figures,
            "shares": [(w, figures.shares.get(w)) for w in WINDOWS],
            "scan_rows": SCAN_ROWS,
            "live": [part],
            "page": "agents",
            "chart_series": page_series(streams, part, view.at_ms, types),
        },
    )
