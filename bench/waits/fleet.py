"""The runworkers of ``python -m bench.waits`` and what the bench reads of them: a worker
started and waiting on the stream, its memory and CPU time, the server's commands over a
window at rest, the plain probe events' pickup latency and drain rate."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Any

import redis

from bench.common.harness import (
    PYTHON,
    ROOT,
    STREAM,
    WORKER_GROUP,
    BenchError,
    log_tail,
    rss_kb,
    wait_until,
)
from bench.common.stack import Stack
from bench.engine.agents import PROBE_TYPE
from bench.engine.cpu import cpu_s
from workers.core.keys import Keys

AGENTS = "bench.engine.agents,bench.waits.agents"
KEYS = Keys()
READY_TIMEOUT_S = 60.0


@dataclass
class Worker:
    """One ``runworker`` process (no ``--processes``: the pid is the worker itself)."""

    name: str
    proc: subprocess.Popen[bytes]
    stack: Stack

    @property
    def log(self) -> str:
        return log_tail(self.stack.tmp / f"{self.name}.log")

    def rss_mib(self) -> float:
        kb = rss_kb(self.proc.pid)
        if kb is None:
            raise BenchError(f"{self.name} is gone:\n{self.log}")
        return kb / 1024

    def cpu_s(self) -> float:
        used = cpu_s(self.proc.pid)
        if used is None:
            raise BenchError(f"{self.name} is gone:\n{self.log}")
        return used

    def check(self) -> None:
        if self.proc.poll() is not None:
            raise BenchError(f"{self.name} exited {self.proc.returncode}:\n{self.log}")

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)


def start(stack: Stack, name: str, *args: str) -> Worker:
    """A runworker with the bench's agents, returned once it waits on the stream (its
    heartbeat written and one more client blocked)."""
    env = {**stack.env, "STREAMDESK_AGENT_MODULES": AGENTS}
    env.pop("STREAMDESK_DEMO", None)
    blocked = int(stack.client.info("clients")["blocked_clients"])
    argv = [PYTHON, "manage.py", "runworker", "--consumer", name, *args]
    with open(stack.tmp / f"{name}.log", "wb") as out:
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    worker = Worker(name, proc, stack)

    def ready() -> bool:
        worker.check()
        waiting = int(stack.client.info("clients")["blocked_clients"]) > blocked
        return waiting and bool(stack.client.exists(KEYS.worker(name)))

    try:
        wait_until(ready, f"{name} to wait on the stream", READY_TIMEOUT_S, 0.05)
    except BaseException:
        worker.stop()
        raise
    return worker


def group_state(client: redis.Redis) -> tuple[int, int]:
    """(entries read, pending) of the workers' group."""
    for info in client.xinfo_groups(STREAM):
        if info["name"] == WORKER_GROUP:
            return int(info.get("entries-read") or 0), int(info["pending"])
    return 0, 0


def settled(client: redis.Redis) -> bool:
    """Every entry in the stream read and acked."""
    read, pending = group_state(client)
    added = int(client.xinfo_stream(STREAM)["entries-added"])
    return pending == 0 and read >= added


def probe(n: int) -> str:
    return json.dumps(
        {"type": PROBE_TYPE, "source": "bench", "data": {"n": n, "sent_ns": time.time_ns()}}
    )


def pickups(client: redis.Redis, first: int, count: int, interval_s: float) -> list[float]:
    """Publish ``count`` probe events one at a time, ``interval_s`` apart (numbered from
    ``first``); their pickup latencies in ms (the probe's start minus the time taken just
    before its XADD), sorted."""
    from workers.models import AgentRun

    t0 = time.perf_counter()
    for i in range(count):
        pause = t0 + i * interval_s - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        client.xadd(STREAM, {"event": probe(first + i)})
    wanted = set(range(first, first + count))

    def found() -> list[dict[str, Any]]:
        rows = AgentRun.objects.filter(event_type=PROBE_TYPE, result__isnull=False)
        return [r for r in rows.values_list("result", flat=True) if r["n"] in wanted]

    wait_until(lambda: len(found()) == count, "the probes to run", 60, 0.1)
    return sorted((r["started_ns"] - r["sent_ns"]) / 1e6 for r in found())


def drain(client: redis.Redis, first: int, count: int) -> float:
    """``count`` probe events XADDed as fast as a pipeline goes, into a settled stream; the
    events/s from the first XADD to every entry read and acked."""
    if not settled(client):
        raise BenchError("the stream is not settled before a drain")
    t0 = time.perf_counter()
    for start in range(first, first + count, 1000):
        with client.pipeline(transaction=False) as pipe:
            for n in range(start, min(first + count, start + 1000)):
                pipe.xadd(STREAM, {"event": probe(n)})
            pipe.execute()
    wait_until(lambda: settled(client), "the drain", 300, 0.005)
    return count / (time.perf_counter() - t0)


@dataclass(frozen=True, slots=True)
class AtRest:
    commands_s: float
    cpu_ms_s: float
    by_command: dict[str, float]


def at_rest(client: redis.Redis, worker: Worker, settle_s: float, window_s: float) -> AtRest:
    """The server's commands/s (this bench's INFO reads not counted) and the worker's CPU
    ms/s over ``window_s``, after ``settle_s`` with nothing to do."""

    def read() -> tuple[int, dict[str, int]]:
        stats = client.info("commandstats")
        total = int(client.info("stats")["total_commands_processed"])
        return total, {k.removeprefix("cmdstat_"): int(v["calls"]) for k, v in stats.items()}

    time.sleep(settle_s)
    total0, by0 = read()
    cpu0 = worker.cpu_s()
    time.sleep(window_s)
    cpu1 = worker.cpu_s()
    total1, by1 = read()
    worker.check()
    by = {k: (by1[k] - by0.get(k, 0)) / window_s for k in by1 if by1[k] != by0.get(k, 0)}
    by.pop("info", None)
    return AtRest((total1 - total0 - 2) / window_s, (cpu1 - cpu0) * 1000 / window_s, by)
