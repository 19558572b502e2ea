"""``manage.py metrics``' server: one WSGI app serving ``/metrics`` on its own port.

The standard library's WSGI server with a thread per scrape; each scrape reads one sample, as
the console's ``GET /metrics`` does, and is let in by the same ``ScrapeAccess`` rules.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from workers.core.keys import DEFAULT_GROUP
from workers.monitor.prometheus import CONTENT_TYPE, exposition
from workers.monitor.sample import Sample
from workers.monitor.scrape_access import ScrapeAccess

StartResponse = Callable[..., Any]
PATH = "/metrics"


class MetricsApp:
    def __init__(
        self,
        read: Callable[[], Sample],
        claim_idle_ms: int,
        access: ScrapeAccess,
        home: str = DEFAULT_GROUP,
    ):
        self.read = read
        self.claim_idle_ms = claim_idle_ms
        self.access = access
        # The home group's name (``EngineConfig.group``): each group's ``agent`` label.
        self.home = home

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "") not in (PATH, "/"):
            return _text(start_response, "404 Not Found", f"metrics are at {PATH}")
        if environ.get("REQUEST_METHOD") not in ("GET", "HEAD"):
            return _text(start_response, "405 Method Not Allowed", "use GET")
        refusal = self.access.check(
            str(environ.get("REMOTE_ADDR", "")), str(environ.get("HTTP_AUTHORIZATION", ""))
        )
        if refusal is not None:
            status = "401 Unauthorized" if refusal.status == 401 else "403 Forbidden"
            extra = (("WWW-Authenticate", refusal.challenge),) if refusal.challenge else ()
            return _text(start_response, status, refusal.message, extra)
        body = exposition(self.read, self.claim_idle_ms, self.home)
        start_response(
            "200 OK",
            [("Content-Type", CONTENT_TYPE), ("Content-Length", str(len(body))),
             ("Cache-Control", "no-store")],
        )  # fmt: skip
        return [body]


def _text(
    start_response: StartResponse,
    status: str,
    message: str,
    extra: tuple[tuple[str, str], ...] = (),
) -> list[bytes]:
    body = f"{message}\n".encode()
    start_response(status, [("Content-Type", "text/plain; charset=utf-8"), *extra])
    return [body]


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Prometheus scrapes every few seconds: an access log line each is noise."""


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a slow scrape must not hold the process at exit


class _Server6(_Server):
    address_family = socket.AF_INET6


def is_loopback(bind: str) -> bool:
    try:
        return ipaddress.ip_address(bind).is_loopback
    except ValueError:
        return bind == "localhost"


def server(bind: str, port: int, app: MetricsApp) -> WSGIServer:
    """Bound and listening; ``OSError`` if the port is taken or the address is not ours."""
    server_class = _Server6 if ":" in bind else _Server
    return make_server(bind, port, app, server_class=server_class, handler_class=_Quiet)
