"""Redis itself: memory and eviction, persistence, clients and the slow log, with what can
drop Streamdesk's keys or let a stream grow untrimmed (console/live/redis_panel.py)."""

from __future__ import annotations

from collections.abc import Sequence

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from console.live import realtime
from console.live.redis_panel import RedisPanel, redis_panel
from console.runtime import keys, redis_client
from console.views.access import viewer_required
from workers.from_settings import engine_config
from workers.monitor.records import StreamInfo
from workers.monitor.sample import collect
from workers.retention import Retention


def panel_of(streams: Sequence[StreamInfo], at_ms: int) -> RedisPanel:
    """The panel as this process last read the server (10 s at most), for these streams."""
    retention = Retention.of(engine_config())
    return redis_panel(redis_client(), keys(), streams, retention, at_ms)


@viewer_required
def redis_page(request: HttpRequest) -> HttpResponse:
    sample = collect(redis_client(), keys())
    return render(
        request,
        "console/redis.html",
        {
            "panel": panel_of(sample.streams, sample.at_ms),
            "live": [realtime.redis_key()],
            "page": "redis",
        },
    )
