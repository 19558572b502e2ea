"""The group's sweep token on its own (no Worker): one worker sweeps while the others
learn when the next turn is from one PTTL, and the turns come at least as often as the
fleet's chores need."""

from __future__ import annotations

import asyncio
from typing import Any

import redis
import redis.asyncio as aredis

from workers.core.keys import Keys
from workers.engine.sweep import SweepToken

STREAM, GROUP = "sweep-test", "agents"


def _token(client: aredis.Redis, consumer: str, chores_every_ms: int | None = None) -> SweepToken:
    keys = Keys()
    return SweepToken(
        client,
        keys.sweep(STREAM, GROUP),
        STREAM,
        GROUP,
        consumer,
        claim_idle_ms=60_000,
        interval_ms=2_000,
        waits_key=keys.waits(STREAM, GROUP),
        chores_every_ms=chores_every_ms,
    )


async def _turns(redis_url: str, chores_every_ms: int | None) -> tuple[list[str], float, float]:
    client = aredis.Redis.from_url(redis_url, decode_responses=True)
    await client.xgroup_create(STREAM, GROUP, id="$", mkstream=True)
    swept: list[str] = []

    def sweeper(name: str):  # type: ignore[no-untyped-def]
        async def sweep() -> bool:
            swept.append(name)
            return False

        return sweep

    a, b = _token(client, "a", chores_every_ms), _token(client, "b", chores_every_ms)
    a_wait = await a.turn(sweeper("a"))
    b_wait = await b.turn(sweeper("b"))
    await client.aclose()
    return swept, a_wait, b_wait


def test_one_sweeps_and_the_other_waits_for_the_next_turn(r: redis.Redis, redis_url: str) -> None:
    swept, a_wait, b_wait = asyncio.run(_turns(redis_url, None))
    assert swept == ["a"]
    # Nothing pending: the next sweep is a claim idle time away, for both.
    assert a_wait == 60
    assert 59 < b_wait <= 60 + 0.2
    assert r.get(Keys().sweep(STREAM, GROUP)) == "a"


def test_turns_come_as_often_as_the_chores_need(r: redis.Redis, redis_url: str) -> None:
    swept, a_wait, b_wait = asyncio.run(_turns(redis_url, 5_000))
    assert swept == ["a"]
    assert a_wait == 5
    assert 4 < b_wait <= 5 + 0.2


class Counting(aredis.Redis):
    """A client that notes the name of each command it sends (the server is shared)."""

    sent: list[str]

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        self.sent.append(str(args[0]).lower())
        return await super().execute_command(*args, **options)


def test_a_loser_asks_one_command(r: redis.Redis, redis_url: str) -> None:
    r.set(Keys().sweep(STREAM, GROUP), "someone", px=30_000)

    async def lose() -> tuple[float, list[str]]:
        client = Counting.from_url(redis_url, decode_responses=True)
        client.sent = []
        try:
            return await _token(client, "b").turn(_never), client.sent
        finally:
            await client.aclose()

    wait_s, sent = asyncio.run(lose())
    assert 29 < wait_s <= 30.2
    assert sent == ["pttl"]
    assert r.get(Keys().sweep(STREAM, GROUP)) == "someone"


async def _never() -> bool:
    raise AssertionError("a loser must not sweep")
