"""Redis out of reach: console pages and API calls answer 503, never a 500 (docs/console.md)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import redis
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render

from workers.core.errors import ClusterNotSupported, RedisUnavailable

log = logging.getLogger(__name__)
RETRY_AFTER_S = 5
MESSAGE = "Redis cannot be reached; nothing was changed. Try again in a few seconds."
CLUSTER_MESSAGE = (
    "REDIS_URL names a node of a Redis or Valkey cluster: workers and producers run on one, "
    "the console cannot yet; nothing was changed. See docs/scaling.md."
)


class RedisDownMiddleware:
    """Turns a connection failure anywhere in a view into a 503 with ``Retry-After``: the
    embedded or configured server may be down at start-up or go away later. The body is
    generic: the error names the server's URL, which is for the log, not the browser."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if isinstance(exc, ClusterNotSupported):
            return self._cluster(request, exc)
        if not isinstance(exc, RedisUnavailable | redis.ConnectionError | redis.TimeoutError):
            return None
        # The cause (host and port), not RedisUnavailable's text, which quotes the whole URL.
        log.warning(
            "%s %s: Redis unavailable: %s", request.method, request.path, exc.__cause__ or exc
        )
        response: HttpResponse
        if request.path.startswith("/api/"):
            response = JsonResponse({"error": MESSAGE}, status=503)
        else:
            response = render(request, "console/unavailable.html", status=503)
        response["Retry-After"] = str(RETRY_AFTER_S)
        return response

    @staticmethod
    def _cluster(request: HttpRequest, exc: ClusterNotSupported) -> HttpResponse:
        """A setting, not an outage: no Retry-After, and the page says what to change."""
        log.error("%s %s: %s", request.method, request.path, exc)
        if request.path.startswith("/api/"):
            return JsonResponse({"error": CLUSTER_MESSAGE}, status=503)
        return render(request, "console/unavailable.html", {"cluster": True}, status=503)
