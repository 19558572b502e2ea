"""``make bench-idle``: idle workers watched at rest, runworker's and its peers'.

Each subject (bench/idle/subjects.py) runs alone against a private Valkey, emptied first;
runworker on a fresh migrated database (PostgreSQL when one answers at
``BENCH_POSTGRES_URL``, else SQLite), as deployed (DEBUG=0). Once ready and warm, the bench
resets the server's command statistics, waits the window, and reads them back with the
fleet's CPU time and memory; MONITOR says what each command was for. Writes its block of
docs/benchmarks.md (bench/idle/report.py). Usage::

    .venv/bin/python -m bench.idle                  # every subject, 60 s each (~15 min)
    .venv/bin/python -m bench.idle --quick          # a smoke run; writes to a temp file
    .venv/bin/python -m bench.idle --only runworker,runworker-10 --seconds 30
"""

from __future__ import annotations

import argparse
import sys
import time

from bench.common.databases import KIND_NAMES, POSTGRES, SQLITE
from bench.common.harness import Bench, BenchError, open_bench
from bench.common.machine import machine
from bench.common.options import parse_sized
from bench.idle import report
from bench.idle.measure import Idle, Window, measure
from bench.idle.purposes import Floor
from bench.idle.report import IDLE_SUITE, IdleResults
from bench.idle.subjects import Subject, all_subjects

QUICK = {"seconds": 5.0, "warmup": 1.0}
FULL = {"seconds": 60.0, "warmup": 5.0}


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.idle",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seconds", type=float, help="the window per subject (60)")
    parser.add_argument("--warmup", type=float, help="seconds after a subject is ready (5)")
    keys = ", ".join(s.key for s in all_subjects())
    parser.add_argument("--only", help=f"comma-separated subjects, of: {keys}")
    parser.add_argument("--sqlite", action="store_true", help="runworker on SQLite only")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (logs)")
    parser.add_argument("--ref", help="benchmark this git ref instead of the working tree")
    return parse_sized(parser, argv, IDLE_SUITE, "5 s windows, 1 s warm-up", QUICK, FULL)


def chosen(only: str | None) -> list[Subject]:
    subjects = all_subjects()
    if not only:
        return subjects
    wanted = [key.strip() for key in only.split(",") if key.strip()]
    known = {s.key for s in subjects}
    unknown = [key for key in wanted if key not in known]
    if unknown:
        raise SystemExit(f"unknown subjects: {', '.join(unknown)} (known: {', '.join(known)})")
    return [s for s in subjects if s.key in wanted]


def database(bench: Bench) -> str:
    if bench.postgres is not None:
        return f"{bench.postgres.version} ({bench.postgres.settings}), a database per run"
    why = f"; PostgreSQL not used: {bench.postgres_skipped}" if bench.postgres_skipped else ""
    return f"{KIND_NAMES[SQLITE]} (temp file, WAL){why}"


def run_all(
    bench: Bench, subjects: list[Subject], window: Window
) -> tuple[list[Idle], list[tuple[Subject, str]]]:
    """Measure each subject; a peer that cannot run or fails is skipped with the reason
    (runworker failing stops the run: its figures are the point)."""
    runs: list[Idle] = []
    skipped: list[tuple[Subject, str]] = []
    for subject in subjects:
        if subject.missing:
            print(f"  {subject.key}: skipped, {subject.missing}", flush=True)
            skipped.append((subject, subject.missing))
            continue
        try:
            idle = measure(bench, subject, window)
        except BenchError as exc:
            if subject.streamdesk:
                raise
            reason = str(exc).strip().splitlines()[0]
            print(f"  {subject.key}: skipped, {reason}", flush=True)
            skipped.append((subject, reason))
            continue
        runs.append(idle)
        pg = "" if idle.pg_connections is None else f", {idle.pg_connections} PG connections"
        print(
            f"  {subject.key}: {idle.commands:.2f} commands/s, {idle.cpu_ms:.2f} ms CPU/s, "
            f"{idle.rss_kb / 1024:.0f} MB in {idle.processes} processes{pg}",
            flush=True,
        )
    return runs, skipped


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    subjects = chosen(args.only)
    window = Window(args.seconds, args.warmup)
    began = time.time()
    with open_bench(keep=args.keep, ref=args.ref, postgres=not args.sqlite) as bench:
        info = machine(bench)
        kind = POSTGRES if bench.postgres is not None else SQLITE
        print(f"idle bench: {info.valkey}, runworker on {KIND_NAMES[kind]}", flush=True)
        runs, skipped = run_all(bench.on(kind), subjects, window)
        shown = database(bench)
        info = info.finish()
    results = IdleResults(
        machine=info,
        began=began,
        ended=time.time(),
        command=IDLE_SUITE.command(argv),
        database=shown,
        seconds=window.seconds,
        warmup_s=window.warmup_s,
        floor=Floor.defaults(),
        runs=runs,
        skipped=skipped,
    )
    IDLE_SUITE.write(args.output, report.render(results), report.summary(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
