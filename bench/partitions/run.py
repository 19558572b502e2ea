"""``make bench-partitions``: what partitions cost on one server, and what a cluster spreads.

A private Valkey, a private local cluster of 3 masters (``workers.redis.cluster``, on the
same machine) and a temporary SQLite file (PostgreSQL at 127.0.0.1:5432 with
``--postgres``). One in-process worker process, as runworker runs one
(``workers.engine.serve.partition_workers``: a read loop per partition, the process's slots
shared), drains N preloaded events of a no-op agent in each setup:

- one server, 1 partition: the baseline;
- one server, 8 partitions: the cost of partitioning where it buys nothing;
- one server, 3 partitions, and a 3-master cluster with 3 partitions (one per master): the
  same work on one shard and on three. Each server's CPU time (``/proc/<pid>/stat``) over the
  drain, per event, says what each shard carried: on 2 cores the wall clock cannot show
  three shards' gain, the load per shard can.

Setups alternate in order each round, after one unreported warm-up round. Writes its block
of docs/benchmarks.md (bench/partitions/report.py). Usage::

    .venv/bin/python -m bench.partitions            # the full run (a few minutes)
    .venv/bin/python -m bench.partitions --quick    # a smoke run; writes to a temp file
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, cast

from bench.common.harness import BenchError
from bench.common.options import drain_parser, parse_drains
from bench.common.stack import in_process_stack
from bench.engine.cpu import cpu_s
from bench.partitions import report
from bench.partitions.report import PARTITIONS_SUITE, SETUPS, Setup
from bench.runtime.run import reset
from bench.tracing.run import EVENT_TYPE, registry
from workers.core.config import EngineConfig
from workers.core.keys import DEFAULT_STREAM, EVENT_FIELD
from workers.core.partitions import Partitions
from workers.redis.cluster import LocalCluster
from workers.redis.cluster_node import free_base_port
from workers.redis.connection import aconnect, connect

PIPELINE_CHUNK = 1_000
BLOCK_MS = 10  # burst mode's empty read: short, so the end of a drain adds little


@dataclass(frozen=True, slots=True)
class Target:
    """Where a setup runs: a URL, and the pid of each master (its shards)."""

    url: str
    pids: list[int]
    cluster: bool


def parse(argv: list[str]) -> argparse.Namespace:
    parser = drain_parser("python -m bench.partitions", __doc__, "setup")
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL if one answers")
    return parse_drains(parser, argv, PARTITIONS_SUITE)


@contextmanager
def local_cluster() -> Iterator[Target]:
    folder = Path(tempfile.mkdtemp(prefix="streamdesk-bench-cluster-"))
    cluster = LocalCluster(folder, 3, 0, free_base_port(3))
    try:
        cluster.start()
        pids = [cast(int, node.pid()) for node in cluster.nodes]
        yield Target(cluster.url, pids, cluster=True)
    finally:
        cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)


def preload(client: Any, layout: Partitions, count: int) -> None:
    tag = uuid.uuid4().hex[:12]
    for start in range(0, count, PIPELINE_CHUNK):
        with client.pipeline(transaction=False) as pipe:
            for n in range(start, min(start + PIPELINE_CHUNK, count)):
                event_id = f"{tag}-{n}"
                envelope = {"type": EVENT_TYPE, "source": "bench", "id": event_id}
                payload = json.dumps({**envelope, "data": {"n": n}})
                pipe.xadd(layout.stream_for(event_id), {EVENT_FIELD: payload})
            pipe.execute()


async def _run(url: str, config: EngineConfig, cluster: bool, timeout_s: float) -> float:
    from workers.engine.serve import partition_workers, run_all
    from workers.store.runs import DjangoRunStore

    client = await aconnect(url, encoding_errors="replace")
    try:
        workers = partition_workers(config, client, registry(), DjangoRunStore(), cluster=cluster)
        began = time.perf_counter()
        await asyncio.wait_for(run_all(workers), timeout_s)
        return time.perf_counter() - began
    finally:
        await client.aclose()


@dataclass(frozen=True, slots=True)
class Drained:
    rate: float
    cpu_us: list[float]  # each master's CPU time per event, microseconds


def drain(target: Target, config: EngineConfig, setup: Setup, events: int) -> Drained:
    from workers.models import AgentRun, RunStatus

    client = connect(target.url)
    try:
        if target.cluster:  # every master flushed, then the tables
            client.flushall(target_nodes="primaries")  # type: ignore[call-arg]
            _reset_tables()
        else:
            reset(client)
        partitioned = replace(config, partitions=setup.partitions)
        preload(client, partitioned.layout(tagged=target.cluster), events)
    finally:
        client.close()
    before = [cpu_s(pid) or 0.0 for pid in target.pids]
    seconds = asyncio.run(_run(target.url, partitioned, target.cluster, 120 + events / 10))
    after = [cpu_s(pid) or 0.0 for pid in target.pids]
    succeeded = AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count()
    if succeeded != events:
        raise BenchError(f"{setup.name}: {succeeded} of {events} runs succeeded")
    return Drained(
        events / seconds, [(a - b) / events * 1e6 for a, b in zip(after, before, strict=True)]
    )


def _reset_tables() -> None:
    from workers.models import AgentRun, StepResult, TimelineStep

    for model in (TimelineStep, StepResult, AgentRun):
        model.objects.all().delete()


def measure(targets: dict[bool, Target], args: argparse.Namespace) -> dict[str, list[Drained]]:
    config = EngineConfig(
        stream=DEFAULT_STREAM, consumer="bench-partitions", burst=True, block_ms=BLOCK_MS
    )
    for setup in SETUPS:
        drain(targets[setup.cluster], config, setup, args.warmup)
    runs: dict[str, list[Drained]] = {s.name: [] for s in SETUPS}
    for n in range(args.rounds):
        for setup in SETUPS if n % 2 == 0 else SETUPS[::-1]:
            runs[setup.name].append(drain(targets[setup.cluster], config, setup, args.events))
        shown = ", ".join(f"{s.name} {runs[s.name][-1].rate:,.0f}" for s in SETUPS)
        print(f"  round {n + 1}/{args.rounds} (events/s): {shown}", flush=True)
    return runs


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    began = time.time()
    with (
        in_process_stack("partitions", sqlite=not args.postgres, demo=False) as (stack, info),
        local_cluster() as cluster,
    ):
        single = Target(stack.server.url, [cast(int, stack.server.pid)], cluster=False)
        runs = measure({False: single, True: cluster}, args)
        info = info.finish()
    results = report.PartitionResults(
        machine=info,
        began=began,
        ended=time.time(),
        command=PARTITIONS_SUITE.command(argv),
        database=stack.postgres or "SQLite (temp file, WAL)",
        events=args.events,
        rounds=args.rounds,
        rates={name: [d.rate for d in drained] for name, drained in runs.items()},
        cpu_us={name: _median_cpu(drained) for name, drained in runs.items()},
    )
    PARTITIONS_SUITE.write(args.output, report.render(results), report.summary(results))
    return 0


def _median_cpu(drained: list[Drained]) -> list[float]:
    """Each shard's median CPU per event over the rounds."""
    shards = len(drained[0].cpu_us)
    return [sorted(d.cpu_us[i] for d in drained)[len(drained) // 2] for i in range(shards)]


if __name__ == "__main__":
    raise SystemExit(main())
