"""What Redis refuses for good never holds a worker (issue 26): a key under the prefix of the
wrong type (a stats hash or a gate record that is a plain string), a dead-letter key that is
not a stream, an error text no Redis command can carry. The offending event is dead-lettered,
kept pending or its counter skipped; the rest of its batch is processed."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import pytest
import redis
import redis.asyncio as aredis

from tests.support.engine import STREAM, AnyData, pending, run_burst, xadd
from workers.core.config import EngineConfig
from workers.core.events import decode_envelope, event_hash
from workers.core.keys import Keys
from workers.core.registry import Registry
from workers.engine.worker import Worker
from workers.models import AgentRun, RunStatus
from workers.store.runs import DjangoRunStore

pytestmark = pytest.mark.django_db(transaction=True)

DEAD = f"{STREAM}:dead"
GOOD = [f"g{i}" for i in range(6)]


def agents(runs: list[str], fail: str = "", error: str = "always fails") -> Registry:
    registry = Registry()

    async def agent(event: Any, ctx: Any) -> str:
        runs.append(event.id)
        if event.id == fail:
            raise ValueError(error)
        return str(event.id)

    registry.register("test.refuse", AnyData, agent)
    return registry


def publish(r: redis.Redis, ids: list[str]) -> dict[str, str]:
    """Publish one event per id; returns each id's event hash."""
    hashes = {}
    for event_id in ids:
        event = {"type": "test.refuse", "source": "t", "id": event_id, "data": {}}
        xadd(r, event)
        hashes[event_id] = event_hash(decode_envelope(json.dumps(event)))
    return hashes


def succeeded() -> set[str]:
    return set(
        AgentRun.objects.filter(status=RunStatus.SUCCEEDED).values_list("event_id", flat=True)
    )


def test_a_stats_hash_of_the_wrong_type_skips_the_counters_not_the_events(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    r.set(Keys().stats(STREAM), "not a hash")
    runs: list[str] = []
    publish(r, [*GOOD, "bad"])

    run_burst(redis_url, replace(config, max_deliveries=1), agents(runs, "bad"), timeout_s=20)

    assert sorted(runs) == sorted([*GOOD, "bad"])
    assert succeeded() == set(GOOD) and pending(r) == 0
    assert [json.loads(f["event"])["id"] for _, f in r.xrange(DEAD)] == ["bad"]
    assert r.get(Keys().stats(STREAM)) == "not a hash"  # left for the operator to see


def test_a_gate_record_of_the_wrong_type_dead_letters_its_event_alone(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    runs: list[str] = []
    hashes = publish(r, ["bad", *GOOD])  # one batch, the broken one first
    key = Keys().gate(hashes["bad"])
    r.set(key, "not a hash")

    run_burst(redis_url, config, agents(runs), timeout_s=20)

    assert sorted(runs) == sorted(GOOD)  # never run unguarded
    assert succeeded() == set(GOOD) and pending(r) == 0
    ((_, letter),) = r.xrange(DEAD)
    assert json.loads(letter["event"])["id"] == "bad" and letter["reason"] == "gate-record"
    assert key in letter["error"] and "WRONGTYPE" in letter["error"]


def test_a_dead_letter_redis_refuses_leaves_its_entry_pending_not_lost(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """The dead-letter key is not a stream: the letter cannot be written, so the entry must
    not be acked either (a pipeline would ack it whatever the XADD did)."""
    r.set(DEAD, "not a stream")
    runs: list[str] = []
    publish(r, [*GOOD, "bad"])

    with pytest.raises(TimeoutError):  # a burst run never ends while "bad" is pending
        run_burst(redis_url, replace(config, max_deliveries=1), agents(runs, "bad"), 6)

    assert succeeded() == set(GOOD)
    assert pending(r) == 1 and r.get(DEAD) == "not a stream"
    (entry,) = r.xpending_range(STREAM, "agents", "-", "+", 10)
    (_, fields) = r.xrange(STREAM, entry["message_id"], entry["message_id"])[0]
    assert json.loads(fields["event"])["id"] == "bad"


def test_an_error_text_with_a_lone_surrogate_is_dead_lettered_escaped(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """An agent's message built from a file name decoded with surrogateescape: written
    through a client that encodes strictly, the dead letter holds its escape."""
    runs: list[str] = []
    publish(r, [*GOOD, "bad"])
    registry = agents(runs, "bad", error="cannot open b'\\xff': \udcff")

    async def run() -> None:
        client = aredis.Redis.from_url(redis_url, decode_responses=True)  # strict encoding
        worker = Worker(replace(config, max_deliveries=1), client, registry, DjangoRunStore())
        try:
            await asyncio.wait_for(worker.run(), 20)
        finally:
            await client.aclose()

    asyncio.run(run())

    assert succeeded() == set(GOOD) and pending(r) == 0
    ((_, letter),) = r.xrange(DEAD)
    assert letter["reason"] == "max-deliveries" and "\\udcff" in letter["error"]
    assert "\\udcff" in AgentRun.objects.get(event_id="bad").error
