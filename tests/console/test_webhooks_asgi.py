"""Webhooks through the real ASGI app: the body limit holds while the body arrives."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import redis
from channels.testing import HttpCommunicator

from console.asgi import application
from console.edge.body_limit import BodyLimits, LimitRequestBodies
from tests.support.webhook_signing import hmac_headers

SOURCES = {"any": {"scheme": "hmac", "secret": "s3", "id_header": "X-Delivery"}}
CHUNK = b"x" * 1000


def guard(app: object, webhook_bytes: int, default_bytes: int = 10**9) -> LimitRequestBodies:
    return LimitRequestBodies(app, BodyLimits(webhook_bytes, default_bytes))


@pytest.fixture(autouse=True)
def _sources(settings: Any) -> None:
    settings.STREAMDESK_WEBHOOKS = SOURCES


class Stream:
    """A client sending ``chunks`` chunks of 1000 bytes and no Content-Length."""

    def __init__(self, chunks: int) -> None:
        self.left = chunks
        self.received = 0
        self.sent: list[dict[str, Any]] = []

    async def receive(self) -> dict[str, Any]:
        self.left -= 1
        self.received += 1
        return {"type": "http.request", "body": CHUNK, "more_body": self.left > 0}

    async def send(self, message: dict[str, Any]) -> None:
        self.sent.append(message)


def scope(path: str, headers: list[tuple[bytes, bytes]] | None = None) -> dict[str, Any]:
    return {"type": "http", "method": "POST", "path": path, "headers": headers or []}


async def unreachable(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("the app behind the guard must not run")


def test_guard_refuses_a_body_without_content_length_as_it_passes_the_limit() -> None:
    client = Stream(chunks=1_000_000)  # a gigabyte, if it were all read
    asyncio.run(guard(unreachable, 10_000)(scope("/hooks/any/"), client.receive, client.send))
    assert client.sent[0]["status"] == 413
    assert client.received == 11  # one chunk past the limit, not the whole body


def test_guard_refuses_a_declared_length_over_the_limit_before_reading() -> None:
    client = Stream(chunks=5)
    asyncio.run(
        guard(unreachable, 10)(
            scope("/hooks/any/", [(b"content-length", b"5000")]), client.receive, client.send
        )
    )
    assert client.sent[0]["status"] == 413 and client.received == 0


def test_guard_ignores_a_lying_content_length() -> None:
    client = Stream(chunks=30)
    asyncio.run(
        guard(unreachable, 10_000)(
            scope("/hooks/any/", [(b"content-length", b"10")]), client.receive, client.send
        )
    )
    assert client.sent[0]["status"] == 413


def test_guard_gives_other_paths_the_default_limit() -> None:
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["path"])

    client = Stream(chunks=100)
    asyncio.run(guard(app, 10, default_bytes=100_000)(scope("/api/"), client.receive, client.send))
    assert seen == ["/api/"] and client.received == 100


def post(body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    raw = [(b"host", b"localhost"), (b"content-type", b"application/json")]
    raw += [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    communicator = HttpCommunicator(application, "POST", "/hooks/any/", body=body, headers=raw)
    return asyncio.run(communicator.get_response(timeout=10))


@pytest.mark.django_db(transaction=True)
def test_asgi_app_publishes_a_signed_webhook(r: redis.Redis) -> None:
    body = json.dumps({"order": 5}).encode()
    response = post(body, {**hmac_headers("s3", body), "X-Delivery": "o-5"})
    assert response["status"] == 202
    [(entry_id, _)] = r.xrange("streamdesk:events")
    assert json.loads(response["body"])["entry_id"] == entry_id


@pytest.mark.django_db(transaction=True)
def test_asgi_app_answers_413_over_the_configured_limit(r: redis.Redis) -> None:
    body = json.dumps({"pad": "x" * 2_000_000}).encode()
    assert post(body, hmac_headers("s3", body))["status"] == 413
    assert not r.exists("streamdesk:events")
