"""``make bench-partitions``: one worker draining one stream, then the same events in 8
partition streams, on one server.

A private Valkey and a temporary SQLite file (PostgreSQL at 127.0.0.1:5432 with
``--postgres``). The events are spread over the partitions the way producers spread them
(by a stable hash), and one process runs a read loop per partition, as runworker does
(``workers.engine.serve.partition_workers``). Writes its block of docs/benchmarks.md
(bench/partitions/report.py). Usage::

    .venv/bin/python -m bench.partitions            # the full run (a few minutes)
    .venv/bin/python -m bench.partitions --quick    # a smoke run; writes to a temp file
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from dataclasses import replace

import redis
import redis.asyncio as aredis

from bench.common.harness import BenchError
from bench.common.options import drain_parser, parse_drains
from bench.common.stack import in_process_stack
from bench.partitions import report
from bench.partitions.report import COUNTS, PARTITIONS_SUITE
from bench.runtime.run import reset
from bench.tracing.run import EVENT_TYPE, registry
from workers.core.config import EngineConfig
from workers.core.keys import DEFAULT_STREAM, EVENT_FIELD
from workers.core.partitions import Partitions

PIPELINE_CHUNK = 1_000
BLOCK_MS = 10  # burst mode's empty read: short, so the end of a drain adds little


def parse(argv: list[str]) -> argparse.Namespace:
    parser = drain_parser("python -m bench.partitions", __doc__, "partition count")
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL if one answers")
    return parse_drains(parser, argv, PARTITIONS_SUITE)


def preload(client: redis.Redis, layout: Partitions, count: int) -> None:
    tag = uuid.uuid4().hex[:12]
    for start in range(0, count, PIPELINE_CHUNK):
        with client.pipeline(transaction=False) as pipe:
            for n in range(start, min(start + PIPELINE_CHUNK, count)):
                event_id = f"{tag}-{n}"
                envelope = {"type": EVENT_TYPE, "source": "bench", "id": event_id}
                payload = json.dumps({**envelope, "data": {"n": n}})
                pipe.xadd(layout.stream_for(event_id), {EVENT_FIELD: payload})
            pipe.execute()


async def _run(url: str, config: EngineConfig, timeout_s: float) -> float:
    from workers.engine.serve import partition_workers, run_all
    from workers.store.runs import DjangoRunStore

    client = aredis.Redis.from_url(url, decode_responses=True, encoding_errors="replace")
    try:
        workers = partition_workers(config, client, registry(), DjangoRunStore())
        began = time.perf_counter()
        await asyncio.wait_for(run_all(workers), timeout_s)
        return time.perf_counter() - began
    finally:
        await client.aclose()


def drain(client: redis.Redis, url: str, config: EngineConfig, count: int, events: int) -> float:
    """Events/s of one worker process draining ``events`` events from ``count`` partitions."""
    from workers.models import AgentRun, RunStatus

    reset(client)
    partitioned = replace(config, partitions=count)
    preload(client, partitioned.layout(), events)
    seconds = asyncio.run(_run(url, partitioned, 120 + events / 10))
    succeeded = AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count()
    if succeeded != events:
        raise BenchError(f"{count} partitions: {succeeded} of {events} runs succeeded")
    return events / seconds


def measure(client: redis.Redis, url: str, args: argparse.Namespace) -> dict[int, list[float]]:
    config = EngineConfig(
        stream=DEFAULT_STREAM, consumer="bench-partitions", burst=True, block_ms=BLOCK_MS
    )
    for count in COUNTS:
        drain(client, url, config, count, args.warmup)
    rates: dict[int, list[float]] = {c: [] for c in COUNTS}
    for n in range(args.rounds):
        for count in COUNTS if n % 2 == 0 else COUNTS[::-1]:
            rates[count].append(drain(client, url, config, count, args.events))
        shown = ", ".join(f"P={c} {rates[c][-1]:,.0f}" for c in COUNTS)
        print(f"  round {n + 1}/{args.rounds} (events/s): {shown}", flush=True)
    return rates


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    began = time.time()
    with in_process_stack("partitions", sqlite=not args.postgres, demo=False) as (stack, info):
        rates = measure(stack.client, stack.server.url, args)
        info = info.finish()
    results = report.PartitionResults(
        machine=info,
        began=began,
        ended=time.time(),
        command=PARTITIONS_SUITE.command(argv),
        database=stack.postgres or "SQLite (temp file, WAL)",
        events=args.events,
        rounds=args.rounds,
        rates=rates,
    )
    PARTITIONS_SUITE.write(args.output, report.render(results), report.summary(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
