"""Issue 26, items 14 and 6: the first websocket after a Redis restart is accepted, not a
500, and no message a client sends ends its socket.

The channel layer keeps its connection between sockets; after a restart that connection is
dead, and its first use failed the handshake while it reconnected for the next socket. A real
server is restarted here (its own, so the session's server and its data are not touched).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from channels.layers import channel_layers
from channels.testing import WebsocketCommunicator
from django.test import Client, override_settings

from console.asgi import application
from console.live import ticker
from tests.support.console import HOST, ORIGIN, cookie_header, next_tick, open_socket
from workers import from_settings
from workers.redis.embedded import PrivateServer

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture
def own_server() -> Iterator[PrivateServer]:
    """A server of this test's own, behind the console's client and a fresh channel layer."""
    server = PrivateServer(Path(tempfile.mkdtemp(prefix="streamdesk-test-ws-"))).start()
    try:
        with override_settings(REDIS_URL=server.url):
            from_settings._client.cache_clear()
            channel_layers.backends.clear()  # the next socket builds its layer on this server
            yield server
    finally:
        from_settings._client.cache_clear()
        channel_layers.backends.clear()
        server.stop()


async def _socket_opens(client: Client) -> bool:
    communicator = WebsocketCommunicator(
        application, "/ws/dashboard/", headers=[HOST, ORIGIN, cookie_header(client)]
    )
    try:
        connected, _ = await communicator.connect(timeout=5)
        return bool(connected)
    finally:
        # What is under test is the accept. Its consumer may end with the channel layer's
        # old subscription's error after a restart (channels-redis and redis-py reconnect it
        # from two tasks at once: "CLIENT SETINFO ... only SUBSCRIBE ... allowed", now and
        # then): the socket is closing anyway, and the next one is accepted.
        with contextlib.suppress(redis.ConnectionError):
            await communicator.disconnect()
        await ticker.stop()


# The old subscription's connection, cut by the restart, may be left unclosed (see above).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_first_websocket_after_a_redis_restart_is_accepted(
    own_server: PrivateServer, staff_client: Client
) -> None:
    assert await _socket_opens(staff_client)
    own_server.restart()
    assert await _socket_opens(staff_client)  # the first one after: it failed with a 500
    assert await _socket_opens(staff_client)


async def test_a_message_nested_past_the_parser_leaves_the_socket_open(
    r: redis.Redis, staff_client: Client
) -> None:
    """A page only ever sends a subscription; anything else is ignored, even JSON nested
    deeper than the parser recurses (a RecursionError ended the socket's consumer)."""
    communicator = await open_socket(staff_client, [])
    try:
        await communicator.send_to(text_data="[" * 100_000 + "]" * 100_000)
        await communicator.send_to(text_data=json.dumps({"subscribe": ["overview"]}))
        assert "overview" in (await next_tick(communicator))["fragments"]
    finally:
        await communicator.disconnect()
        await ticker.stop()
