"""The console's channel layer keeps to its db number: pub/sub channels belong to the server,
so two consoles sharing one server in different db numbers must not get each other's ticks."""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit, urlunsplit

import pytest

from console.runtime import ChannelLayer

pytestmark = pytest.mark.asyncio


def on_db(url: str, db: int) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{db}"))


async def test_a_group_message_reaches_its_own_db_only(redis_url: str) -> None:
    base = int(urlsplit(redis_url).path.strip("/") or 0)
    mine, other = (base, base + 1) if base < 15 else (base, base - 1)
    listener = ChannelLayer(hosts=[{"address": on_db(redis_url, mine)}])
    same_db = ChannelLayer(hosts=[{"address": on_db(redis_url, mine)}])
    other_db = ChannelLayer(hosts=[{"address": on_db(redis_url, other)}])
    try:
        channel = await listener.new_channel()
        await listener.group_add("dashboard", channel)
        await asyncio.sleep(0.1)  # the subscription is in place
        # One receive throughout: channels-redis unsubscribes a channel whose receive is cancelled.
        first = asyncio.ensure_future(listener.receive(channel))
        await other_db.group_send("dashboard", {"type": "dashboard.tick", "from": "other"})
        await asyncio.sleep(0.5)
        assert not first.done(), first.result()
        await same_db.group_send("dashboard", {"type": "dashboard.tick", "from": "same"})
        assert await asyncio.wait_for(first, 5) == {"type": "dashboard.tick", "from": "same"}
    finally:
        for layer in (listener, same_db, other_db):
            await layer.flush()
