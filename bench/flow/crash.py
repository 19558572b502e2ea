"""Scenario 3: 600 events over 30 subjects (``key="subject", concurrency=1``), two runworker
processes, one SIGKILLed mid-run; the survivor reclaims the victim's entries once they idle
past the claim idle time (1.5 s here). The ``flow.order`` agent records each run's start and
end in a Redis list; bench/flow/order.py checks that each subject's events ran in publish
order, never two at once, each once.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass
from typing import cast

from bench.common.databases import succeeded_runs
from bench.common.harness import Bench, spawn, stop, wait_until
from bench.flow import order
from bench.flow.names import ORDER_KEY, ORDER_TYPE
from bench.flow.world import (
    SHORT_ENV,
    SHORT_TIMINGS,
    done,
    envelope,
    publish,
    runworker,
    wait_blocked,
    worker_env,
)

RUN_MS = 50  # each run sleeps this long: 20 events of a subject take at least a second
FINISH_TIMEOUT_S = 90.0


@dataclass(frozen=True, slots=True)
class CrashRun:
    events: int
    subjects: int
    killed_at: int  # runs ended when the victim was killed
    seconds: float  # publish to the last event acked
    verdict: order.Verdict
    succeeded: int  # AgentRun rows that succeeded


def order_events(subjects: int, per_subject: int, tag: str) -> list[str]:
    """Round robin over the subjects, seq 0..per_subject-1 each, in publish order."""
    return [
        envelope(ORDER_TYPE, f"{tag}-{s}-{seq}", f"order/{s}", {"seq": seq, "ms": RUN_MS})
        for seq in range(per_subject)
        for s in range(subjects)
    ]


def crash_run(bench: Bench, events: int, subjects: int) -> CrashRun:
    bench.reset_redis()
    db = bench.database("crash")
    env = worker_env(bench, db, SHORT_ENV)
    per_subject = events // subjects
    cmd = runworker("--concurrency", "16", *SHORT_TIMINGS)
    victim_log, survivor_log = bench.log_path("crash-victim"), bench.log_path("crash-survivor")
    with (
        spawn([*cmd, "--consumer", "victim"], env, victim_log, bench.src) as victim,
        spawn([*cmd, "--consumer", "survivor"], env, survivor_log, bench.src) as survivor,
    ):
        wait_blocked(bench, [victim, survivor])
        began = time.monotonic()
        publish(bench.redis, order_events(subjects, per_subject, f"crash-{time.time_ns()}"))
        wait_until(lambda: _ends(bench) >= events // 3, "a third of the runs", 60)
        victim.send_signal(signal.SIGKILL)
        kill_ns = time.time_ns()
        victim.wait(timeout=10)
        killed_at = _ends(bench)
        wait_until(lambda: done(bench) >= events, "every event acked", FINISH_TIMEOUT_S, 0.05)
        seconds = time.monotonic() - began
        stop(survivor, survivor_log)
    records = order.parse(cast(list[str], bench.redis.lrange(ORDER_KEY, 0, -1)))
    counts = {f"order/{s}": per_subject for s in range(subjects)}
    verdict = order.check(records, counts, victim.pid, kill_ns)
    run = CrashRun(events, subjects, killed_at, seconds, verdict, succeeded_runs(db))
    if run.succeeded != events:
        verdict.violations.append(f"{run.succeeded} of {events} runs succeeded")
    print(
        f"  crash {events} events / {subjects} subjects: killed after {killed_at} runs, "
        f"done in {seconds:.1f} s; {len(verdict.violations)} violations, "
        f"{verdict.interrupted} interrupted, {verdict.reruns} reruns",
        flush=True,
    )
    if verdict.violations:
        print("    " + "\n    ".join(verdict.violations[:10]), flush=True)
    return run


def _ends(bench: Bench) -> int:
    """Runs ended so far (each run pushes two records; a rough count is enough here)."""
    return cast(int, bench.redis.llen(ORDER_KEY)) // 2
