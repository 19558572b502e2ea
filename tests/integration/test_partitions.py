"""A partitioned stream on one server: producers route by subject, one worker process reads
every partition, each event runs once, dead letters and pauses follow the partitions."""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from dataclasses import replace
from io import StringIO
from typing import Any

import pytest
import redis
import redis.asyncio as aredis
from django.core.management import CommandError, call_command

from tests.support.engine import AnyData, counters, pending
from workers.core.config import EngineConfig
from workers.core.events import Envelope, event_hash
from workers.core.keys import Keys, logical_stream
from workers.core.partitions import Partitions
from workers.core.registry import Registry
from workers.engine.serve import partition_workers, run_all
from workers.engine.worker import Worker
from workers.models import AgentRun, RunStatus
from workers.monitor.sample import collect
from workers.operations import actions
from workers.producers.publish import build_envelope, publish_envelopes
from workers.store.runs import DjangoRunStore

pytestmark = pytest.mark.django_db(transaction=True)

STREAM = "streamdesk:events"
P = 4


def recording_registry(seen: list[tuple[str, int]], fail: set[int] | None = None) -> Registry:
    registry = Registry()

    async def record(event: Any, ctx: Any) -> dict[str, Any]:
        n = int(event.data.model_dump()["n"])
        seen.append((event.subject, n))
        if fail and n in fail:
            raise RuntimeError(f"event {n} always fails")
        return {"n": n}

    registry.register("test.part", AnyData, record)
    return registry


def envelopes(subjects: int, per_subject: int) -> list[Envelope]:
    """``per_subject`` events of each subject, interleaved: subject i's n-th event is n."""
    return [
        build_envelope(
            "test.part", {"n": n}, subject=f"order-{s}", id=f"e{s}-{n}", registry=_types()
        )
        for n in range(per_subject)
        for s in range(subjects)
    ]


def _types() -> Registry:
    registry = Registry()
    registry.register("test.part", AnyData, lambda event, ctx: None)
    return registry


def run_partitioned(url: str, config: EngineConfig, registry: Registry) -> list[Worker]:
    async def main() -> list[Worker]:
        client = aredis.Redis.from_url(url, decode_responses=True, encoding_errors="replace")
        workers = partition_workers(config, client, registry, DjangoRunStore())
        try:
            await asyncio.wait_for(run_all(workers), 60)
        finally:
            await client.aclose()
        return workers

    return asyncio.run(main())


def test_each_subject_stays_in_one_partition_in_publish_order(r: redis.Redis) -> None:
    layout = Partitions(STREAM, P)
    published = envelopes(subjects=12, per_subject=5)
    ids = publish_envelopes(r, layout, published)
    assert len(ids) == 60 and r.exists(STREAM) == 0
    where: dict[str, set[str]] = defaultdict(set)
    order: dict[str, list[int]] = defaultdict(list)
    for stream in layout.streams:
        for _, fields in r.xrange(stream):
            event = json.loads(fields["event"])
            where[event["subject"]].add(stream)
            order[event["subject"]].append(event["data"]["n"])
    assert all(len(streams) == 1 for streams in where.values())
    assert all(ns == list(range(5)) for ns in order.values())
    assert len({s for streams in where.values() for s in streams}) > 1  # really spread


