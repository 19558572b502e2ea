"""Scenario 2: one hot subject with a backlog of 10,000 events beside 10,000 spread events
(each its own subject): do the spread events still start promptly?

One ``runworker`` (not ``--burst``) waits on an empty stream; the hot subject's 10,000
events arrive at once (one MULTI/EXEC), then the spread events are published one at a time
at ``rate`` a second (500/s: 20 s of them, the rate bench.engine measures pickup at). Keyed
(``key="subject", concurrency=1``), the hot backlog can only run one at a time, so it is
still there while every spread event arrives; unkeyed, the same events run as they come.
Pickup latency is the spread event's handler start minus its ``sent_ns`` (taken just
before XADD), as in bench/engine/latency.py; the first ``warmup_s`` of spread events are
left out of both (the unkeyed worker spends them on the hot backlog).
"""

from __future__ import annotations

import contextlib
import statistics
import time
from dataclasses import dataclass

from bench.common.harness import Bench, BenchError, spawn, stop, wait_until
from bench.engine.latency import percentile
from bench.engine.load import Pace, paced
from bench.flow.names import KEYED_TYPE, PLAIN_TYPE
from bench.flow.world import done, envelope, publish, results, runworker, wait_blocked, worker_env
from workers.core.keys import EVENT_FIELD

HOT_SUBJECT = "hot/1"
SETTLE_S = 30.0  # after the last spread event: for the hot backlog to finish, at most


@dataclass(frozen=True, slots=True)
class HotRun:
    keyed: bool
    pace: Pace
    measured: int  # spread events in the figures
    p50_ms: float
    p99_ms: float
    max_ms: float
    mean_ms: float
    hot_done: int  # hot events finished when the run ended
    hot_s: float  # first to last hot start, seconds


def hot_run(
    bench: Bench, keyed: bool, hot: int, spread: int, rate: float, warmup_s: float
) -> HotRun:
    bench.reset_redis()
    name = "keyed" if keyed else "unkeyed"
    db = bench.database(f"hot-{name}")
    kind = KEYED_TYPE if keyed else PLAIN_TYPE
    log = bench.log_path(f"hot-{name}")
    tag = f"hot-{name}-{time.time_ns()}"
    cmd = runworker("--concurrency", "200", "--batch-size", "200")
    with spawn(cmd, worker_env(bench, db), log, bench.src) as proc:
        wait_blocked(bench, [proc])
        backlog = (
            envelope(kind, f"{tag}-h{n}", HOT_SUBJECT, {"n": n, "sent_ns": time.time_ns()})
            for n in range(hot)
        )
        publish(bench.redis, backlog, at_once=True)

        def one(n: int) -> None:
            data = {"n": n, "sent_ns": time.time_ns(), "spread": True}
            body = envelope(kind, f"{tag}-s{n}", f"spread/{n}", data)
            bench.redis.xadd("streamdesk:events", {EVENT_FIELD: body})

        pace = paced(one, rate, spread)
        with contextlib.suppress(BenchError):  # reported: the hot events done by then
            wait_until(lambda: done(bench) >= hot + spread, "the hot backlog", SETTLE_S, 0.05)
        stop(proc, log)
    rows = results(db)
    spread_ns = {int(r["n"]): int(r["started_ns"]) - int(r["sent_ns"]) for r in rows if r["spread"]}
    if len(spread_ns) != spread:
        raise BenchError(f"hot/{name}: {len(spread_ns)} of {spread} spread events ran")
    warm = int(rate * warmup_s)
    ordered = sorted(ns / 1e6 for n, ns in spread_ns.items() if n >= warm)
    hot_starts = sorted(int(r["started_ns"]) for r in rows if not r["spread"])
    run = HotRun(
        keyed,
        pace,
        len(ordered),
        percentile(ordered, 50),
        percentile(ordered, 99),
        ordered[-1],
        statistics.fmean(ordered),
        len(hot_starts),
        (hot_starts[-1] - hot_starts[0]) / 1e9 if hot_starts else 0.0,
    )
    print(
        f"  hot   {name:8s} spread p50 {run.p50_ms:.2f} ms p99 {run.p99_ms:.2f} ms "
        f"max {run.max_ms:.1f} ms; hot {run.hot_done:,}/{hot:,} in {run.hot_s:.1f} s "
        f"(published {pace.rate:.0f}/s, worst lateness {pace.worst_late_ms:.1f} ms)",
        flush=True,
    )
    return run
