"""Issue 30's targets for runs that wait, each as a smaller but real property (the figures at
full size: ``make bench-waits``, docs/benchmarks.md): a run that waits holds no slot, so a
plain event runs at once beside 40 of them; 40 waits survive their worker's SIGKILL and each
resumes exactly once; 20 sleeps of 2 s on 4 slots take about 2 s, not 10; and a waiting run
holds no database connection."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.support.engine import STREAM, pending, xadd
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.core.keys import Keys
from workers.models import AgentRun, RunStatus
from workers.store.dbwriter import IDLE_CLOSE_S

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
KEYS = Keys()
BEFORE, AFTER = "targets:before", "targets:after"  # tests/e2e/wait_target_agents.py
APPROVAL = "target.approval"
WAITING = 40


@pytest.fixture
def target_workers(workers: Workers) -> Iterator[Workers]:
    workers.env["STREAMDESK_AGENT_MODULES"] = "tests.e2e.wait_target_agents"
    yield workers


def start_ready(pool: Workers, r: redis.Redis, name: str, *args: str) -> subprocess.Popen[bytes]:
    """A worker, once it is up: its heartbeat written."""
    proc = pool.start(name, *args)
    wait_for(lambda: r.exists(KEYS.worker(name)) == 1, 30, f"{name}'s heartbeat")
    assert proc.poll() is None, pool.log(name)
    return proc


def publish(r: redis.Redis, event_type: str, data: dict[str, Any], event_id: str) -> None:
    xadd(r, {"type": event_type, "source": "t", "id": event_id, "data": data})


def park(r: redis.Redis, runs: int) -> None:
    """``runs`` approvals asked for; returns once each waits, its entry acked."""
    for n in range(runs):
        publish(r, APPROVAL, {"n": n}, f"ask-{n}")
    wait_for(lambda: waiting() == runs and pending(r) == 0, 60, f"{runs} runs to wait")


def waiting() -> int:
    return AgentRun.objects.filter(event_type=APPROVAL, status=RunStatus.WAITING).count()


def succeeded(event_type: str) -> int:
    return AgentRun.objects.filter(event_type=event_type, status=RunStatus.SUCCEEDED).count()


@pytest.mark.serial  # judges "at once" by the second: not beside other tests' load
def test_a_plain_event_runs_at_once_beside_forty_waiting_runs(
    r: redis.Redis, target_workers: Workers
) -> None:
    """Forty waits on 4 slots: were a wait to hold its slot, nothing else would ever run."""
    start_ready(target_workers, r, "w1", "--concurrency", "4")
    park(r, WAITING)
    published = time.time()
    publish(r, "target.plain", {"n": 0}, "plain-0")
    wait_for(lambda: succeeded("target.plain") == 1, 10, "the plain event to run")
    run = AgentRun.objects.get(event_id="plain-0")
    assert run.result["started"] - published < 1.0
    assert waiting() == WAITING and r.zcard(KEYS.waiting(STREAM)) == WAITING


def test_forty_waits_survive_a_sigkill_and_each_resumes_exactly_once(
    r: redis.Redis, target_workers: Workers
) -> None:
    first = target_workers.start("first", "--concurrency", "4")
    park(r, WAITING)
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    start_ready(target_workers, r, "second", "--concurrency", "4")
    for n in range(WAITING):
        publish(r, "target.approve", {"n": n}, f"approve-{n}")
    wait_for(lambda: succeeded(APPROVAL) == WAITING, 30, "every run to resume")
    wait_for(lambda: pending(r) == 0, 10, "every approval acked")
    time.sleep(1.0)  # a second resumption, were there one, would show in the counts by now
    each_once = {str(n): "1" for n in range(WAITING)}
    assert r.hgetall(BEFORE) == each_once  # the step before the wait: once per run
    assert r.hgetall(AFTER) == each_once  # the step after it: once per run
    results = AgentRun.objects.filter(event_type=APPROVAL).values_list("result", flat=True)
    assert sorted(result["n"] for result in results if result["approved"]) == list(range(WAITING))
    assert r.zcard(KEYS.waiting(STREAM)) == 0
    assert r.xlen(f"{STREAM}:dead") == 0


@pytest.mark.serial  # judges durations by the second: not beside other tests' load
def test_twenty_sleeps_of_two_seconds_on_four_slots_take_about_two_seconds(
    r: redis.Redis, target_workers: Workers
) -> None:
    """Sleeps that held their slot would take 20 / 4 x 2 = 10 s."""
    start_ready(target_workers, r, "w1", "--concurrency", "4")
    started = time.monotonic()
    for n in range(20):
        publish(r, "target.nap", {"n": n, "seconds": 2}, f"nap-{n}")
    wait_for(lambda: succeeded("target.nap") == 20, 20, "twenty sleeps")
    elapsed = time.monotonic() - started
    assert elapsed < 5.0, f"20 sleeps of 2 s on 4 slots took {elapsed:.1f} s"
    for result in AgentRun.objects.values_list("result", flat=True):
        assert 2.0 <= result["ended"] - result["began"] < 4.0


def connections_of(pid: int) -> int:
    """The database connections process ``pid`` holds: PostgreSQL's backends for the test
    database (the test's own left out), or the SQLite file's descriptors open in it."""
    from django.db import connection

    name = connection.settings_dict["NAME"]
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> "
                "pg_backend_pid()",
                [name],
            )
            return int(cursor.fetchone()[0])
    files = Path(name).resolve()
    fds = Path(f"/proc/{pid}/fd")
    return sum(1 for fd in fds.iterdir() if _points_to(fd, files))


def _points_to(fd: Path, database: Path) -> bool:
    try:
        return os.readlink(fd).startswith(str(database))  # the file, its -wal and -shm
    except OSError:
        return False


def test_forty_waiting_runs_hold_no_database_connection(
    r: redis.Redis, target_workers: Workers
) -> None:
    """As many connections with forty runs waiting as at rest, after the same kinds of work
    without a wait (a plain run, runs with steps): on PostgreSQL none at all; on SQLite the
    worker keeps some files open in any case."""
    from django.db import connection

    proc = start_ready(target_workers, r, "w1", "--concurrency", "4")
    for n in range(3):
        publish(r, "target.plain", {"n": n}, f"plain-{n}")
        publish(r, "target.nap", {"n": n, "seconds": 0}, f"nap-{n}")  # a step, no wait
    wait_for(lambda: succeeded("target.plain") + succeeded("target.nap") == 6, 10, "the work")
    # The worker's database threads close a connection unused for IDLE_CLOSE_S.
    time.sleep(IDLE_CLOSE_S + 1.5)
    at_rest = connections_of(proc.pid)
    if connection.vendor == "postgresql":
        assert at_rest == 0
    park(r, WAITING)
    wait_for(lambda: connections_of(proc.pid) <= at_rest, IDLE_CLOSE_S + 10, "no more than at rest")
    assert waiting() == WAITING and r.zcard(KEYS.waiting(STREAM)) == WAITING
