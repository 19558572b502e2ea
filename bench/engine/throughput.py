"""Measurements 1 and 3: how fast a worker drains preloaded events, and its memory meanwhile.

The clock runs from the last moment nothing had been picked up to the first moment all
events were finished, both seen by the parent polling progress every 5 ms (so worker
start-up and the exit after the last event are not counted, for any worker). The CPU time
of each part (worker processes, Valkey, PostgreSQL backends, this process) is taken at the
same two moments (``cpu.CpuMeter``).
"""

from __future__ import annotations

import statistics
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.common.databases import POSTGRES
from bench.common.harness import BenchError, log_tail, rss_kb, spawn, stop, wait_exit
from bench.engine.cpu import CpuMeter, CpuUse
from bench.engine.subjects import Subject, settle_time

POLL_S = 0.005  # fine enough for the raw loop, whose drain takes well under a second
RSS_EVERY_S = 1.0
EXIT_TIMEOUT_S = 60.0


def drain_timeout_s(events: int) -> float:
    # Generous (>= 100 events/s plus start-up) but finite: a stuck worker fails the run.
    return 120.0 + events / 100


@dataclass(frozen=True, slots=True)
class RssSample:
    t: float  # seconds since the drain started
    done: int
    kb: int


@dataclass
class Drain:
    subject: str
    events: int
    seconds: float
    rss: list[RssSample] = field(default_factory=list)
    cpu: CpuUse | None = None

    @property
    def rate(self) -> float:
        return self.events / self.seconds


def drain(subject: Subject, events: int) -> Drain:
    subject.prepare(preload=events, latency=False)
    log = subject.bench.log_path(subject.key)
    try:
        with spawn(subject.command(), subject.env(), log, subject.bench.src) as proc:
            subject.start_drain(proc, events)
            seconds, rss, cpu = _watch(subject, proc, events, log)
            if subject.exits_when_drained:
                wait_exit(proc, log, EXIT_TIMEOUT_S)
            else:
                stop(proc, log)
        finished = subject.finished()
    finally:
        subject.close()
    if finished != events:
        raise BenchError(f"{subject.key} finished {finished} of {events} events")
    settle_time()
    return Drain(subject.key, events, seconds, rss, cpu)


def _meter(subject: Subject, pid: int) -> CpuMeter:
    bench, db = subject.bench, subject.db
    pg = bench.postgres if db is not None and db.kind == POSTGRES else None
    backends = (lambda: pg.backends(db)) if pg is not None and db is not None else None
    return CpuMeter(pid, bench.valkey_pid, backends)


def _watch(
    subject: Subject, proc: subprocess.Popen[bytes], total: int, log: Path
) -> tuple[float, list[RssSample], CpuUse]:
    pid = proc.pid
    meter = _meter(subject, pid)
    meter.start()  # a worker that waited for its events may pick up before the first poll
    spawned = time.monotonic()
    idle_until = spawned  # last sample at which nothing had been picked up yet
    began = False
    samples: list[RssSample] = []
    next_rss = spawned
    deadline = spawned + drain_timeout_s(total)
    while True:
        # Checked before progress, so a worker that finished and exited is never an error.
        exited = proc.poll() is not None
        now = time.monotonic()
        picked, done = subject.progress()
        if picked == 0:
            idle_until = now
            meter.start()
        # One sample as soon as work starts (the loaded worker), then one a second.
        if now >= next_rss or (picked and not began):
            began = began or picked > 0
            kb = rss_kb(pid)
            if kb is not None and began:
                samples.append(RssSample(now - idle_until, done, kb))
            next_rss = now + RSS_EVERY_S
        if done >= total:
            cpu = meter.stop()  # first: the worker and its backends exit soon
            kb = rss_kb(pid)
            if kb is not None:
                samples.append(RssSample(now - idle_until, done, kb))
            return now - idle_until, samples, cpu
        if exited:
            raise BenchError(
                f"{subject.key} exited after {done} of {total} events:\n{log_tail(log)}"
            )
        if now > deadline:
            raise BenchError(
                f"{subject.key}: {done} of {total} events after {now - spawned:.0f} s; giving up"
            )
        time.sleep(POLL_S)


@dataclass(frozen=True, slots=True)
class Rates:
    subject: str
    runs: list[float]
    cpus: list[CpuUse | None] = field(default_factory=list)  # each run's, in run order

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    @property
    def cpu(self) -> CpuUse | None:
        """The CPU use of the median run (the lower middle one of an even count)."""
        order = sorted(range(len(self.runs)), key=self.runs.__getitem__)
        middle = order[(len(order) - 1) // 2]
        return self.cpus[middle] if middle < len(self.cpus) else None


def interleaved(subjects: list[Subject], events: int, repeats: int) -> dict[str, Rates]:
    """Each repeat runs every subject once, so slow spells of a shared machine hit all alike."""
    drains: dict[str, list[Drain]] = {s.key: [] for s in subjects}
    for i in range(repeats):
        for subject in subjects:
            result = drain(subject, events)
            drains[subject.key].append(result)
            print(
                f"  throughput {i + 1}/{repeats} {subject.key:22s} {result.rate:10.0f} events/s"
                f"  ({events} in {result.seconds:.2f} s{_cpu_note(result.cpu)})",
                flush=True,
            )
    return {
        key: Rates(key, [d.rate for d in runs], [d.cpu for d in runs])
        for key, runs in drains.items()
    }


def _cpu_note(cpu: CpuUse | None) -> str:
    if cpu is None:
        return ""
    parts = {"worker": cpu.worker, "valkey": cpu.valkey, "postgres": cpu.postgres}
    parts |= {"bench": cpu.parent, "others": cpu.others}
    shown = ", ".join(f"{k} {cpu.cores(t) or 0:.2f}" for k, t in parts.items() if t is not None)
    return f"; cores: {shown}"


@dataclass(frozen=True, slots=True)
class Memory:
    config: str
    events: int
    rate: float
    samples: list[RssSample]

    @property
    def start_kb(self) -> int:
        return self.samples[0].kb

    @property
    def peak_kb(self) -> int:
        return max(s.kb for s in self.samples)

    @property
    def end_kb(self) -> int:
        return self.samples[-1].kb

    @property
    def warm_kb(self) -> int:
        """RSS once a tenth of the events is done: caches and pools are warm by then."""
        return self.at(self.events // 10)

    @property
    def growth_kb(self) -> int:
        return self.end_kb - self.warm_kb

    def at(self, done: int) -> int:
        """RSS at the first sample with at least ``done`` events finished."""
        return next(s.kb for s in self.samples if s.done >= done)

    @property
    def flat(self) -> bool:
        # A leak of even 100 bytes an event would add ~9 MB over the last 90,000 events.
        return self.growth_kb <= max(5 * 1024, self.warm_kb // 20)


def memory(subject: Subject, events: int, config: str) -> Memory:
    result = drain(subject, events)
    if not result.rss:
        raise BenchError("no RSS samples were taken")
    found = Memory(config, events, result.rate, result.rss)
    print(
        f"  memory     {config}: {result.rate:.0f} events/s ({events} in {result.seconds:.1f} s),"
        f" RSS {found.start_kb // 1024} -> peak {found.peak_kb // 1024} -> end "
        f"{found.end_kb // 1024} MiB",
        flush=True,
    )
    return found
