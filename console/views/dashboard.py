"""Overview and workers: the pages that are one sample plus its history."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from console import overview, realtime
from console.runtime import keys
from console.sampler import overview_context
from console.views.access import viewer_required
from workers.history import HistoryStore
from workers.runtime import engine_config, rate_budgets, redis_client
from workers.sample import collect


def current_overview() -> overview.Overview:
    """One fresh sample with the shared history: three round trips and two LRANGEs."""
    client = redis_client()
    sample = collect(client, keys(), budgets=rate_budgets())
    history = HistoryStore(client, keys()).read()
    return overview.build(sample, history, engine_config().claim_idle_ms)


@viewer_required
def overview_page(request: HttpRequest) -> HttpResponse:
    view = current_overview()
    return render(
        request,
        "console/overview.html",
        {**overview_context(view), "live": [realtime.overview_key()], "page": "overview"},
    )


@viewer_required
def workers_page(request: HttpRequest) -> HttpResponse:
    view = current_overview()
    return render(
        request,
        "console/workers.html",
        {
            "workers": view.workers,
            "at_ms": view.at_ms,
            "live": [realtime.workers_key()],
            "page": "workers",
        },
    )
