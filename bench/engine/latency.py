"""Measurement 2: pickup latency, publish to handler start, at a steady publish rate.

The worker is started and waited for (ready), then events are published one at a time
on a fixed schedule. Each carries ``sent_ns`` (taken just before XADD or INSERT); each
worker records when it picked the event up. Both clocks are this machine's wall clock.
The first ``warmup_s`` of events are published but left out of the figures.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

from bench.common.harness import BenchError, spawn, stop, wait_until
from bench.engine.load import Pace, paced
from bench.engine.subjects import Subject, settle_time

FINISH_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class Pickup:
    subject: str
    target_rate: float
    pace: Pace
    measured: int  # events in the figures (after warm-up)
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    max_ms: float
    p99_runs: tuple[float, ...] = ()  # every run's p99, when this is the median of several


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def pickup(subject: Subject, rate: float, seconds: float, warmup_s: float) -> Pickup:
    total = int(rate * (warmup_s + seconds))
    warm = int(rate * warmup_s)
    subject.prepare(preload=0, latency=True)
    log = subject.bench.log_path(subject.key)
    try:
        with spawn(subject.command(), subject.env(), log, subject.bench.src) as proc:
            subject.wait_ready(proc)
            pace = paced(subject.publisher(), rate, total)
            wait_until(
                lambda: subject.progress()[1] >= total,
                f"{subject.key} to finish {total} events",
                FINISH_TIMEOUT_S,
            )
            stop(proc, log)
        latencies = subject.latencies_ns()
    finally:
        subject.close()
    if len(latencies) != total:
        raise BenchError(f"{subject.key}: {len(latencies)} of {total} events recorded")
    ordered = sorted(ns / 1e6 for n, ns in latencies.items() if n >= warm)
    settle_time()
    result = Pickup(
        subject.key,
        rate,
        pace,
        len(ordered),
        statistics.fmean(ordered),
        percentile(ordered, 50),
        percentile(ordered, 90),
        percentile(ordered, 99),
        ordered[-1],
    )
    print(
        f"  latency    {subject.key:22s} at {rate:g}/s: p50 {result.p50_ms:.2f} ms"
        f"  p99 {result.p99_ms:.2f} ms"
        f"  mean {result.mean_ms:8.2f} ms  (published {pace.rate:.0f}/s, worst lateness "
        f"{pace.worst_late_ms:.1f} ms)",
        flush=True,
    )
    return result


def interleaved(
    subjects: list[Subject], rate: float, seconds: float, warmup_s: float, repeats: int
) -> dict[str, Pickup]:
    """``repeats`` runs per subject, taken in turns so that a noisy spell of the machine
    falls on all of them. Per subject: the run with the median p99 (every figure from that
    one run), carrying the p99 of each run."""
    runs: dict[str, list[Pickup]] = {s.key: [] for s in subjects}
    for _ in range(repeats):
        for subject in subjects:
            runs[subject.key].append(pickup(subject, rate, seconds, warmup_s))
    chosen: dict[str, Pickup] = {}
    for name, picks in runs.items():
        median = sorted(picks, key=lambda p: p.p99_ms)[(len(picks) - 1) // 2]
        chosen[name] = replace(median, p99_runs=tuple(p.p99_ms for p in picks))
    return chosen
