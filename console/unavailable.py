"""Redis out of reach: console pages and API calls answer 503, never a 500 (docs/console.md)."""

from __future__ import annotations

import logging
from collections.abc import Callable

import redis
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from redis.exceptions import RedisClusterException

from workers.core.errors import RedisUnavailable

log = logging.getLogger(__name__)
RETRY_AFTER_S = 5
# A cluster with no node left to read its slot map from raises RedisClusterException.
REDIS_DOWN = (RedisUnavailable, redis.ConnectionError, redis.TimeoutError, RedisClusterException)
MESSAGE = "Redis cannot be reached; nothing was changed. Try again in a few seconds."


class RedisDownMiddleware:
    """Turns a connection failure anywhere in a view into a 503 with ``Retry-After``: the
    embedded or configured server may be down at start-up or go away later. The body is
    generic: the error names the server's URL, which is for the log, not the browser."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if not isinstance(exc, REDIS_DOWN):
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
