"""Overview and workers: the pages that are one sample plus its recorded history."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from console.live import charts, overview, realtime
from console.live.agent_lines import agent_lines, with_runs
from console.live.fleet_cost import fleet_cost
from console.live.sampler import TICK_READ, overview_context, workers_context
from console.reads.agent_runs import run_figures, types_of
from console.runtime import keys, redis_client
from console.views.access import viewer_required
from console.views.redis import panel_of
from workers.core.registry import default_registry
from workers.flow.view import agent_settings
from workers.from_settings import engine_config, rate_budgets
from workers.monitor.history import SECOND, HistoryReader, HistoryStore
from workers.monitor.sample import StreamInfo, collect


def current_overview() -> overview.Overview:
    """One fresh sample, its rates measured from the recorded history: four round trips."""
    client = redis_client()
    sample = collect(client, keys(), budgets=rate_budgets())
    recent = HistoryStore(client, keys()).newest({SECOND: TICK_READ[SECOND]})[SECOND.name]
    config = engine_config()
    return overview.build(sample, recent, config.claim_idle_ms, config.group)


# One reader per Redis client and key prefix in this process: a page render reads only the
# points recorded since the previous one.
_readers: dict[tuple[int, str], HistoryReader] = {}


def _reader() -> HistoryReader:
    client, k = redis_client(), keys()
    found = _readers.get((id(client), k.prefix))
    if found is None:
        found = _readers[(id(client), k.prefix)] = HistoryReader(HistoryStore(client, k))
    return found


def page_series(
    streams: list[StreamInfo], part: str, at_ms: int, types: tuple[str, ...] = ()
) -> realtime.PageSeries:
    """The recorded history of one page part's charts at every range, for its first render
    (the websocket then adds the newest rows): one round trip for the points recorded since
    the last render; every resolution's retention in points at most. ``types``: the agents
    whose charts exist (an agent's page names its own)."""
    found = charts.charts_of(streams, types).get(part, [])
    if not found:
        return {"at_ms": at_ms, "charts": {}}
    history = _reader().read_all()
    return {"at_ms": at_ms, "charts": charts.series({part: found}, history, tail=False)[part]}


@viewer_required
def overview_page(request: HttpRequest) -> HttpResponse:
    view = current_overview()
    part = realtime.overview_key()
    lines = agent_lines(view, default_registry, engine_config().group)
    figures = run_figures()  # one bounded query: the agents' runs (the live parts have none)
    return render(
        request,
        "console/overview.html",
        {
            **overview_context(view),
            "redis_panel": panel_of([row.info for row in view.streams], view.at_ms),
            "live": [part, realtime.redis_summary_key()],
            "page": "overview",
            "chart_series": page_series([row.info for row in view.streams], part, view.at_ms),
            "lines": with_runs(lines, types_of(figures)),
            "figures": figures,
        },
    )


def agent_names() -> list[str]:
    """The registry's agents' names, in ``agent_settings``' order (placeholders left out):
    a named agent's name, else its event type."""
    return [spec.name if spec.agent else "" for spec in default_registry if not spec.placeholder]


@viewer_required
def workers_page(request: HttpRequest) -> HttpResponse:
    view = current_overview()
    return render(
        request,
        "console/workers.html",
        {
            **workers_context(view, fleet_cost(redis_client(), keys().history_recorder)),
            "live": [realtime.workers_key()],
            "page": "workers",
            # Each agent's name beside its settings (both in the registry's order): two
            # named agents of one type are two rows, told apart (issue 31).
            "agents": list(zip(agent_names(), agent_settings(default_registry), strict=True)),
            "worker_timeout_s": engine_config().agent_timeout_s,
            "worker_max_deliveries": engine_config().max_deliveries,
        },
    )
