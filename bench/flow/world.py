"""What every scenario shares: the run's environment, runworker processes, publishing the
scenarios' events, and reading what the agents stored."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterable
from typing import Any, cast

import redis

from bench.common.databases import Database, run_results
from bench.common.harness import (
    PRODUCTION_ENV,
    PYTHON,
    STREAM,
    WORKER_GROUP,
    Bench,
    BenchError,
    group_progress,
    wait_until,
)
from bench.flow.names import AGENT_MODULE
from workers.core.keys import EVENT_FIELD

READY_TIMEOUT_S = 60.0
PIPELINE_CHUNK = 1_000
# Scenarios 3 and 4: a dead worker's entries are reclaimed in 1.5 s (the e2e tests' timings).
CLAIM_IDLE_MS = 1_500
LEASE_MS = 1_000
SHORT_TIMINGS = ["--claim-idle-ms", str(CLAIM_IDLE_MS), "--lease-ms", str(LEASE_MS)]
SHORT_ENV = {"STREAMDESK_RECLAIM_INTERVAL_MS": "100", "STREAMDESK_RETRY_BASE_MS": "200"}


def worker_env(bench: Bench, db: Database, extra: dict[str, str] | None = None) -> dict[str, str]:
    """runworker's environment: the bench's (private server, this run's database), DEBUG
    off as deployed, only this suite's agents."""
    env = {**bench.env(db), **PRODUCTION_ENV, "STREAMDESK_AGENT_MODULES": AGENT_MODULE}
    env.pop("STREAMDESK_DEMO", None)
    return {**env, **(extra or {})}


def runworker(*args: str) -> list[str]:
    return [PYTHON, "manage.py", "runworker", *args]


def wait_blocked(bench: Bench, procs: list[subprocess.Popen[bytes]]) -> None:
    """Until each worker waits on the stream (the only clients that block here)."""

    def ready() -> bool:
        for proc in procs:
            if proc.poll() is not None:
                raise BenchError(f"{proc.args!r} exited {proc.returncode} while starting")
        info = cast(dict[str, Any], bench.redis.info("clients"))
        return int(info["blocked_clients"]) >= len(procs)

    wait_until(ready, "runworker to wait on the stream", READY_TIMEOUT_S)


def envelope(kind: str, event_id: str, subject: str, data: dict[str, Any]) -> str:
    body = {"type": kind, "source": "bench", "id": event_id, "subject": subject, "data": data}
    return json.dumps(body)


def publish(client: redis.Redis, events: Iterable[str], at_once: bool = False) -> int:
    """XADD each envelope, pipelined (set-up, not measured); ``at_once``: one MULTI/EXEC,
    so a waiting worker sees all of them at the same moment."""
    batch: list[str] = []
    sent = 0

    def flush() -> None:
        with client.pipeline(transaction=at_once) as pipe:
            for body in batch:
                pipe.xadd(STREAM, {EVENT_FIELD: body})
            pipe.execute()

    for body in events:
        batch.append(body)
        if not at_once and len(batch) >= PIPELINE_CHUNK:
            flush()
            sent += len(batch)
            batch = []
    if batch:
        flush()
        sent += len(batch)
    return sent


def now_ns() -> int:
    return time.time_ns()


def done(bench: Bench) -> int:
    """Entries of the worker group read and acknowledged (a waiting entry is pending)."""
    return group_progress(bench.redis, WORKER_GROUP)[1]


def results(db: Database) -> list[dict[str, Any]]:
    return run_results(db)
