"""Operator actions racing real ``runworker`` processes: never two runs, never a lost entry.

Every worker runs ``race.work`` (tests/e2e/race_agents.py), which counts each start of an
event in Redis, so a second execution shows whatever the gate or the database would say.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from tests.support.engine import STREAM, pending
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.core.events import Envelope, event_hash
from workers.core.keys import Keys
from workers.models import AgentRun, RunStatus
from workers.operations import actions
from workers.operations.actions import ActionResult
from workers.redis.bus import xadd_many

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

N = 1000
GROUP = "agents"
DEAD = f"{STREAM}:dead"
STARTS = "race:starts"  # race_agents.STARTS_KEY (not imported: see its docstring)
# Entries bounced around by an operator come back through reclaim, each time one delivery
# more: a generous limit keeps max-deliveries out of these races.
OPTIONS = ["--max-deliveries", "50"]


def events(n: int, ms: int) -> list[dict[str, Any]]:
    return [
        {"type": "race.work", "source": "race", "id": f"r{i}", "data": {"ms": ms}} for i in range(n)
    ]


def publish(r: redis.Redis, batch: list[dict[str, Any]]) -> dict[str, str]:
    """XADD the events; returns entry id -> event hash."""
    ids = xadd_many(r, STREAM, [json.dumps(e) for e in batch])
    hashes = [event_hash(Envelope.model_validate(e)) for e in batch]
    return dict(zip(ids, hashes, strict=True))


def starts(r: redis.Redis) -> dict[str, int]:
    return {h: int(n) for h, n in r.hgetall(STARTS).items()}


def succeeded() -> int:
    return AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count()


def drained(r: redis.Redis) -> bool:
    groups = r.xinfo_groups(STREAM) if r.exists(STREAM) else []
    return bool(groups) and groups[0]["lag"] == 0 and groups[0]["pending"] == 0


@pytest.fixture
def racers(workers: Workers) -> Iterator[Workers]:
    workers.env["STREAMDESK_AGENT_MODULES"] = "tests.e2e.race_agents"
    yield workers


def start(racers: Workers, n: int = 3) -> list[subprocess.Popen[bytes]]:
    return [racers.start(f"w{i}", *OPTIONS) for i in range(n)]


def stop(racers: Workers, procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for i, proc in enumerate(procs):
        assert racers.exit_code(proc, f"w{i}", 30) == 0, racers.log(f"w{i}")


def park(r: redis.Redis, n: int) -> None:
    """Leave the first ``n`` entries pending under a consumer that is gone, idle long enough
    for any worker to reclaim them at once."""
    r.xgroup_create(STREAM, GROUP, id="0")
    r.xreadgroup(GROUP, "gone", {STREAM: ">"}, count=n)
    actions.retry_now(
        r, STREAM, GROUP, actions.pending_ids(r, STREAM, GROUP), idle_ms=60_000, keys=Keys()
    )


def operate(
    r: redis.Redis,
    act: Callable[[list[str]], ActionResult],
    until: Callable[[], bool],
    for_s: float,
    every_s: float = 0.005,
) -> tuple[int, int]:
    """Act on the oldest pending entries (the ones workers are taking now) over and over,
    until ``until`` or ``for_s`` seconds. Returns (ids acted on, ids skipped)."""
    done = skipped = 0
    deadline = time.monotonic() + for_s
    while not until() and time.monotonic() < deadline:
        ids = actions.pending_ids(r, STREAM, GROUP, count=50)
        if ids:
            result = act(ids)
            done, skipped = done + len(result.done), skipped + len(result.skipped)
        time.sleep(every_s)
    return done, skipped


def assert_each_ran_once(r: redis.Redis, hashes: set[str]) -> None:
    runs = starts(r)
    assert set(runs) == hashes
    assert [h for h, n in runs.items() if n != 1] == []
    assert succeeded() == len(hashes)
    assert pending(r) == 0 and r.xlen(DEAD) == 0


def test_claiming_entries_in_flight_runs_each_once(r: redis.Redis, racers: Workers) -> None:
    """Half the entries are read fresh and run at once, half wait to be reclaimed from a
    consumer that is gone; the operator claims the oldest pending ones here and there."""
    hashes = set(publish(r, events(N, 20)).values())
    park(r, N // 2)
    procs = start(racers)
    wait_for(lambda: r.hlen(STARTS) > 0, what="the workers to start")
    targets = ["parking", "w0", "w1", "w2"]
    turn = iter(range(10**9))

    def claim(ids: list[str]) -> ActionResult:
        return actions.claim(r, STREAM, GROUP, ids, targets[next(turn) % len(targets)])

    moved, _ = operate(r, claim, lambda: r.hlen(STARTS) == N, for_s=4)
    wait_for(lambda: drained(r) and succeeded() == N, timeout_s=30, what="the stream to drain")
    stop(racers, procs)
    assert moved > 0
    assert_each_ran_once(r, hashes)


def test_retry_now_on_entries_in_flight_runs_each_once(r: redis.Redis, racers: Workers) -> None:
    hashes = set(publish(r, events(N, 20)).values())
    procs = start(racers)
    wait_for(lambda: r.hlen(STARTS) > 0, what="the workers to start")

    def retry(ids: list[str]) -> ActionResult:
        return actions.retry_now(r, STREAM, GROUP, ids, idle_ms=60_000, keys=Keys())

    retried, _ = operate(r, retry, lambda: r.hlen(STARTS) == N, for_s=4)
    wait_for(lambda: drained(r) and succeeded() == N, timeout_s=30, what="the stream to drain")
    stop(racers, procs)
    assert retried > 0
    assert_each_ran_once(r, hashes)


def test_two_redrives_of_the_same_letters_publish_each_once(
    r: redis.Redis, racers: Workers
) -> None:
    batch = events(N, 5)
    with r.pipeline(transaction=False) as pipe:
        for i, event in enumerate(batch):
            pipe.xadd(DEAD, {"event": json.dumps(event), "stream": STREAM, "reason": "r", "n": i})
        dead_ids = [str(i) for i in pipe.execute()]
    hashes = {event_hash(Envelope.model_validate(e)) for e in batch}
    procs = start(racers, 2)
    barrier = threading.Barrier(2)
    # Two tabs redrive every letter in small batches, one from each end, so both win some
    # and they collide where they meet.
    orders = {"forward": (dead_ids, 10), "backward": (dead_ids[::-1], 7)}
    results: dict[str, list[ActionResult]] = {tab: [] for tab in orders}

    def redrive(tab: str) -> None:
        ids, size = orders[tab]
        client = redis.Redis.from_url(racers.env["REDIS_URL"], decode_responses=True)
        client.ping()  # connected before the race starts
        barrier.wait()
        for start_ in range(0, N, size):
            results[tab].append(actions.redrive(client, STREAM, ids[start_ : start_ + size], tab))
        client.close()

    threads = [threading.Thread(target=redrive, args=(tab,)) for tab in orders]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    won = [{i for res in rs for i in res.done} for rs in results.values()]
    lost = [{i for res in rs for i in res.skipped} for rs in results.values()]
    assert not won[0] & won[1] and won[0] | won[1] == set(dead_ids)
    assert (lost[0], lost[1]) == (won[1], won[0])
    assert min(len(ids) for ids in won) > 0
    assert sum(len(res.new_ids) for rs in results.values() for res in rs) == N
    assert r.xlen(DEAD) == 0

    wait_for(lambda: drained(r) and succeeded() == N, timeout_s=30, what="the redriven events")
    stop(racers, procs)
    assert r.xlen(STREAM) == N
    assert_each_ran_once(r, hashes)


def test_dead_lettering_entries_workers_are_taking_either_runs_or_buries_each(
    r: redis.Redis, racers: Workers
) -> None:
    """All entries start pending under a dead consumer and idle, so workers reclaim them
    from the front of the pending list while the operator dead-letters from the front too."""
    by_entry = publish(r, events(N, 5))
    park(r, N)
    procs = start(racers)
    wait_for(lambda: r.hlen(STARTS) > 0, what="the workers to start")
    rng = random.Random(7)

    def bury(ids: list[str]) -> ActionResult:
        return actions.dead_letter(
            r, STREAM, GROUP, rng.sample(ids, len(ids) // 5), "race", "op", keys=Keys()
        )

    buried, _ = operate(r, bury, lambda: pending(r) == 0, for_s=20, every_s=0.02)
    wait_for(lambda: drained(r), timeout_s=30, what="the stream to drain")
    stop(racers, procs)

    dead = [f["entry_id"] for _, f in r.xrange(DEAD)]
    assert len(dead) == len(set(dead)) == buried
    runs = starts(r)
    assert set(runs.values()) <= {1}
    ran = {entry for entry, h in by_entry.items() if h in runs}
    assert not ran & set(dead)  # never both run and buried
    assert ran | set(dead) == set(by_entry)  # never lost
    assert 0 < len(dead) < N
    assert succeeded() == len(ran)
    assert pending(r) == 0
