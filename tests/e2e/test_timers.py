"""Issue 30 item 4 with real ``runworker`` processes: ``publish --delay 3`` runs 3 to 4 s after
the publish; a schedule's tick runs once with two workers, and once more after both restart."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

import pytest
import redis

from tests.support.actions import KEYS
from tests.support.engine import STREAM
from tests.support.processes import Workers, manage
from tests.support.wait import wait_for
from workers.models import AgentRun, RunStatus

# "3 to 4 s after the publish" is timed to the second: alone, not beside other tests' load.
pytestmark = [pytest.mark.serial, pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

EVERY_MINUTE = json.dumps(
    [{"cron": "* * * * *", "type": "demo.echo", "data": {"tick": True}, "name": "minutely"}]
)


def runs(**filters: str) -> list[AgentRun]:
    return list(AgentRun.objects.filter(status=RunStatus.SUCCEEDED, **filters))


def test_publish_delay_3_runs_3_to_4_s_after_the_publish(
    r: redis.Redis, workers: Workers, worker_env: dict[str, str]
) -> None:
    workers.start("delaying")
    wait_for(lambda: r.exists(KEYS.worker("delaying")), 20, "the worker's heartbeat")
    before = time.time()
    done = manage(
        worker_env, "publish", "demo.echo", "--data", '{"n": 1}', "--delay", "3", "--id", "later"
    )
    after = time.time()
    assert done.returncode == 0, done.stderr
    event_id, _, due = done.stdout.split()
    assert event_id == "later"
    due_s = datetime.fromisoformat(due).timestamp()
    assert before + 3 <= due_s + 0.05 and due_s <= after + 3
    wait_for(lambda: bool(runs(event_id="later")), 10, "the delayed event's run")
    [run] = runs(event_id="later")
    assert run.started_at is not None
    # From the publish (the CLI's XADD, which its due time dates) to the agent's start.
    ran_after_s = run.started_at.timestamp() - (due_s - 3)
    assert 3.0 <= ran_after_s <= 4.0, ran_after_s


def scheduled_ids(r: redis.Redis) -> list[str]:
    """The ids of the schedule's events in the stream: one entry per tick published."""
    found = [json.loads(f["event"]) for _, f in r.xrange(STREAM)]
    return [e["id"] for e in found if e.get("source") == "schedule"]


def test_a_tick_is_published_once_with_two_workers_and_after_a_restart(
    r: redis.Redis, worker_env: dict[str, str], tmp_path: Path
) -> None:
    env = dict(worker_env, STREAMDESK_SCHEDULES=EVERY_MINUTE)
    pool = Workers(env, tmp_path)
    try:
        # Both start within the grace (60 s) of the latest minute: that tick is published.
        pool.start("sched-a")
        pool.start("sched-b")
        wait_for(lambda: bool(runs(source="schedule")), 20, "the tick's run")
        time.sleep(1.0)  # no second copy comes meanwhile
        first = scheduled_ids(r)
        assert 1 <= len(first) <= 2 and len(set(first)) == len(first)  # 2: a minute turned
        dead_holder = r.get(KEYS.timers_lease)
        pool.stop_all()  # SIGKILL: the lease is left to expire (30 s)
        pool.start("sched-c")
        pool.start("sched-d")
        wait_for(
            lambda: r.get(KEYS.timers_lease) not in (None, dead_holder),
            40,
            "a restarted worker to take the timer's lease",
        )
        time.sleep(1.0)
        again = scheduled_ids(r)
        assert again[: len(first)] == first
        assert len(again) == len(set(again))  # no tick entered the stream twice
        assert all(e.startswith("minutely@") for e in again)
        assert len(runs(source="schedule")) == len(again)
    finally:
        pool.stop_all()
