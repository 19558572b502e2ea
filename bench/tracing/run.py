"""``make bench-tracing``: the engine's rate with tracing off, on at 1% and on at 100%.

A private Valkey and a temporary SQLite file (PostgreSQL at 127.0.0.1:5432 with
``--postgres``). One in-process ``workers.engine.worker.Worker`` in burst mode drains N
preloaded events of a no-op agent, once per mode and round; the order of the modes rotates
each round, and each mode's median rate is compared with "off" from the same run. "On"
means an SDK ``TracerProvider`` (sampler ``ParentBased(TraceIdRatioBased(ratio))``) with a
``BatchSpanProcessor`` in front of an exporter that drops the spans: what is measured is the
engine's side (span creation, sampling, the processor's queue), not a collector. The events
carry no ``traceparent``, so each attempt's span is a trace's root and the ratio decides.
Writes its block of docs/benchmarks.md (bench/tracing/report.py). Usage::

    .venv/bin/python -m bench.tracing            # the full run (a few minutes)
    .venv/bin/python -m bench.tracing --quick    # a smoke run; writes to a temp file
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import redis
from pydantic import BaseModel

from bench.common.harness import ROOT, Bench, BenchError
from bench.common.machine import machine
from bench.common.stack import pg_admin, postgres_version
from bench.runtime.run import _run_worker, reset, setup_django, tree_description
from bench.tracing import report as tracing_report
from bench.tracing.report import MODES, TRACING_SUITE
from workers.core import tracing
from workers.core.config import EngineConfig
from workers.core.keys import DEFAULT_STREAM, EVENT_FIELD
from workers.core.registry import Registry
from workers.redis.embedded import PrivateServer

EVENT_TYPE = "bench.tracing.noop"
PG_DB = "streamdesk_bench_tracing"
PIPELINE_CHUNK = 1_000
BLOCK_MS = 10  # burst mode's empty read: short, so the end of a drain adds little


class NoopData(BaseModel):
    n: int


async def noop(event: Any, ctx: Any) -> None:
    return None


def registry() -> Registry:
    found = Registry()
    found.register(EVENT_TYPE, NoopData, noop)
    return found


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.tracing", description=__doc__)
    parser.add_argument("--events", type=int, help="events per drain (5000)")
    parser.add_argument("--rounds", type=int, help="rounds of every mode (3)")
    parser.add_argument("--warmup", type=int, help="events per drain of the warm-up round (500)")
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL if one answers")
    parser.add_argument("--quick", action="store_true", help="1,000 events, 1 round")
    parser.add_argument("--output", type=Path, help="default docs/benchmarks.md (temp: --quick)")
    args = parser.parse_args(argv)
    defaults = (1_000, 1, 200) if args.quick else (5_000, 3, 500)
    for name, default in zip(("events", "rounds", "warmup"), defaults, strict=True):
        if getattr(args, name) is None:
            setattr(args, name, default)
    args.output = TRACING_SUITE.output(args.output, args.quick)
    return args


def preload(client: redis.Redis, count: int) -> None:
    tag = uuid.uuid4().hex[:12]
    for start in range(0, count, PIPELINE_CHUNK):
        with client.pipeline(transaction=False) as pipe:
            for n in range(start, min(start + PIPELINE_CHUNK, count)):
                envelope = {"type": EVENT_TYPE, "source": "bench", "id": f"{tag}-{n}"}
                pipe.xadd(DEFAULT_STREAM, {EVENT_FIELD: json.dumps({**envelope, "data": {"n": n}})})
            pipe.execute()


def provider(ratio: float) -> Any:
    """An SDK provider whose spans go through the usual batch processor, then nowhere."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )
    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    class Dropped(SpanExporter):
        def __init__(self) -> None:
            self.spans = 0

        def export(self, spans: Sequence[Any]) -> SpanExportResult:
            self.spans += len(spans)
            return SpanExportResult.SUCCESS

    made = TracerProvider(sampler=ParentBased(TraceIdRatioBased(ratio)))
    made.add_span_processor(BatchSpanProcessor(Dropped()))
    return made


def drain(client: redis.Redis, url: str, config: EngineConfig, mode: str, events: int) -> float:
    """Events/s of one worker draining ``events`` events with tracing in ``mode``."""
    from workers.models import AgentRun, RunStatus

    reset(client)
    preload(client, events)
    ratio = MODES[mode]
    made = None
    if ratio is not None:
        made = provider(ratio)
        tracing.activate(made)
    try:
        seconds = asyncio.run(_run_worker(url, config, registry(), 120 + events / 10))
    finally:
        tracing.deactivate()
        if made is not None:
            made.shutdown()
    succeeded = AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count()
    if succeeded != events:
        raise BenchError(f"tracing {mode}: {succeeded} of {events} runs succeeded")
    return events / seconds


def measure(client: redis.Redis, url: str, args: argparse.Namespace) -> dict[str, list[float]]:
    config = EngineConfig(consumer="bench-tracing", burst=True, block_ms=BLOCK_MS)
    modes = list(MODES)
    for mode in modes:
        drain(client, url, config, mode, args.warmup)
    rates: dict[str, list[float]] = {m: [] for m in modes}
    for n in range(args.rounds):
        for mode in modes[n % len(modes) :] + modes[: n % len(modes)]:
            rates[mode].append(drain(client, url, config, mode, args.events))
        shown = ", ".join(f"{m} {rates[m][-1]:,.0f}" for m in modes)
        print(f"  round {n + 1}/{args.rounds} (events/s): {shown}", flush=True)
    return rates


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    began = time.time()
    tmp = Path(tempfile.mkdtemp(prefix="streamdesk-bench-tracing-"))
    pg = postgres_version() if args.postgres else None
    server = PrivateServer(tmp / "valkey").start()
    try:
        client = redis.Redis.from_url(server.url, decode_responses=True, socket_timeout=30)
        if pg:
            pg_admin(f"DROP DATABASE IF EXISTS {PG_DB} WITH (FORCE)")
            pg_admin(f"CREATE DATABASE {PG_DB}")
        db_url = (
            f"postgres://postgres@127.0.0.1:5432/{PG_DB}"
            if pg
            else f"sqlite:///{tmp / 'tracing.sqlite3'}"
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("STREAMDESK_", "OTEL_"))}
        env.update(
            DJANGO_SETTINGS_MODULE="console.settings",
            DATABASE_URL=db_url,
            REDIS_URL=server.url,
            STREAMDESK_DATA_DIR=str(tmp / "data"),
            DEBUG="0",
            SECRET_KEY="bench-only-not-a-secret",
            LOG_LEVEL="WARNING",
        )
        bench = Bench(tmp, ROOT, tree_description(), server, client, tmp / "unused.sqlite3")
        info = machine(bench)
        print(f"tracing bench: {pg or 'SQLite'}, {info.valkey}, {info.cpus} CPUs", flush=True)
        setup_django(env)
        rates = measure(client, server.url, args)
        info = info.finish()
        from django.db import connections

        connections.close_all()
        client.close()
    finally:
        server.stop()
        if pg:
            pg_admin(f"DROP DATABASE IF EXISTS {PG_DB} WITH (FORCE)")
        shutil.rmtree(tmp, ignore_errors=True)
    results = tracing_report.TracingResults(
        machine=info,
        began=began,
        ended=time.time(),
        command=TRACING_SUITE.command(argv),
        database=pg or "SQLite (temp file, WAL)",
        events=args.events,
        rounds=args.rounds,
        rates=rates,
    )
    block, summary = tracing_report.render(results), tracing_report.summary(results)
    TRACING_SUITE.write(args.output, block, summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
