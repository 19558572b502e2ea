"""``python -m bench.waits``: issue 30's targets for runs that wait, in one run.

A private Valkey, and a throwaway PostgreSQL database at 127.0.0.1:5432 (user postgres) if
one answers, else a temporary SQLite file; real ``runworker`` processes (DEBUG off, the
probe agent of ``bench.engine.agents`` and the agents of ``bench.waits.agents``).

1. **Approvals**: 200 runs wait for an approval on a ``--concurrency 4`` worker; plain
   events' pickup latency before and while they wait; the worker SIGKILLed, the approvals
   published, a new worker: every run resumed exactly once, the step before the wait run
   once (counted in Redis by the steps themselves).
2. **Sleeps**: 60 runs of ``ctx.sleep(3)`` on 4 slots, against the same runs of an agent
   whose ``asyncio.sleep(3)`` holds its slot.
3. **Delayed publish**: ``manage.py publish --delay 3``, publish to the agent's start; and
   (context) sleeps published just after the SIGKILL of the worker holding the timer lease.
4. **Load**: one worker drains plain events, parks 10,000 runs that each wait for an event
   of their own with a day's timeout (10,000 waits, 10,000 timers), and drains again: the
   ratio of the rates, its memory, and its cost at rest before and after.

Writes its block of docs/benchmarks.md (bench/waits/report.py). Usage::

    .venv/bin/python -m bench.waits            # the full run (about 6 minutes)
    .venv/bin/python -m bench.waits --quick    # a smoke run; writes to a temp file
"""

from __future__ import annotations

import argparse
import sys
import time

from bench.common.options import parse_sized
from bench.common.stack import in_process_stack
from bench.waits import report, scenarios
from bench.waits.report import WAITS_SUITE

QUICK = {
    "approvals": 40,
    "sleeps": 12,
    "sleep_s": 2.0,
    "delayed": 3,
    "waits": 1_000,
    "events": 5_000,
    "drains": 1,
    "window_s": 10.0,
}
FULL = {
    "approvals": 200,
    "sleeps": 60,
    "sleep_s": 3.0,
    "delayed": 5,
    "waits": 10_000,
    "events": 20_000,
    "drains": 5,  # the machine is shared: a median of five
    "window_s": 60.0,
}
CONCURRENCY = 4
PICKUPS = 200  # plain events per pickup measurement
DELAY_S = 3.0
FAILOVER_NAPS = 4


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.waits", description=__doc__)
    parser.add_argument("--approvals", type=int, help="runs waiting for approval (200)")
    parser.add_argument("--sleeps", type=int, help="runs of ctx.sleep (60)")
    parser.add_argument("--sleep-s", type=float, help="each sleep, s (3)")
    parser.add_argument("--delayed", type=int, help="publish --delay calls (5)")
    parser.add_argument("--waits", type=int, help="runs waiting in the load part (10000)")
    parser.add_argument("--events", type=int, help="plain events per drain (20000)")
    parser.add_argument("--drains", type=int, help="drains before and after parking (5)")
    parser.add_argument("--window-s", type=float, help="each window at rest, s (60)")
    parser.add_argument("--sqlite", action="store_true", help="SQLite even if PostgreSQL answers")
    quick = "40 approvals, 12 sleeps of 2 s, 1,000 waits, 10 s windows"
    return parse_sized(parser, argv, WAITS_SUITE, quick, QUICK, FULL)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    began = time.time()
    with in_process_stack("waits", sqlite=args.sqlite, demo=False) as (stack, machine):
        import bench.engine.agents  # noqa: F401  registers the probe in this process

        # Each part from an empty server: the SIGKILLed worker's timer lease (30 s) would
        # otherwise hold the next part's sleeps until it expires.
        approvals = scenarios.approvals(stack, args.approvals, PICKUPS, CONCURRENCY)
        print(f"  approvals: resumed {approvals.succeeded} in {approvals.resume_s:.1f} s")
        stack.client.flushdb()
        sleeps = scenarios.sleeps(stack, args.sleeps, args.sleep_s, CONCURRENCY)
        print(f"  sleeps: {sleeps.durable_s:.1f} s (slot held: {sleeps.holding_s:.1f} s)")
        stack.client.flushdb()
        delayed = scenarios.delayed(stack, args.delayed, DELAY_S)
        print(f"  delayed: {[round(x) for x in delayed.publish_to_start_ms]} ms", flush=True)
        stack.client.flushdb()
        failover_s = scenarios.failover(stack, FAILOVER_NAPS)
        print(f"  sleeps of 1 s after the timer holder's SIGKILL: {failover_s:.1f} s")
        stack.client.flushdb()
        load = scenarios.load(stack, args.waits, args.events, args.drains, args.window_s)
        machine = machine.finish()
        database = stack.postgres or "SQLite (temp file, WAL)"
    results = report.WaitsResults(
        began,
        time.time(),
        WAITS_SUITE.command(argv),
        machine,
        database,
        approvals,
        sleeps,
        delayed,
        FAILOVER_NAPS,
        failover_s,
        load,
    )
    WAITS_SUITE.write(args.output, report.render(results), report.summary(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
