"""One idle fleet watched for a window: the commands the server ran (``INFO commandstats``,
and MONITOR's lines for what each was for), the CPU time of every process the fleet runs
(``/proc``), its memory, and the PostgreSQL connections it holds."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import redis

from bench.common.databases import Database
from bench.common.harness import (
    PRODUCTION_ENV,
    Bench,
    BenchError,
    log_tail,
    rss_kb,
    spawn,
    stop,
    wait_until,
)
from bench.engine.cpu import cpu_s, tree
from bench.idle.monitor import Monitor, Seen
from bench.idle.subjects import Subject
from workers.core.keys import Keys

READY_TIMEOUT_S = 120.0  # ten Django processes starting on two cores take a while
PEER_STOP_S = 30.0
BACKENDS_EVERY_S = 5.0  # how often the window counts the fleet's PostgreSQL connections
# The bench's own command in the window: CONFIG RESETSTAT counts itself (INFO does not).
OWN_CALLS = Counter({"config|resetstat": 1})


@dataclass(frozen=True, slots=True)
class Idle:
    """What one subject did at rest over ``seconds``."""

    subject: Subject
    seconds: float
    calls: dict[str, int]  # commandstats name -> calls in the window, the bench's own removed
    lines: list[Seen]  # MONITOR's, the bench's own removed
    cpu_s: float  # every process of the fleet, utime + stime
    rss_kb: int  # summed over its processes (pages they share count once per process)
    processes: int
    database: str  # "PostgreSQL", "SQLite", or "" for a peer
    pg_connections: int | None  # the most seen at once in the window; None: not on PostgreSQL

    @property
    def commands(self) -> float:
        return sum(self.calls.values()) / self.seconds

    @property
    def cpu_ms(self) -> float:
        return self.cpu_s * 1000 / self.seconds

    def rate(self, name: str) -> float:
        return self.calls.get(name, 0) / self.seconds


@dataclass(frozen=True, slots=True)
class Window:
    seconds: float
    warmup_s: float


def subject_env(bench: Bench, subject: Subject, db: Database | None) -> dict[str, str]:
    """runworker: the bench's environment as deployed (DEBUG off, no demo agents); a peer:
    only the server's URL and the path to its module."""
    if db is not None:
        env = {**bench.env(db), **PRODUCTION_ENV}
        env.pop("STREAMDESK_DEMO", None)
        return env
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STREAMDESK_", "DJANGO_"))}
    env.update(REDIS_URL=bench.url, PYTHONPATH=str(bench.src), PYTHONUNBUFFERED="1")
    return env


@contextlib.contextmanager
def started(
    bench: Bench, subject: Subject, env: dict[str, str]
) -> Iterator[list[tuple[subprocess.Popen[bytes], Path]]]:
    """The subject's processes (each copy with its log), stopped at the end of the block:
    runworker must drain and exit 0; a peer gets SIGTERM, then SIGKILL if it lingers."""
    with contextlib.ExitStack() as stack:
        procs = []
        for n in range(subject.copies):
            log = bench.log_path(f"{subject.key}-{n + 1}")
            proc = stack.enter_context(spawn(subject.argv_for(bench.url), env, log, bench.src))
            procs.append((proc, log))
        yield procs
        for proc, log in procs:
            if subject.streamdesk:
                stop(proc, log)
            else:
                _stop_peer(proc)


def _stop_peer(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=PEER_STOP_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def wait_ready(
    bench: Bench, subject: Subject, procs: list[tuple[subprocess.Popen[bytes], Path]]
) -> None:
    """Until every worker heartbeats (runworker) or its log says it is ready (a peer)."""
    index = Keys().workers_index

    def ready() -> bool:
        for proc, log in procs:
            if proc.poll() is not None:
                raise BenchError(f"{subject.shown} exited {proc.returncode}:\n{log_tail(log)}")
        if subject.streamdesk:
            return int(cast(int, bench.redis.zcard(index))) >= subject.workers
        said = sum(log_text(log).count(subject.ready_line) for _, log in procs)
        return said >= subject.ready_count

    wait_until(ready, f"{subject.shown} to be ready", READY_TIMEOUT_S, interval_s=0.2)


def log_text(log: Path) -> str:
    try:
        return log.read_text(errors="replace")
    except OSError:
        return ""


def measure(bench: Bench, subject: Subject, window: Window) -> Idle:
    """Start ``subject`` on an empty server (runworker: on a fresh database of ``bench``'s
    kind), wait until it is ready and warm, and watch it for the window."""
    bench.reset_redis()
    db = bench.database(subject.key) if subject.streamdesk else None
    with started(bench, subject, subject_env(bench, subject, db)) as procs:
        wait_ready(bench, subject, procs)
        time.sleep(window.warmup_s)
        return watch(bench, subject, [proc.pid for proc, _ in procs], db, window.seconds)


def fleet(roots: list[int]) -> list[int]:
    return [pid for root in roots for pid in tree(root)]


def cpu_times(pids: list[int]) -> dict[int, float]:
    times = {pid: cpu_s(pid) for pid in pids}
    return {pid: t for pid, t in times.items() if t is not None}


def watch(
    bench: Bench, subject: Subject, roots: list[int], db: Database | None, seconds: float
) -> Idle:
    counting = bench.postgres is not None and db is not None and db.path is None
    # The bench's own commands go on one connection, whose MONITOR lines are left out.
    probe = redis.Redis.from_url(bench.url, decode_responses=True, single_connection_client=True)
    try:
        own = str(cast(dict[str, Any], probe.client_info())["addr"])
        with Monitor(bench.url) as monitor:
            probe.config_resetstat()
            start, began = time.time(), time.monotonic()
            before = cpu_times(fleet(roots))
            most = _wait(bench, db if counting else None, seconds)
            stats = cast(dict[str, dict[str, Any]], probe.info("commandstats"))
            end, spent_s = time.time(), time.monotonic() - began
            after = cpu_times(fleet(roots))
            rss = sum(rss_kb(pid) or 0 for pid in after)
    finally:
        probe.close()
    calls = Counter({name.removeprefix("cmdstat_"): int(s["calls"]) for name, s in stats.items()})
    calls -= OWN_CALLS
    return Idle(
        subject=subject,
        seconds=spent_s,
        calls=dict(calls),
        lines=[s for s in monitor.between(start, end) if s.origin != own],
        cpu_s=sum(t - before.get(pid, 0.0) for pid, t in after.items()),
        rss_kb=rss,
        processes=len(after),
        database=_database_name(db),
        pg_connections=most,
    )


def _wait(bench: Bench, db: Database | None, seconds: float) -> int | None:
    """Sleep ``seconds``; given a PostgreSQL ``db``, count its connections every few seconds
    meanwhile: the most seen at once (None without one)."""
    deadline = time.monotonic() + seconds
    pg = bench.postgres if db is not None else None
    most = None if pg is None or db is None else len(pg.backends(db))
    while (left := deadline - time.monotonic()) > 0:
        time.sleep(min(BACKENDS_EVERY_S, left))
        if pg is not None and db is not None:
            most = max(most or 0, len(pg.backends(db)))
    return most


def _database_name(db: Database | None) -> str:
    if db is None:
        return ""
    return "SQLite" if db.path is not None else "PostgreSQL"
