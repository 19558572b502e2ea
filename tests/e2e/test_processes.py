"""``runworker --processes N``: one command, N real worker processes under a supervisor
(issue 16). A child killed mid-agent is restarted and its entries reclaimed, SIGTERM drains
every child, ``--burst`` ends with exit 0 once the stream is drained, and a child that
cannot start ends the command with an error instead of a restart loop."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from tests.support.engine import pending, xadd
from tests.support.processes import ROOT, TIMINGS
from tests.support.wait import wait_for
from workers.models import AgentRun, RunStatus, TimelineStep

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


class Supervised:
    """``manage.py runworker --processes N`` with its output in a file."""

    def __init__(self, env: dict[str, str], log: Path, *args: str) -> None:
        self.path = log
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "manage.py", "runworker", *TIMINGS, *args],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def log(self) -> str:
        return self.path.read_text(errors="replace")

    def child_pids(self) -> list[int]:
        found = re.search(r"supervising \d+ worker processes \(pids ([\d, ]+)\)", self.log())
        return [int(p) for p in found.group(1).split(", ")] if found else []

    def wait(self, timeout_s: float) -> int:
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
            pytest.fail(f"runworker --processes still running after {timeout_s} s:\n{self.log()}")


@pytest.fixture
def supervised(worker_env: dict[str, str], tmp_path: Path):  # type: ignore[no-untyped-def]
    started: list[Supervised] = []

    def start(*args: str, env: dict[str, str] | None = None) -> Supervised:
        run = Supervised(env or worker_env, tmp_path / f"supervisor-{len(started)}.log", *args)
        started.append(run)
        return run

    yield start
    for run in started:
        if run.proc.poll() is None:
            run.proc.kill()
            run.proc.wait(timeout=10)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A child that exited but is not yet reaped by its parent is a zombie: not alive.
    status = Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].split()[0]
    return status != "Z"


def publish_sleeps(r: redis.Redis, n: int, ms: int) -> None:
    for i in range(n):
        xadd(r, {"type": "demo.sleep", "source": "test", "id": f"s{i}", "data": {"ms": ms}})


def running(r: redis.Redis) -> int:
    return sum(1 for key in r.scan_iter("streamdesk:idem:*") if r.hget(key, "state") == "running")


def consumers(r: redis.Redis) -> set[str]:
    return {c["name"] for c in r.xinfo_consumers("streamdesk:events", "agents")}


def test_burst_with_two_processes_exits_0_once_the_stream_is_drained(
    r: redis.Redis, supervised
) -> None:
    publish_sleeps(r, 60, 20)
    run = supervised("--processes", "2", "--burst", "--consumer", "pool", "--batch-size", "5")
    assert run.wait(90) == 0, run.log()
    rows = AgentRun.objects.all()
    assert rows.count() == 60
    assert {row.status for row in rows} == {RunStatus.SUCCEEDED}
    assert pending(r) == 0
    assert {"pool-1", "pool-2"} <= consumers(r)


def test_a_child_killed_mid_agent_is_restarted_and_each_event_runs_once(
    r: redis.Redis, supervised
) -> None:
    publish_sleeps(r, 20, 800)
    run = supervised("--processes", "2", "--consumer", "pool")
    wait_for(lambda: len(run.child_pids()) == 2, what="two children")
    wait_for(lambda: running(r) >= 8, what="agents running")
    victim = run.child_pids()[0]
    os.kill(victim, signal.SIGKILL)
    wait_for(lambda: "worker-1 restarted" in run.log(), timeout_s=30, what="worker-1 restarted")
    assert f"worker-1 (pid {victim}) killed by SIGKILL" in run.log()
    wait_for(
        lambda: AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count() == 20,
        timeout_s=60,
        what="every event to succeed",
    )
    run.proc.send_signal(signal.SIGTERM)
    assert run.wait(60) == 0, run.log()
    # One commit per event, whoever ran it and however often it was delivered.
    for row in AgentRun.objects.all():
        kinds = list(
            TimelineStep.objects.filter(event_hash=row.event_hash).values_list("kind", flat=True)
        )
        assert kinds.count("committed") <= 1, (row.event_hash, kinds)
    assert AgentRun.objects.count() == 20
    assert pending(r) == 0


def test_sigterm_drains_every_child(r: redis.Redis, supervised) -> None:
    publish_sleeps(r, 6, 1500)
    run = supervised("--processes", "2", "--batch-size", "3")
    wait_for(lambda: len(run.child_pids()) == 2 and running(r) == 6, what="six agents running")
    children = run.child_pids()
    run.proc.send_signal(signal.SIGTERM)
    assert run.wait(60) == 0, run.log()
    assert not any(alive(pid) for pid in children)
    # Drained, not abandoned: every agent that was running finished and was acknowledged.
    assert AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count() == 6
    assert pending(r) == 0


def test_a_child_that_keeps_failing_ends_the_command_with_an_error(
    worker_env: dict[str, str], supervised
) -> None:
    env = {
        **worker_env,
        "REDIS_URL": "redis://127.0.0.1:1/0",  # nothing listens there
        "STREAMDESK_LOG_FORMAT": "json",
    }
    run = supervised("--processes", "2", env=env)
    assert run.wait(120) == 1, run.log()
    assert "times in a row" in run.log() and "giving up" in run.log()
    assert "a worker process kept failing" in run.log()
    # The supervisor logs as the workers do: one JSON object per line.
    said = [
        line for line in run.log().splitlines() if "restarting in" in line or "giving up" in line
    ]
    assert said and all(json.loads(line)["level"] == "warning" for line in said)
