"""Issue 28: an idle worker costs next to nothing, and pays nothing for it. Real
``runworker`` processes at their default timings (a 30 s blocking read, the fleet's reclaim
sweep), except where a test says: an event published at rest runs at once, a pause holds,
a killed worker's entries are reclaimed within the claim idle time + 2 s."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.support.actions import GROUP, KEYS
from tests.support.engine import STREAM, pending, xadd
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.models import AgentRun, RunStatus
from workers.operations import actions
from workers.store.dbwriter import IDLE_CLOSE_S

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

CLAIM_IDLE_MS = 1500  # tests.support.processes.TIMINGS


@pytest.fixture
def quiet(worker_env: dict[str, str], tmp_path: Path) -> Iterator[Workers]:
    """Workers with the default block and reclaim interval (the suite's are 100 ms)."""
    env = dict(worker_env)
    del env["STREAMDESK_BLOCK_MS"], env["STREAMDESK_RECLAIM_INTERVAL_MS"]
    pool = Workers(env, tmp_path)
    yield pool
    pool.stop_all()


def sleeps(r: redis.Redis, prefix: str, n: int, ms: int) -> None:
    for i in range(n):
        xadd(r, {"type": "demo.sleep", "source": "test", "id": f"{prefix}{i}", "data": {"ms": ms}})


def at_rest(r: redis.Redis, *names: str) -> None:
    """Each worker heartbeating, then a while with nothing to do: its read is blocked."""
    for name in names:
        wait_for(lambda n=name: r.exists(KEYS.worker(n)), 20, f"{name}'s heartbeat")
    time.sleep(1.5)


def succeeded() -> int:
    return AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count()


def test_an_event_published_at_rest_is_done_within_a_second(r: redis.Redis, quiet: Workers) -> None:
    quiet.start("rested")
    at_rest(r, "rested")
    published = time.monotonic()
    sleeps(r, "now", 1, 0)
    wait_for(lambda: succeeded() == 1 and pending(r) == 0, 10, "the event to be done")
    assert time.monotonic() - published < 1.0


def test_a_group_paused_at_rest_starts_nothing_until_resumed(
    r: redis.Redis, quiet: Workers
) -> None:
    quiet.start("pausable")
    at_rest(r, "pausable")
    actions.pause(r, KEYS, STREAM, GROUP, "alice")
    beat = KEYS.worker("pausable")
    wait_for(lambda: r.hget(beat, "state") == "paused", 10, "the heartbeat to say paused")
    sleeps(r, "held", 3, 0)
    time.sleep(2.0)  # nothing to wait for: the point is that nothing happens
    assert succeeded() == 0
    [group] = [g for g in r.xinfo_groups(STREAM) if g["name"] == GROUP]
    assert group["lag"] == 3 and group["pending"] == 0  # not even read
    assert actions.resume(r, KEYS, STREAM, GROUP)
    wait_for(lambda: succeeded() == 3, 10, "the three events after resume")
    assert pending(r) == 0
    assert "resumed: reading again" in quiet.log("pausable")


def owners(r: redis.Redis) -> set[str]:
    return {row["consumer"] for row in r.xpending_range(STREAM, GROUP, "-", "+", 100)}


@pytest.mark.serial  # judges liveness by the second: not beside other tests' load
def test_a_killed_workers_entries_are_reclaimed_within_claim_idle_plus_two_seconds(
    r: redis.Redis, quiet: Workers
) -> None:
    victim = quiet.start("victim")
    at_rest(r, "victim")
    sleeps(r, "long", 4, 10_000)  # still running when the victim is killed
    wait_for(lambda: owners(r) == {"victim"} and pending(r) == 4, 10, "the victim to hold 4")
    quiet.start("survivor")
    at_rest(r, "survivor")
    victim.send_signal(signal.SIGKILL)
    killed = time.monotonic()
    victim.wait(timeout=10)
    wait_for(lambda: owners(r) == {"survivor"}, 20, "the survivor to reclaim all four")
    assert time.monotonic() - killed <= CLAIM_IDLE_MS / 1000 + 2.0
    wait_for(lambda: succeeded() == 4, 30, "the four to run")
    assert pending(r) == 0


def test_a_worker_at_rest_holds_no_database_connection(r: redis.Redis, quiet: Workers) -> None:
    """Its startup check of the migrations used to leave one open for the process's life."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL shows its connections; SQLite has none to count")
    name = connection.settings_dict["NAME"]

    def others() -> int:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> "
                "pg_backend_pid()",
                [name],
            )
            return int(cursor.fetchone()[0])

    quiet.start("resting")
    at_rest(r, "resting")
    assert others() == 0
    # After work, its database threads close their connections once unused for a while.
    sleeps(r, "work", 3, 0)
    wait_for(lambda: succeeded() == 3, 10, "the three events")
    assert others() > 0
    wait_for(lambda: others() == 0, IDLE_CLOSE_S + 10, "the worker's connections to close")
