"""The event page: by stream entry, or by event hash once the entry is gone."""

from __future__ import annotations

import os
import re
from typing import Any

import redis
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from console.actions import services
from console.params import ENTRY_ID_HELP
from console.reads import browse, events
from console.reads.events import EventView
from console.roles import can_operate
from console.runtime import keys, redis_client
from console.views.access import viewer_required
from console.views.streams import unreadable

EVENT_HASH = re.compile(r"[0-9a-f]{64}")
# A tracing UI's page for one trace, e.g. https://jaeger.example/trace/{trace_id}.
TRACE_URL_ENV = "STREAMDESK_TRACE_URL"


def trace_url(trace_id: str | None) -> str | None:
    """The trace's page in the tracing UI, None without a template (the id shows as text).
    Read per request: a deployment may set it without a restart of the settings module."""
    template = os.environ.get(TRACE_URL_ENV, "")
    if not trace_id or "{trace_id}" not in template:
        return None
    return template.replace("{trace_id}", trace_id)


@viewer_required
def event_page(request: HttpRequest, stream: str, entry_id: str) -> HttpResponse:
    if not browse.valid_id(entry_id):
        message = f"{entry_id[:60]!r} is not a stream entry id. {ENTRY_ID_HELP}"
        return render(request, "console/bad_request.html", {"message": message}, status=400)
    try:
        view = events.by_entry(
            redis_client(), stream, entry_id, full=request.GET.get("full") == "1"
        )
    except redis.ResponseError as exc:
        return unreadable(request, stream, exc)
    if not view.found and view.run is None:
        raise Http404(f"No entry {entry_id} in {stream!r}, and no run recorded for it.")
    return _page(request, view)


@viewer_required
def event_by_hash_page(request: HttpRequest, event_hash: str) -> HttpResponse:
    if not EVENT_HASH.fullmatch(event_hash):  # an event's or a run's hash; no NUL reaches SQL
        raise Http404("An event hash is 64 lowercase hex digits.")
    try:
        view = events.by_hash(redis_client(), event_hash)
    except redis.ResponseError as exc:
        return unreadable(request, "the event's stream", exc)
    if view is None:
        raise Http404("No run is recorded for this event hash.")
    return _page(request, view)


def _page(request: HttpRequest, view: EventView) -> HttpResponse:
    """The page; for an operator, with a dead event's letter for its Retry button."""
    dead = (
        services.dead_letter_of(redis_client(), view.steps) if can_operate(request.user) else None
    )
    context: dict[str, Any] = {
        "event": view,
        "running": events.running_now(redis_client(), keys(), view),
        "dead": dead,
        "live": [],
        "trace_url": trace_url(view.trace_id),
        "max_runs": events.MAX_RUNS,
    }
    return render(request, "console/event.html", context)
