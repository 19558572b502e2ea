"""Per-key order and concurrency (issue 29, item 1), in-process against a real server and
database: events of one key run one at a time in publish order across several workers,
other keys keep flowing, a waiting event holds no slot, ``concurrency`` caps per key or per
agent, and order holds when the head of a key is reclaimed from a dead consumer."""

from __future__ import annotations

import asyncio
import itertools
import random
import time
from collections import defaultdict
from dataclasses import replace
from typing import Any

import pytest
import redis

from tests.support.engine import STREAM, AnyData, counters, pending, run_burst, run_many, xadd
from workers.core.config import EngineConfig
from workers.core.errors import ConfigurationError, NonRetriable
from workers.core.registry import Registry
from workers.models import AgentRun

pytestmark = pytest.mark.django_db(transaction=True)


class Tracker:
    """Start and end of every run, by key; how many of each key ran at once at most."""

    def __init__(self) -> None:
        self.runs: dict[str, list[tuple[int, float, float]]] = defaultdict(list)
        self.now: dict[str, int] = defaultdict(int)
        self.most: dict[str, int] = defaultdict(int)

    async def run(self, key: str, seq: int, seconds: float) -> None:
        self.now[key] += 1
        self.most[key] = max(self.most[key], self.now[key])
        start = time.monotonic()
        await asyncio.sleep(seconds)
        self.now[key] -= 1
        self.runs[key].append((seq, start, time.monotonic()))


def publish(r: redis.Redis, kind: str, keys: list[str], per_key: int) -> None:
    n = 0
    for seq in range(per_key):
        for key in keys:
            xadd(r, {"type": kind, "source": "t", "id": f"{key}-{seq}-{n}", "subject": key,
                     "data": {"seq": seq, "account": {"id": key}}})  # fmt: skip
            n += 1


def consumers(config: EngineConfig, n: int) -> list[EngineConfig]:
    return [replace(config, consumer=f"w{i}") for i in range(n)]


