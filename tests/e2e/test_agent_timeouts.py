"""A sync agent past its timeout is never run twice at once (issue 29, item 3): two real
``runworker`` processes with a 1 s lease and a 1.5 s claim idle time; the agent's first run
sleeps 4 s in its thread against a 1 s timeout. The worker running it keeps its lease until
the thread returns, then records the attempt as failed with reason timeout; only then may
the event run again. Agents: tests/e2e/timeout_agents.py."""

from __future__ import annotations

import json

import pytest
import redis

from tests.support.engine import STREAM
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.models import AgentRun, RunStatus
from workers.store.timeline_rows import steps_for

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

SPANS, MOST = "timeout:spans", "timeout:most"  # timeout_agents' keys (not imported)


def test_agent_timeouts_sync_agent_past_its_timeout_never_runs_twice_at_once(
    r: redis.Redis, workers: Workers
) -> None:
    workers.env["STREAMDESK_AGENT_MODULES"] = "tests.e2e.timeout_agents"
    event = {"type": "timeout.sync", "source": "t", "id": "slow", "data": {}}
    workers.start("first")
    workers.start("second")
    r.xadd(STREAM, {"event": json.dumps(event)})
    wait_for(
        lambda: AgentRun.objects.filter(status=RunStatus.SUCCEEDED).exists(),
        timeout_s=30,
        what="the event to succeed on its second run",
    )
    spans = [tuple(map(float, s.split())) for s in r.lrange(SPANS, 0, -1)]
    assert len(spans) == 2, spans
    (first_start, first_end), (second_start, _) = spans
    assert first_end - first_start >= 4.0  # its thread ran on past the 1 s timeout ...
    assert second_start >= first_end  # ... and nothing started the event meanwhile
    assert int(r.get(MOST) or 0) == 1
    row = AgentRun.objects.get()
    failed = [s for s in steps_for(row.event_hash) if s.kind == "failed"]
    assert len(failed) == 1 and "ran past its timeout of 1 s" in failed[0].detail
