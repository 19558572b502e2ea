"""A named agent's read (workers/fanout/reader.py): what is not its own is acked in the
server and never reaches the worker; what is, arrives whole."""

from __future__ import annotations

import asyncio
import json

import redis
import redis.asyncio as aredis

from tests.support.engine import STREAM
from workers.fanout.reader import OwnReader, _plain

GROUP = "agents:summarise"


def event(type_: str, n: int, **more: object) -> str:
    return json.dumps({"type": type_, "source": "t", "id": f"e{n}", "data": {"n": n}, **more})


def read(url: str, want: int = 100, type_: str = "ticket.created") -> tuple[list[str], str]:
    async def main() -> tuple[list[str], str]:
        client = aredis.Redis.from_url(url, decode_responses=True)
        try:
            own = OwnReader(client, STREAM, GROUP, "c1", type_)
            batch, flag, last = await own.read(want, "streamdesk:paused:none")
            assert flag is None
            return [f"{d.entry_id}:{d.fields.get('for', '')}" for d in batch], last
        finally:
            await client.aclose()

    return asyncio.run(main())


def test_only_its_own_entries_reach_it(r: redis.Redis, redis_url: str) -> None:
    r.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
    mine = r.xadd(STREAM, {"event": event("ticket.created", 1)})
    r.xadd(STREAM, {"event": event("ticket.closed", 2)})
    # Its type's name inside another type's data is not its type.
    r.xadd(STREAM, {"event": event("ticket.closed", 3, subject="ticket.created")})
    for_me = r.xadd(STREAM, {"event": event("ticket.created", 4), "for": GROUP})
    r.xadd(STREAM, {"event": event("ticket.created", 5), "for": "agents"})
    r.xadd(STREAM, {"event": "{not json ticket.created"})  # the home group's to dead-letter
    r.xadd(STREAM, {"something": "else"})
    spaced = r.xadd(STREAM, {"event": '{ "type" : "ticket.created", "source": "t", "data": {} }'})
    got, last = read(redis_url)
    assert got == [f"{mine}:", f"{for_me}:{GROUP}", f"{spaced}:"]
    assert last == ""
    # The others were acked where they were: only its own are pending, nothing is new.
    assert r.xpending(STREAM, GROUP)["pending"] == 3
    [info] = [g for g in r.xinfo_groups(STREAM) if g["name"] == GROUP]
    assert info["lag"] == 0


def test_a_batch_all_others_is_read_past_and_at_rest_it_says_where_to_block(
    r: redis.Redis, redis_url: str
) -> None:
    r.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
    for n in range(25):
        r.xadd(STREAM, {"event": event("other.type", n)})
    mine = r.xadd(STREAM, {"event": event("ticket.created", 99)})
    got, _ = read(redis_url, want=10)  # two whole batches of others first
    assert got == [f"{mine}:"]
    got, last = read(redis_url, want=10)
    assert got == [] and last == mine  # nothing new: block after the newest entry


def test_an_escaped_slash_and_a_type_that_needs_decoding(r: redis.Redis, redis_url: str) -> None:
    r.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
    slashed = r.xadd(STREAM, {"event": '{"type": "a\\/b", "source": "t", "data": {}}'})
    got, _ = read(redis_url, type_="a/b")
    assert got == [f"{slashed}:"]
    assert _plain("ticket.created") and _plain("a/b") and not _plain('we"ird') and not _plain("é")
    odd = r.xadd(STREAM, {"event": json.dumps({"type": "t\u00e9", "source": "t", "data": {}})})
    got, _ = read(redis_url, type_="t\u00e9")
    assert got == [f"{odd}:"]
