"""Crash, pause and shutdown of real worker processes."""

from __future__ import annotations

import json
import signal

import pytest
import redis

from tests.support.engine import counters, pending, xadd
from tests.support.processes import Workers
from tests.support.servers import private_server
from tests.support.wait import wait_for
from workers.core.events import Envelope, event_hash
from workers.models import AgentRun, RunStatus, TimelineStep
from workers.store.timeline_rows import steps_for

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def publish_sleeps(r: redis.Redis, n: int, ms: int) -> None:
    for i in range(n):
        xadd(r, {"type": "demo.sleep", "source": "test", "id": f"s{i}", "data": {"ms": ms}})


def gate_records(r: redis.Redis) -> list[dict[str, str]]:
    return [r.hgetall(key) for key in r.scan_iter("streamdesk:idem:*")]


def running(r: redis.Redis) -> int:
    """Agents started and not finished, as the gate sees them."""
    return sum(1 for rec in gate_records(r) if rec.get("state") == "running")


def timeline(event_hash: str) -> list[tuple[str, str, int]]:
    return [(s.kind, s.consumer, s.attempt) for s in steps_for(event_hash)]


def only_event_hash(r: redis.Redis) -> str:
    [(_, fields)] = r.xrange("streamdesk:events")
    return event_hash(Envelope.model_validate_json(fields["event"]))


def test_sigkill_mid_agent_is_recovered_by_another_worker(r: redis.Redis, workers: Workers) -> None:
    publish_sleeps(r, 20, 800)
    victim = workers.start("victim")
    wait_for(
        lambda: running(r) >= 8 and TimelineStep.objects.filter(consumer="victim").count() >= 8,
        what="the victim to start agents",
    )
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=10)

    rescuer = workers.start("rescuer", "--burst")
    assert workers.exit_code(rescuer, "rescuer", 60) == 0, workers.log("rescuer")

    rows = AgentRun.objects.all()
    assert rows.count() == 20
    assert {r_.status for r_ in rows} == {RunStatus.SUCCEEDED}
    taken = rows.filter(attempts=2, consumer="rescuer")
    assert taken.count() >= 1  # taken over, not re-run
    for row in taken:  # two deliveries by two consumers, one commit
        assert timeline(row.event_hash) == [
            ("ran", "victim", 1),
            ("ran", "rescuer", 2),
            ("committed", "rescuer", 2),
        ]
    stats = counters(r)
    assert stats["processed"] <= 20 and stats["reclaimed"] >= 1
    assert pending(r) == 0


def test_sigterm_lets_in_flight_agents_finish(r: redis.Redis, workers: Workers) -> None:
    publish_sleeps(r, 5, 1500)
    worker = workers.start("graceful")
    wait_for(lambda: running(r) == 5, what="five agents running")
    worker.send_signal(signal.SIGTERM)
    assert workers.exit_code(worker, "graceful", 30) == 0, workers.log("graceful")

    assert AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count() == 5
    assert pending(r) == 0
    assert not r.exists("streamdesk:workers:graceful")


def test_paused_worker_loses_its_lease_and_its_commit_is_fenced(
    r: redis.Redis, workers: Workers
) -> None:
    xadd(r, {"type": "demo.sleep", "source": "test", "id": "slow", "data": {"ms": 2500}})
    paused = workers.start("paused")
    # The gate's record says "running" before the database's duplicate check answers; a
    # worker stopped in between would later find the taker's commit and count a duplicate,
    # not a fenced result. The "ran" step is written once the agent has started.
    wait_for(
        lambda: (
            running(r) == 1 and TimelineStep.objects.filter(consumer="paused", kind="ran").exists()
        ),
        what="the agent to start",
    )
    paused.send_signal(signal.SIGSTOP)  # a GC pause, a frozen VM: no renewals, no commit
    try:
        taker = workers.start("taker", "--burst")
        assert workers.exit_code(taker, "taker", 60) == 0, workers.log("taker")
    finally:
        paused.send_signal(signal.SIGCONT)

    try:
        wait_for(lambda: counters(r).get("fenced", 0) == 1, what="the stale commit to be fenced")
    except AssertionError as timed_out:
        raise AssertionError(f"{timed_out}\n{workers.log('paused')}") from None
    paused.send_signal(signal.SIGTERM)
    assert workers.exit_code(paused, "paused", 30) == 0, workers.log("paused")

    row = AgentRun.objects.get()
    assert (row.status, row.consumer, row.attempts) == (RunStatus.SUCCEEDED, "taker", 2)
    assert row.lease.endswith("#2")
    assert counters(r)["processed"] == 1
    assert "result fenced" in workers.log("paused")
    assert timeline(row.event_hash) == [
        ("ran", "paused", 1),
        ("ran", "taker", 2),
        ("committed", "taker", 2),
        ("fenced", "paused", 1),
    ]
    assert pending(r) == 0


