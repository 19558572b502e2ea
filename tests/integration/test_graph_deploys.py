"""The deploys example: its LangGraph agent in a real worker, and its app without the extra."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
import redis

pytest.importorskip("langgraph", reason="the optional langgraph extra is not installed")

from tests.support.engine import run_burst, xadd
from tests.support.processes import ROOT
from workers.core.config import EngineConfig
from workers.core.registry import Registry
from workers.examples.deploys.remediation import DeployFailed, remediate
from workers.models import AgentRun, RunStatus, StepResult

pytestmark = pytest.mark.django_db(transaction=True)

OOM_LOG = "starting api 2.4.0\nlistening on :8080\nContainer api was OOMKilled (exit 137)\n"


def deploy(**data: Any) -> dict[str, Any]:
    base = {
        "service": "api",
        "version": "2.4.0",
        "previous_version": "2.3.9",
        "environment": "production",
        "error_log": OOM_LOG,
        "team": "payments",
    }
    return {"type": "deploy.failed", "id": f"d-{len(data)}", "data": {**base, **data}}


def run_one(r: redis.Redis, redis_url: str, config: EngineConfig, event: dict[str, Any]) -> Any:
    registry = Registry()
    registry.register("deploy.failed", DeployFailed, remediate)
    xadd(r, event)
    run_burst(redis_url, config, registry)
    row = AgentRun.objects.get()
    assert row.status == RunStatus.SUCCEEDED, row.error
    return row


def test_deploy_failed_out_of_memory_in_production_is_rolled_back(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    row = run_one(r, redis_url, config, deploy())

    result = row.result
    assert result["diagnosis"]["cause"] == "out-of-memory"
    assert "OOMKilled" in result["diagnosis"]["evidence"]
    assert result["decision"]["action"] == "rollback"
    assert result["rollback"]["to_version"] == "2.3.9"
    assert result["rollback"]["idempotency_key"] == f"{row.event_hash}:rollback"
    assert result["notice"]["channel"] == "#team-payments"
    assert "Rolled back to 2.3.9" in result["notice"]["text"]
    steps = set(StepResult.objects.values_list("name", flat=True))
    assert steps == {"rollback", "notify"}


@pytest.mark.parametrize(
    ("data", "cause", "reason"),
    [
        ({"error_log": "dial tcp: connection refused"}, "dependency-down", "does not fix"),
        ({"previous_version": None}, "out-of-memory", "no previous version"),
        ({"environment": "staging"}, "out-of-memory", "outside production"),
        ({"error_log": "something odd"}, "unknown", "does not fix"),
    ],
)
def test_deploy_failed_is_only_notified_when_a_rollback_would_not_do(
    r: redis.Redis,
    redis_url: str,
    config: EngineConfig,
    data: dict[str, Any],
    cause: str,
    reason: str,
) -> None:
    row = run_one(r, redis_url, config, deploy(**data))

    result = row.result
    assert (result["diagnosis"]["cause"], result["decision"]["action"]) == (cause, "notify")
    assert reason in result["decision"]["reason"]
    assert "rollback" not in result
    assert "Not rolled back" in result["notice"]["text"]


def registered_types(block_langgraph: bool) -> str:
    """Loads the app's agents module in a fresh interpreter; prints what it registered."""
    code = (
        "import sys\n"
        + ("sys.modules['langgraph'] = None\n" if block_langgraph else "")
        + "import django\n"
        "django.setup()\n"
        "import workers.examples.deploys.agents\n"
        "from workers.core.registry import default_registry\n"
        "print('deploy.failed' in default_registry)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        # The suite's settings: demo mode, where the example apps are installed.
        env={"DJANGO_SETTINGS_MODULE": "tests.settings", "PATH": ""},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert done.stderr == ""  # nothing logged either way
    return done.stdout.strip()


def test_the_app_registers_its_agent_when_langgraph_imports() -> None:
    assert registered_types(block_langgraph=False) == "True"


def test_the_app_registers_nothing_without_langgraph() -> None:
    assert registered_types(block_langgraph=True) == "False"
