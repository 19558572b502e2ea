"""A real ``runworker --processes 2`` whose agents call ``sys.exit()`` or raise
``KeyboardInterrupt`` (issue 26): no child dies, the good events run once each, the raising
ones are dead-lettered after their deliveries, and ``--burst`` exits 0 promptly."""

from __future__ import annotations

import json
import time

import pytest
import redis

from tests.support.engine import pending, xadd
from tests.support.processes import TIMINGS, manage
from workers.models import AgentRun, RunStatus

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_agents_raising_system_exit_and_keyboard_interrupt_kill_no_worker(
    r: redis.Redis, worker_env: dict[str, str]
) -> None:
    for kind in ("e2e.exit", "e2e.interrupt"):
        for n in range(10):
            xadd(r, {"type": kind, "source": "t", "id": f"{kind}-{n}", "data": {"n": n}})
    env = {
        **worker_env,
        "STREAMDESK_AGENT_MODULES": "tests.e2e.exiting_agents",
        "STREAMDESK_MAX_DELIVERIES": "2",
    }
    args = ["runworker", *TIMINGS, "--processes", "2", "--burst", "--consumer", "exits"]
    started = time.monotonic()
    done = manage(env, *args)
    took_s = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert "restarted" not in done.stderr and "exited with" not in done.stderr
    assert took_s < 30, f"took {took_s:.1f} s (a drain timeout spent?)"
    rows = {row.event_id: row for row in AgentRun.objects.all()}
    bad = {"e2e.exit-0", "e2e.interrupt-0"}
    assert {i for i, row in rows.items() if row.status == RunStatus.SUCCEEDED} == set(rows) - bad
    assert len(rows) == 20 and all(rows[i].status == RunStatus.DEAD for i in bad)
    assert "SystemExit: 2" in rows["e2e.exit-0"].error
    assert "KeyboardInterrupt" in rows["e2e.interrupt-0"].error
    letters = [json.loads(f["event"])["id"] for _, f in r.xrange("streamdesk:events:dead")]
    assert sorted(letters) == sorted(bad)
    assert pending(r) == 0