def test_exhausted_entries_of_dying_workers_are_dead_lettered(
    r: redis.Redis, workers: Workers
) -> None:
    """An event that kills its worker every time must not loop forever."""
    xadd(r, {"type": "demo.sleep", "source": "test", "id": "killer", "data": {"ms": 5000}})
    for attempt in range(3):
        victim = workers.start(f"victim{attempt}")
        wait_for(
            lambda n=attempt + 1: (
                [rec.get("token") for rec in gate_records(r)] == [str(n)]
                and running(r) == 1
                and TimelineStep.objects.filter(consumer=f"victim{n - 1}").exists()
            ),
            what=f"attempt {attempt + 1}",
        )
        victim.send_signal(signal.SIGKILL)
        victim.wait(timeout=10)
    last = workers.start("last", "--burst", "--max-deliveries", "3")
    assert workers.exit_code(last, "last", 60) == 0, workers.log("last")

    [(_, fields)] = r.xrange("streamdesk:events:dead")
    assert fields["reason"] == "max-deliveries" and json.loads(fields["event"])["id"] == "killer"
    assert AgentRun.objects.get().status == RunStatus.DEAD
    assert [(kind, consumer) for kind, consumer, _ in timeline(only_event_hash(r))] == [
        ("ran", "victim0"),
        ("ran", "victim1"),
        ("ran", "victim2"),
        ("dead_lettered", "last"),
    ]
    assert pending(r) == 0


def test_drain_timeout_releases_the_lease_for_the_next_worker(
    r: redis.Redis, workers: Workers
) -> None:
    """An agent that outlives the drain timeout is abandoned, not lost: its lease is released
    at once, so the next worker takes the entry without waiting the lease out."""
    xadd(r, {"type": "demo.sleep", "source": "test", "id": "slow", "data": {"ms": 60_000}})
    first = workers.start("first", "--drain-timeout", "0.5")
    wait_for(lambda: running(r) == 1, what="the agent to start")
    first.send_signal(signal.SIGTERM)
    assert workers.exit_code(first, "first", 15) == 0, workers.log("first")

    [record] = gate_records(r)
    assert record["state"] == "released"
    assert pending(r) == 1  # still there, for someone else
    assert "releasing 1 unfinished" in workers.log("first")
    assert timeline(only_event_hash(r)) == [("ran", "first", 1), ("released", "first", 1)]


def test_worker_rides_out_a_redis_restart(r: redis.Redis, workers: Workers) -> None:
    """The server comes back empty (no persistence): the worker reconnects, recreates its
    group and goes on."""
    server = private_server()
    if server is None:
        pytest.skip("restarts only the suite's own server, never the one at REDIS_URL")
    xadd(r, {"type": "demo.echo", "source": "test", "id": "before", "data": {}})
    worker = workers.start("survivor")
    wait_for(lambda: counters(r).get("processed", 0) == 1, what="the first event")
    server.restart()
    wait_for(lambda: _ping(r), what="the server to answer again")
    xadd(r, {"type": "demo.echo", "source": "test", "id": "after", "data": {}})
    wait_for(
        lambda: (
            counters(r).get("processed", 0) == 1
            and pending(r) == 0
            and AgentRun.objects.filter(event_id="after").exists()
        ),
        timeout_s=30,
        what="the event published after the restart",
    )
    assert worker.poll() is None, workers.log("survivor")
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0


def _ping(r: redis.Redis) -> bool:
    try:
        return bool(r.ping())
    except redis.ConnectionError:
        return False
