"""``make bench-actions``: bulk operator actions at 100,000 entries, into docs/benchmarks.md.

Redrives 100,000 dead letters and claims 100,000 pending entries through the real bulk-job
path, at the default rate limit and with the limit off, then measures a real ``runworker``'s
throughput without a job and while one runs. All on a private Valkey and a temporary SQLite
database (bench/actions/measure.py, run from the frozen code snapshot). Usage, from the
project root::

    .venv/bin/python -m bench.actions           # the full run (about four minutes)
    .venv/bin/python -m bench.actions --quick   # a smoke run; writes to a temp file
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from bench.actions import report as actions_report
from bench.common.harness import (
    PRODUCTION_ENV,
    PYTHON,
    BenchError,
    log_tail,
    open_bench,
    runworker_cmd,
)
from bench.common.machine import machine
from bench.common.report import ACTIONS_SUITE

MEASURE_TIMEOUT_S = 900.0


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.actions",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--entries", type=int, help="dead letters, and pending entries (100000)")
    parser.add_argument("--repeats", type=int, help="runs with the rate limit off (default 3)")
    parser.add_argument("--seconds", type=float, help="each worker window, s (default 10)")
    parser.add_argument(
        "--produce-rate",
        type=float,
        default=10_000.0,
        help="events/s the producer XADDs while the worker runs (default 10000: above what "
        "one worker does, so it always has a backlog)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: 20,000 entries, 1 repeat, 3 s windows"
    )
    parser.add_argument(
        "--output", type=Path, help="report path (default docs/benchmarks.md; temp with --quick)"
    )
    parser.add_argument("--ref", help="benchmark this git ref instead of the working tree")
    parser.add_argument("--keep", action="store_true", help="keep the temp dir (logs, data)")
    args = parser.parse_args(argv)
    quick = {"entries": 20_000, "repeats": 1, "seconds": 3.0}
    full = {"entries": 100_000, "repeats": 3, "seconds": 10.0}
    for name, default in (quick if args.quick else full).items():
        if getattr(args, name) is None:  # an explicit option wins over --quick
            setattr(args, name, default)
    args.output = ACTIONS_SUITE.output(args.output, args.quick)
    # Two windows per job at the default rate (2,000 entries/s) must leave a bulk job's worth
    # (over 1,000 entries) for the window with the limit off.
    if args.entries < 2 * args.seconds * 2000 + 2000:
        parser.error("--entries too few for two windows at 2,000 entries/s plus 2,000")
    if args.repeats < 1 or args.seconds < 2 or args.produce_rate <= 0:
        parser.error("--repeats at least 1, --seconds at least 2, --produce-rate positive")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    began = time.time()
    with open_bench(keep=args.keep, ref=args.ref) as bench:
        info = machine(bench)
        print(f"streamdesk bulk-actions bench: {info.cpus} CPUs, {info.valkey}", flush=True)
        env = {**bench.env(bench.fresh_db("actions")), **PRODUCTION_ENV}
        plan = {
            "url": bench.url,
            "entries": args.entries,
            "repeats": args.repeats,
            "seconds": args.seconds,
            "warmup_s": 3.0,
            "produce_rate": args.produce_rate,
            "worker_cmd": runworker_cmd(burst=False),
            "log_dir": str(bench.tmp),
        }
        plan_path, out_path = bench.tmp / "actions-plan.json", bench.tmp / "actions-result.json"
        plan_path.write_text(json.dumps(plan))
        log = bench.log_path("actions-measure")
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [PYTHON, "-m", "bench.actions.measure", str(plan_path), str(out_path)],
                cwd=bench.src,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            )
            # A deadline, never a hang: SIGTERM lets it stop its worker and producer first.
            deadline = threading.Timer(MEASURE_TIMEOUT_S, proc.terminate)
            deadline.start()
            try:
                assert proc.stdout is not None
                for line in proc.stdout:  # progress to the terminal, everything to the log
                    out.write(line)
                    sys.stdout.write(line.decode(errors="replace"))
                    sys.stdout.flush()
                code = proc.wait(timeout=60)
            finally:
                deadline.cancel()
                if proc.poll() is None:
                    proc.terminate()
                    proc.wait(timeout=60)
        if code != 0:
            raise BenchError(f"bench.actions.measure exited {code}:\n{log_tail(log)}")
        result = json.loads(out_path.read_text())
        info = info.finish()
    results = actions_report.ActionResults(
        machine=info,
        began=began,
        ended=time.time(),
        command=ACTIONS_SUITE.command(argv),
        entries=args.entries,
        result=result,
    )
    block, summary = actions_report.render(results), actions_report.summary(results)
    ACTIONS_SUITE.write(args.output, block, summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
