"""A paused group reads as paused, never as stuck (issue 26, item 15): its workers neither
read nor reclaim, on purpose, so an entry left pending is the pause, not trouble. The same
group unpaused is still marked stuck, and no alert rule about a group fires for a paused one
while each still fires for one that is not."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from console.live import health
from tests.unit.test_health import CLAIM_IDLE_MS, NOW, group, stream

ALERTS = Path(__file__).resolve().parents[2] / "docs" / "alerts.yml"
STUCK_MS = health.stuck_after_ms(CLAIM_IDLE_MS) + 60_000
RULE = re.compile(r"^ {6}- alert: (\w+)\n {8}expr: (.+)$", re.MULTILINE)
NOT_PAUSED = " and on(stream, group, job, instance) streamdesk_group_paused == 0"


def test_paused_group_with_an_entry_past_the_grace_is_paused_not_stuck() -> None:
    paused = group(pending=1, idle_ms=STUCK_MS, paused_by="alice at 11:23")
    assert health.group_health(paused, CLAIM_IDLE_MS) == health.Health(
        "warn", ["paused by alice at 11:23"]
    )
    assert health.stream_health(stream(paused), CLAIM_IDLE_MS).level == "warn"


def test_the_same_group_unpaused_is_still_stuck() -> None:
    mark = health.group_health(group(pending=1, idle_ms=STUCK_MS), CLAIM_IDLE_MS)
    assert mark.level == "bad" and mark.reasons[0].startswith("stuck:")
    state = health.oldest_pending(group(pending=1, idle_ms=STUCK_MS), NOW, CLAIM_IDLE_MS)
    assert state is not None and state.kind == "stuck"


@pytest.mark.parametrize("idle_ms", [CLAIM_IDLE_MS + 1_000, STUCK_MS])
def test_paused_groups_oldest_entry_reads_paused_not_reclaimable_or_stuck(idle_ms: int) -> None:
    paused = group(pending=1, idle_ms=idle_ms, paused_by="alice at 11:23")
    assert health.oldest_pending(paused, NOW, CLAIM_IDLE_MS) == health.PendingState(
        "paused", idle_ms
    )


def test_paused_groups_waiting_or_running_entry_keeps_its_state() -> None:
    # The pause does not change what a held-back or running entry is doing.
    due = NOW + 3_000
    waiting = group(pending=1, idle_ms=57_000, due_ms=due, paused_by="alice")
    assert health.oldest_pending(waiting, NOW, CLAIM_IDLE_MS) == health.PendingState(
        "waiting", 57_000, due, 3_000
    )
    running = group(pending=1, idle_ms=3_000, paused_by="alice")
    assert health.oldest_pending(running, NOW, CLAIM_IDLE_MS) == health.PendingState("idle", 3_000)


def test_paused_group_without_a_live_worker_still_says_so() -> None:
    # Pausing is no excuse for work no worker will take once resumed.
    paused = group(pending=1, idle_ms=STUCK_MS, live=False, paused_by="alice")
    mark = health.group_health(paused, CLAIM_IDLE_MS)
    assert mark.level == "bad" and mark.reasons[1].startswith("no live consumer")


def group_rules() -> dict[str, str]:
    """Alert name -> expression, for every rule that reads a group's figures."""
    rules = dict(RULE.findall(ALERTS.read_text()))
    assert len(rules) == 6, rules
    return {name: expr for name, expr in rules.items() if "streamdesk_group_" in expr}


def test_no_alert_rule_about_a_group_fires_for_a_paused_one() -> None:
    rules = group_rules()
    assert {"StreamdeskOldestPendingPastClaimIdle", "StreamdeskLagGrowing"} <= set(rules)
    unguarded = [name for name, expr in rules.items() if not expr.endswith(NOT_PAUSED)]
    assert unguarded == []


def test_the_oldest_pending_alert_still_fires_past_the_claim_idle_time() -> None:
    # The guard is added to the rule, not put in its place: for a group that is not paused
    # (paused == 0) the rule is its threshold, as before.
    expr = group_rules()["StreamdeskOldestPendingPastClaimIdle"]
    assert expr == (
        "streamdesk_group_oldest_pending_idle_seconds > on(job, instance) group_left() "
        "(streamdesk_claim_idle_seconds * 1.25)" + NOT_PAUSED
    )


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_promtool_evaluates_the_rules_paused_silent_unpaused_firing() -> None:
    # Prometheus' own evaluation of docs/alerts.yml over a paused and an unpaused group
    # with the same figures (docs/alerts_test.yml): only the unpaused one fires.
    tests = ALERTS.with_name("alerts_test.yml")
    run = subprocess.run(
        ["promtool", "test", "rules", str(tests)], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stdout + run.stderr
