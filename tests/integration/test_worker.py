"""The worker end to end, in-process, against a real server and database."""

from __future__ import annotations

import json
import threading
from collections import Counter
from dataclasses import replace
from typing import Any

import pytest
import redis

from tests.support.engine import STREAM, AnyData, counters, pending, run_burst, run_many, xadd
from workers.core.config import EngineConfig
from workers.core.registry import Registry
from workers.models import AgentRun, RunStatus
from workers.store.timeline_rows import steps_for

pytestmark = pytest.mark.django_db(transaction=True)


def counting_registry(runs: Counter[str], fail_times: int = 0) -> Registry:
    registry = Registry()

    async def count(event: Any, ctx: Any) -> dict[str, Any]:
        runs[event.hash] += 1
        if runs[event.hash] <= fail_times:
            raise RuntimeError(f"attempt {runs[event.hash]} fails")
        return {"n": event.data.model_dump().get("n")}

    registry.register("test.count", AnyData, count)
    return registry


def test_duplicates_xadded_concurrently_run_once(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    events = [
        {"type": "test.count", "source": "t", "id": f"e{i}", "data": {"n": i}} for i in range(100)
    ]

    def produce() -> None:
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        for event in events:
            xadd(client, event)
        client.close()

    threads = [threading.Thread(target=produce) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert r.xlen(STREAM) == 300

    runs: Counter[str] = Counter()
    configs = [replace(config, consumer=f"w{i}") for i in range(2)]
    run_many(redis_url, configs, counting_registry(runs))

    assert len(runs) == 100 and set(runs.values()) == {1}
    assert AgentRun.objects.filter(status=RunStatus.SUCCEEDED, attempts=1).count() == 100
    stats = counters(r)
    assert (stats["processed"], stats["idempotency_hits"]) == (100, 200)
    assert pending(r) == 0


def test_failed_agent_is_retried_with_backoff_then_succeeds(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    xadd(r, {"type": "test.count", "id": "x", "data": {"n": 1}})
    runs: Counter[str] = Counter()
    run_burst(redis_url, config, counting_registry(runs, fail_times=2))

    row = AgentRun.objects.get()
    assert (row.status, row.attempts, row.result) == (RunStatus.SUCCEEDED, 3, {"n": 1})
    assert sum(runs.values()) == 3
    stats = counters(r)
    assert (stats["failed"], stats["processed"], stats.get("dead_lettered", 0)) == (2, 1, 0)


def test_poison_event_is_dead_lettered_after_max_deliveries(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    entry = xadd(r, {"type": "demo.fail", "id": "p", "data": {"message": "always"}})
    from workers.core.registry import default_registry

    run_burst(redis_url, config, default_registry)

    [(_, fields)] = r.xrange(f"{STREAM}:dead")
    assert fields["reason"] == "max-deliveries"
    assert "DemoFailure: always" in fields["error"]
    assert (fields["entry_id"], fields["deliveries"], fields["by"]) == (entry, "3", "test-worker")
    assert json.loads(fields["event"])["id"] == "p"
    row = AgentRun.objects.get()
    assert (row.status, row.attempts) == (RunStatus.DEAD, 3)
    stats = counters(r)
    assert (stats["failed"], stats["dead_lettered"]) == (3, 1)
    assert pending(r) == 0


def test_malformed_entries_are_dead_lettered_and_the_worker_goes_on(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    bad = {
        "decode-error": ["not json", "[1, 2]"],
        "invalid-envelope": [
            json.dumps({"data": {}}),
            json.dumps({"type": "test.count", "data": "x"}),
        ],
        "invalid-data": [json.dumps({"type": "demo.sleep", "data": {"ms": "long"}})],
        "unknown-type": [json.dumps({"type": "no.such.type", "data": {}})],
        "too-large": [json.dumps({"type": "test.count", "data": {"blob": "x" * 2_000_000}})],
    }
    for payloads in bad.values():
        for payload in payloads:
            xadd(r, payload)
    r.xadd(STREAM, {"something": "else"})  # no event field at all
    xadd(r, {"type": "test.count", "id": "good", "data": {"n": 7}})

    runs: Counter[str] = Counter()
    from workers.core.registry import default_registry

    registry = counting_registry(runs)
    for spec in default_registry:
        registry.register(spec.type, spec.schema, spec.handler, name=spec.agent or None)
    run_burst(redis_url, config, registry)

    reasons = Counter(f["reason"] for _, f in r.xrange(f"{STREAM}:dead"))
    expected = Counter({k: len(v) for k, v in bad.items()})
    expected["decode-error"] += 1
    assert reasons == expected
    assert len(runs) == 1 and AgentRun.objects.get().result == {"n": 7}
    assert counters(r)["dead_lettered"] == sum(expected.values())
    assert pending(r) == 0


def test_entries_deleted_while_pending_are_acked_and_counted(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    r.xgroup_create(STREAM, "agents", id="0", mkstream=True)
    own = xadd(r, {"type": "test.count", "id": "own", "data": {}})
    ghost = xadd(r, {"type": "test.count", "id": "ghost", "data": {}})
    r.xreadgroup("agents", config.consumer, {STREAM: ">"}, count=1)  # ours, from a past life
    r.xreadgroup("agents", "dead-consumer", {STREAM: ">"}, count=1)  # a dead worker's
    r.xdel(STREAM, own, ghost)
    assert pending(r) == 2

    runs: Counter[str] = Counter()
    run_burst(redis_url, config, counting_registry(runs))

    assert not runs
    assert counters(r)["deleted"] == 2
    assert pending(r) == 0


def test_a_lost_gate_record_is_recovered_from_the_database(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    event = {"type": "test.count", "source": "t", "id": "once", "data": {"n": 1}}
    xadd(r, event)
    runs: Counter[str] = Counter()
    registry = counting_registry(runs)
    run_burst(redis_url, config, registry)
    for key in r.scan_iter("streamdesk:idem:*"):
        r.delete(key)  # as after a Redis restart without AOF

    xadd(r, event)
    run_burst(redis_url, config, registry)

    assert sum(runs.values()) == 1
    assert counters(r)["idempotency_hits"] == 1
    assert r.hget(next(iter(r.scan_iter("streamdesk:idem:*"))), "state") == "done"


def test_burst_exits_on_an_empty_stream(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    worker = run_burst(redis_url, config, Registry(), timeout_s=10)
    assert worker.processed == 0
    assert r.exists(STREAM)  # MKSTREAM created it with the group


def test_heartbeat_is_removed_on_a_clean_exit(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    xadd(r, {"type": "demo.sleep", "data": {"ms": 1200}})
    from workers.core.registry import default_registry

    seen: list[dict[str, str]] = []

    def watch() -> None:
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        for _ in range(100):
            beat = client.hgetall("streamdesk:workers:test-worker")
            if beat.get("inflight") == "1":
                seen.append(beat)
                break
            threading.Event().wait(0.05)
        client.close()

    watcher = threading.Thread(target=watch)
    watcher.start()
    run_burst(redis_url, config, default_registry)
    watcher.join()
    assert seen and seen[0]["current"].startswith("demo.sleep ")
    assert not r.exists("streamdesk:workers:test-worker")
    assert r.zscore("streamdesk:workers", "test-worker") is None


def test_a_long_agent_and_its_busy_duplicate_are_not_reclaimed_to_death(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """The agent outlives the claim idle time several times over; its lease is renewed and a
    duplicate held by another worker waits without counting deliveries."""
    event = {"type": "demo.sleep", "source": "t", "id": "long", "data": {"ms": 5000}}
    xadd(r, event)
    # The holder read the first copy before (it is in its PEL), so it runs it at start.
    r.xgroup_create(STREAM, "agents", id="0")
    r.xreadgroup("agents", "holder", {STREAM: ">"}, count=1)

    def publish_duplicate() -> None:
        client = redis.Redis.from_url(redis_url, decode_responses=True)
        for _ in range(500):  # until the holder runs the first copy
            if any(
                client.hget(k, "state") == "running" for k in client.scan_iter("streamdesk:idem:*")
            ):
                break
            threading.Event().wait(0.02)
        xadd(client, event)
        client.close()

    from workers.core.registry import default_registry

    holder = replace(config, consumer="holder", concurrency=1, max_deliveries=2)
    other = replace(config, consumer="other", max_deliveries=2)
    threading.Thread(target=publish_duplicate).start()
    run_many(redis_url, [holder, other], default_registry, timeout_s=40)

    assert not r.exists(f"{STREAM}:dead")
    row = AgentRun.objects.get()
    assert (row.status, row.attempts, row.consumer) == (RunStatus.SUCCEEDED, 1, "holder")
    stats = counters(r)
    assert (stats["processed"], stats["idempotency_hits"]) == (1, 1)
    assert stats.get("busy", 0) >= 1
    assert pending(r) == 0
    duplicate = [s.kind for s in steps_for(row.event_hash) if s.entry_id != row.entry_id]
    assert duplicate[0] == "busy" and duplicate[-1] == "idempotency_hit"


def test_streams_json_matches_what_happened(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    from io import StringIO

    from django.core.management import call_command

    from workers.core.registry import default_registry

    for i in range(5):
        xadd(r, {"type": "demo.echo", "source": "t", "id": f"e{i}", "data": {"n": i}})
    xadd(r, {"type": "demo.echo", "source": "t", "id": "e0", "data": {"n": 0}})  # duplicate
    xadd(r, {"type": "demo.fail", "source": "t", "id": "f", "data": {}})
    xadd(r, "garbage")
    run_burst(redis_url, config, default_registry)

    out = StringIO()
    call_command("streams", "--json", stdout=out)
    data = json.loads(out.getvalue())
    # The worker's chores trimmed by retention: nothing, as every entry is new.
    assert data["streams"][0].pop("first_id") == r.xrange(STREAM, count=1)[0][0]
    assert data["streams"][0].pop("retention")["trimmed"] == 0
    # The home group's own counters: its agents ran everything here.
    assert data["streams"][0]["groups"][0].pop("counters")["processed"] == 5
    assert data["streams"] == [
        {
            "name": STREAM,
            "length": 8,
            "dead_letters": 2,
            "groups": [{"name": "agents", "agent": "", "consumers": 1, "pending": 0, "lag": 0}],
        }
    ]
    got = {k: data[k] for k in ("processed", "failed", "dead_lettered", "idempotency_hits")}
    assert got == {"processed": 5, "failed": 3, "dead_lettered": 2, "idempotency_hits": 1}


@pytest.mark.serial  # counts the whole server's commands or subscribers
def test_settling_a_batch_takes_one_round_trip_not_a_script_check_first(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """redis-py sends SCRIPT EXISTS ahead of any pipeline holding a registered script: the
    settle pipeline queues its gate scripts as EVAL instead, so it never does."""
    for i in range(50):
        xadd(r, {"type": "test.count", "source": "t", "id": f"e{i}", "data": {"n": i}})
    r.config_resetstat()
    runs: Counter[str] = Counter()
    run_burst(redis_url, config, counting_registry(runs))

    assert len(runs) == 50 and AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count() == 50
    stats = r.info("commandstats")
    assert stats["cmdstat_xack"]["calls"] >= 1
    assert "cmdstat_script|exists" not in stats, stats
