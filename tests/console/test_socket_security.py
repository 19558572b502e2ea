"""The dashboard socket: the page's exact origin only, and fragments by role."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import redis
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group, User
from django.test import Client, override_settings
from django.urls import path

from console.asgi import application
from console.consumers import SIGNED_OUT_CODE, DashboardConsumer
from console.live import realtime, ticker
from tests.support.console import cookie_header, process
from tests.support.engine import STREAM
from workers import publish
from workers.core.config import EngineConfig

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

HOST = (b"host", b"localhost:8000")
GROUP = realtime.group_key(STREAM, "agents")
# Only the operators' variant of the group summary has this column (and its buttons).
OPERATOR_MARK = "<th>Actions</th>"


async def connects(client: Client, headers: list[tuple[bytes, bytes]]) -> bool:
    communicator = WebsocketCommunicator(
        application, "/ws/dashboard/", headers=[*headers, cookie_header(client)]
    )
    connected, _ = await communicator.connect()
    await communicator.disconnect()
    await ticker.stop()
    return bool(connected)


async def test_socket_same_origin_is_accepted(r: Any, staff_client: Client) -> None:
    assert await connects(staff_client, [HOST, (b"origin", b"http://localhost:8000")])


async def test_socket_origin_on_another_port_is_refused(r: Any, staff_client: Client) -> None:
    # Another local app (or a dev server) on the same host name: a different origin.
    assert not await connects(staff_client, [HOST, (b"origin", b"http://localhost:3000")])


async def test_socket_origin_with_another_scheme_is_refused(r: Any, staff_client: Client) -> None:
    assert not await connects(staff_client, [HOST, (b"origin", b"https://localhost:8000")])


async def test_socket_without_origin_is_refused(r: Any, staff_client: Client) -> None:
    assert not await connects(staff_client, [HOST])


async def test_socket_host_outside_allowed_hosts_is_refused(r: Any, staff_client: Client) -> None:
    origin = (b"origin", b"http://evil.example:8000")
    assert not await connects(staff_client, [(b"host", b"evil.example:8000"), origin])


@override_settings(
    SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https"),
    ALLOWED_HOSTS=["console.example"],
)
async def test_socket_behind_tls_proxy_wants_https_origin(r: Any, staff_client: Client) -> None:
    proxied = [(b"host", b"console.example"), (b"x-forwarded-proto", b"https")]
    assert await connects(staff_client, [*proxied, (b"origin", b"https://console.example")])
    assert not await connects(staff_client, [*proxied, (b"origin", b"http://console.example")])


@override_settings(CSRF_TRUSTED_ORIGINS=["https://*.example.org"])
async def test_socket_trusted_origin_is_accepted(r: Any, staff_client: Client) -> None:
    assert await connects(staff_client, [HOST, (b"origin", b"https://ops.example.org")])


async def pushed_fragments(client: Client, names: list[str]) -> dict[str, str]:
    """One tick's fragments for a socket that subscribed to ``names``."""
    communicator = WebsocketCommunicator(
        application,
        "/ws/dashboard/",
        headers=[HOST, (b"origin", b"http://localhost:8000"), cookie_header(client)],
    )
    connected, _ = await communicator.connect()
    assert connected
    try:
        await communicator.send_to(text_data=json.dumps({"subscribe": names}))
        tick = json.loads(await communicator.receive_from(timeout=5))
        return tick["fragments"]  # type: ignore[no-any-return]
    finally:
        await communicator.disconnect()
        await ticker.stop()


async def test_viewer_socket_never_gets_operator_fragment(
    r: redis.Redis, redis_url: str, config: EngineConfig, viewer_client: Client
) -> None:
    publish("demo.echo", {"n": 0})
    await asyncio.to_thread(process, redis_url, config)  # the group gets a consumer
    # A viewer asking for the operators' variant by its name, too.
    fragments = await pushed_fragments(
        viewer_client, [GROUP, realtime.operator_variant(GROUP), realtime.operator_variant("jobs")]
    )
    assert list(fragments) == [GROUP]
    assert "Consumers" in fragments[GROUP]
    assert OPERATOR_MARK not in fragments[GROUP]


async def test_operator_socket_gets_operator_fragment(
    r: redis.Redis, redis_url: str, config: EngineConfig, operator_client: Client
) -> None:
    publish("demo.echo", {"n": 0})
    await asyncio.to_thread(process, redis_url, config)
    fragments = await pushed_fragments(operator_client, [GROUP])
    assert list(fragments) == [GROUP]
    assert OPERATOR_MARK in fragments[GROUP]


# The real consumer and auth stack, re-reading the session and role at every tick.
RECHECKING = AuthMiddlewareStack(
    URLRouter([path("ws/dashboard/", DashboardConsumer.as_asgi(recheck_s=0))])
)


async def recheck_socket(client: Client, names: list[str]) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(
        RECHECKING, "/ws/dashboard/", headers=[HOST, cookie_header(client)]
    )
    connected, _ = await communicator.connect()
    assert connected
    await communicator.send_to(text_data=json.dumps({"subscribe": names}))
    return communicator


async def next_group_fragment(communicator: WebsocketCommunicator) -> str:
    tick = json.loads(await communicator.receive_from(timeout=5))
    return tick["fragments"][GROUP]  # type: ignore[no-any-return]


def demote(user: User) -> None:
    user.groups.set([Group.objects.get(name="viewers")])


async def test_demoted_operator_socket_loses_operator_fragment(
    r: redis.Redis, redis_url: str, config: EngineConfig, operator: User, operator_client: Client
) -> None:
    publish("demo.echo", {"n": 0})
    await asyncio.to_thread(process, redis_url, config)
    communicator = await recheck_socket(operator_client, [GROUP])
    try:
        assert OPERATOR_MARK in await next_group_fragment(communicator)
        await database_sync_to_async(demote)(operator)
        # A tick already under way may still be the operator's: the one after is not.
        await next_group_fragment(communicator)
        assert OPERATOR_MARK not in await next_group_fragment(communicator)
    finally:
        await communicator.disconnect()
        await ticker.stop()


async def test_signed_out_socket_is_closed(r: redis.Redis, staff_client: Client) -> None:
    communicator = await recheck_socket(staff_client, ["overview"])
    try:
        await communicator.receive_from(timeout=5)
        await database_sync_to_async(staff_client.logout)()
        for _ in range(3):  # at most a tick in flight, then the close
            output = await communicator.receive_output(timeout=5)
            if output["type"] == "websocket.close":
                break
        assert output == {"type": "websocket.close", "code": SIGNED_OUT_CODE}
    finally:
        # Ends the consumer's task: left running, its last session read kept a database
        # connection open, and PostgreSQL then refused to drop the test database.
        await communicator.disconnect()
        await ticker.stop()
