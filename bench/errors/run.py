"""``python -m bench.errors``: issue 32's target, "error grouping of 100k dead letters:
under 1 s for the page".

A private Valkey and a temporary SQLite file (the signed-in user, and 1,000 failed runs: the
page groups the newest 1,000 failed runs as well). For each data set, 100,000 dead letters
are written through the engine's own dead-letter path (``queue_dead_letter``: the letter,
its fingerprint and its group in one script call; pipelines of 1,000), each with a real
traceback whose ids and line numbers vary from letter to letter; then the Errors page
(``/errors/``) and one group's page are fetched with Django's test client, server-side time
around ``Client.get``.

Writes its block of docs/benchmarks.md (bench/errors/report.py). Usage::

    .venv/bin/python -m bench.errors            # 100,000 letters per data set (about 2 min)
    .venv/bin/python -m bench.errors --quick    # 5,000; writes to a temp file
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import textwrap
import time
import timeit

import redis.asyncio as aioredis

from bench.common.options import parse_sized
from bench.common.stack import Stack, in_process_stack
from bench.errors import report as errors_report
from bench.errors.report import ERRORS_SUITE, DataSet, Timing

STREAM = "streamdesk:events"
PIPELINE = 1_000
PADDINGS = 40  # distinct line numbers per shape
QUICK = {"letters": 5_000.0, "fetches": 10.0}
FULL = {"letters": 100_000.0, "fetches": 30.0}
ORDER = "ORDER-PLACEHOLDER"


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.errors", description=__doc__)
    parser.add_argument("--letters", type=float, help="dead letters per data set (100000)")
    parser.add_argument("--fetches", type=float, help="timed fetches of each page (30)")
    return parse_sized(parser, argv, ERRORS_SUITE, "5,000 letters", QUICK, FULL)


def shaped_tracebacks(shapes: int) -> list[list[str]]:
    """Per shape, ``PADDINGS`` real tracebacks (the same code at other lines), each with
    ``ORDER`` where the letter's own id goes."""
    from workers.core.storable import describe

    out = []
    for k in range(shapes):
        texts = []
        for pad in range(PADDINGS):
            source = "\n" * pad + textwrap.dedent(
                f"""
                def handler_{k}(order):
                    raise KeyError(f"order {{order}} failed in step {k}: 0x7f3a2c1b{k:04x}")
                def handler():
                    handler_{k}("{ORDER}")
                """
            )
            namespace: dict[str, object] = {}
            exec(compile(source, f"/srv/app/shop/agents_{k % 7}.py", "exec"), namespace)
            try:
                namespace["handler"]()  # type: ignore[operator]
            except KeyError as exc:
                texts.append(describe(exc))
        out.append(texts)
    return out


async def write(url: str, letters: int, shapes: list[list[str]]) -> float:
    """``letters`` dead letters through ``queue_dead_letter``; returns the seconds taken."""
    from workers.redis.deadletter import DeadLetter, queue_dead_letter

    client = aioredis.Redis.from_url(url, decode_responses=True)
    await client.xgroup_create(STREAM, "agents", id="$", mkstream=True)
    began = time.perf_counter()
    for start in range(0, letters, PIPELINE):
        async with client.pipeline(transaction=False) as pipe:
            for n in range(start, min(letters, start + PIPELINE)):
                texts = shapes[n % len(shapes)]
                error = texts[n % PADDINGS].replace(ORDER, f"ord-{n}")
                event = json.dumps({"type": f"shop.t{n % 3}", "id": f"e{n}", "data": {"n": n}})
                dead_at = "2026-12-06T00:00:00+00:00"
                letter = DeadLetter(
                    event, STREAM, "agents", f"{n + 1}-0", 5, "max-deliveries", error, dead_at, "w1"
                )
                queue_dead_letter(pipe, letter)
            await pipe.execute()
    spent = time.perf_counter() - began
    await client.aclose()
    return spent


def timed(path: str, fetches: int) -> Timing:
    from bench.console.measure import page, staff_client

    get = page(staff_client(), path)
    for _ in range(3):  # warm: templates compiled, connections open
        get()
    times = []
    for _ in range(fetches):
        began = time.perf_counter()
        get()
        times.append((time.perf_counter() - began) * 1000)
    times.sort()
    return Timing(path, statistics.median(times), times[int(0.95 * (len(times) - 1))], times[-1])


def data_set(stack: Stack, letters: int, shapes: int, fetches: int) -> DataSet:
    from workers.core.keys import Keys
    from workers.redis.error_groups import read_groups

    stack.client.flushdb()
    stack.client.sadd(Keys().streams_index, STREAM)
    spent_s = asyncio.run(write(stack.server.url, letters, shaped_tracebacks(shapes)))
    groups = read_groups(stack.client, Keys(), [STREAM])
    if len(groups) != shapes or sum(g.count for g in groups) != letters:
        raise RuntimeError(f"{len(groups)} groups, {sum(g.count for g in groups)} letters")
    overview = timed("/errors/", fetches)
    detail = timed(f"/errors/{STREAM}/{groups[0].fingerprint}/", fetches)
    ds = DataSet(letters, shapes, letters / spent_s, overview, detail)
    print(f"  {shapes} groups: /errors/ p95 {overview.p95_ms:.1f} ms", flush=True)
    return ds


def fingerprint_us() -> float:
    from workers.errors import fingerprint

    text = shaped_tracebacks(1)[0][0].replace(ORDER, "ord-1")
    n = 2_000
    return timeit.timeit(lambda: fingerprint(text, "max-deliveries"), number=n) / n * 1e6


def failed_runs(shapes: list[list[str]]) -> int:
    """A full window of failed runs (retrying, not dead), so each page fetch also groups
    them (``console/reads/errors.failing``) at the most it reads."""
    from console.reads.errors import FAILED_WINDOW
    from workers.models import AgentRun, RunStatus

    AgentRun.objects.bulk_create(
        AgentRun(
            event_hash=f"{n:064x}", event_type="shop.t0", stream=STREAM, entry_id=f"{n}-0",
            consumer="w1", status=RunStatus.FAILED,
            error=shapes[n % len(shapes)][n % PADDINGS].replace(ORDER, f"ord-{n}"),
        )
        for n in range(FAILED_WINDOW)
    )  # fmt: skip
    return FAILED_WINDOW


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    began = time.time()
    with in_process_stack("errors", sqlite=True, demo=False) as (stack, machine):
        failing = failed_runs(shaped_tracebacks(5))
        sets = [data_set(stack, int(args.letters), s, int(args.fetches)) for s in (20, 1_000)]
        each_us = fingerprint_us()
        machine = machine.finish()
    results = errors_report.ErrorsResults(
        began, time.time(), ERRORS_SUITE.command(argv), machine, sets, each_us, failing
    )
    ERRORS_SUITE.write(args.output, errors_report.render(results), errors_report.summary(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
