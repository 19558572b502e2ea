"""Timers: the declared schedules and when each is next due, and the delayed events waiting
per stream (workers/timers, docs/timers.md)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from console.runtime import keys, redis_client
from console.views.access import viewer_required
from workers.from_settings import partitions, schedules
from workers.timers import view


@viewer_required
def timers_page(request: HttpRequest) -> HttpResponse:
    client = redis_client()
    declared = schedules()
    # A schedule's ticks go to one partition (its name's), where its last tick is recorded.
    where = {one.name: partitions(one.stream, client).stream_for(one.name) for one in declared}
    timers = view.read(client, keys(), declared, where)
    return render(request, "console/timers.html", {"timers": timers, "page": "timers"})
