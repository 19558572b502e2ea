"""runworker on a real 3-master Valkey cluster with 3 partitions: each event runs once, a
worker SIGKILLed mid-agent is recovered by another, poison events are dead-lettered in
their own partition, and the subjects' order is kept."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from redis.cluster import RedisCluster

from tests.support.cluster import cluster as cluster
from tests.support.cluster import rc as rc
from tests.support.processes import Workers, manage
from tests.support.wait import wait_for
from workers.core.events import Envelope
from workers.core.partitions import Partitions
from workers.core.registry import default_registry
from workers.models import AgentRun, RunStatus
from workers.producers.publish import build_envelope, publish_envelopes
from workers.redis.cluster import LocalCluster

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

STREAM = "streamdesk:events"
LAYOUT = Partitions(STREAM, 3, tagged=True)


@pytest.fixture
def on_cluster(
    worker_env: dict[str, str], cluster: LocalCluster, tmp_path: Path, rc: RedisCluster
) -> Iterator[Workers]:
    env = {**worker_env, "REDIS_URL": cluster.url, "STREAMDESK_PARTITIONS": "3"}
    pool = Workers(env, tmp_path)
    yield pool
    pool.stop_all()


def publish(rc: RedisCluster, kind: str, data: dict[str, Any], subjects: list[str]) -> None:
    envelopes = [
        build_envelope(kind, data, registry=default_registry, id=f"{kind}-{s}", subject=s)
        for s in subjects
    ]
    publish_envelopes(cast(Any, rc), LAYOUT, envelopes)


def master_of(rc: RedisCluster, key: str) -> str:
    return str(rc.get_node_from_key(key).name)


def test_partitions_sit_on_distinct_masters_and_each_event_runs_once(
    rc: RedisCluster, on_cluster: Workers
) -> None:
    assert len({master_of(rc, s) for s in LAYOUT.streams}) == 3
    envelopes: list[Envelope] = [
        build_envelope(
            "demo.echo",
            {"message": f"{s}/{n}"},
            subject=f"order-{s}",
            id=f"e{s}-{n}",
            registry=default_registry,
        )
        for n in range(4)
        for s in range(15)
    ]
    publish_envelopes(cast(Any, rc), LAYOUT, envelopes)
    publish_envelopes(cast(Any, rc), LAYOUT, envelopes)  # twice: the gate runs each once
    # The CLI publishes on the cluster too, and says which partition took the event.
    cli = manage(on_cluster.env, "publish", "demo.echo", "--data", '{"message": "cli"}')
    assert cli.returncode == 0, cli.stderr
    partition, entry_id = cli.stdout.split()
    assert partition in LAYOUT.streams and rc.xrange(partition, entry_id, entry_id)

    worker = on_cluster.start("w1", "--burst")
    assert on_cluster.exit_code(worker, "w1", 60) == 0, on_cluster.log("w1")
    assert "in 3 partitions" in on_cluster.log("w1")

    runs = AgentRun.objects.all()
    assert runs.count() == 61
    assert {r.status for r in runs} == {RunStatus.SUCCEEDED}
    assert {r.stream for r in runs} == set(LAYOUT.streams)
    for stream in LAYOUT.streams:
        assert rc.xpending(stream, "agents")["pending"] == 0
        stats = rc.hgetall(f"streamdesk:stats:{stream}")
        assert int(stats["processed"]) + int(stats.get("idempotency_hits", 0)) == rc.xlen(stream)
    # Each subject in one partition, in the order published.
    order: dict[str, list[str]] = {}
    for stream in LAYOUT.streams:
        for _, fields in rc.xrange(stream):
            event = json.loads(fields["event"])
            if event.get("subject"):
                order.setdefault(event["subject"], []).append(event["data"]["message"])
    for s in range(15):
        assert order[f"order-{s}"] == [f"{s}/{n}" for n in range(4)] * 2


def test_sigkill_mid_agent_on_a_cluster_is_recovered_by_another_worker(
    rc: RedisCluster, on_cluster: Workers
) -> None:
    publish(rc, "demo.sleep", {"ms": 800}, [f"s{n}" for n in range(24)])
    victim = on_cluster.start("victim")

    def running() -> int:
        found = 0
        for key in rc.scan_iter("streamdesk:idem:*", target_nodes=RedisCluster.PRIMARIES):
            found += rc.hget(key, "state") == "running"
        return found

    wait_for(lambda: running() >= 6, what="the victim to start agents on the cluster")
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=10)

    rescuer = on_cluster.start("rescuer", "--burst")
    assert on_cluster.exit_code(rescuer, "rescuer", 90) == 0, on_cluster.log("rescuer")
    runs = AgentRun.objects.all()
    assert runs.count() == 24
    assert {r.status for r in runs} == {RunStatus.SUCCEEDED}
    taken = runs.filter(attempts=2)
    assert taken.count() >= 1 and all(r.consumer.startswith("rescuer.") for r in taken)
    assert sum(rc.xpending(s, "agents")["pending"] for s in LAYOUT.streams) == 0


def test_poison_events_are_dead_lettered_in_their_partition_on_a_cluster(
    rc: RedisCluster, on_cluster: Workers
) -> None:
    publish(rc, "demo.fail", {"message": "boom"}, ["bad"])
    home = LAYOUT.stream_for("bad")
    rc.xadd(LAYOUT.streams[0], {"event": "{not json"})
    worker = on_cluster.start("w1", "--burst", "--max-deliveries", "2")
    assert on_cluster.exit_code(worker, "w1", 60) == 0, on_cluster.log("w1")

    letters = {s: rc.xrange(s + ":dead") for s in LAYOUT.streams}
    failed = [f for _, f in letters[home] if '"demo.fail"' in f["event"]]
    assert len(failed) == 1 and failed[0]["reason"] == "max-deliveries"
    assert failed[0]["stream"] == home
    malformed = [f for _, f in letters[LAYOUT.streams[0]] if f["event"] == "{not json"]
    assert len(malformed) == 1 and malformed[0]["reason"]
    assert sum(len(v) for v in letters.values()) == 2
    assert sum(rc.xpending(s, "agents")["pending"] for s in LAYOUT.streams) == 0


def test_rate_budgets_and_heartbeats_work_on_a_cluster(
    rc: RedisCluster, on_cluster: Workers
) -> None:
    """A budget's bucket and its held set share the budget's own slot (``{github}``), on
    whichever master holds it; every partition loop's heartbeat is there to read."""
    issues = [
        {"repository": "acme/web", "number": n, "title": f"crash {n}", "author": "octocat"}
        for n in range(1, 5)
    ]
    envelopes = [
        build_envelope(
            "github.issue.opened",
            data,
            source="github",
            subject=f"acme/web#{n}",
            registry=default_registry,
        )
        for n, data in enumerate(issues)
    ]
    publish_envelopes(cast(Any, rc), LAYOUT, envelopes)
    on_cluster.env["STREAMDESK_RATE_LIMITS"] = "github=100/s:100"
    worker = on_cluster.start("w1")
    wait_for(
        lambda: AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count() == 4,
        what="the four issues triaged on the cluster",
    )
    beats = {str(name) for name in rc.zrange("streamdesk:workers", 0, -1)}
    assert beats >= {"w1.0", "w1.1", "w1.2"}
    worker.send_signal(signal.SIGTERM)
    assert on_cluster.exit_code(worker, "w1", 30) == 0, on_cluster.log("w1")
    # One token per labelling call, taken from the bucket on the cluster.
    assert rc.hget("streamdesk:budget:{github}", "taken") == "4"
