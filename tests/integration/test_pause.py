"""Pausing a group: real in-process workers stop reading and start again."""

from __future__ import annotations

import json
import logging
import time
from collections import Counter

import pytest
import redis

from tests.support.actions import GROUP, KEYS, Background, counting_registry, event, read_by
from tests.support.engine import STREAM, pending, run_burst, xadd
from tests.support.wait import wait_for
from workers.core.config import EngineConfig
from workers.models import AgentRun, RunStatus
from workers.operations import actions
from workers.redis.bus import xadd_many

pytestmark = pytest.mark.django_db(transaction=True)


# -- pause --------------------------------------------------------------------------------


def test_pause_records_who_and_when_until_resumed(r: redis.Redis) -> None:
    assert actions.paused(r, KEYS, STREAM, GROUP) is None
    actions.pause(r, KEYS, STREAM, GROUP, "alice")
    who = actions.paused(r, KEYS, STREAM, GROUP)
    assert who is not None and who.startswith("alice at 20")
    assert r.ttl(KEYS.paused(STREAM, GROUP)) == -1
    assert actions.resume(r, KEYS, STREAM, GROUP) is True
    assert actions.resume(r, KEYS, STREAM, GROUP) is False
    assert actions.paused(r, KEYS, STREAM, GROUP) is None


def test_pause_stops_a_worker_reading_and_resume_restarts_it(
    r: redis.Redis, redis_url: str, config: EngineConfig, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="streamdesk.worker")
    runs: Counter[str] = Counter()
    beat = f"streamdesk:workers:{config.consumer}"
    background = Background(redis_url, config, counting_registry(runs))
    with background as worker:
        xadd(r, event(0))
        wait_for(lambda: sum(runs.values()) == 1, 5, "the first event")

        # "Within 1 s" (two of its 0.5 s pause polls) on the worker's own loop: a loaded machine
        # that delays the loop delays that deadline too, and the polls due before it run first.
        actions.pause(r, KEYS, STREAM, GROUP, "alice")
        assert background.holds_after(1.0, lambda: worker.pause.by is not None)
        wait_for(lambda: r.hget(beat, "state") == "paused", 2, "the heartbeat to say paused")
        last_read = r.xinfo_groups(STREAM)[0]["last-delivered-id"]
        xadd_many(r, STREAM, [json.dumps(event(i)) for i in range(1, 6)])
        time.sleep(1.0)  # nothing to await: the point is that nothing happens
        assert r.xinfo_groups(STREAM)[0]["last-delivered-id"] == last_read
        assert sum(runs.values()) == 1

        assert actions.resume(r, KEYS, STREAM, GROUP)
        assert background.holds_after(1.0, lambda: sum(runs.values()) == 6)
        wait_for(lambda: r.hget(beat, "state") == "running", 2, "the heartbeat to say running")
    messages = [rec.getMessage() for rec in caplog.records]
    assert sum("paused (alice at " in m for m in messages) == 1
    assert sum(m.endswith("resumed: reading again") for m in messages) == 1
    assert pending(r) == 0


def test_pause_lets_held_work_finish_and_settle(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    from workers.core.registry import default_registry

    xadd(r, {"type": "demo.sleep", "source": "t", "id": "long", "data": {"ms": 800}})
    with Background(redis_url, config, default_registry) as worker:
        wait_for(lambda: bool(worker.inflight), 5, "the agent to start")
        actions.pause(r, KEYS, STREAM, GROUP, "alice")
        wait_for(lambda: worker.processed == 1, 5, "the held agent to finish")
        wait_for(lambda: pending(r) == 0, 5, "its entry to be acked")
        assert worker.pause.by is not None
    assert AgentRun.objects.get().status == RunStatus.SUCCEEDED


def test_paused_burst_worker_exits_leaving_the_backlog(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    read_by(r, config.consumer, 2)  # its own pending entries, from a past life
    xadd(r, event(7))
    actions.pause(r, KEYS, STREAM, GROUP, "alice")
    runs: Counter[str] = Counter()
    run_burst(redis_url, config, counting_registry(runs), timeout_s=10)
    assert not runs
    assert pending(r) == 2 and r.xinfo_groups(STREAM)[0]["lag"] == 1
