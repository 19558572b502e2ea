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
import sys
import time
import uuid
from collections.abc import Sequence
from typing import Any

import redis
from pydantic import BaseModel

from bench.common.harness import BenchError
from bench.common.options import drain_parser, parse_drains
from bench.common.stack import in_process_stack
from bench.runtime.run import _run_worker, reset
from bench.tracing import report as tracing_report
from bench.tracing.report import MODES, TRACING_SUITE
from workers.core import tracing
from workers.core.config import EngineConfig
from workers.core.keys import DEFAULT_STREAM, EVENT_FIELD
from workers.core.registry import Registry

EVENT_TYPE = "bench.tracing.noop"
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
    parser = drain_parser("python -m bench.tracing", __doc__, "mode")
    parser.add_argument("--postgres", action="store_true", help="PostgreSQL if one answers")
    return parse_drains(parser, argv, TRACING_SUITE)


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
    # Its own agent (registry()), so not the demo's apps and agents.
    with in_process_stack("tracing", sqlite=not args.postgres, demo=False) as (stack, info):
        rates = measure(stack.client, stack.server.url, args)
        info = info.finish()
    pg = stack.postgres
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
