"""Redis errors that reach a view: out of reach is a 503, a key of another type a 409, never a
500 (docs/console.md)."""

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
WRONG_TYPE = "A key involved holds another kind of value than the one asked for (Redis: {error})."


def wrong_type(exc: Exception) -> bool:
    """Redis refused a command on a key of another type: anyone may store any value under
    any name, so this is the request's target, not the console, that is wrong."""
    return isinstance(exc, redis.ResponseError) and "WRONGTYPE" in str(exc)


class RedisDownMiddleware:
    """Turns a connection failure anywhere in a view into a 503 with ``Retry-After``: the
    embedded or configured server may be down at start-up or go away later. The body is
    generic: the error names the server's URL, which is for the log, not the browser.
    A ``WRONGTYPE`` refusal that no view caught (an action, a preview, a dead-letter
    endpoint) is a 409 saying so: every door answers it the same way."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exc: Exception) -> HttpResponse | None:
        if wrong_type(exc):
            return _wrong_type(request, exc)
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


def _wrong_type(request: HttpRequest, exc: Exception) -> HttpResponse:
    log.warning("%s %s: refused by Redis: %s", request.method, request.path, exc)
    message = WRONG_TYPE.format(error=exc)
    if request.path.startswith("/api/"):
        return JsonResponse({"error": message}, status=409)
    match = request.resolver_match
    key = str(match.kwargs.get("stream", "")) if match else ""
    if getattr(request, "htmx", False):  # an action button: its answer goes in its place
        return render(request, "console/_outcome.html", {"error": message}, status=409)
    context = {"key": key or request.path, "error": str(exc), "live": []}
    return render(request, "console/unreadable.html", context, status=409)
