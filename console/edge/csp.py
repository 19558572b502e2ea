"""Content-Security-Policy on every response: scripts, styles and connections from this origin only.

The console's pages have no inline script, event handler or style attribute (htmx is told not to
inject its indicator style nor evaluate code, see templates/console/base.html), so an injected
``<script>`` or ``onerror=`` in a rendered value would not run even if escaping ever failed.
The same policy covers /admin/ (Django's admin has no inline script either).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponseBase
from django.utils.decorators import sync_and_async_middleware

HEADER = "Content-Security-Policy"


def policy(request: HttpRequest) -> str:
    """The policy for this request; the websocket's exact origin, not any ws: URL."""
    try:
        ws_origin = f" {'wss' if request.is_secure() else 'ws'}://{request.get_host()}"
    except DisallowedHost:  # the 400 for a bad Host header: no socket to allow
        ws_origin = ""
    directives = [
        "default-src 'self'",
        "script-src 'self'",
        # The admin site passes too (tests/e2e/test_console_csp.py); its one inline <style>,
        # a column width on a change list without actions, is dropped: cosmetic.
        "style-src 'self'",
        "img-src 'self' data:",
        f"connect-src 'self'{ws_origin}",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "object-src 'none'",
    ]
    return "; ".join(directives)


def _set(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    if HEADER not in response:  # a view that chose its own policy keeps it
        response[HEADER] = policy(request)
    return response


@sync_and_async_middleware
def content_security_policy(get_response: Callable[[HttpRequest], Any]) -> Any:
    """Both flavours, so daphne's async request path never hops to a thread for it."""
    if iscoroutinefunction(get_response):
        async_get_response: Callable[[HttpRequest], Awaitable[HttpResponseBase]] = get_response

        async def async_middleware(request: HttpRequest) -> HttpResponseBase:
            return _set(request, await async_get_response(request))

        return async_middleware

    def middleware(request: HttpRequest) -> HttpResponseBase:
        return _set(request, get_response(request))

    return middleware
