"""Daphne's HTTP parser refuses an over-limit body as it arrives, on every path.

Daphne hands the application a request only once Twisted has received its whole body, and
then queues all of it at once: an ASGI middleware sees the first byte when the last one is
already in memory (a 1 GB POST to ``/login/`` grew the process by 1 GB). So the limit is
also applied here, in daphne's request class: a declared Content-Length over the limit is
answered 413 before the body is read, and a body without one (chunked) is cut off as soon
as it passes the limit. The bytes that still arrive are dropped, not kept, for at most
``LINGER_S`` (so the client can read the 413 before the connection closes), then the
connection is cut.
"""

from __future__ import annotations

import io
from typing import Any, ClassVar
from urllib.parse import unquote, urlsplit

from daphne import http_protocol
from twisted.web import http

from console.edge.body_limit import BodyLimits, refusal_body

LINGER_S = 5.0

_DaphneRequest: Any = http_protocol.WebRequest


def refusal(max_bytes: int) -> bytes:
    body = refusal_body(max_bytes)
    head = (
        "HTTP/1.1 413 Request Entity Too Large\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body


class LimitedRequest(_DaphneRequest):  # type: ignore[misc]
    """Daphne's request, counting body bytes as Twisted parses them."""

    limits: ClassVar[BodyLimits]
    _max_bytes: int | None = None
    _body_bytes = 0
    _refused = False
    _linger: Any = None  # a twisted DelayedCall

    def gotLength(self, length: int | None) -> None:
        # HTTP/1.x only: the request line is the channel's, and the refusal is written raw.
        if isinstance(self.channel, http.HTTPChannel):
            target = getattr(self.channel, "_path", b"").decode("latin-1")
            self._max_bytes = self.limits.for_path(unquote(urlsplit(target).path))
        if self._max_bytes is not None and length is not None and length > self._max_bytes:
            self.content = io.BytesIO()
            self._refuse()
            return
        super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:
        if self._refused:
            return
        self._body_bytes += len(data)
        if self._max_bytes is not None and self._body_bytes > self._max_bytes:
            self.content.close()  # what was kept of the body goes now
            self.content = io.BytesIO()
            self._refuse()
            return
        super().handleContentChunk(data)

    def process(self) -> Any:
        if self._refused:  # the client finished sending inside the linger: close cleanly
            self._close(abort=False)
            return None
        return super().process()

    def connectionLost(self, reason: Any) -> None:
        if self._linger is not None and self._linger.active():
            self._linger.cancel()
        super().connectionLost(reason)

    def _refuse(self) -> None:
        assert self._max_bytes is not None
        self._refused = True
        # No "100 Continue" after the answer: Twisted sends it once the headers are parsed.
        self.requestHeaders.removeHeader(b"expect")
        self.channel.transport.write(refusal(self._max_bytes))
        # Imported here: importing it installs a reactor, and daphne must install its own first.
        from twisted.internet import reactor

        clock: Any = reactor  # its zope interface methods lack ``self`` for mypy
        self._linger = clock.callLater(LINGER_S, self._close, abort=True)

    def _close(self, *, abort: bool) -> None:
        transport = self.channel.transport if self.channel is not None else None
        if transport is None:
            return
        if abort:
            transport.abortConnection()
        else:
            transport.loseConnection()


def install(limits: BodyLimits) -> None:
    """Every connection daphne accepts from now on uses :class:`LimitedRequest`."""
    LimitedRequest.limits = limits
    http_protocol.WebRequest = LimitedRequest
