"""Request bodies on every path through the real ASGI app: over the limit is 413, before
Django reads it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.testing import HttpCommunicator
from django.conf import settings

from console.asgi import application
from console.edge.body_limit import BodyLimits, LimitRequestBodies


def post(path: str, body: bytes) -> dict[str, Any]:
    headers = [(b"host", b"localhost"), (b"content-type", b"application/x-www-form-urlencoded")]
    communicator = HttpCommunicator(application, "POST", path, body=body, headers=headers)
    return asyncio.run(communicator.get_response(timeout=10))


@pytest.mark.django_db(transaction=True)
def test_login_post_over_the_default_limit_is_413() -> None:
    response = post("/login/", b"a=" + b"x" * settings.STREAMDESK_MAX_REQUEST_BYTES)
    assert response["status"] == 413
    assert b"over 2621440 bytes" in response["body"]


@pytest.mark.django_db(transaction=True)
def test_login_post_under_the_default_limit_reaches_django() -> None:
    # Django answers it (no CSRF token here: 403), the guard does not.
    assert post("/login/", b"username=a&password=b")["status"] == 403


def test_guard_refuses_a_declared_length_on_any_path_before_reading() -> None:
    received: list[int] = []
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        received.append(1)
        return {"type": "http.request", "body": b"x", "more_body": True}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def unreachable(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the app behind the guard must not run")

    headers = [(b"content-length", b"1000001")]
    scope = {"type": "http", "method": "POST", "path": "/api/jobs/", "headers": headers}
    guard = LimitRequestBodies(unreachable, BodyLimits(10**9, 1_000_000))
    asyncio.run(guard(scope, receive, send))
    assert sent[0]["status"] == 413 and not received