def test_one_worker_runs_every_partition_exactly_once(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    layout = Partitions(STREAM, P)
    published = envelopes(subjects=10, per_subject=4)
    publish_envelopes(r, layout, published)
    publish_envelopes(r, layout, published)  # every event twice: the gate runs it once
    seen: list[tuple[str, int]] = []
    workers = run_partitioned(redis_url, replace(config, partitions=P), recording_registry(seen))

    assert len(workers) == P
    assert len(seen) == 40 and len(set(seen)) == 40
    assert AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count() == 40
    assert set(AgentRun.objects.values_list("stream", flat=True)) <= set(layout.streams)
    for stream in layout.streams:
        stats = counters(r, stream)
        assert stats["processed"] * 2 == r.xlen(stream)
        assert stats["idempotency_hits"] == stats["processed"]
        assert pending(r, stream) == 0
    # Each gate record lives beside its partition, in its cluster slot, and says done.
    hashes = {event_hash(e) for e in published}
    records = [Keys().gate(event_hash(e), layout.stream_for(e.subject or "")) for e in published]
    assert all("{events:" in k for k in records)
    assert len(hashes) == 40 and all(r.hget(k, "state") == "done" for k in records)


def test_failing_events_are_dead_lettered_in_their_own_partition(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    layout = Partitions(STREAM, P)
    published = envelopes(subjects=8, per_subject=1)
    publish_envelopes(r, layout, published)
    failing = [e for e in published if e.subject in ("order-3", "order-5")]
    seen: list[tuple[str, int]] = []
    registry = recording_registry(seen)

    async def fails(event: Any, ctx: Any) -> None:
        raise RuntimeError("always fails")

    registry.register("test.poison", AnyData, fails)
    poisoned = [
        e.model_copy(update={"type": "test.poison", "id": f"p{e.subject}"}) for e in failing
    ]
    publish_envelopes(r, layout, poisoned)
    run_partitioned(redis_url, replace(config, partitions=P), registry)

    assert len(seen) == 8
    for e in poisoned:
        home = layout.stream_for(e.subject or "")
        letters = r.xrange(home + ":dead")
        assert [json.loads(f["event"])["id"] for _, f in letters] == [e.id]
        assert counters(r, home)["dead_lettered"] == 1
    assert r.exists(STREAM + ":dead") == 0
    assert sum(len(r.xrange(s + ":dead")) for s in layout.streams) == 2


def test_pausing_the_logical_stream_pauses_every_partition(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    layout = Partitions(STREAM, P)
    publish_envelopes(r, layout, envelopes(subjects=8, per_subject=2))
    actions.pause(r, Keys(), STREAM, "agents", "alice")
    seen: list[tuple[str, int]] = []
    # Burst: a paused worker that holds nothing ends; nothing was read from any partition.
    run_partitioned(redis_url, replace(config, partitions=P), recording_registry(seen))
    assert seen == []
    assert all(logical_stream(s) == STREAM for s in layout.streams)
    # The console's sample shows every partition's group paused, by whom.
    sample = collect(r, Keys(), tuple(layout.streams))
    paused = {g.stream: g.paused_by for s in sample.streams for g in s.groups}
    assert set(paused) == set(layout.streams)
    assert all(by and by.startswith("alice at") for by in paused.values())
    assert sum(int(r.xinfo_groups(s)[0]["entries-read"] or 0) for s in layout.streams) == 0
    actions.resume(r, Keys(), STREAM, "agents")
    run_partitioned(redis_url, replace(config, partitions=P), recording_registry(seen))
    assert len(seen) == 16


def run_counting_concurrency(url: str, config: EngineConfig, subjects: int) -> dict[str, int]:
    now = {"running": 0, "most": 0}
    registry = Registry()

    async def slow(event: Any, ctx: Any) -> None:
        now["running"] += 1
        now["most"] = max(now["most"], now["running"])
        await asyncio.sleep(0.05)
        now["running"] -= 1

    registry.register("test.part", AnyData, slow)
    run_partitioned(url, config, registry)
    assert AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count() == subjects * 2
    return now


def test_the_partitions_loops_share_the_processs_concurrency(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    publish_envelopes(r, Partitions(STREAM, P), envelopes(subjects=16, per_subject=2))
    now = run_counting_concurrency(redis_url, replace(config, partitions=P, concurrency=3), 16)
    # Three at once in the whole process, though four loops read: not three per partition.
    assert now["most"] == 3


def test_one_worker_never_runs_more_agents_than_its_concurrency(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """A read used to see the slots of agents started but not yet running as free."""
    publish_envelopes(r, Partitions(STREAM), envelopes(subjects=16, per_subject=2))
    now = run_counting_concurrency(redis_url, replace(config, concurrency=3), 16)
    assert now["most"] == 3


def test_dead_letter_actions_on_a_partitioned_stream_act_on_each_partition(
    r: redis.Redis, settings: Any
) -> None:
    settings.STREAMDESK = {**settings.STREAMDESK, "partitions": P}
    layout = Partitions(STREAM, P)
    home = layout.streams[2]
    letter = build_envelope("test.part", {"n": 1}, subject="x", registry=_types())
    letter_id = r.xadd(home + ":dead", {"event": letter.to_json(), "reason": "max-deliveries"})
    # An id names an entry of one partition: the partition must be named.
    with pytest.raises(CommandError, match=r"split into 4 partitions.*name it with --stream"):
        call_command("redrive", str(letter_id), stdout=StringIO())
    # A filter runs in every partition, one outcome (and audit record) each.
    out = StringIO()
    call_command("redrive", "--all", stdout=out)
    lines = out.getvalue().splitlines()
    assert [line.split(":")[0] for line in lines] == ["redrive on streamdesk"] * P
    assert sum(f"redrive on {home}: ok, 1 done" in line for line in lines) == 1
    assert r.xlen(home) == 1 and r.xlen(home + ":dead") == 0
    # Pausing acts on the whole stream: every partition.
    call_command("pause", stdout=StringIO())
    assert actions.paused(r, Keys(), layout.streams[0], "agents") is not None
