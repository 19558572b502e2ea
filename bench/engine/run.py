"""``make bench``: run every measurement in one go and write docs/benchmarks.md.

Usage, from the project root::

    .venv/bin/python -m bench.engine                  # the full run (about ten minutes)
    .venv/bin/python -m bench.engine --quick          # a smoke run; writes to a temp file
    .venv/bin/python -m bench.engine --events 20000   # fewer events per throughput run
    .venv/bin/python -m bench.engine --no-postgres    # SQLite only

PostgreSQL is measured beside SQLite when the server at $BENCH_POSTGRES_URL (default
postgres://postgres@127.0.0.1:5432/postgres) answers; the report says so when it does not.
"""

from __future__ import annotations

import argparse
import sys
import time
from importlib.metadata import version
from pathlib import Path

from bench.common.databases import KIND_NAMES, POSTGRES_URL_ENV, server_address
from bench.common.harness import PRODUCTION_ENV, Bench, open_bench
from bench.common.machine import machine
from bench.common.report import ENGINE
from bench.engine import latency, throughput
from bench.engine.report import render
from bench.engine.results import Params, Results
from bench.engine.subjects import Floor, Naive, Raw, Runworker, all_subjects
from bench.engine.summary import summary


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.engine",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--events",
        type=int,
        default=50_000,
        help="events preloaded per throughput run (default 50000)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="throughput and latency runs per worker, interleaved; the median counts",
    )
    parser.add_argument("--rate", type=float, default=500.0, help="latency: events/s")
    parser.add_argument(
        "--light-rate",
        type=float,
        default=50.0,
        help="latency under light load: events/s (default 50)",
    )
    parser.add_argument(
        "--seconds",
        type=float,
        default=10.0,
        help="latency: seconds measured, after 1 s of warm-up",
    )
    parser.add_argument(
        "--memory-events",
        type=int,
        default=100_000,
        help="events drained while runworker's RSS is sampled",
    )
    parser.add_argument(
        "--processes",
        type=int,
        default=2,
        help="runworker --processes N compared with one process (default 2)",
    )
    parser.add_argument(
        "--no-postgres",
        action="store_true",
        help=f"SQLite only (default: PostgreSQL too, at ${POSTGRES_URL_ENV} if it answers)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="small smoke run (2000 events, 1 repeat, 3 s of latency)",
    )
    parser.add_argument(
        "--output",
        type=Path,
        help="report path (default docs/benchmarks.md; a temp file with --quick)",
    )
    parser.add_argument(
        "--ref",
        help="benchmark this git ref (e.g. HEAD) instead of the working tree as it is now",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (logs, databases)")
    args = parser.parse_args(argv)
    if args.quick:
        args.events, args.repeats, args.seconds, args.memory_events = 2_000, 1, 3.0, 5_000
    args.output = ENGINE.output(args.output, args.quick)
    for name in ("events", "repeats", "memory_events"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.processes < 2:
        parser.error("--processes must be at least 2")
    if min(args.rate, args.light_rate, args.seconds) <= 0:
        parser.error("--rate, --light-rate and --seconds must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    params = Params(
        events=args.events,
        repeats=args.repeats,
        rate=args.rate,
        light_rate=args.light_rate,
        seconds=args.seconds,
        warmup_s=1.0,
        memory_events=args.memory_events,
        processes=args.processes,
        command=ENGINE.command(argv),
    )
    began = time.time()
    with open_bench(keep=args.keep, ref=args.ref, postgres=not args.no_postgres) as bench:
        info = machine(bench)
        print(
            f"streamdesk bench: {info.cpus} CPUs, Python {info.python}, {info.valkey}", flush=True
        )
        postgres = postgres_setup(bench) if bench.postgres else ""
        skipped = "" if bench.postgres else bench.postgres_skipped or "--no-postgres"
        print(f"PostgreSQL: {postgres or 'not measured: ' + skipped}", flush=True)
        runworkers = [Runworker(bench.on(kind)) for kind in bench.kinds]
        print("1. throughput (drain preloaded events)", flush=True)
        rates = throughput.interleaved(
            all_subjects(bench, args.processes), args.events, args.repeats
        )
        print("2. pickup latency (steady publishing)", flush=True)
        # The floor beside runworker: how much of the distance to the raw loop the required
        # per-event work (above all the database commit) already takes.
        floors = [Floor(bench.on(kind)) for kind in bench.kinds]
        pickups = latency.interleaved(
            [Raw(bench), *runworkers, *floors, Naive(bench)],
            args.rate,
            args.seconds,
            params.warmup_s,
            args.repeats,
        )
        # The same at light load: what a single event costs when nothing queues.
        light = latency.interleaved(
            [Raw(bench), *runworkers],
            args.light_rate,
            args.seconds,
            params.warmup_s,
            args.repeats,
        )
        print("3. runworker memory", flush=True)
        # Per database: as configured above (settings' default DEBUG), then as deployed.
        memory = []
        for kind in bench.kinds:
            on, shown = bench.on(kind), KIND_NAMES[kind]
            memory += [
                throughput.memory(Runworker(on), args.memory_events, f"{shown}, default settings"),
                throughput.memory(
                    Runworker(on, PRODUCTION_ENV), args.memory_events, f"{shown}, DEBUG=0"
                ),
            ]
        info = info.finish()
    results = Results(
        info, params, began, time.time(), rates, pickups, light, memory, postgres, skipped
    )
    ENGINE.write(args.output, render(results), summary(results))  # keeps the other blocks
    return 0


def postgres_setup(bench: Bench) -> str:
    """The server as the report shows it: version, address, the settings that matter."""
    assert bench.postgres is not None
    return (
        f"{bench.postgres.version} at {server_address(bench.postgres.url)}, the server's defaults "
        f"({bench.postgres.settings}); psycopg {version('psycopg')}"
    )


if __name__ == "__main__":
    raise SystemExit(main())
