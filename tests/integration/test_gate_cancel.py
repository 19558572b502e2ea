"""The gate's side of cancellation against a real server: a cancel request on a live lease is
reported by the renewal, a cancelled record is a hit, an expired lease with a request becomes
cancelled rather than taken over, a force re-run's clear forgets the request, and the
operator's cancel script answers each state."""

from __future__ import annotations

import asyncio
from typing import Any

import redis
import redis.asyncio as aredis

from workers.cancel import CancelRequest
from workers.core.keys import Keys
from workers.gate import CANCEL_ASKED, Gate, Outcome, cancel_gate, clear_gate

KEYS = Keys()
RECORD = KEYS.gate("h")
STREAM = "streamdesk:events"


def with_gate(redis_url: str, lease_ms: int, fn: Any) -> Any:
    async def go() -> Any:
        client = aredis.Redis.from_url(redis_url, decode_responses=True)
        gate = Gate(client, KEYS, lease_ms, done_ttl_s=60)
        try:
            return await fn(gate)
        finally:
            await gate.aclose()
            await client.aclose()

    return asyncio.run(go())


def cancel(r: redis.Redis, entries: tuple[tuple[str, str], ...] = ()) -> tuple[str, int]:
    return cancel_gate(r, KEYS, STREAM, "h", list(entries), by="alice", reason="r", ttl_s=60)


def test_gate_cancel_on_a_live_lease_is_requested_and_the_renewal_reports_it(
    r: redis.Redis, redis_url: str
) -> None:
    async def go(gate: Gate) -> list[list[int]]:
        [a] = await gate.acquire_many([("h", "a/1")])
        before = await gate.renew_many([("h", "a/1", a.token)])
        status = await asyncio.to_thread(cancel, r)
        assert status == ("requested", 0)
        return [before, await gate.renew_many([("h", "a/1", a.token)])]

    assert with_gate(redis_url, 5000, go) == [[1], [CANCEL_ASKED]]
    assert r.hgetall(RECORD)["cancel"] == "alice"


def test_gate_cancelled_record_is_a_hit(r: redis.Redis, redis_url: str) -> None:
    r.hset(RECORD, mapping={"state": "cancelled", "token": 3})

    async def go(gate: Gate) -> Any:
        return await gate.acquire_many([("h", "b/2")])

    [ticket] = with_gate(redis_url, 5000, go)
    assert ticket.outcome is Outcome.HIT


def test_gate_expired_lease_with_a_request_becomes_cancelled_not_taken_over(
    r: redis.Redis, redis_url: str
) -> None:
    r.hset(RECORD, mapping={"state": "running", "owner": "a/1", "token": 1, "lease_until": 1})
    r.hset(RECORD, "cancel", "alice")

    async def go(gate: Gate) -> Any:
        return await gate.acquire_many([("h", "b/2")])

    [ticket] = with_gate(redis_url, 5000, go)
    assert ticket.outcome is Outcome.HIT
    assert r.hget(RECORD, "state") == "cancelled"


def test_gate_cancel_of_a_waiting_entry_acks_it_and_clear_forgets_the_request(
    r: redis.Redis,
) -> None:
    entry_id = str(r.xadd(STREAM, {"event": "{}"}))
    r.xgroup_create(STREAM, "agents", id="0")
    r.xreadgroup("agents", "gone", {STREAM: ">"})
    assert cancel(r, (("agents", entry_id), ("other", entry_id))) == ("stopped", 1)
    assert r.xpending(STREAM, "agents")["pending"] == 0
    assert r.hget(RECORD, "state") == "cancelled" and r.ttl(RECORD) > 0
    assert r.hget(KEYS.stats(STREAM), "cancelled") == "1"
    assert cancel(r) == ("cancelled", 0)
    assert clear_gate(r, KEYS, "h")
    assert r.hmget(RECORD, "state", "cancel") == ["released", None]


def test_gate_cancel_of_nothing_and_of_a_done_event_changes_nothing(r: redis.Redis) -> None:
    assert cancel(r) == ("none", 0)
    assert not r.exists(RECORD)
    r.hset(RECORD, "state", "done")
    assert cancel(r) == ("done", 0)
    assert r.hget(RECORD, "state") == "done"


def test_cancel_request_detail_names_who_and_why() -> None:
    assert CancelRequest("alice", "wrong customer").detail == "cancelled by alice: wrong customer"
    assert CancelRequest("").detail == "cancelled by an operator"
