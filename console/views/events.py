"""The event page: by stream entry, or by event hash once the entry is gone."""

from __future__ import annotations

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from console import browse, events
from console.views.access import viewer_required
from workers.runtime import redis_client


@viewer_required
def event_page(request: HttpRequest, stream: str, entry_id: str) -> HttpResponse:
    if not browse.valid_id(entry_id):
        raise Http404(f"{entry_id!r} is not a stream entry id.")
    view = events.by_entry(redis_client(), stream, entry_id, full=request.GET.get("full") == "1")
    if not view.found and view.run is None:
        raise Http404(f"No entry {entry_id} in {stream!r}, and no run recorded for it.")
    return render(request, "console/event.html", {"event": view, "live": []})


@viewer_required
def event_by_hash_page(request: HttpRequest, event_hash: str) -> HttpResponse:
    view = events.by_hash(redis_client(), event_hash)
    if view is None:
        raise Http404("No run is recorded for this event hash.")
    return render(request, "console/event.html", {"event": view, "live": []})
