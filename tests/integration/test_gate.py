"""The Lua gate against a real server."""

from __future__ import annotations

import asyncio
import time

import redis
import redis.asyncio as aredis

from workers.core.keys import Keys
from workers.gate import Gate, Outcome
from workers.redis.connection import aconnect


def run(coro):  # type: ignore[no-untyped-def]
    return asyncio.run(coro)


async def with_gate(redis_url: str, lease_ms: int, fn):  # type: ignore[no-untyped-def]
    client = aredis.Redis.from_url(redis_url, decode_responses=True)
    gate = Gate(client, Keys(), lease_ms, done_ttl_s=60)
    try:
        return await fn(gate, client)
    finally:
        await gate.aclose()
        await client.aclose()


def test_first_caller_acquires_second_is_busy(r: redis.Redis, redis_url: str) -> None:
    async def go(gate: Gate, client: aredis.Redis) -> list[object]:
        return await gate.acquire_many([("h1", "a/1"), ("h1", "b/2")])

    first, second = run(with_gate(redis_url, 5000, go))
    assert (first.outcome, first.token) == (Outcome.ACQUIRED, 1)
    assert second.outcome is Outcome.BUSY


def test_expired_lease_is_taken_over_with_a_higher_token(r: redis.Redis, redis_url: str) -> None:
    async def go(gate: Gate, client: aredis.Redis) -> list[object]:
        [a] = await gate.acquire_many([("h", "a/1")])
        await asyncio.sleep(0.15)
        [b] = await gate.acquire_many([("h", "b/2")])
        return [a, b]

    a, b = run(with_gate(redis_url, 100, go))
    assert b.outcome is Outcome.TAKEOVER
    assert b.token == a.token + 1


def test_done_record_is_a_hit(r: redis.Redis, redis_url: str) -> None:
    async def go(gate: Gate, client: aredis.Redis) -> object:
        await gate.acquire_many([("h", "a/1")])
        async with client.pipeline(transaction=False) as pipe:
            gate.queue_done(pipe, ["h"])
            await pipe.execute()
        [again] = await gate.acquire_many([("h", "b/2")])
        return again

    assert run(with_gate(redis_url, 5000, go)).outcome is Outcome.HIT
    assert 0 < r.ttl("streamdesk:idem:h") <= 60


def test_release_lets_a_retry_start_at_once(r: redis.Redis, redis_url: str) -> None:
    async def go(gate: Gate, client: aredis.Redis) -> object:
        [a] = await gate.acquire_many([("h", "a/1")])
        async with client.pipeline(transaction=False) as pipe:
            gate.queue_release(pipe, "h", "a/1", a.token)
            await pipe.execute()
        [b] = await gate.acquire_many([("h", "b/2")])
        return b

    b = run(with_gate(redis_url, 60_000, go))
    assert (b.outcome, b.token) == (Outcome.ACQUIRED, 2)


def test_release_by_a_stale_owner_changes_nothing(r: redis.Redis, redis_url: str) -> None:
    async def go(gate: Gate, client: aredis.Redis) -> object:
        await gate.acquire_many([("h", "a/1")])
        async with client.pipeline(transaction=False) as pipe:
            gate.queue_release(pipe, "h", "a/1", 99)
            await pipe.execute()
        [b] = await gate.acquire_many([("h", "b/2")])
        return b

    assert run(with_gate(redis_url, 60_000, go)).outcome is Outcome.BUSY


def test_renew_keeps_a_long_agent_from_being_taken_over(r: redis.Redis, redis_url: str) -> None:
    # Four renewals 0.3 s apart outlast the 1 s lease (b asks 1.2 s or more after a's acquire,
    # asyncio.sleep never ends early); a renewal that came more than a lease late (a loaded
    # machine stalling the loop) would lose it, so each gap leaves 0.7 s of slack.
    async def go(gate: Gate, client: aredis.Redis) -> list[object]:
        [a] = await gate.acquire_many([("h", "a/1")])
        first_until = int(await client.hget("streamdesk:idem:h", "lease_until") or 0)
        held = []
        for _ in range(4):
            await asyncio.sleep(0.3)
            held += await gate.renew_many([("h", "a/1", a.token)])
        seconds, micros = await client.time()
        [b] = await gate.acquire_many([("h", "b/2")])
        return [held, b, seconds * 1000 + micros // 1000 - first_until]

    held, b, past_first_lease_ms = run(with_gate(redis_url, 1000, go))
    assert held == [True] * 4
    assert b.outcome is Outcome.BUSY
    assert past_first_lease_ms > 0  # by the server's clock, as the gate counts


def test_renew_reports_a_lost_lease(r: redis.Redis, redis_url: str) -> None:
    async def go(gate: Gate, client: aredis.Redis) -> list[bool]:
        [a] = await gate.acquire_many([("h", "a/1")])
        await asyncio.sleep(0.15)
        await gate.acquire_many([("h", "b/2")])
        return await gate.renew_many([("h", "a/1", a.token)])

    assert run(with_gate(redis_url, 100, go)) == [False]


def test_lease_uses_the_server_clock(r: redis.Redis, redis_url: str) -> None:
    async def go(gate: Gate, client: aredis.Redis) -> None:
        await gate.acquire_many([("h", "a/1")])

    run(with_gate(redis_url, 10_000, go))
    server_ms = int(r.time()[0]) * 1000
    lease_until = int(r.hget("streamdesk:idem:h", "lease_until") or 0)
    assert 9_000 < lease_until - server_ms <= 11_000
    assert abs(server_ms - time.time() * 1000) < 60_000


def test_the_request_is_at_the_server_before_the_next_task_runs(
    r: redis.Redis, redis_url: str
) -> None:
    """The engine runs the database's duplicate check beside the gate, and the check may
    block the loop (a lookup on its thread): the gate's request must already be out."""

    async def go() -> list[str | None]:
        client = await aconnect(redis_url, socket_timeout=5)  # as the engine connects
        gate = Gate(client, Keys(), 5000, done_ttl_s=60)
        seen: list[str | None] = []

        async def blocking_lookup() -> None:
            time.sleep(0.2)  # the loop is held; only the server can make progress
            seen.append(r.hget("streamdesk:idem:h2", "state"))

        try:
            await gate.acquire_many([("h1", "a/1")])  # the first call connects
            await asyncio.gather(gate.acquire_many([("h2", "a/2")]), blocking_lookup())
        finally:
            await gate.aclose()
            await client.aclose()
        return seen

    assert run(go()) == ["running"]


def test_acquire_reading_reads_hashes_in_the_same_call(r: redis.Redis, redis_url: str) -> None:
    """The engine reads the waits' match shapes this way (no command of their own): field
    names per hash, an empty list for a missing key, None for a key that is not a hash."""
    r.hset("shapes:a", mapping={"data.order": 2, "subject": 1})
    r.set("shapes:broken", "text")

    async def go(gate: Gate, client: aredis.Redis) -> tuple[list[object], list[object]]:
        keys = ["shapes:a", "shapes:none", "shapes:broken"]
        return await gate.acquire_reading([("h1", "a/1")], keys)  # type: ignore[return-value]

    tickets, read = run(with_gate(redis_url, 5000, go))
    assert [t.outcome for t in tickets] == [Outcome.ACQUIRED]  # type: ignore[attr-defined]
    assert [sorted(x) if x is not None else None for x in read] == [  # type: ignore[arg-type]
        ["data.order", "subject"],
        [],
        None,
    ]
