"""``make bench-runtime``: what durable steps and rate-budget takes cost per event.

A private Valkey, and a throwaway PostgreSQL database at 127.0.0.1:5432 (user postgres) if
one answers, else a temporary SQLite file. One in-process ``workers.engine.worker.Worker`` in burst
mode drains N preloaded events of one agent (bench/runtime/agents.py: a baseline, one or
three durable steps, a budget take, a step and a take); rounds interleave the agents, and
each agent's median rate is compared with the baseline's from the same run. Writes its
block of docs/benchmarks.md (bench/runtime/report.py). Usage::

    .venv/bin/python -m bench.runtime            # the full run (a few minutes)
    .venv/bin/python -m bench.runtime --quick    # a smoke run; writes to a temp file
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from typing import cast

import redis
import redis.asyncio as aredis

from bench.common.harness import BenchError
from bench.common.options import drain_parser, parse_drains
from bench.common.report import RUNTIME_SUITE
from bench.common.stack import in_process_stack
from bench.runtime import report as runtime_report
from bench.runtime.agents import BUDGET, SUBJECTS, Subject, Timings, registry
from workers.core.config import EngineConfig
from workers.core.keys import DEFAULT_STREAM, EVENT_FIELD, Keys
from workers.core.registry import Registry

PIPELINE_CHUNK = 1_000
# Burst mode blocks up to this long on an empty read before it checks it is done: short,
# so the end of a drain adds little to its time.
BLOCK_MS = 10


def parse(argv: list[str]) -> argparse.Namespace:
    parser = drain_parser("python -m bench.runtime", __doc__, "agent")
    parser.add_argument(
        "--concurrency", type=int, default=EngineConfig().concurrency, help="agents at once (16)"
    )
    parser.add_argument("--sqlite", action="store_true", help="SQLite even if PostgreSQL answers")
    return parse_drains(parser, argv, RUNTIME_SUITE)


def reset(client: redis.Redis) -> None:
    """An empty server and empty run tables: every drain starts from the same state."""
    from workers.models import AgentRun, StepResult, TimelineStep

    client.flushall()
    for model in (TimelineStep, StepResult, AgentRun):
        model.objects.all().delete()


def preload(client: redis.Redis, subject: Subject, count: int) -> None:
    """XADD ``count`` events of the subject's type (set-up, not measured)."""
    tag = uuid.uuid4().hex[:12]
    for start in range(0, count, PIPELINE_CHUNK):
        with client.pipeline(transaction=False) as pipe:
            for n in range(start, min(start + PIPELINE_CHUNK, count)):
                envelope = {"type": subject.event_type, "source": "bench", "id": f"{tag}-{n}"}
                pipe.xadd(DEFAULT_STREAM, {EVENT_FIELD: json.dumps({**envelope, "data": {"n": n}})})
            pipe.execute()


async def _run_worker(url: str, config: EngineConfig, reg: Registry, timeout_s: float) -> float:
    from workers.engine.worker import Worker
    from workers.store.runs import DjangoRunStore

    client = aredis.Redis.from_url(url, decode_responses=True, encoding_errors="replace")
    try:
        worker = Worker(config, client, reg, DjangoRunStore(), budgets={BUDGET.name: BUDGET})
        began = time.perf_counter()
        await asyncio.wait_for(worker.run(), timeout_s)
        return time.perf_counter() - began
    finally:
        await client.aclose()


def check(client: redis.Redis, subject: Subject, events: int) -> None:
    """Every event succeeded once, with its steps stored and its tokens taken."""
    from workers.models import AgentRun, RunStatus, StepResult

    succeeded = AgentRun.objects.filter(status=RunStatus.SUCCEEDED).count()
    steps = StepResult.objects.count()
    # The sync client's stubs also allow an awaitable; this one answers a string or None.
    raw = cast(str | None, client.hget(Keys().budget(BUDGET.name), "taken"))
    taken = int(raw or 0)
    takes = events if "tool" in subject.key else 0
    if (succeeded, steps, taken) != (events, events * subject.steps, takes):
        raise BenchError(
            f"{subject.key}: {succeeded} runs succeeded, {steps} steps stored, {taken} tokens "
            f"taken; expected {events}, {events * subject.steps}, {takes}"
        )


def drain(
    client: redis.Redis,
    url: str,
    reg: Registry,
    config: EngineConfig,
    subject: Subject,
    events: int,
) -> float:
    """Events/s of one worker draining ``events`` preloaded events of ``subject``."""
    reset(client)
    preload(client, subject, events)
    seconds = asyncio.run(_run_worker(url, config, reg, 120 + events / 10))
    check(client, subject, events)
    return events / seconds


def engine_config(args: argparse.Namespace) -> EngineConfig:
    # Otherwise the defaults, as deployed (timeline on, batches of 100).
    return EngineConfig(
        consumer="bench-runtime", burst=True, block_ms=BLOCK_MS, concurrency=args.concurrency
    )


def measure(
    client: redis.Redis, url: str, args: argparse.Namespace, timings: Timings
) -> dict[str, list[float]]:
    """A warm-up round, then ``args.rounds`` rounds, each agent once per round; the order
    rotates by one each round so no agent always runs first (or right after another)."""
    reg = registry(timings)
    config = engine_config(args)
    for subject in SUBJECTS:
        drain(client, url, reg, config, subject, args.warmup)
    timings.on = True
    rates: dict[str, list[float]] = {s.key: [] for s in SUBJECTS}
    for n in range(args.rounds):
        order = SUBJECTS[n % len(SUBJECTS) :] + SUBJECTS[: n % len(SUBJECTS)]
        for subject in order:
            rates[subject.key].append(drain(client, url, reg, config, subject, args.events))
        shown = ", ".join(f"{s.key} {rates[s.key][-1]:,.0f}" for s in SUBJECTS)
        print(f"  round {n + 1}/{args.rounds} (events/s): {shown}", flush=True)
    return rates


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    began = time.time()
    timings = Timings()
    with in_process_stack("runtime", sqlite=args.sqlite) as (stack, info):
        rates = measure(stack.client, stack.server.url, args, timings)
        info = info.finish()
    pg = stack.postgres
    config = engine_config(args)
    results = runtime_report.RuntimeResults(
        machine=info,
        began=began,
        ended=time.time(),
        command=RUNTIME_SUITE.command(argv),
        database=pg or "SQLite (temp file, WAL)",
        events=args.events,
        rounds=args.rounds,
        concurrency=config.concurrency,
        batch=config.batch_size,
        block_ms=config.block_ms,
        rates=rates,
        timings_ms=timings.ms,
    )
    block, summary = runtime_report.render(results), runtime_report.summary(results)
    RUNTIME_SUITE.write(args.output, block, summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
