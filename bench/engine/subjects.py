"""The workers under test, behind one interface so every measurement treats them alike.

A subject prepares its queue (stream or jobs table), gives the command that runs its
worker, reports progress while it runs, and afterwards what it recorded per event.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any, cast

from bench.common.databases import Database, run_results, succeeded_runs
from bench.common.harness import (
    FLOOR_GROUP,
    RAW_GROUP,
    STREAM,
    WORKER_GROUP,
    Bench,
    BenchError,
    baseline_cmd,
    floor_cmd,
    group_progress,
    jobs_progress,
    runworker_cmd,
    wait_until,
)
from bench.engine import load

READY_TIMEOUT_S = 60.0


class Subject(ABC):
    name: str
    db: Database | None = None  # the run's database, for a worker that records runs

    def __init__(self, bench: Bench) -> None:
        self.bench = bench

    @property
    def key(self) -> str:
        """The name in results and logs: ``name``, and the database kind for a subject
        that writes the engine's tables (``runworker/sqlite``)."""
        return self.name

    @abstractmethod
    def prepare(self, preload: int, latency: bool) -> None:
        """Empty state for one run, with ``preload`` events already queued."""

    @abstractmethod
    def command(self) -> list[str]: ...

    @property
    def exits_when_drained(self) -> bool:
        """A drain's worker exits by itself once the stream is drained (else: SIGTERM)."""
        return True

    def start_drain(self, proc: subprocess.Popen[bytes], events: int) -> None:
        """Once the worker is spawned, before the drain's clock (the events are preloaded)."""
        return None

    def env(self) -> dict[str, str]:
        return self.bench.env(self.bench.template_db)

    @abstractmethod
    def progress(self) -> tuple[int, int]:
        """(events picked up, events finished) so far."""

    @abstractmethod
    def wait_ready(self, proc: subprocess.Popen[bytes]) -> None: ...

    @abstractmethod
    def publisher(self) -> Callable[[int], None]: ...

    @abstractmethod
    def finished(self) -> int:
        """After exit: how many events the worker itself says it completed."""

    @abstractmethod
    def latencies_ns(self) -> dict[int, int]:
        """After exit: event n -> nanoseconds from publish to pickup."""

    def close(self) -> None:
        """Release what ``prepare`` opened in this process (most subjects open nothing)."""
        return None


def probe_latencies(results: list[dict[str, Any]]) -> dict[int, int]:
    """Event n -> nanoseconds from publish to pickup, from the probe's stored results."""
    return {int(r["n"]): int(r["started_ns"]) - int(r["sent_ns"]) for r in results}


def _alive(proc: subprocess.Popen[bytes], check: Callable[[], bool]) -> Callable[[], bool]:
    def ready() -> bool:
        if proc.poll() is not None:
            raise BenchError(f"{proc.args!r} exited {proc.returncode} while starting")
        return check()

    return ready


class Runworker(Subject):
    """``manage.py runworker`` on the bench's database kind; ``processes``: its
    ``--processes`` (each process its own consumer, under one supervisor).

    With several processes a drain starts only once every one waits on the stream: the
    workers run without ``--burst`` on an empty stream, the events arrive in one MULTI/EXEC,
    and a SIGTERM ends the run. Else the first child to start would drain alone while the
    others still import Django on the same two CPUs, and the clock would count that."""

    name = "runworker"
    db: Database

    def __init__(
        self, bench: Bench, extra_env: dict[str, str] | None = None, processes: int = 1
    ) -> None:
        super().__init__(bench)
        self.extra_env = extra_env or {}
        self.processes = processes

    @property
    def key(self) -> str:
        return runworker_key(self.bench.kind, self.processes)

    @property
    def exits_when_drained(self) -> bool:
        return self.processes == 1

    def prepare(self, preload: int, latency: bool) -> None:
        if latency and self.processes > 1:
            raise NotImplementedError("latency is measured with one process")
        self.bench.reset_redis()
        self.db = self.bench.database(self.key)
        self.burst = not latency and self.exits_when_drained
        if self.exits_when_drained:
            load.preload_stream(self.bench.redis, preload)

    def start_drain(self, proc: subprocess.Popen[bytes], events: int) -> None:
        if not self.exits_when_drained:
            self.wait_ready(proc)
            load.preload_stream(self.bench.redis, events, at_once=True)

    def command(self) -> list[str]:
        return runworker_cmd(burst=self.burst, processes=self.processes)

    def env(self) -> dict[str, str]:
        return {**self.bench.env(self.db), **self.extra_env}

    def progress(self) -> tuple[int, int]:
        return group_progress(self.bench.redis, WORKER_GROUP)

    def wait_ready(self, proc: subprocess.Popen[bytes]) -> None:
        # Ready once each process sits in XREADGROUP BLOCK: the only clients that block here.
        def blocked() -> bool:
            info = cast(dict[str, Any], self.bench.redis.info("clients"))
            return int(info["blocked_clients"]) >= self.processes

        wait_until(_alive(proc, blocked), f"{self.key} to block on XREADGROUP", READY_TIMEOUT_S)

    def publisher(self) -> Callable[[int], None]:
        return load.StreamPublisher(self.bench.redis)

    def finished(self) -> int:
        return succeeded_runs(self.db)

    def latencies_ns(self) -> dict[int, int]:
        return probe_latencies(run_results(self.db))