def test_flow_keys_one_key_runs_in_publish_order_one_at_a_time_across_workers(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry, seen = Registry(), Tracker()

    @registry.agent("t.keyed", schema=AnyData, key="subject", concurrency=1)
    async def keyed(event: Any, ctx: Any) -> None:
        await seen.run(event.subject, event.data.seq, random.uniform(0, 0.01))

    subjects = [f"order/{i}" for i in range(10)]
    publish(r, "t.keyed", subjects, 20)
    run_many(redis_url, consumers(config, 3), registry, timeout_s=60)

    for subject in subjects:
        runs = seen.runs[subject]
        assert [seq for seq, _, _ in runs] == list(range(20)), subject
        assert all(a[2] <= b[1] for a, b in itertools.pairwise(runs)), subject
        assert seen.most[subject] == 1
    assert counters(r)["processed"] == 200 and pending(r) == 0
    assert set(AgentRun.objects.values_list("attempts", flat=True)) == {1}
    assert not r.keys("streamdesk:flow:*:q:*")
    assert r.hlen(f"streamdesk:flow:{STREAM}:agents:entries") == 0


def test_flow_keys_a_waiting_event_holds_no_slot_and_other_keys_keep_flowing(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry, seen = Registry(), Tracker()

    @registry.agent("t.keyed", schema=AnyData, key="subject")
    async def keyed(event: Any, ctx: Any) -> None:
        slow = event.subject == "hot"
        await seen.run(event.subject, event.data.seq, 0.3 if slow else 0.005)

    publish(r, "t.keyed", ["hot"], 5)
    publish(r, "t.keyed", [f"cold/{i}" for i in range(20)], 1)
    run_burst(redis_url, replace(config, concurrency=2), registry)

    hot = seen.runs["hot"]
    assert [seq for seq, _, _ in hot] == [0, 1, 2, 3, 4]
    cold_ends = [end for key, runs in seen.runs.items() if key != "hot" for _, _, end in runs]
    # Two slots: the four waiting hot events took none, so the cold ones all ran meanwhile.
    assert len(cold_ends) == 20 and max(cold_ends) < hot[1][2]


def test_flow_keys_concurrency_caps_each_key_and_without_key_the_whole_agent(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry, per_key, whole = Registry(), Tracker(), Tracker()

    @registry.agent("t.two", schema=AnyData, key="data.account.id", concurrency=2)
    async def two(event: Any, ctx: Any) -> None:
        await per_key.run(event.data.account["id"], event.data.seq, 0.02)

    @registry.agent("t.capped", schema=AnyData, concurrency=3)
    async def capped(event: Any, ctx: Any) -> None:
        await whole.run("all", event.data.seq, 0.02)

    publish(r, "t.two", ["a", "b"], 12)
    publish(r, "t.capped", [f"s{i}" for i in range(30)], 1)
    run_many(redis_url, consumers(config, 3), registry, timeout_s=60)

    assert per_key.most == {"a": 2, "b": 2}
    assert whole.most["all"] == 3 and len(whole.runs["all"]) == 30
    assert counters(r)["processed"] == 54 and pending(r) == 0


def test_flow_keys_order_holds_when_the_head_is_reclaimed_from_a_dead_consumer(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry, seen = Registry(), Tracker()

    @registry.agent("t.keyed", schema=AnyData, key="subject")
    async def keyed(event: Any, ctx: Any) -> None:
        await seen.run(event.subject, event.data.seq, 0.01)

    publish(r, "t.keyed", ["order/981"], 3)
    xadd(r, {"type": "t.keyed", "source": "t", "id": "other", "subject": "other",
             "data": {"seq": 0}})  # fmt: skip
    # A consumer reads the head of order/981 and dies before running it.
    dead = asyncio.run(
        read_as(redis_url, replace(config, consumer="dead", batch_size=1), registry, want=1)
    )
    assert [d.entry_id for d in dead] == [r.xrange(STREAM)[0][0]]
    started = time.monotonic()
    run_burst(redis_url, config, registry)

    runs = seen.runs["order/981"]
    assert [seq for seq, _, _ in runs] == [0, 1, 2]
    # The others waited for the reclaim (claim idle 1.5 s); "other" did not.
    assert runs[0][1] - started >= 1.4 and seen.runs["other"][0][1] - started < 1.0
    assert all(a[2] <= b[1] for a, b in itertools.pairwise(runs))
    attempts = dict(AgentRun.objects.values_list("event_id", "attempts"))
    assert attempts["order/981-1-1"] == attempts["order/981-2-2"] == 1  # waiting: no delivery


async def read_as(url: str, config: EngineConfig, registry: Registry, want: int) -> list[Any]:
    from redis import asyncio as aredis

    from workers.flow import Flow
    from workers.redis import bus

    client = aredis.Redis.from_url(url, decode_responses=True)
    try:
        await bus.ensure_group(client, config.stream, config.group)
        flow = Flow(client, config, registry, asyncio.Event())
        batch = (await flow.read(want, "streamdesk:paused:x")).batch
        return batch
    finally:
        await client.aclose()


def test_flow_keys_a_dead_lettered_head_lets_the_next_run(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry, seen = Registry(), Tracker()

    @registry.agent("t.keyed", schema=AnyData, key="subject")
    async def keyed(event: Any, ctx: Any) -> None:
        if event.data.seq == 0:
            raise NonRetriable("bad order")
        await seen.run(event.subject, event.data.seq, 0.01)

    publish(r, "t.keyed", ["order/1"], 4)
    xadd(r, {"type": "t.keyed", "source": "t", "id": "bad", "subject": "order/1", "data": 7})
    run_burst(redis_url, config, registry, timeout_s=20)

    assert [seq for seq, _, _ in seen.runs["order/1"]] == [1, 2, 3]
    assert counters(r)["dead_lettered"] == 2 and pending(r) == 0
    assert not r.keys("streamdesk:flow:*:q:*")


@pytest.mark.parametrize("key", ["data", "seq", "data.", "data..x", "subject.x", "source"])
def test_flow_keys_a_key_that_is_no_field_path_is_refused_when_declared(key: str) -> None:
    with pytest.raises(ConfigurationError, match=r"key must be 'subject' or 'data\.<field>'"):
        Registry().agent("t.x", schema=AnyData, key=key)


def test_flow_keys_concurrency_below_one_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="concurrency must be >= 1"):
        Registry().agent("t.x", schema=AnyData, key="subject", concurrency=0)


def test_flow_keys_waiting_past_many_claim_idle_times_is_no_delivery(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry, seen = Registry(), Tracker()

    @registry.agent("t.keyed", schema=AnyData, key="subject")
    async def keyed(event: Any, ctx: Any) -> None:
        # The head runs past three claim idle times (1.5 s): the sweep reclaims the waiting
        # ones each time and puts them back, their delivery counts restored.
        await seen.run(event.subject, event.data.seq, 5.0 if event.data.seq == 0 else 0.01)

    publish(r, "t.keyed", ["order/1"], 3)
    run_many(redis_url, consumers(replace(config, max_deliveries=2), 2), registry)

    assert [seq for seq, _, _ in seen.runs["order/1"]] == [0, 1, 2]
    assert counters(r)["processed"] == 3 and "dead_lettered" not in counters(r)
    assert set(AgentRun.objects.values_list("attempts", flat=True)) == {1}
    assert not counters(r).get("reclaimed")  # waiting is neither a takeover nor a retry


def test_flow_keys_a_failing_head_keeps_its_place_through_its_retries(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    registry, seen, tries = Registry(), Tracker(), defaultdict(int)

    @registry.agent("t.keyed", schema=AnyData, key="subject")
    async def keyed(event: Any, ctx: Any) -> None:
        tries[event.data.seq] += 1
        if event.data.seq == 0 and tries[0] < 3:
            raise RuntimeError("flaky")
        await seen.run(event.subject, event.data.seq, 0.01)

    publish(r, "t.keyed", ["order/1"], 3)
    run_burst(redis_url, config, registry)

    assert [seq for seq, _, _ in seen.runs["order/1"]] == [0, 1, 2]
    assert dict(tries) == {0: 3, 1: 1, 2: 1}


def test_flow_keys_a_head_acked_before_its_release_hands_its_key_on_at_once(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """The settler XACKs, then releases in a second round trip: a read between the two must
    leave the head for the release to hand its key on (had it dropped the head, the release
    would find nothing to do, and the key would wait for the sweep: a claim idle time)."""
    registry = Registry()
    registry.agent("t.keyed", schema=AnyData, key="subject")(_noop)
    publish(r, "t.keyed", ["order/1"], 2)
    first, second = (i for i, _ in r.xrange(STREAM))

    async def scenario() -> tuple[list[Any], list[Any], list[Any]]:
        from redis import asyncio as aredis

        from workers.flow import Flow
        from workers.redis import bus

        client = aredis.Redis.from_url(redis_url, decode_responses=True)
        await bus.ensure_group(client, STREAM, "agents")
        a = Flow(client, replace(config, consumer="a"), registry, asyncio.Event())
        b = Flow(client, replace(config, consumer="b"), registry, asyncio.Event())
        read_a = (await a.read(10, "streamdesk:paused:x")).batch
        await client.xack(STREAM, "agents", first)  # the settle pipeline, release to come
        xadd(r, {"type": "t.keyed", "source": "t", "id": "third", "subject": "order/1",
                 "data": {"seq": 2}})  # fmt: skip
        read_b = (await b.read(10, "streamdesk:paused:x")).batch
        await a.settled([first])  # the release: nothing left to do
        left = list(a.ready)
        await client.aclose()
        return read_a, read_b, left

    read_a, read_b, left = asyncio.run(scenario())
    assert [d.entry_id for d in read_a] == [first]
    assert read_b == []  # the third waits behind the second
    assert [(d.entry_id, d.deliveries) for d in left] == [(second, 1)]  # handed to a
    owner = r.xpending_range(STREAM, "agents", min=second, max=second, count=1)[0]
    assert (owner["consumer"], owner["times_delivered"]) == ("a", 1)


async def _noop(event: Any, ctx: Any) -> None:
    return None


def test_flow_keys_a_read_short_of_its_slots_reads_on_to_fill_them(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """A read whose batch holds entries that wait reads again for the slots left: a batch
    of its own for them would be admitted, run and settled apart, for good."""
    registry = Registry()
    registry.agent("t.keyed", schema=AnyData, key="subject")(_noop)
    publish(r, "t.keyed", ["a"], 2)  # the second waits
    publish(r, "t.keyed", ["b"], 1)
    ids = [i for i, _ in r.xrange(STREAM)]

    batch = asyncio.run(read_as(redis_url, replace(config, batch_size=2), registry, want=2))

    assert [d.entry_id for d in batch] == [ids[0], ids[2]]


def test_flow_keys_a_read_short_of_a_whole_batch_reads_no_more(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """Fewer entries than a batch: the stream held no more, and a trickle would pay a read
    that finds nothing for every one that finds something."""
    registry = Registry()
    registry.agent("t.keyed", schema=AnyData, key="subject")(_noop)
    publish(r, "t.keyed", ["a"], 2)  # the second waits
    r.config_resetstat()

    batch = asyncio.run(read_as(redis_url, replace(config, batch_size=5), registry, want=5))

    assert len(batch) == 1
    assert r.info("commandstats")["cmdstat_xreadgroup"]["calls"] == 1
