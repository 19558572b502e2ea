"""An answer that comes while its run's wait is still being settled (issue 30): the run's
envelope, brought back by the answer, reaches the worker while the attempt that began the
wait is still in flight, so it joins that attempt as a follower. It must run once the
attempt is settled, not be acked with it (the run would wait for good: its wait is over).

The database is held for writes so that the settle waits, as on a slow database; the wait
itself is in Redis, so the answer gets through meanwhile."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator

import pytest
import redis
from django.db import connection, transaction

from tests.support.engine import xadd
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.core.keys import Keys
from workers.models import AgentRun, RunStatus

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]
STREAM = "streamdesk:events"
KEYS = Keys()


@contextlib.contextmanager
def writes_held() -> Iterator[None]:
    """No other connection writes the runs until the block ends; reads go on."""
    if connection.vendor == "sqlite":
        path = str(connection.settings_dict["NAME"])
        blocker = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        blocker.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            blocker.execute("COMMIT")
            blocker.close()
    else:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(f"LOCK TABLE {AgentRun._meta.db_table} IN EXCLUSIVE MODE")
            yield


def delivered(r: redis.Redis, entry_id: str) -> bool:
    rows = r.xpending_range(STREAM, "agents", entry_id, entry_id, 1)
    return bool(rows) and rows[0]["times_delivered"] >= 1


def test_an_answer_during_the_waits_settle_resumes_the_run(
    r: redis.Redis, workers: Workers
) -> None:
    workers.env["STREAMDESK_AGENT_MODULES"] = "tests.e2e.wait_agents"
    workers.start("w1")
    with writes_held():
        xadd(r, {"type": "test.ask_reply", "source": "t", "id": "q", "data": {"order": "q"}})
        waiting = lambda: r.zcard(KEYS.waiting(STREAM)) == 1  # noqa: E731
        wait_for(waiting, what="the run's wait (its settle is held)")
        reply = {"type": "test.reply", "source": "t", "id": "r", "subject": "q", "data": {}}
        xadd(r, reply | {"data": {"order": "q"}})
        # The answer XADDs the run's envelope; the worker reads it while the first attempt
        # still waits for the database.
        resumed = lambda: r.xlen(STREAM) == 3 and delivered(r, r.xrange(STREAM)[-1][0])  # noqa: E731
        wait_for(resumed, what="the run's envelope back and read")
    done = lambda: AgentRun.objects.filter(event_id="q", status=RunStatus.SUCCEEDED).exists()  # noqa: E731
    wait_for(done, what="the run to finish")
    run = AgentRun.objects.get(event_id="q")
    assert run.result == {"reply": "r"}
    wait_for(lambda: int(r.xpending(STREAM, "agents")["pending"]) == 0, what="all acked")
    assert r.xlen(f"{STREAM}:dead") == 0
