"""Only signed-in staff see anything: over HTTP and over the websocket."""

from __future__ import annotations

from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import User
from django.test import Client

from console.asgi import application
from tests.support.console import HOST, ORIGIN, cookie_header
from tests.support.engine import STREAM

pytestmark = pytest.mark.django_db(transaction=True)

PAGES = [
    "/",
    "/workers/",
    f"/streams/{STREAM}/",
    f"/streams/{STREAM}/groups/agents/",
    f"/streams/{STREAM}/dead/",
    f"/streams/{STREAM}/entries/1-0/",
    f"/events/{'0' * 64}/",
]


@pytest.mark.parametrize("url", PAGES)
def test_page_anonymous_redirects_to_login(r: Any, url: str) -> None:
    response = Client().get(url)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=")


@pytest.mark.parametrize("url", PAGES)
def test_page_non_staff_is_forbidden(r: Any, plain_client: Client, url: str) -> None:
    assert plain_client.get(url).status_code == 403


def test_login_form_signs_in_staff(r: Any, staff: User) -> None:
    client = Client()
    response = client.post("/login/", {"username": "operator", "password": "pw-operator"})
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/").status_code == 200


def test_logout_needs_post(r: Any, staff_client: Client) -> None:
    assert staff_client.get("/logout/").status_code == 405
    assert staff_client.post("/logout/").status_code == 302
    assert staff_client.get("/").status_code == 302


async def connects(headers: list[tuple[bytes, bytes]]) -> bool:
    communicator = WebsocketCommunicator(application, "/ws/dashboard/", headers=[HOST, *headers])
    connected, _ = await communicator.connect()
    await communicator.disconnect()
    return bool(connected)


@pytest.mark.asyncio
async def test_socket_anonymous_is_refused(r: Any) -> None:
    assert not await connects([ORIGIN])


@pytest.mark.asyncio
async def test_socket_non_staff_is_refused(r: Any, plain_client: Client) -> None:
    assert not await connects([ORIGIN, cookie_header(plain_client)])


@pytest.mark.asyncio
async def test_socket_cross_origin_is_refused(r: Any, staff_client: Client) -> None:
    assert not await connects([(b"origin", b"http://evil.example"), cookie_header(staff_client)])


@pytest.mark.asyncio
async def test_socket_staff_is_accepted(r: Any, staff_client: Client) -> None:
    from console.live import ticker

    try:
        assert await connects([ORIGIN, cookie_header(staff_client)])
    finally:
        await ticker.stop()
