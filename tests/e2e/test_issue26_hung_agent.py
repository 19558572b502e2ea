"""An agent that never returns cannot keep ``runworker`` from exiting after SIGTERM (issue 26,
item 5): the process exits 0 once the drain timeout is past, whatever its threads do, and
another worker then runs the event it held. Agents: tests/e2e/hung_agents.py."""

from __future__ import annotations

import json
import signal
import time

import pytest
import redis

from tests.support.engine import STREAM, pending
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.models import AgentRun, RunStatus

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

STARTS = "hung:starts"  # hung_agents.STARTS_KEY (not imported: see its docstring)
DRAIN_S = 1.0
# Past the drain: the settler's flush (at least 5 s, worker.py's _drain) and the start-up
# of the interpreter's exit.
EXIT_WITHIN_S = DRAIN_S + 5 + 4


@pytest.mark.parametrize("event_type", ["hung.sync", "hung.to_thread"])
def test_worker_exits_past_a_hung_agent_and_another_runs_its_event(
    r: redis.Redis, workers: Workers, event_type: str
) -> None:
    workers.env["STREAMDESK_AGENT_MODULES"] = "tests.e2e.hung_agents"
    event = {"type": event_type, "source": "hung", "id": "h1", "data": {}}
    entry_id = r.xadd(STREAM, {"event": json.dumps(event)})
    first = workers.start("first", "--drain-timeout", str(DRAIN_S))
    wait_for(lambda: r.hlen(STARTS) == 1, timeout_s=20, what="the agent to start")
    sent = time.monotonic()
    first.send_signal(signal.SIGTERM)
    assert workers.exit_code(first, "first", EXIT_WITHIN_S) == 0, workers.log("first")
    assert time.monotonic() - sent < EXIT_WITHIN_S
    assert f"unfinished at the drain timeout, left pending: {entry_id}" in workers.log("first")
    assert "threads still running past the drain timeout" in workers.log("first")
    second = workers.start("second", "--burst")
    assert workers.exit_code(second, "second", 30) == 0, workers.log("second")
    assert list(r.hvals(STARTS)) == ["2"]
    assert AgentRun.objects.get().status == RunStatus.SUCCEEDED
    assert pending(r) == 0
