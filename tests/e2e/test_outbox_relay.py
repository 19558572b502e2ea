"""Real ``manage.py relay`` and ``runworker --relay`` processes, killed and stopped."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import redis
from django.db import transaction

from tests.support.engine import STREAM, run_burst
from tests.support.outbox import counting_registry
from tests.support.processes import ROOT, Workers
from tests.support.wait import wait_for
from workers.core.config import EngineConfig
from workers.models import AgentRun, OutboxEvent, RunStatus
from workers.producers.outbox import emit

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def relay_process(env: dict[str, str], log: Path, *args: str) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "manage.py", "relay", *args],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def test_relay_killed_between_xadd_and_marking_sent_runs_each_agent_once(
    r: redis.Redis,
    redis_url: str,
    worker_env: dict[str, str],
    config: EngineConfig,
    tmp_path: Path,
) -> None:
    runs: Counter[str] = Counter()
    registry = counting_registry(runs)
    with transaction.atomic():
        rows = [
            emit("test.changed", {"n": n}, subject=f"ticket/{n % 2}", registry=registry)
            for n in range(5)
        ]
    log = tmp_path / "relay.log"
    victim = relay_process(
        {**worker_env, "STREAMDESK_RELAY_PAUSE_AFTER_XADD_S": "60"}, log, "--batch-size", "10"
    )
    wait_for(lambda: r.xlen(STREAM) == 5, what="the relay's XADD")
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=10)
    assert OutboxEvent.objects.filter(sent_at__isnull=True).count() == 5

    again = relay_process(worker_env, log, "--once")
    assert again.wait(timeout=60) == 0, log.read_text()
    assert r.xlen(STREAM) == 10, "every row was XADDed twice"
    assert not OutboxEvent.objects.filter(sent_at__isnull=True).exists()

    run_burst(redis_url, config, registry)
    assert runs == {str(row.pk): 1 for row in rows}
    assert AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count() == 5


def test_runworker_with_relay_publishes_and_runs_outbox_rows(
    r: redis.Redis, workers: Workers
) -> None:
    worker = workers.start("w1", "--relay")
    with transaction.atomic():
        for n in range(3):
            emit("demo.echo", {"n": n}, subject="order/1")
    wait_for(
        lambda: AgentRun.objects.filter(status=RunStatus.SUCCEEDED, source="outbox").count() == 3,
        what="three outbox events to run",
    )
    assert not OutboxEvent.objects.filter(sent_at__isnull=True).exists()
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0, workers.log("w1")
