"""``make bench-console``: the console's speed at 1,000,000 entries, into docs/benchmarks.md.

Builds two data sets on a private Valkey (1,000,000 entries / 100,000 pending / 10,000 dead
letters, and a 100-entry baseline), times the sampler and the pages on both in one process
(bench/console/measure.py, run from the frozen code snapshot), then connects websocket
clients to a real daphne. Usage, from the project root::

    .venv/bin/python -m bench.console           # the full run (one to two minutes)
    .venv/bin/python -m bench.console --quick   # a smoke run; writes to a temp file
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import redis

from bench.common.harness import PRODUCTION_ENV, Bench, open_bench
from bench.common.machine import machine
from bench.common.report import CONSOLE_SUITE
from bench.console import load as console_load
from bench.console import report as console_report
from bench.console import runs_bench
from bench.console import ws as console_ws
from bench.console.child import run_child
from bench.console.load import Built, Shape

MEASURE_TIMEOUT_S = 900.0
QUICK = Shape("20,000 entries", 20_000, 2_000, 1_000)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.console",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--repeats", type=int, help="timed rounds (default 50; 5 with --quick)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed rounds first (default 3)")
    parser.add_argument("--clients", type=int, help="websocket clients (default 100; 20)")
    parser.add_argument("--seconds", type=float, help="websocket window, s (default 10; 3)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke run: {QUICK.label}, 5 rounds, 20 clients for 3 s",
    )
    parser.add_argument(
        "--output", type=Path, help="report path (default docs/benchmarks.md; temp with --quick)"
    )
    parser.add_argument(
        "--runs",
        type=int,
        help="AgentRun rows for the Runs page (default 1,000,000; 100,000; at least 50,000)",
    )
    parser.add_argument("--ref", help="benchmark this git ref instead of the working tree")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (logs, data)")
    args = parser.parse_args(argv)
    quick = {"repeats": 5, "clients": 20, "seconds": 3.0, "runs": 100_000}
    full = {"repeats": 50, "clients": 100, "seconds": 10.0, "runs": 1_000_000}
    for name, default in (quick if args.quick else full).items():
        if getattr(args, name) is None:  # an explicit option wins over --quick
            setattr(args, name, default)
    args.output = CONSOLE_SUITE.output(args.output, args.quick)
    if (
        min(args.repeats, args.clients) < 1
        or args.runs < 50_000
        or args.warmup < 0
        or args.seconds < 2
    ):
        parser.error(
            "--repeats and --clients at least 1, --runs at least 50,000, --warmup at least 0, "
            "--seconds >= 2"
        )
    return args


def db_url(url: str, db: int) -> str:
    return f"{url.rsplit('/', 1)[0]}/{db}"


def build(url: str, shape: Shape) -> Built:
    client = redis.Redis.from_url(url, decode_responses=True, socket_timeout=120)
    try:
        built = console_load.build(client, shape)
    finally:
        client.close()
    print(f"   {shape.label}: built in {built.seconds:.1f} s", flush=True)
    return built


def measure(
    bench: Bench,
    env: dict[str, str],
    built: dict[str, Built],
    urls: dict[str, str],
    repeats: int,
    warmup: int,
) -> dict[str, object]:
    plan = {
        "repeats": repeats,
        "warmup": warmup,
        "sets": {
            name: {
                "url": urls[name],
                "entries": b.shape.entries,
                "mid_entry": b.mid_entry,
                "mid_pending": b.mid_pending,
                "mid_dead": b.mid_dead,
            }
            for name, b in built.items()
        },
    }
    result: dict[str, object] = run_child(
        bench, "bench.console.measure", "console-measure", plan, env, MEASURE_TIMEOUT_S
    )
    return result


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    large = QUICK if args.quick else console_load.LARGE
    began = time.time()
    with open_bench(keep=args.keep, ref=args.ref, postgres=True) as bench:
        info = machine(bench)
        print(f"streamdesk console bench: {info.cpus} CPUs, {info.valkey}", flush=True)
        urls = {
            console_report.LARGE: db_url(bench.url, 0),
            console_report.SMALL: db_url(bench.url, 1),
        }
        print("1. data sets", flush=True)
        built = {
            console_report.LARGE: build(urls[console_report.LARGE], large),
            console_report.SMALL: build(urls[console_report.SMALL], console_load.SMALL),
        }
        env = {**bench.env(bench.fresh_db("console")), **PRODUCTION_ENV}
        print(f"2. sampler and pages, {args.repeats} rounds", flush=True)
        result = measure(bench, env, built, urls, args.repeats, args.warmup)
        print(f"3. websocket fan-out: 1, then {args.clients} clients", flush=True)
        with redis.Redis.from_url(urls[console_report.LARGE]) as client:
            console_load.heartbeats(client)  # "live" for the daphne sampler's samples too
        alone, fan = console_ws.fan_out(
            {**env, "REDIS_URL": urls[console_report.LARGE]},
            bench.src,
            bench.log_path("console-daphne"),
            str(result["session"]),
            [1, args.clients],
            args.seconds,
        )
        print(f"4. runs page at {args.runs:,} runs: {', '.join(bench.kinds)}", flush=True)
        runs = tuple(
            runs_bench.measure(bench, kind, args.runs, args.repeats, args.warmup)
            for kind in bench.kinds
        )
        info = info.finish()
    results = console_report.ConsoleResults(
        machine=info,
        began=began,
        ended=time.time(),
        command=CONSOLE_SUITE.command(argv),
        repeats=args.repeats,
        warmup=args.warmup,
        built=built,
        ms=result["ms"],  # type: ignore[arg-type]
        cpu=result["cpu"],  # type: ignore[arg-type]
        gc=result["gc"],  # type: ignore[arg-type]
        gc_objects=int(result["gc_objects"]),  # type: ignore[call-overload]
        full_gc_ms=float(result["full_gc_ms"]),  # type: ignore[arg-type]
        fan=fan,
        alone=alone,
        runs=runs,
        runs_skipped=bench.postgres_skipped,
    )
    CONSOLE_SUITE.write(
        args.output, console_report.render(results), console_report.summary(results)
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
