"""The agent runtime across real ``runworker`` processes: a SIGKILL between two durable
steps, and one rate budget shared by two workers."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator

import pytest
import redis

from tests.support.engine import counters, pending, xadd
from tests.support.processes import Workers
from tests.support.wait import wait_for
from workers.models import AgentRun, RunStatus, StepResult

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

FIRST_RUNS, SECOND_RUNS, RELEASED, GRANTS = (
    "runtime:first",
    "runtime:second",
    "runtime:released",
    "runtime:grants",
)


@pytest.fixture
def runtime_workers(workers: Workers) -> Iterator[Workers]:
    workers.env["STREAMDESK_AGENT_MODULES"] = "tests.e2e.runtime_agents"
    workers.env["STREAMDESK_RATE_LIMITS"] = "api=50/s:5"
    yield workers


def test_a_worker_killed_between_two_steps_resumes_without_rerunning_the_first(
    r: redis.Redis, runtime_workers: Workers
) -> None:
    xadd(r, {"type": "test.two_steps", "source": "t", "id": "o1", "data": {"order": "o1"}})
    victim = runtime_workers.start("victim")
    wait_for(lambda: r.get(SECOND_RUNS) == "1", what="the victim to reach the second step")
    assert StepResult.objects.filter(name="charge").count() == 1
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=10)
    r.set(RELEASED, 1)

    rescuer = runtime_workers.start("rescuer", "--burst")
    assert rescuer.wait(timeout=60) == 0, runtime_workers.log("rescuer")

    run = AgentRun.objects.get()
    assert (run.status, run.consumer) == (RunStatus.SUCCEEDED, "rescuer")
    assert run.result["shipped"] == "shipped after ch-o1"
    assert run.result["charged"]["key"] == f"{run.event_hash}:charge"
    # The first step ran once, in the victim; the second twice (it never finished there).
    assert (r.get(FIRST_RUNS), r.get(SECOND_RUNS)) == ("1", "2")
    steps = dict(StepResult.objects.values_list("name", "consumer"))
    assert steps == {"charge": "victim", "ship": "rescuer"}


@pytest.mark.serial  # times calls by the second: not beside other tests' load
def test_two_workers_sharing_a_budget_of_50_per_second_never_exceed_it(
    r: redis.Redis, runtime_workers: Workers
) -> None:
    """Measured over 10 s: calls in any window of T seconds stay within 5 + 50 T. Times are
    taken by the agents just after their grant, so windows allow 10% for that jitter."""
    for n in range(900):
        xadd(r, {"type": "test.call_api", "source": "t", "id": f"c{n}", "data": {"n": n}})
    procs = [runtime_workers.start(f"w{i}", "--concurrency", "16") for i in range(2)]
    wait_for(lambda: r.llen(GRANTS) > 0, what="the first call")
    time.sleep(10.5)
    grants = sorted(float(t) for t in r.lrange(GRANTS, 0, -1))
    for proc in procs:
        proc.send_signal(signal.SIGTERM)
    for i, proc in enumerate(procs):
        assert proc.wait(timeout=60) == 0, runtime_workers.log(f"w{i}")

    start = grants[0]
    window = [t - start for t in grants if t - start <= 10.0]
    assert len(window) <= 5 + 50 * 10.1, len(window)
    # Every 1 s window (starting at each call) holds at most the burst plus a second's worth
    # (two separate buckets, one per worker, would let about 100 through).
    for i, t in enumerate(window):
        within = sum(1 for u in window[i:] if u - t <= 1.0)
        assert within <= 5 + 50 * 1.1, (t, within)
    # And the budget is used, not starved: both workers got calls through.
    assert len(window) >= 0.8 * 50 * 10, len(window)
    workers_used = {c for c in AgentRun.objects.values_list("consumer", flat=True).distinct()}
    assert workers_used == {"w0", "w1"}
    stats = counters(r)
    assert stats.get("dead_lettered", 0) == 0 and stats.get("failed", 0) == 0
    assert stats["deferred"] > 0
    assert pending(r) + AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count() <= 900
