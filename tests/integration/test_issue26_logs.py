"""Issue 26, item 15: log lines say which run and attempt they are about, and a worker that
stops inside the minute still reports the failures it coalesced."""

from __future__ import annotations

import io
import json
import logging
from typing import Any

import pytest
import redis

from tests.support.engine import AnyData, run_burst, xadd
from tests.support.processes import manage
from workers.core.config import EngineConfig
from workers.core.registry import Registry
from workers.models import AgentRun

pytestmark = pytest.mark.django_db(transaction=True)

agent_log = logging.getLogger("tests.issue26.agent")


def failing_once() -> Registry:
    """Logs, then fails its first attempt; the second succeeds."""

    async def agent(event: Any, ctx: Any) -> None:
        agent_log.info("attempt on %s", event.id)
        if ctx.deliveries == 1:
            raise RuntimeError("first attempt fails")

    registry = Registry()
    registry.register("t.once", AnyData, agent)
    return registry


def test_json_lines_carry_the_run_id_and_the_attempt_number(
    r: redis.Redis, redis_url: str, config: EngineConfig, lines: io.StringIO
) -> None:
    xadd(r, {"type": "t.once", "id": "1", "data": {}})
    run_burst(redis_url, config, failing_once())
    parsed = [json.loads(line) for line in lines.getvalue().splitlines()]
    mine = [p for p in parsed if p["logger"] == agent_log.name]
    assert [(p["attempt"], p["token"]) for p in mine] == [(1, 1), (2, 2)]
    # The run id is what the console finds the run by.
    run = AgentRun.objects.get(event_hash=mine[0]["run_id"])
    assert {p["run_id"] for p in mine} == {run.event_hash}
    # The engine's own line about the failed attempt says the same. (Only this run's: an
    # earlier test's coalesced "agent failed: ... (xN more in the last 60 s)" summary may be
    # flushed while this one runs: the repeat window is the process's.)
    [failed] = [
        p for p in parsed if p["msg"].startswith("agent failed") and p.get("run_id") is not None
    ]
    assert (failed["run_id"], failed["attempt"], failed["token"]) == (run.event_hash, 1, 1)


def test_a_worker_stopped_inside_the_minute_reports_its_coalesced_failures(
    r: redis.Redis, worker_env: dict[str, str]
) -> None:
    for n in range(6):
        xadd(r, {"type": "demo.fail", "id": f"f{n}", "data": {"message": "boom"}})
    # --burst stops the worker as soon as the six have failed: seconds, not a minute.
    done = manage(
        {**worker_env, "STREAMDESK_LOG_FORMAT": "text"},
        "runworker",
        "--burst",
        "--max-deliveries",
        "1",
        "--consumer",
        "w-issue26",
    )
    assert done.returncode == 0, done.stderr
    failures = [line for line in done.stderr.splitlines() if "DemoFailure" in line]
    assert len(failures) == 2, done.stderr  # the first in full, then the count
    assert "(x5 more in the last" in failures[1]
    # Reported as the worker stopped, not when the minute ended.
    assert done.stderr.index("(x5 more") > done.stderr.index("stopped after")
