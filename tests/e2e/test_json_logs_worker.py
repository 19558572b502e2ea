"""A real ``runworker`` with ``STREAMDESK_LOG_FORMAT=json``: every line it writes is one JSON
object, and its agents' lines carry the event they handle."""

from __future__ import annotations

import json

import pytest
import redis

from tests.support.engine import xadd
from tests.support.processes import manage

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

FIELDS = {"event_hash", "entry_id", "event_type", "consumer"}


def test_runworker_json_lines_carry_the_event(r: redis.Redis, worker_env: dict[str, str]) -> None:
    ids = {
        xadd(r, {"type": "e2e.logs.async", "id": "a", "data": {"n": 1}}): "e2e.logs.async",
        xadd(r, {"type": "e2e.logs.sync", "id": "s", "data": {"n": 2}}): "e2e.logs.sync",
    }
    env = {
        **worker_env,
        "STREAMDESK_LOG_FORMAT": "json",
        "STREAMDESK_AGENT_MODULES": "tests.e2e.log_agents",
    }
    done = manage(env, "runworker", "--burst", "--consumer", "logs-1")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]
    assert lines and all(isinstance(line, dict) for line in lines)
    mine = [line for line in lines if line["logger"] == "tests.e2e.log_agents"]
    assert len(mine) == 3
    for line in mine:
        assert set(line) >= FIELDS, line
        assert ids[line["entry_id"]] == line["event_type"]
        assert line["consumer"] == "logs-1"


def test_engine_lines_about_an_event_carry_it_too(
    r: redis.Redis, worker_env: dict[str, str]
) -> None:
    """The engine's own lines about an event (a failure and its retry, the dead letter) are
    logged outside the agent's context: they carry the same fields. ``LOG_FORMAT`` is the
    name the issue uses."""
    entry = xadd(r, {"type": "e2e.logs.fail", "id": "f", "data": {"n": 3}})
    env = {
        **worker_env,
        "LOG_FORMAT": "json",
        "STREAMDESK_AGENT_MODULES": "tests.e2e.log_agents",
        "STREAMDESK_MAX_DELIVERIES": "2",
        "STREAMDESK_RETRY_BASE_MS": "50",
        "STREAMDESK_RECLAIM_INTERVAL_MS": "100",
    }
    env.pop("STREAMDESK_LOG_FORMAT", None)
    done = manage(env, "runworker", "--burst", "--consumer", "logs-2")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stderr.splitlines() if line.strip()]
    about = [line for line in lines if line.get("entry_id") == entry]
    said = " | ".join(line["msg"] for line in about)
    assert any(line["msg"].startswith("agent failed") for line in about), said
    assert any(line["msg"].startswith("dead-lettering") for line in about), said
    for line in about:
        assert set(line) >= FIELDS, line
        assert line["event_type"] == "e2e.logs.fail"
        assert line["consumer"] == "logs-2"
