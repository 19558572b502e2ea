"""The bulk-actions benchmark's timed part, run as a subprocess from the frozen code snapshot.

    python -m bench.actions.measure PLAN.json RESULT.json

With ``REDIS_URL`` and ``DATABASE_URL`` of the benchmark's private server and database.
First each action alone: redrive every dead letter, and claim every pending entry of the
orphaned consumer, through the real path (the operation queues a bulk job, ``jobs.run``
works it through), at the default rate limit and with the limit off; each run on a freshly
built data set, checked afterwards. Then the effect on a worker (``bench/actions/effect.py``).
"""

from __future__ import annotations

import json
import signal
import sys
import time
from pathlib import Path
from typing import Any

import redis

from bench.actions import load
from bench.actions.effect import effect  # sets Django up (bench.actions.jobs), first
from bench.actions.jobs import CLAIM_ALL, DEFAULT, DEFAULT_RATE, OFF, REDRIVE, JobRun, run_job
from workers.core.keys import dead_stream


def check(client: redis.Redis, run: JobRun, entries: int) -> None:
    """The job did it all: every entry acted on once, nothing skipped, nothing left."""
    if run.action == REDRIVE:
        left = client.xlen(dead_stream(load.STREAM))
        moved = client.xlen(load.STREAM)
    else:
        left = load.consumer_pending(client, load.GONE)
        moved = load.consumer_pending(client, load.RESCUER)
    got = (run.status, run.done, run.skipped, left, moved)
    if got != ("done", entries, 0, 0, entries):
        raise RuntimeError(
            f"{run.action} at rate {run.rate}: (status, done, skipped, left, moved) is {got}"
        )


def alone(client: redis.Redis, action: str, rate: str, entries: int) -> dict[str, Any]:
    if action == REDRIVE:
        built = load.build(client, dead=entries, pending=0)
    else:
        built = load.build(client, dead=0, pending=entries)
    run = run_job(client, action, rate)
    check(client, run, entries)
    print(
        f"   {action}, rate limit {rate}: {run.done:,} in {run.seconds:.2f} s = "
        f"{run.rate_per_s:,.0f} entries/s (data built in {built.seconds:.1f} s)",
        flush=True,
    )
    return {**run.as_dict(), "build_s": built.seconds}


def main(plan_path: str, out_path: str) -> int:
    # SIGTERM (the parent's deadline) unwinds, so the worker and producer are stopped too.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    plan = json.loads(Path(plan_path).read_text())
    url, entries = plan["url"], int(plan["entries"])
    client = redis.Redis.from_url(url, decode_responses=True, socket_timeout=120)
    began = time.perf_counter()
    print("1. each action alone", flush=True)
    order = [(REDRIVE, DEFAULT), (CLAIM_ALL, DEFAULT)]
    order += [(a, OFF) for _ in range(int(plan["repeats"])) for a in (REDRIVE, CLAIM_ALL)]
    runs = [alone(client, action, rate, entries) for action, rate in order]
    alone_s = time.perf_counter() - began
    print("2. a worker's throughput without and with a job", flush=True)
    worker = effect(client, url, plan, Path(plan["log_dir"]))
    client.close()
    result = {
        "default_rate": DEFAULT_RATE,
        "runs": runs,
        "alone_s": alone_s,
        "effect": worker,
        "effect_s": time.perf_counter() - began - alone_s,
    }
    Path(out_path).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:3]))
