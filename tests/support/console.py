"""The console tier's helpers: its paths, pending entries and dead letters as the pages show
them, signed-in websockets, API tokens and role users."""

from __future__ import annotations

import json
from typing import Any

import redis
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group, User
from django.test import Client

from console.asgi import application
from console.roles import ensure_role_groups
from tests.support.engine import STREAM, run_burst, xadd
from workers.core.config import EngineConfig
from workers.core.keys import dead_stream
from workers.core.registry import default_registry
from workers.models import ApiToken
from workers.operations.tokens import new_token

INDEX = "streamdesk:stats:streams"
GROUP = f"/streams/{STREAM}/groups/agents/"
ACT = f"{GROUP}act/"
DEAD = f"/streams/{STREAM}/dead/"
API_GROUP = f"/api/streams/{STREAM}/groups/agents/"
HTMX = {"HX-Request": "true"}
ORIGIN = (b"origin", b"http://localhost")
# Browsers send both; the socket accepts only the origin of the host it was opened on.
HOST = (b"host", b"localhost")


def pending_entries(r: redis.Redis, count: int = 4) -> list[str]:
    ids = [xadd(r, {"type": "demo.echo", "id": f"e{n}", "data": {"n": n}}) for n in range(count)]
    r.xgroup_create(STREAM, "agents", id="0")
    r.xreadgroup("agents", "gone-worker", {STREAM: ">"})
    r.sadd("streamdesk:stats:streams", STREAM)
    return ids


def dead_letter_fields(event: dict[str, Any], n: int) -> dict[str, str]:
    """The n-th dead letter as the engine writes it: ``event`` after 5 deliveries."""
    return {
        "event": json.dumps(event),
        "stream": STREAM,
        "group": "agents",
        "entry_id": f"{n + 1}-0",
        "deliveries": "5",
        "reason": "max-deliveries",
        "error": "boom",
        "dead_at": "",
        "by": "w",
    }


def dead_letters(r: redis.Redis, count: int = 3) -> list[str]:
    r.sadd("streamdesk:stats:streams", STREAM)
    return [
        str(
            r.xadd(
                dead_stream(STREAM),
                dead_letter_fields({"type": "demo.echo", "id": f"d{n}", "data": {"n": n}}, n),
            )
        )
        for n in range(count)
    ]


def text(response: object) -> str:
    return response.content.decode()  # type: ignore[attr-defined]


def dead_letter(r: redis.Redis, **fields: str) -> str:
    r.sadd(INDEX, STREAM)
    letter = {"stream": STREAM, "group": "agents", "entry_id": "1-0", "deliveries": "5"}
    letter.update({"reason": "max-deliveries", "error": "boom", "by": "w", **fields})
    return str(r.xadd(dead_stream(STREAM), letter))


def cookie_header(client: Client) -> tuple[bytes, bytes]:
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


async def open_socket(client: Client, names: list[str]) -> WebsocketCommunicator:
    communicator = WebsocketCommunicator(
        application, "/ws/dashboard/", headers=[HOST, ORIGIN, cookie_header(client)]
    )
    connected, _ = await communicator.connect()
    assert connected
    await communicator.send_to(text_data=json.dumps({"subscribe": names}))
    return communicator


async def next_tick(communicator: WebsocketCommunicator) -> dict[str, Any]:
    return json.loads(await communicator.receive_from(timeout=5))  # type: ignore[no-any-return]


def api_client(user: Any) -> tuple[Client, dict[str, str]]:
    token, key_hash, prefix = new_token()
    ApiToken.objects.create(user=user, name="t", key_hash=key_hash, prefix=prefix)
    return Client(), {"Authorization": f"Bearer {token}"}


def member_of(username: str, group: str) -> User:
    ensure_role_groups()  # transactional tests flush the groups the migration made
    user = User.objects.create_user(username, password=f"pw-{username}")
    user.groups.add(Group.objects.get(name=group))
    return user


def process(redis_url: str, config: EngineConfig) -> None:
    """Run one burst worker with the demo agents over everything published so far."""
    run_burst(redis_url, config, default_registry)
