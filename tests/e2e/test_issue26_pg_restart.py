"""A PostgreSQL restart under a running worker: it goes on processing once the server is back,
each event once, none dead-lettered for the outage (issue 26, item 4).

On a private server the test starts itself (tests/support/postgres.py), whatever the suite's
own database is: so it runs in both legs, and the shared server is never restarted.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from tests.support.engine import STREAM, pending
from tests.support.postgres import PrivatePostgres, binaries, private_postgres
from tests.support.processes import TIMINGS, Workers, manage
from tests.support.wait import wait_for
from workers.core.events import Envelope, event_hash
from workers.redis.bus import xadd_many

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(binaries() is None, reason="no PostgreSQL server installed"),
]

STARTS = "race:starts"  # tests/e2e/race_agents.py's STARTS_KEY (not imported: see its docstring)
DEAD = f"{STREAM}:dead"


@pytest.fixture
def pg() -> Iterator[PrivatePostgres]:
    with private_postgres() as server:
        yield server


@pytest.fixture
def on_pg(workers: Workers, pg: PrivatePostgres) -> Workers:
    workers.env["DATABASE_URL"] = pg.url
    workers.env["STREAMDESK_AGENT_MODULES"] = "tests.e2e.race_agents"
    migrated = manage(workers.env, "migrate", "--no-input")
    assert migrated.returncode == 0, migrated.stderr
    return workers


def publish(r: redis.Redis, first: int, n: int) -> set[str]:
    batch: list[dict[str, Any]] = [
        {"type": "race.work", "source": "pg-restart", "id": f"e{i}", "data": {"ms": 0}}
        for i in range(first, first + n)
    ]
    xadd_many(r, STREAM, [json.dumps(e) for e in batch])
    return {event_hash(Envelope.model_validate(e)) for e in batch}


def delivered(r: redis.Redis) -> list[int]:
    """How often each pending entry was delivered."""
    rows = r.xpending_range(STREAM, "agents", min="-", max="+", count=100)
    return [int(row["times_delivered"]) for row in rows]


def held_for(condition: Callable[[], bool], seconds: float) -> bool:
    """``condition`` held at every look for ``seconds`` (a wait for nothing to happen)."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not condition():
            return False
        time.sleep(0.05)
    return True


def succeeded(pg: PrivatePostgres) -> int:
    with pg.connect() as conn:
        sql = "SELECT count(*) FROM workers_agentrun WHERE status = 'succeeded'"
        (count,) = conn.execute(sql).fetchone() or (0,)
        return int(str(count))


def test_worker_resumes_after_postgres_restart(
    r: redis.Redis, on_pg: Workers, pg: PrivatePostgres
) -> None:
    hashes = publish(r, 0, 20)
    proc = on_pg.start("pg-worker")
    wait_for(lambda: succeeded(pg) == 20, timeout_s=30, what="the first events")
    pg.restart()
    # Both database threads' connections are dead now: the next read and write find out.
    hashes |= publish(r, 20, 20)
    wait_for(lambda: succeeded(pg) == 40, timeout_s=20, what="events after the restart")
    wait_for(lambda: pending(r) == 0, timeout_s=10, what="every entry acked")
    proc.send_signal(signal.SIGTERM)
    assert on_pg.exit_code(proc, "pg-worker", 15) == 0, on_pg.log("pg-worker")
    starts = {h: int(n) for h, n in r.hgetall(STARTS).items()}
    assert set(starts) == hashes
    assert [h for h, n in starts.items() if n != 1] == []
    assert r.xlen(DEAD) == 0


def test_worker_backs_off_while_postgres_is_down_and_resumes(
    r: redis.Redis, on_pg: Workers, pg: PrivatePostgres
) -> None:
    """Events published while the server is down wait for it: none is lost, none runs twice,
    none is dead-lettered. The outage outlasts max-deliveries' worth of reclaims (2 x the
    claim idle time): a worker that went on reading and reclaiming meanwhile counted a
    delivery per reclaim, and dead-lettered the events unrun once the server was back."""
    on_pg.env["STREAMDESK_MAX_DELIVERIES"] = "2"
    proc = on_pg.start("pg-worker")
    hashes = publish(r, 0, 5)
    wait_for(lambda: succeeded(pg) == 5, timeout_s=30, what="the first events")
    with pg.down():
        hashes |= publish(r, 5, 20)
        # It reads a batch, finds the database down and reads nothing more until it answers.
        wait_for(lambda: len(delivered(r)) > 0, timeout_s=15, what="the worker to read some")
        claim_idle_s = float(TIMINGS[TIMINGS.index("--claim-idle-ms") + 1]) / 1000
        assert held_for(lambda: max(delivered(r)) == 1, 3 * claim_idle_s), delivered(r)
    wait_for(lambda: succeeded(pg) == 25, timeout_s=30, what="events after the outage")
    wait_for(lambda: pending(r) == 0, timeout_s=10, what="every entry acked")
    proc.send_signal(signal.SIGTERM)
    assert on_pg.exit_code(proc, "pg-worker", 15) == 0, on_pg.log("pg-worker")
    starts = {h: int(n) for h, n in r.hgetall(STARTS).items()}
    assert set(starts) == hashes
    assert [h for h, n in starts.items() if n != 1] == []
    assert r.xlen(DEAD) == 0
    assert "database unavailable" in on_pg.log("pg-worker")
