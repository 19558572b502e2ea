"""The leaked-credential example: a state machine of durable, rate-limited side effects."""

from __future__ import annotations

from typing import Any

import pytest
import redis

from tests.support.engine import counters, run_burst
from workers.core.config import EngineConfig
from workers.core.registry import default_registry
from workers.examples.sandbox.models import SideEffect
from workers.models import AgentRun, RunStatus, StepResult
from workers.producers.publish import publish
from workers.runtime.ratelimit import parse_budgets

pytestmark = pytest.mark.django_db(transaction=True)
BUDGETS = "directory=50/s:50,vault=10/s:1,slack=10/s:1"


def alert(n: int, repository: str = "acme/payments") -> dict[str, Any]:
    return {
        "alert_id": f"alert-{n}",
        "credential_id": f"AKIA{n:04d}",
        "kind": "aws_access_key",
        "repository": repository,
        "file_path": "deploy/settings.py",
        "commit": "0123456789abcdef",
        "detected_at": "2026-12-02T10:00:00Z",
    }


def test_each_leaked_credential_is_revoked_and_its_owner_told_once(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    for n in range(3):
        publish("security.credential_leaked", alert(n), source="scanner", id=f"a{n}", client=r)
    publish(
        "security.credential_leaked",
        alert(9, "acme/unknown"),
        source="scanner",
        id=f"a{9, 'acme/unknown'}",
        client=r,
    )
    run_burst(redis_url, config, default_registry, budgets=parse_budgets(BUDGETS))

    runs = AgentRun.objects.filter(event_type="security.credential_leaked")
    assert {run.status for run in runs} == {RunStatus.SUCCEEDED} and runs.count() == 4
    paths = sorted(tuple(run.result["path"]) for run in runs)
    assert paths == [("received", "owner_found", "revoked", "notified")] * 3 + [
        ("received", "unowned", "revoked", "notified")
    ]
    effects = SideEffect.objects.all()
    assert sorted(effects.filter(action="revoke").values_list("target", flat=True)) == [
        "AKIA0000", "AKIA0001", "AKIA0002", "AKIA0009",
    ]  # fmt: skip
    channels = sorted(effects.filter(action="notify").values_list("target", flat=True))
    assert channels == ["#payments-oncall"] * 3 + ["#security"]
    assert not effects.filter(replays__gt=0).exists()
    # Four alerts through budgets of one token at a time: some waited, none failed.
    stats = counters(r)
    assert stats["deferred"] > 0 and stats.get("failed", 0) == 0
    assert StepResult.objects.count() == 4 * 3


def test_a_rerun_after_the_revocation_goes_on_from_the_stored_state(
    r: redis.Redis, redis_url: str, config: EngineConfig
) -> None:
    """As after a crash between steps: the first two transitions are stored, the notify
    step is not; the rerun notifies without revoking again."""
    publish("security.credential_leaked", alert(1), source="scanner", id="a1", client=r)
    run_burst(redis_url, config, default_registry, budgets=parse_budgets(BUDGETS))
    run = AgentRun.objects.get()
    StepResult.objects.filter(name__startswith="revoked:").delete()
    SideEffect.objects.filter(action="notify").delete()
    AgentRun.objects.all().delete()
    r.flushdb()
    publish("security.credential_leaked", alert(1), source="scanner", id="a1", client=r)
    run_burst(redis_url, config, default_registry, budgets=parse_budgets(BUDGETS))

    again = AgentRun.objects.get()
    assert again.event_hash == run.event_hash and again.status == RunStatus.SUCCEEDED
    assert SideEffect.objects.filter(action="revoke").get().replays == 0
    assert SideEffect.objects.filter(action="notify").count() == 1
