"""Scenario 4: a hung keyed agent (``timeout_s=1, max_deliveries=3``, it awaits forever)
beside normal events. One runworker (claim idle 1.5 s, retry backoff from 200 ms); the hung
event and a second event of its subject are published, then unkeyed probe events at
``rate`` a second until the hung event is dead-lettered and a second after. Each attempt
of the hung event records its start and its end (the cancellation) in a Redis list.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import cast

from bench.common.harness import Bench, BenchError, spawn, stop, wait_until
from bench.engine.latency import percentile
from bench.flow.names import HUNG_KEY, HUNG_TYPE, MAX_DELIVERIES, PLAIN_TYPE
from bench.flow.world import (
    SHORT_ENV,
    SHORT_TIMINGS,
    done,
    envelope,
    results,
    runworker,
    wait_blocked,
    worker_env,
)
from workers.core.keys import EVENT_FIELD

STREAM = "streamdesk:events"
DEAD = f"{STREAM}:dead"
STUCK = "stuck/1"
DEADLINE_S = 30.0  # for the dead letter: 3 attempts of 1 s and their backoffs need ~5 s


@dataclass(frozen=True, slots=True)
class TimeoutRun:
    attempts_s: list[float]  # each attempt, start to cancellation, seconds
    unfinished: int  # attempts that recorded a start and never an end
    reason: str  # the dead letter's
    deliveries: str  # the dead letter's delivery count
    hung_to_dead_s: float  # first attempt's start to the dead letter
    follower_after_dead: bool  # the subject's next event started after the dead letter
    normal_during: int  # probe events that started between the first attempt and the letter
    normal_p99_ms: float  # their pickup latency


def timeout_run(bench: Bench, rate: float) -> TimeoutRun:
    bench.reset_redis()
    db = bench.database("timeouts")
    log = bench.log_path("timeouts")
    tag = f"to-{time.time_ns()}"
    cmd = runworker("--concurrency", "16", *SHORT_TIMINGS)
    with spawn(cmd, worker_env(bench, db, SHORT_ENV), log, bench.src) as proc:
        wait_blocked(bench, [proc])
        for n, hang in ((0, True), (1, False)):
            data = {"n": n, "sent_ns": time.time_ns(), "hang": hang}
            body = envelope(HUNG_TYPE, f"{tag}-h{n}", STUCK, data)
            bench.redis.xadd(STREAM, {EVENT_FIELD: body})
        sent = _publish_until_dead(bench, tag, rate)
        wait_until(lambda: done(bench) >= sent + 2, "every event settled", DEADLINE_S, 0.05)
        stop(proc, log)
    return _collect(bench, results(db))


def _publish_until_dead(bench: Bench, tag: str, rate: float) -> int:
    """Probe events at ``rate`` until a second after the dead letter; how many were sent."""
    start = time.monotonic()
    dead_seen: float | None = None
    n = 0
    while dead_seen is None or time.monotonic() < dead_seen + 1.0:
        if time.monotonic() - start > DEADLINE_S:
            raise BenchError("the hung event was not dead-lettered in time")
        delay = start + n / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        data = {"n": n, "sent_ns": time.time_ns()}
        body = envelope(PLAIN_TYPE, f"{tag}-p{n}", f"probe/{n}", data)
        bench.redis.xadd(STREAM, {EVENT_FIELD: body})
        n += 1
        if dead_seen is None and bench.redis.xlen(DEAD):
            dead_seen = time.monotonic()
    return n


def _collect(bench: Bench, rows: list[dict[str, object]]) -> TimeoutRun:
    starts: list[int] = []
    ends: list[int] = []
    for line in cast(list[str], bench.redis.lrange(HUNG_KEY, 0, -1)):
        kind, _, t_ns = line.split(" ")
        (starts if kind == "start" else ends).append(int(t_ns))
    [(dead_id, letter)] = cast(list[tuple[str, dict[str, str]]], bench.redis.xrange(DEAD))
    dead_ns = int(dead_id.split("-")[0]) * 1_000_000
    follower = [r for r in rows if r.get("n") == 1 and "spread" not in r]
    probes = [r for r in rows if "spread" in r]
    during = [r for r in probes if starts and starts[0] <= _int(r["started_ns"]) <= dead_ns]
    pickup = sorted((_int(r["started_ns"]) - _int(r["sent_ns"])) / 1e6 for r in probes)
    run = TimeoutRun(
        attempts_s=[(e - s) / 1e9 for s, e in zip(starts, ends, strict=False)],
        unfinished=len(starts) - len(ends),
        reason=str(letter.get("reason")),
        deliveries=str(letter.get("deliveries")),
        hung_to_dead_s=(dead_ns - starts[0]) / 1e9 if starts else 0.0,
        follower_after_dead=bool(follower) and _int(follower[0]["started_ns"]) >= dead_ns,
        normal_during=len(during),
        normal_p99_ms=percentile(pickup, 99),
    )
    event = json.loads(letter[EVENT_FIELD])
    shown = ", ".join(f"{s:.2f}" for s in run.attempts_s)
    print(
        f"  timeout {len(starts)} attempts ({shown} s), dead-lettered {run.reason!r} after "
        f"{run.hung_to_dead_s:.1f} s ({event['id']}), {run.normal_during} probe events ran "
        f"meanwhile (p99 {run.normal_p99_ms:.1f} ms), next of its subject after the letter: "
        f"{run.follower_after_dead}",
        flush=True,
    )
    return run


def _int(value: object) -> int:
    return int(cast(int, value))


def met(run: TimeoutRun) -> bool:
    """Each attempt failed within 1.5 s, all of them ended, 3 attempts, reason timeout,
    others served meanwhile, the subject's next event only after the letter."""
    return (
        len(run.attempts_s) == MAX_DELIVERIES
        and not run.unfinished
        and all(s <= 1.5 for s in run.attempts_s)
        and run.reason == "timeout"
        and run.normal_during > 0
        and run.follower_after_dead
    )
