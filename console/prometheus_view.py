"""``GET /metrics``: Prometheus' text format, for a scraper holding the metrics token or on an
allowed network (``STREAMDESK_METRICS_TOKEN``, ``STREAMDESK_METRICS_ALLOW``; docs/observability.md).

No session, no sign-in and no CSRF: a scraper has none of them, and a GET changes nothing. The
answer is a 200 even with Redis down (``streamdesk_up 0``), so Prometheus records the outage.
"""

from __future__ import annotations

import logging

import redis
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from console.live.redis_metrics import redis_exposition
from console.runtime import keys, redis_client
from workers.core.errors import ConfigurationError, RedisUnavailable
from workers.from_settings import configured_streams, engine_config, rate_budgets
from workers.monitor.prometheus import CONTENT_TYPE, exposition
from workers.monitor.sample import Sample, collect
from workers.monitor.scrape_access import ScrapeAccess

log = logging.getLogger("streamdesk.metrics")


def read_sample() -> Sample:
    """One sample with the configured stream's partitions, even before they exist."""
    config = engine_config()
    return collect(redis_client(), config.keys, configured_streams(), budgets=rate_budgets())


def redis_itself() -> bytes:
    """The Redis page's gauges, from its reading; none while Redis cannot be reached (the
    sample's ``streamdesk_up 0`` says so)."""
    try:
        return redis_exposition(redis_client(), keys())
    except (RedisUnavailable, redis.RedisError) as exc:
        log.warning("/metrics: Redis itself cannot be read: %s", exc)
        return b""


def scrape_access() -> ScrapeAccess:
    """Read per request, as settings are (a test or a reload may change them)."""
    return ScrapeAccess.from_settings(
        settings.STREAMDESK_METRICS_TOKEN,
        settings.STREAMDESK_METRICS_ALLOW,
        open_loopback=settings.DEBUG,
    )


def _text(status: int, message: str) -> HttpResponse:
    return HttpResponse(f"{message}\n", status=status, content_type="text/plain; charset=utf-8")


@never_cache
@require_safe
def metrics(request: HttpRequest) -> HttpResponse:
    try:
        access = scrape_access()
    except ConfigurationError as exc:
        log.error("/metrics: %s", exc)
        return _text(500, str(exc))
    refusal = access.check(
        str(request.META.get("REMOTE_ADDR") or ""), request.headers.get("Authorization", "")
    )
    if refusal is not None:
        response = _text(refusal.status, refusal.message)
        if refusal.challenge:
            response["WWW-Authenticate"] = refusal.challenge
        return response
    config = engine_config()
    body = exposition(read_sample, config.claim_idle_ms, config.group)
    body += redis_itself()
    return HttpResponse(body, content_type=CONTENT_TYPE)