class _Baseline(Subject):
    """A process from ``bench.engine.baselines``: it touches a ready file and writes a summary."""

    def _paths(self) -> None:
        self.out = self.bench.log_path(self.key).with_suffix(".json")
        self.ready = self.bench.log_path(self.key).with_suffix(".ready")
        self.latency = False

    def _flags(self) -> list[str]:
        flags = ["--out", str(self.out), "--ready", str(self.ready)]
        return [*flags, "--latency"] if self.latency else flags

    def wait_ready(self, proc: subprocess.Popen[bytes]) -> None:
        wait_until(_alive(proc, self.ready.exists), f"{self.name} to start", READY_TIMEOUT_S)

    def summary(self) -> dict[str, object]:
        data = json.loads(self.out.read_text())
        assert isinstance(data, dict)
        return data

    def finished(self) -> int:
        return int(str(self.summary()["done"]))


class Raw(_Baseline):
    name = "raw"

    def prepare(self, preload: int, latency: bool) -> None:
        self.bench.reset_redis()
        self.bench.next_run()
        self._paths()
        self.latency = latency
        load.preload_stream(self.bench.redis, preload)
        load.create_group(self.bench.redis, RAW_GROUP)

    def command(self) -> list[str]:
        return baseline_cmd(
            "raw", "--url", self.bench.url, "--stream", STREAM, "--group", RAW_GROUP, *self._flags()
        )

    def progress(self) -> tuple[int, int]:
        return group_progress(self.bench.redis, RAW_GROUP)

    def publisher(self) -> Callable[[int], None]:
        return load.StreamPublisher(self.bench.redis)

    def latencies_ns(self) -> dict[int, int]:
        pairs = self.summary()["latencies_ns"]
        assert isinstance(pairs, list)
        return {int(n): int(ns) for n, ns in pairs}


class Floor(_Baseline):
    """``bench.engine.floor``: the required per-event work in minimal code. Drains and exits;
    for pickup runs (``latency``) it waits on the stream until SIGTERM. Not sampled for
    memory."""

    name = "floor"
    db: Database

    @property
    def key(self) -> str:
        return f"{self.name}/{self.bench.kind}"

    def prepare(self, preload: int, latency: bool) -> None:
        self.bench.reset_redis()
        self.db = self.bench.database(self.key)
        self._paths()
        self.latency = latency
        load.preload_stream(self.bench.redis, preload)
        load.create_group(self.bench.redis, FLOOR_GROUP)

    def command(self) -> list[str]:
        return floor_cmd(
            "--url", self.bench.url, "--stream", STREAM, "--group", FLOOR_GROUP,
            "--database", self.db.url, *self._flags(),
        )  # fmt: skip

    def progress(self) -> tuple[int, int]:
        return group_progress(self.bench.redis, FLOOR_GROUP)

    def publisher(self) -> Callable[[int], None]:
        return load.StreamPublisher(self.bench.redis)

    def finished(self) -> int:
        return succeeded_runs(self.db)

    def latencies_ns(self) -> dict[int, int]:
        # The floor stores the probe's result as runworker does: the same clock.
        return probe_latencies(run_results(self.db))


class Naive(_Baseline):
    name = "naive"

    def prepare(self, preload: int, latency: bool) -> None:
        self.bench.next_run()
        self._paths()
        self.latency = latency
        self.total = preload
        self.close()
        self.jobs = load.jobs_db(
            self.bench.log_path(self.name).with_suffix(".jobs.sqlite3"), preload
        )
        # The parent's own connection: progress reads, and the paced INSERTs.
        self.conn = sqlite3.connect(self.jobs, timeout=30)
        self.conn.execute("PRAGMA synchronous=NORMAL")

    def command(self) -> list[str]:
        return baseline_cmd("naive", "--db", str(self.jobs), *self._flags())

    def progress(self) -> tuple[int, int]:
        return jobs_progress(self.conn, self.total)

    def publisher(self) -> Callable[[int], None]:
        publish = load.JobsPublisher(self.conn)

        def count_and_publish(n: int) -> None:
            publish(n)
            self.total = max(self.total, n + 1)

        return count_and_publish

    def latencies_ns(self) -> dict[int, int]:
        rows = self.conn.execute("SELECT result FROM jobs WHERE status = 'done'").fetchall()
        return probe_latencies([json.loads(r[0]) for r in rows])

    def close(self) -> None:
        conn: sqlite3.Connection | None = getattr(self, "conn", None)
        if conn is not None:
            conn.close()
            self.conn = None  # type: ignore[assignment]


def runworker_key(kind: str, processes: int = 1) -> str:
    """``runworker/sqlite``, ``runworker-x2/postgres``: a runworker subject's key."""
    return f"runworker{f'-x{processes}' if processes > 1 else ''}/{kind}"


def all_subjects(bench: Bench, processes: int = 2) -> list[Subject]:
    """The throughput subjects, in the order each repeat runs them: the raw loop, then per
    database kind the floor, runworker and runworker with ``processes``, then the poller."""
    subjects: list[Subject] = [Raw(bench)]
    for kind in bench.kinds:
        on = bench.on(kind)
        subjects += [Floor(on), Runworker(on), Runworker(on, processes=processes)]
    return [*subjects, Naive(bench)]


def settle_time(seconds: float = 0.5) -> None:
    """A short pause between runs so one run's exit does not overlap the next's start."""
    time.sleep(seconds)
