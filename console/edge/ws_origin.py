"""The websocket's origin check: the page's exact origin (scheme, host and port), as Django's
CSRF check does for forms.

channels' ``AllowedHostsOriginValidator`` compares only the host name against ALLOWED_HOSTS,
so a page served from any other port of an allowed host (another local app, a dev server)
could open the dashboard socket with the operator's cookie and read the live fragments.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

DEFAULT_PORTS = {"http": 80, "https": 443}
# What Django allows when DEBUG is on and ALLOWED_HOSTS is empty.
DEBUG_HOSTS = [".localhost", "127.0.0.1", "[::1]"]


def _header(scope: dict[str, Any], name: bytes) -> str | None:
    """The first value of a request header (ASGI names are lower-case bytes)."""
    for key, value in scope.get("headers", []):
        if key == name:
            return str(value.decode("latin1"))
    return None


def _origin_tuple(origin: str) -> tuple[str, str, int] | None:
    """``scheme://host[:port]`` as (scheme, host, port) with the default port filled in."""
    try:
        parts = urlsplit(origin)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname or parts.path or parts.query:
        return None
    return parts.scheme, parts.hostname.lower(), port or DEFAULT_PORTS[parts.scheme]


def _host(scope: dict[str, Any]) -> str | None:
    """The host the browser addressed, as ``request.get_host()`` finds it."""
    host = None
    if settings.USE_X_FORWARDED_HOST:
        host = _header(scope, b"x-forwarded-host")
    host = host or _header(scope, b"host")
    if host is None and scope.get("server"):
        name, port = scope["server"][0], scope["server"][1]
        host = name if port in (80, 443, None) else f"{name}:{port}"
    return host


def _is_secure(scope: dict[str, Any]) -> bool:
    """``request.is_secure()``: the proxy's header when configured, else the socket's scheme."""
    proxy = settings.SECURE_PROXY_SSL_HEADER
    if proxy:
        meta_name, secure_value = proxy
        # Django names it as in META (HTTP_X_FORWARDED_PROTO): back to the header name.
        header = meta_name.removeprefix("HTTP_").lower().replace("_", "-").encode()
        value = _header(scope, header)
        if value is not None:
            return bool(value.split(",", 1)[0].strip() == secure_value)
    return scope.get("scheme") == "wss"


def _trusted(origin: str) -> bool:
    """CSRF_TRUSTED_ORIGINS: exact origins, or ``scheme://*.domain`` patterns."""
    parsed = _origin_tuple(origin)
    if parsed is None:
        return False
    for pattern in getattr(settings, "CSRF_TRUSTED_ORIGINS", []):
        if "://*." in pattern:
            scheme, _, netloc = pattern.partition("://")
            request_netloc = origin.split("://", 1)[1].lower()
            if scheme == parsed[0] and is_same_domain(request_netloc, netloc.lstrip("*").lower()):
                return True
        elif _origin_tuple(pattern) == parsed:
            return True
    return False


def origin_allowed(scope: dict[str, Any]) -> bool:
    """The Origin header is this server's own origin, or a trusted one (never absent)."""
    origin = _header(scope, b"origin")
    host = _host(scope)
    if origin is None or host is None:
        return False
    allowed_hosts = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed_hosts:
        allowed_hosts = DEBUG_HOSTS
    domain, _ = split_domain_port(host)
    if not domain or not validate_host(domain, allowed_hosts):
        return False
    scheme = "https" if _is_secure(scope) else "http"
    own = _origin_tuple(f"{scheme}://{host}")
    parsed = _origin_tuple(origin)
    return (parsed is not None and parsed == own) or _trusted(origin)


class SameOriginValidator:
    """ASGI middleware: refuses the websocket handshake (HTTP 403) from any other origin."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> Any:
        if origin_allowed(scope):
            return await self.app(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)
